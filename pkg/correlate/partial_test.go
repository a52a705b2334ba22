package correlate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// A trace the store answered in part (Tempo's partial status: larger than its limit, or pruned)
// is joined as it is, with a warning that says so and why; a whole one gets no such warning.
func TestAPartialTraceIsSaidToBePartial(t *testing.T) {
	for _, partial := range []string{"", "Trace exceeds maximum size of 5000000 bytes, a partial trace is returned"} {
		tr := containerTrace()
		tr.Partial = partial
		ans, err := JoinRequest(context.Background(), TraceSources{Traces: Ready[Traces](fakeTraces{trace: tr}), Profiles: Unavailable[Profiles](errors.New("no Pyroscope")),
			GPUs: Unavailable[GPUFigures](errors.New("no GPUs"))}, TraceQuery{TraceID: tr.TraceID, Join: models.DefaultJoinSettings().SpanMatch})
		if err != nil {
			t.Fatal(err)
		}
		text := noticeText(ans.Notices)
		if got := strings.Contains(text, "answered part of trace"); got != (partial != "") || partial != "" && !strings.Contains(text, partial) {
			t.Errorf("partial %q: notices\n%s", partial, text)
		}
		if len(ans.Rows) != len(tr.Spans) {
			t.Errorf("partial %q: %d rows of %d spans", partial, len(ans.Rows), len(tr.Spans))
		}
	}
}

// A whole-request profile asked alone (profile by trace ID) says the same of a partial trace.
func TestAPartialTracesProfileIsSaidToBePartial(t *testing.T) {
	for _, partial := range []string{"", "Trace exceeds maximum size of 5000000 bytes, a partial trace is returned"} {
		tr := *demoTrace
		tr.Partial = partial
		traces := tracesFunc(func(context.Context, string) (*models.Trace, error) { return &tr, nil })
		rp, err := ProfileOfRequest(context.Background(), traces, &fakeProfiles{bySpan: demoSpanSamples()}, requestQuery(t, "{}"))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(rp.Notices.Texts(), "\n")
		if got := strings.Contains(text, "answered part of trace"); got != (partial != "") || partial != "" && !strings.Contains(text, partial) {
			t.Errorf("partial %q: notices\n%s", partial, text)
		}
	}
}
