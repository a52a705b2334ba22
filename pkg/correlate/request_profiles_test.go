package correlate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Several trace IDs (Grafana's traceIdSelector): the merged graph of those requests, each read as
// for one trace, summed per service; a request that cannot be read is left out with a warning
// naming it, and only when none can is the query an error.
func TestRequestProfileOfSeveralTracesMergesThem(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	prof := &fakeProfiles{bySpan: map[string][]string{}}
	traces := map[string]*models.Trace{}
	var ids []string
	want := map[string]int64{}
	services := []string{"gateway", "ranker", "llm"}
	for n := range 3 + rng.IntN(4) {
		id := fmt.Sprintf("%032x", rng.Uint64())
		tr := &models.Trace{TraceID: id}
		for k, svc := range services[:1+rng.IntN(len(services))] {
			spanID := fmt.Sprintf("%08x%08x", n, k)
			v := int64(10 + rng.IntN(90))
			tr.Spans = append(tr.Spans, models.Span{TraceID: id, SpanID: spanID, Service: svc, Operation: "op",
				Start: time.Unix(1000+int64(n), 0), Duration: time.Second, Attributes: map[string]string{models.ProfileIDAttribute: spanID}})
			prof.bySpan[spanID] = []string{fmt.Sprintf("main;%s.work %d", svc, v)}
			want[svc] += v
		}
		traces[id] = tr
		ids = append(ids, id)
	}
	gone := fmt.Sprintf("%032x", rng.Uint64()) // a trace the store does not have
	readTrace := tracesFunc(func(_ context.Context, id string) (*models.Trace, error) {
		if tr := traces[id]; tr != nil {
			return tr, nil
		}
		return nil, fmt.Errorf("trace %s not found", id)
	})
	// The missing trace still has its trace_id fallback asked; the fake answers it nothing.
	rp, err := RequestProfileOf(context.Background(), readTrace, prof, RequestProfileQuery{TraceIDs: append(ids, gone), LabelSelector: "{}", ProfileTypeID: models.DefaultProfileTypeID})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, svc := range services {
		if want[svc] == 0 {
			continue
		}
		if got := rp.Services[svc]; got == nil || got.Total != want[svc] {
			t.Errorf("%s: merged total %v, want %d", svc, got, want[svc])
		}
		total += want[svc]
	}
	if rp.Tree.Total != total {
		t.Errorf("the request graph's total %d, want %d", rp.Tree.Total, total)
	}
	text := noticeText(rp.Notices)
	wantParts(t, text, fmt.Sprintf("The merged profile of %d requests (traceIdSelector), %d of them with samples", len(ids)+1, len(ids)),
		"Trace "+ids[0]+": Whole request", "Trace "+gone+" is left out of the merged profile: trace "+gone+" not found")

	// None readable: an error naming the requests.
	fail := profilesFunc(func(context.Context, models.FlameGraphQuery) (*flamegraph.Node, error) {
		return nil, errors.New("Pyroscope (http://pyroscope:4040): unavailable")
	})
	_, err = RequestProfileOf(context.Background(), tracesFunc(func(context.Context, string) (*models.Trace, error) { return nil, errors.New("Jaeger is down") }),
		fail, RequestProfileQuery{TraceIDs: ids[:2], LabelSelector: "{}", ProfileTypeID: models.DefaultProfileTypeID})
	if err == nil || !strings.Contains(err.Error(), "none of the 2 requests could be read; trace "+ids[0]) {
		t.Errorf("no request readable: %v", err)
	}
}
