package plugin

import (
	"context"
	"errors"
	"net/http"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// queryKernels answers the kernels query: the GPU kernel traces of a request (or one chosen
// file) from the configured trace directories and buckets, each analysed by pkg/gputrace and
// shown as the query's view (the summary, the per-launch times and ranges, the critical path,
// or the activities as one trace frame). A file that fails to read becomes a notice; the other
// files' frames stay. Without a trace directory or bucket, the answer is empty with a notice
// that says what to configure.
func (d *Datasource) queryKernels(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	kq, err := models.ParseKernelsQuery(q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	store, err := d.src.Kernels.Get()
	if errors.Is(err, errKernelsOff) {
		// Nothing configured: the panel says what to set, as an empty answer, not a red error.
		return frames.KernelTraces(nil, notices.List{{Severity: notices.Info, Text: traceDirsOffMessage}}), nil
	}
	if err != nil {
		return nil, err
	}
	if kq.View == models.KernelsDiff {
		return kernelDiff(ctx, store, kq)
	}
	// Only the critical path and the timeline keep the events themselves: the other views do
	// not pay for their memory.
	limits := gputrace.Limits{CriticalPath: kq.View == models.KernelsCriticalPath, Timeline: kq.View == models.KernelsTimeline}
	files, missed, err := store.TracesOfWith(ctx, kq.File, kq.TraceID, limits)
	if err != nil {
		return nil, err
	}
	if kq.View == models.KernelsLaunches {
		return frames.KernelLaunchTraces(files, missed), nil
	}
	if kq.View == models.KernelsCriticalPath {
		return frames.KernelCriticalPaths(files, missed), nil
	}
	if kq.View == models.KernelsTimeline {
		return frames.KernelTimeline(files, missed, kq.TraceID), nil
	}
	return frames.KernelTraces(files, missed), nil
}

// kernelDiff answers the kernels query's diff view: the request's kernel traces (or the chosen
// file) against the baseline's, per request (tracestore.Store.Diff, frames.KernelDiff).
func kernelDiff(ctx context.Context, store correlate.KernelStore, kq *models.KernelsQuery) (data.Frames, error) {
	b := kq.Baseline
	if b == nil {
		b = &models.KernelBaseline{Recent: models.DefaultKernelBaselineRecent}
	}
	d, err := store.Diff(ctx, gputrace.DiffRequest{TraceID: kq.TraceID, File: kq.File,
		Baseline: gputrace.DiffBaseline{TraceID: b.TraceID, Recent: b.Recent, Match: b.Match}})
	if err != nil {
		return nil, err
	}
	return frames.KernelDiff(d), nil
}

// resourceKernelFiles lists the trace files under the configured directories, most recent
// first: GET kernel-files?traceId= (optional: only the files of that request).
func (d *Datasource) resourceKernelFiles(w http.ResponseWriter, r *http.Request) {
	store, err := d.src.Kernels.Get()
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
	files, missed := store.FilesOf(r.Context(), id)
	writeJSON(w, http.StatusOK, answer{Files: files, Notices: missed.Texts()})
}
