package diagnose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// throttledRequest is a caller and a profiled service whose span does its CPU work in a container
// at its CPU limit: each CFS period it runs for the quota, then waits throttled. cAdvisor saw the
// container's threads throttled per (1 − quota)/quota seconds for every CPU-second used.
func throttledRequest(rng *rand.Rand, n int, quota float64, throttledMs, otherWaitMs int) (*correlate.TraceAnswer, string) {
	svc := randomName(rng) + "-svc"
	cpuMs := int(float64(throttledMs) * quota / (1 - quota))
	spanMs := cpuMs + throttledMs + otherWaitMs
	root := jspan(fmt.Sprintf("a%015x", n), "", randomName(rng)+"-api", "POST /"+randomName(rng), 0, spanMs+20)
	s := jspan(fmt.Sprintf("b%015x", n), root.SpanID, svc, randomName(rng), 10, spanMs)
	s.Attributes[models.ProfileIDAttribute] = s.SpanID
	s.Resource[correlate.PodAttribute] = svc + "-" + randomName(rng)
	tr := &models.Trace{TraceID: root.TraceID, Spans: []models.Span{root, s}}
	cpu := correlate.SpanProfiles{s.SpanID: tree(fmt.Sprintf("main;%s %d", randomName(rng), int64(cpuMs)*int64(time.Millisecond)))}
	ans := answerOf(tr, cpu, nil)
	window := 60.0
	usage := quota * window * 0.8 // busy 80 % of the minute
	f := models.ContainerCPU{Namespace: "inference", Pod: s.Resource[correlate.PodAttribute], Container: "server",
		Periods: 600, ThrottledPeriods: 480, UsageSeconds: usage, QuotaCPUs: quota,
		Start: t0.Add(-30 * time.Second), End: t0.Add(30 * time.Second)}
	f.ThrottledSeconds = usage * (1 - quota) / quota
	for i := range ans.Rows {
		if ans.Rows[i].Span.SpanID == s.SpanID {
			ans.Rows[i].Container = &f
		}
	}
	return ans, svc
}

// Randomised throttled requests: the first cause is the container's CPU limit in the service,
// with its one remedy, explaining the throttled time within 10 %; the span's CPU stays CPU. The
// quota is under half of what the span's thread would use, so throttling is its largest part.
func TestThrottledContainersAreTheFirstCause(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 31))
	for n := range 60 {
		quota := 0.15 + 0.3*rng.Float64()
		throttled := 300 + rng.IntN(800)
		ans, svc := throttledRequest(rng, n, quota, throttled, rng.IntN(30))
		v := verdictOf(ans)
		first := v[0]
		if first.Kind != CauseThrottled || first.Service != svc {
			t.Fatalf("request %d (quota %.2f, %d ms throttled): first cause %s %q; causes %s", n, quota, throttled, first.Kind, first.Title, causeKinds(v))
		}
		if got, want := float64(first.Explains), float64(ms(throttled)); math.Abs(got-want) > 0.1*want {
			t.Errorf("request %d: explains %s, throttled %s", n, first.Explains, ms(throttled))
		}
		if !strings.Contains(first.Action, "CPU limit") || !strings.Contains(first.Title, "inference/") {
			t.Errorf("request %d: title %q, action %q", n, first.Title, first.Action)
		}
		if !strings.Contains(strings.Join(first.Evidence, "\n"), "throttled in 480 of 600 CFS periods") {
			t.Errorf("request %d: evidence %q", n, first.Evidence)
		}
	}
}

// A container with a CPU limit it never reached adds nothing; a throttled container whose
// request waited on something else keeps that first cause.
func TestThrottlingExplainsOnlyWhatItHeld(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 2))
	for n := range 40 {
		quota := 0.3 + 0.5*rng.Float64()
		ans, svc := throttledRequest(rng, n, quota, 200+rng.IntN(200), 0)
		for i := range ans.Rows {
			if c := ans.Rows[i].Container; c != nil {
				none := *c
				none.ThrottledPeriods, none.ThrottledSeconds = 0, 0
				ans.Rows[i].Container = &none
			}
		}
		for _, c := range verdictOf(ans) {
			if c.Kind == CauseThrottled {
				t.Fatalf("request %d: unthrottled container gives %q", n, c.Title)
			}
		}
		// The same container throttled, but the span mostly waited for its GPU (off the CPU,
		// not runnable): throttling explains only what its small CPU accrued.
		ans, _ = throttledRequest(rng, n, quota, 30+rng.IntN(30), 600+rng.IntN(600))
		v := verdictOf(ans)
		if v[0].Kind != CauseWaiting || v[0].Service == "" {
			t.Fatalf("request %d (%s): first cause %s %q; causes %s", n, svc, v[0].Kind, v[0].Title, causeKinds(v))
		}
	}
}

// A waiting cause with no cAdvisor series for its pod says which series would tell.
func TestWaitingWithoutThrottlingSeriesSaysWhatWouldTell(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	ans, _ := throttledRequest(rng, 1, 0.5, 50, 800)
	for i := range ans.Rows {
		ans.Rows[i].Container = nil
	}
	v := verdictOf(ans)
	if v[0].Kind != CauseWaiting || !strings.Contains(v[0].Caveat, models.CadvisorThrottledSeconds) {
		t.Errorf("first cause %s, caveat %q", v[0].Kind, v[0].Caveat)
	}
}
