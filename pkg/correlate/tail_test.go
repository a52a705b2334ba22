package correlate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// tailSpans are 100 requests of api POST /chat over 100 minutes, request n lasting n+1 tens of
// milliseconds (so p95 is 950 ms), the slowest in the middle of the range; trace 7 also holds a
// second, shorter span of the operation.
func tailSpans() []models.Span {
	var out []models.Span
	for n := range 100 {
		d := time.Duration((n+1)*10) * time.Millisecond
		at := time.Duration((n*37)%100) * time.Minute
		out = append(out, opSpan(n, "api", "POST /chat", at, d, true))
	}
	again := opSpan(7, "api", "POST /chat", 7*37%100*time.Minute+time.Second, 5*time.Millisecond, true)
	again.SpanID = "00000000000000ff"
	out = append(out, again)
	slices.SortStableFunc(out, func(a, b models.Span) int { return a.Start.Compare(b.Start) })
	return out
}

func TestFindTailTakesTheNewestRequestsOverTheThresholdAndSamplesTheMedian(t *testing.T) {
	search := &fakeSpanSearch{spans: tailSpans()}
	from, to := spanT0, spanT0.Add(100*time.Minute)
	got, err := FindTail(context.Background(), search, TailSearch{Service: "api", Operation: "POST /chat", Percentile: 95, MaxTraces: 3, Limit: 1000}, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Found.Spans) != 100 {
		t.Errorf("%d requests, want 100: one per trace (its longest span)", len(got.Found.Spans))
	}
	if got.Threshold != 950*time.Millisecond || got.Over != 6 || !strings.Contains(got.ThresholdFrom, "p95 of the 100") {
		t.Errorf("threshold %s (%s), %d over it; want 950ms, 6", got.Threshold, got.ThresholdFrom, got.Over)
	}
	if got.Median != 500*time.Millisecond {
		t.Errorf("median %s, want 500ms", got.Median)
	}
	if len(got.Tail) != 3 {
		t.Fatalf("%d tail requests, want maxTraces 3", len(got.Tail))
	}
	for i, s := range got.Tail {
		if s.Duration < got.Threshold {
			t.Errorf("tail request %s lasts %s, under the threshold", s.TraceID, s.Duration)
		}
		if i > 0 && s.Start.After(got.Tail[i-1].Start) {
			t.Errorf("the tail is not newest first: %v", got.Tail)
		}
	}
	// The newest 3 of the 6 over the threshold: none of the other 3 is newer than the oldest kept.
	oldest := got.Tail[2].Start
	for _, s := range got.Found.Spans {
		if s.Duration >= got.Threshold && !slices.ContainsFunc(got.Tail, func(k models.Span) bool { return k.TraceID == s.TraceID }) && s.Start.After(oldest) {
			t.Errorf("request %s (%s, at %s) is newer than the tail's oldest, yet left out", s.TraceID, s.Duration, s.Start)
		}
	}
	if len(got.MedianSample) != MedianSampleSize(3) {
		t.Fatalf("%d median requests, want %d", len(got.MedianSample), MedianSampleSize(3))
	}
	for _, s := range got.MedianSample {
		if s.Duration < 480*time.Millisecond || s.Duration > 520*time.Millisecond {
			t.Errorf("median request lasts %s, not around the median", s.Duration)
		}
	}
}

