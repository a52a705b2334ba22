package plugin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// queryKernels answers the kernels query: the GPU kernel traces of a request (or one chosen
// file) from the configured trace directories, each analysed by pkg/gputrace. A file that
// fails to read becomes a notice; the other files' frames stay.
func (d *Datasource) queryKernels(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	kq, err := models.ParseKernelsQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeKernels, err)
	}
	store, err := d.traceDirs()
	if err != nil {
		return errorResponse(err)
	}
	var (
		files   []gputrace.Found
		notices []string
	)
	if kq.File != "" {
		f, err := store.Resolve(kq.File)
		if err != nil {
			return errorResponse(backend.DownstreamError(err))
		}
		files = []gputrace.Found{{File: f}}
	} else {
		files, notices = store.FindByTraceID(ctx, kq.TraceID)
	}
	store.AnalyzeAll(ctx, files)

	var out []*data.Frame
	for _, f := range files {
		if f.Err != nil {
			notices = append(notices, fmt.Sprintf("%s: %v (figures cover what was read before it)", f.File.Rel, f.Err))
		}
		if f.Result == nil {
			continue
		}
		name := ""
		if len(files) > 1 {
			name = f.File.Rel
		}
		fs := frames.KernelFrames(name, f.Result)
		fs[0].AppendNotices(frames.Info("Read from " + f.File.Rel))
		out = append(out, fs...)
	}
	if len(out) == 0 {
		out = frames.KernelFrames("", emptyResult())
		if kq.TraceID != "" {
			notices = append(notices, fmt.Sprintf("no GPU kernel trace found for trace %s in the trace directories", kq.TraceID))
		}
	}
	for _, n := range notices {
		out[0].AppendNotices(frames.Warning(n))
	}
	return withFrames(out...)
}

// resourceKernelFiles lists the trace files under the configured directories, most recent
// first: GET kernel-files?traceId= (optional: only the files of that request).
func (d *Datasource) resourceKernelFiles(w http.ResponseWriter, r *http.Request) {
	store, err := d.traceDirs()
	if err != nil {
		writeError(w, err)
		return
	}
	id, err := models.NormalizeTraceID("traceId", r.URL.Query().Get("traceId"))
	if err != nil {
		writeError(w, backend.DownstreamError(err))
		return
	}
	type answer struct {
		Files   []gputrace.TraceFile `json:"files"`
		Notices []string             `json:"notices,omitempty"`
	}
	var a answer
	if id == "" {
		a.Files, a.Notices = store.List(r.Context())
	} else {
		var found []gputrace.Found
		found, a.Notices = store.FindByTraceID(r.Context(), id)
		for _, f := range found {
			if f.Result != nil {
				f.File.TraceIDs = nil
				for _, t := range f.Result.TraceIDs {
					f.File.TraceIDs = append(f.File.TraceIDs, t.ID)
				}
			}
			a.Files = append(a.Files, f.File)
		}
	}
	if a.Files == nil {
		a.Files = []gputrace.TraceFile{}
	}
	for i := range a.Files {
		if a.Files[i].TraceIDs == nil {
			a.Files[i].TraceIDs = []string{}
		}
	}
	writeJSON(w, http.StatusOK, a)
}

// emptyResult is the analysis of no trace: the frames keep their columns.
func emptyResult() *gputrace.Result {
	return gputrace.NewCollector(gputrace.Limits{}).Result(gputrace.AnalysisOptions{})
}
