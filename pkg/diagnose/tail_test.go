package diagnose

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// req is a diagnosed request of d with its causes (kind:service:ms, ranked as given).
func req(id string, d time.Duration, causes ...string) TailRequest {
	r := TailRequest{TraceID: id, Duration: d}
	for _, c := range causes {
		var kind, svc string
		var n int
		parts := strings.Split(c, ":")
		kind, svc = parts[0], parts[1]
		fmt.Sscan(parts[2], &n)
		r.Causes = append(r.Causes, Cause{Kind: kind, Service: svc, Title: kind + " in " + svc, Explains: ms(n), Action: "fix " + kind})
	}
	return r
}

func TestTailSharesAreTheTimeEachCauseAddsOverTheMedian(t *testing.T) {
	median := []TailRequest{
		req("m1", ms(300), "model:llm:250", "cpu:api:50"),
		req("m2", ms(300), "model:llm:250", "cpu:api:50"),
	}
	tail := []TailRequest{
		req("t1", ms(1100), "queue:llm:700", "model:llm:250", "cpu:api:150"),
		req("t2", ms(900), "queue:llm:500", "model:llm:250", "cpu:api:150"),
		req("t3", ms(700), "cpu:api:450", "model:llm:250"),
		{TraceID: "t4", Duration: ms(2000), Why: "its trace could not be read"},
	}
	d := Tail(tail, median, ms(300))
	if d.TailDiagnosed != 3 || d.MedianDiagnosed != 2 || d.Excess != ms(800+600+400) {
		t.Fatalf("diagnosed %d/%d, excess %s", d.TailDiagnosed, d.MedianDiagnosed, d.Excess)
	}
	got := map[string]TailCause{}
	for _, c := range d.Causes {
		got[c.Kind] = c
	}
	// queue: 1200 ms in the tail, none at the median; cpu: 750 against 3×50; model: as at the median.
	q, c, m := got["queue"], got["cpu"], got["model"]
	if q.Added != ms(1200) || q.Requests != 2 || q.First != 2 || q.PerMedian != 0 || q.PerTail != ms(400) || !q.StandsOut {
		t.Errorf("queue %+v", q)
	}
	if c.Added != ms(600) || c.First != 1 || c.PerMedian != ms(50) || c.PerTail != ms(250) || c.Median != ms(150) || !c.StandsOut {
		t.Errorf("cpu %+v", c)
	}
	if m.Added != 0 || m.Share != 0 || m.StandsOut {
		t.Errorf("model %+v: the median requests spend as long on it", m)
	}
	if d.Causes[0].Kind != "queue" || d.Causes[1].Kind != "cpu" {
		t.Errorf("ranking %s, %s", d.Causes[0].Kind, d.Causes[1].Kind)
	}
	if q.Examples[0] != "t1" || len(q.Examples) != 2 {
		t.Errorf("queue examples %v, want the largest first", q.Examples)
	}
	if !strings.HasPrefix(d.Summary, "Queue in llm makes the tail: 0 ms per request at the median, 400 ms in the tail, 67%") ||
		!strings.Contains(d.Summary, "Remedy: fix queue.") || !strings.Contains(d.Summary, "Next: cpu in api (33%") {
		t.Errorf("summary: %s", d.Summary)
	}
	sure := strings.Join(d.HowSure, " ")
	for _, want := range []string{"Diagnosed 3 of the 4 tail", "1 request(s) not diagnosed: its trace could not be read", "Only 3 tail request(s)"} {
		if !strings.Contains(sure, want) {
			t.Errorf("how sure lacks %q: %s", want, sure)
		}
	}
}

func TestTailOfUndiagnosedRequestsSaysWhy(t *testing.T) {
	d := Tail([]TailRequest{{TraceID: "a", Duration: ms(900), Why: "its join failed (jaeger down)"}}, nil, ms(300))
	if len(d.Causes) != 0 || d.StandsOut || !strings.Contains(d.Summary, "No request of the tail could be diagnosed") || !strings.Contains(d.Summary, "jaeger down") {
		t.Errorf("%+v", d)
	}
}

func TestTailRequestOfKeepsTheCausesInsideTheOperationsSpan(t *testing.T) {
	// A gateway calls the API: the operation asked is the API's span, so the gateway's own time is
	// another operation's.
	tr := &models.Trace{TraceID: "t", Spans: []models.Span{
		{SpanID: "gw", Service: "gateway", Operation: "POST /v1", Duration: ms(1000)},
		{SpanID: "api", ParentSpanID: "gw", Service: "api", Operation: "POST /chat", Duration: ms(900)},
		{SpanID: "db", ParentSpanID: "api", Service: "api", Operation: "SELECT", Duration: ms(600)},
	}}
	d := Diagnosis{Verdict: []Cause{
		{Kind: CauseDownstream, Service: "api", SpanID: "db", Explains: ms(600)},
		{Kind: CauseCPU, Service: "gateway", SpanID: "gw", Explains: ms(100)},
		{Kind: CauseCPU, Service: "api", SpanID: "api", Explains: ms(300)},
		{Kind: CauseErrors, Service: "api", SpanID: "db"},
	}}
	r := TailRequestOf(tr.Spans[1], &correlate.TraceAnswer{Trace: tr}, d)
	if !r.Diagnosed() || len(r.Causes) != 2 || r.Causes[0].SpanID != "db" || r.Causes[1].SpanID != "api" {
		t.Errorf("%+v", r.Causes)
	}
	if r := TailRequestOf(tr.Spans[1], nil, d); r.Diagnosed() {
		t.Error("a request without its join counted as diagnosed")
	}
}