func TestFindTailByDurationOrSLO(t *testing.T) {
	search := &fakeSpanSearch{spans: tailSpans()}
	from, to := spanT0, spanT0.Add(100*time.Minute)
	for _, c := range []struct {
		q    TailSearch
		over int
		from string
	}{
		{TailSearch{MinDuration: 800 * time.Millisecond}, 21, "minDuration 800ms"},
		{TailSearch{SLO: 500 * time.Millisecond}, 51, "latency SLO"},
	} {
		c.q.Service, c.q.Operation, c.q.MaxTraces, c.q.Limit = "api", "POST /chat", 100, 1000
		got, err := FindTail(context.Background(), search, c.q, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if got.Over != c.over || len(got.Tail) != c.over || !strings.Contains(got.ThresholdFrom, c.from) {
			t.Errorf("%+v: %d over %s (%s), want %d", c.q, got.Over, got.Threshold, got.ThresholdFrom, c.over)
		}
		for _, s := range got.MedianSample {
			if s.Duration >= got.Threshold {
				t.Errorf("median sample holds %s, a tail request", s.Duration)
			}
		}
	}
}

func TestFindTailOfNoTraffic(t *testing.T) {
	got, err := FindTail(context.Background(), &fakeSpanSearch{}, TailSearch{Service: "api", Operation: "x", Percentile: 95, MaxTraces: 20, Limit: 100}, spanT0, spanT0.Add(time.Hour))
	if err != nil || len(got.Tail) != 0 || len(got.MedianSample) != 0 || got.Found == nil {
		t.Errorf("%+v, %v", got, err)
	}
	if _, err := FindTail(context.Background(), &failingSearch{}, TailSearch{Service: "api", Operation: "x", Percentile: 95, MaxTraces: 20, Limit: 100}, spanT0, spanT0.Add(time.Hour)); err == nil {
		t.Error("a failing search gave no error")
	}
}

// countingGPUs answers every read with one series sample per step and counts the reads.
type countingGPUs struct {
	reads atomic.Int32
	mu    sync.Mutex
	asked [][2]time.Time
	err   error
}

func (c *countingGPUs) GPUFigures(_ context.Context, _ models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	c.reads.Add(1)
	c.mu.Lock()
	c.asked = append(c.asked, [2]time.Time{start, end})
	c.mu.Unlock()
	time.Sleep(10 * time.Millisecond) // long enough for the others to wait on it
	if c.err != nil {
		return nil, nil, c.err
	}
	s := classify.GPUSeries{GPU: classify.GPU{Host: "gpu-1", Index: "0"}}
	for t := start; !t.After(end); t = t.Add(step) {
		s.Samples = append(s.Samples, classify.Sample{Time: t})
	}
	return []classify.GPUSeries{s}, nil, nil
}

func TestSharedSourcesReadEachGPUWindowOnceAndAFailingStoreOnce(t *testing.T) {
	gpus := &countingGPUs{}
	src := TraceSources{GPUs: Ready[GPUFigures](gpus)}.Shared()
	g, _ := src.GPUs.Get()
	filter := models.GPUFilter{Hosts: []string{"gpu-1"}}
	var wg sync.WaitGroup
	// Four joins of the same window at once, then one of another window.
	for range 4 {
		wg.Go(func() {
			series, _, err := g.GPUFigures(context.Background(), filter, spanT0, spanT0.Add(2*time.Second), time.Second)
			if err != nil || len(series) != 1 || len(series[0].Samples) != 3 {
				t.Errorf("a shared read answered %v, %v", series, err)
			}
		})
	}
	wg.Wait()
	if _, _, err := g.GPUFigures(context.Background(), filter, spanT0.Add(time.Minute), spanT0.Add(time.Minute+time.Second), time.Second); err != nil {
		t.Fatal(err)
	}
	if n := gpus.reads.Load(); n != 2 {
		t.Errorf("%d reads of the GPU store, want 2 (one per window)", n)
	}
	if got := gpus.asked[1]; !got[0].Equal(spanT0.Add(time.Minute)) {
		t.Errorf("read %v: not the window asked", got)
	}
	// A failing store fails each join, and is asked once.
	down := &countingGPUs{err: errors.New("prometheus: 503")}
	g2, _ := TraceSources{GPUs: Ready[GPUFigures](down)}.Shared().GPUs.Get()
	for i := range 3 {
		start := spanT0.Add(time.Duration(i) * time.Minute)
		if _, _, err := g2.GPUFigures(context.Background(), filter, start, start.Add(time.Second), time.Second); err == nil {
			t.Error("a failing read answered no error")
		}
	}
	if n := down.reads.Load(); n != 1 {
		t.Errorf("a failing store was read %d times, want once", n)
	}
}

// countingLatency counts the lever's p99 reads.
type countingLatency struct{ reads atomic.Int32 }

func (c *countingLatency) ServiceP99(context.Context, string, time.Time, time.Time) (LatencyFigure, error) {
	c.reads.Add(1)
	return LatencyFigure{P99: time.Second}, nil
}

func TestSharedSourcesReadTheLeversRangeOnce(t *testing.T) {
	lat := &countingLatency{}
	src := TraceSources{Lever: LeverSources{Latency: Ready[ServiceLatency](lat)}}.Shared()
	l, _ := src.Lever.Latency.Get()
	for range 5 {
		if f, err := l.ServiceP99(context.Background(), "api", spanT0, spanT0.Add(time.Hour)); err != nil || f.P99 != time.Second {
			t.Fatal(f, err)
		}
	}
	if _, err := l.ServiceP99(context.Background(), "other", spanT0, spanT0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := lat.reads.Load(); n != 2 {
		t.Errorf("%d reads, want 2: one per service and range", n)
	}
}

// slowProfiles is a profile store that fails each read after a while, counting them.
type slowProfiles struct{ reads atomic.Int32 }

func (s *slowProfiles) MergedFlameGraph(ctx context.Context, _ models.FlameGraphQuery) (*flamegraph.Node, error) {
	s.reads.Add(1)
	time.Sleep(20 * time.Millisecond)
	return nil, errors.New("pyroscope: context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
}

func TestSharedSourcesStopAskingAStoreThatFailed(t *testing.T) {
	store := &slowProfiles{}
	p, _ := TraceSources{Profiles: Ready[Profiles](store)}.Shared().Profiles.Get()
	for range 5 { // the joins of later rounds
		if _, err := p.MergedFlameGraph(context.Background(), models.FlameGraphQuery{}); err == nil || !strings.Contains(err.Error(), "Client.Timeout") {
			t.Fatalf("err %v, want the store's failure", err)
		}
	}
	if n := store.reads.Load(); n != 1 {
		t.Errorf("the failed store was asked %d times, want once", n)
	}
	// A read its caller cancelled is not the store's failure.
	fresh := &slowProfiles{}
	p, _ = TraceSources{Profiles: Ready[Profiles](fresh)}.Shared().Profiles.Get()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = p.MergedFlameGraph(cancelled, models.FlameGraphQuery{})
	_, _ = p.MergedFlameGraph(context.Background(), models.FlameGraphQuery{})
	if n := fresh.reads.Load(); n != 2 {
		t.Errorf("after a cancelled read the store was asked %d times in all, want 2", n)
	}
}
