package correlate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Runbook 002 (seeds: "GPU Profiling, OOM, and Utilization Runbook") asks four questions of a
// service over a while, and its answers pick one lever:
//
//	memory high                → reduce the envelope, or a larger GPU/MIG profile
//	GPU idle, queue low        → host-side work: client, CPU, tokenizer, IO, serialization
//	GPU idle, queue high       → batching, queue delay, concurrency
//	GPU busy, p99 within SLO   → track headroom and cost
//	GPU busy, p99 over SLO     → admission, scale out, isolate workload classes
//
// Lever answers them for the request's service over the panel's range, from the GPUs the
// request met, its serving engine's queue and the service's latency histogram.

// LatencyFigure is a service's p99 over a range and where it comes from.
type LatencyFigure struct {
	Endpoint string // the endpoint with the highest p99
	P99      time.Duration
	Requests float64 // requests the histogram counted in the range
	Source   string  // the histogram's metric
}

// Thresholds of the runbook's questions.
const (
	memoryHighPct      = 90                     // framebuffer used, percent of the GPU's
	kvCacheHigh        = 0.9                    // vLLM's KV cache usage
	queueHighWaiting   = 1                      // requests waiting in the engine, on average
	queueHighTime      = 100 * time.Millisecond // queue time per request, on average
	leverSamplesPerRun = 120                    // GPU readings per GPU over the range
)

// Lever is runbook 002's answer for one service over a range.
type Lever struct {
	Service    string
	Start, End time.Time
	// Answers are the four questions' answers in words with their figures and sources ("GPU
	// idle: compute 12% (DCGM_FI_PROF_SM_ACTIVE) on average over gpu-node-1 GPU 0").
	Answers []string
	// Name is the lever in the runbook's words, Action what it means doing.
	Name, Action string
	// Unknown lists the questions no store could answer, and what would answer them.
	Unknown []string
}

// LeverRequest is what the lever needs of the request, known once its trace is read: its
// service (the root span's), its hosts (their GPUs stand for the service's) and its first
// serving-engine span.
type LeverRequest struct {
	Service string
	Hosts   []string
	Engine  *models.EngineQuery
}

// leverRequest reads the lever's request from the trace.
func leverRequest(t *models.Trace, tree *models.SpanTree, join models.SpanMatch, engines []EngineSpan) (LeverRequest, bool) {
	root := tree.Root(t)
	if root < 0 {
		return LeverRequest{}, false
	}
	r := LeverRequest{Service: t.Spans[root].Service, Hosts: TraceHosts(t, join)}
	if len(engines) > 0 {
		q := engines[0].Query
		r.Engine = &q
	}
	return r, true
}

// LeverOf answers runbook 002 for the request's service over [start, end], asking the stores in
// parallel (and in parallel with the rest of the trace join, so a slow store costs its timeout
// once). A store that fails or is missing leaves its question unknown, and the lever is
// "unknown" when the questions it needs are; nil without a GPU store or a range.
func LeverOf(ctx context.Context, src LeverSources, req LeverRequest, th classify.Thresholds, slo time.Duration, start, end time.Time) *Lever {
	if !end.After(start) || !src.GPUs.Ready() || req.Service == "" {
		return nil // the runbook's first question is the GPU's; without a GPU store, no lever
	}
	l := &Lever{Service: req.Service, Start: start, End: end}
	filter := models.GPUFilter{Hosts: req.Hosts}
	step := max(end.Sub(start)/leverSamplesPerRun, time.Second).Truncate(time.Second)

	var (
		compute, fbMax       = math.NaN(), math.NaN()
		computeFrom, gpuText string
		gpuErr, memErr       error
		engine               *models.EngineFigures
		engineErr            error
		lat                  LatencyFigure
		latErr               error
	)
	fanOut(4, func(i int) {
		switch {
		case i == 0 && len(filter.Hosts) > 0:
			gpus, _ := src.GPUs.Get()
			var series []classify.GPUSeries
			computeOnly := filter
			computeOnly.Figures = classify.ComputeFigures // the lever reads the compute figure only
			series, _, gpuErr = gpus.GPUFigures(ctx, computeOnly, start, end, step)
			compute, computeFrom, gpuText = meanCompute(series)
		case i == 1 && src.Memory.Ready() && len(filter.Hosts) > 0:
			memory, _ := src.Memory.Get()
			var res *models.GPUMetricResult
			res, memErr = memory.GPUMetric(ctx, "fb_used_percent", filter, models.AggregationGPU, start, end, step)
			if res != nil {
				fbMax = maxValue(res.Series)
			}
		case i == 2 && src.Engines.Ready() && req.Engine != nil:
			engines, _ := src.Engines.Get()
			q := *req.Engine
			q.Start, q.End = start, end
			var f models.EngineFigures
			f, engineErr = engines.EngineFigures(ctx, q)
			engine = &f
		case i == 3 && src.Latency.Ready():
			latency, _ := src.Latency.Get()
			lat, latErr = latency.ServiceP99(ctx, l.Service, start, end)
		}
	})

	// GPU idle or busy.
	gpuKnown := !math.IsNaN(compute)
	idle := compute < th.IdleBelowPct
	switch {
	case gpuKnown && idle:
		l.Answers = append(l.Answers, fmt.Sprintf("GPU idle: compute %.1f%% (%s) on average over %s, under idleBelowPct %g", compute, computeFrom, gpuText, th.IdleBelowPct))
	case gpuKnown:
		l.Answers = append(l.Answers, fmt.Sprintf("GPU busy: compute %.1f%% (%s) on average over %s", compute, computeFrom, gpuText))
	case gpuErr != nil:
		l.Unknown = append(l.Unknown, fmt.Sprintf("GPU idle or busy: %v", gpuErr))
	default:
		l.Unknown = append(l.Unknown, "GPU idle or busy: no DCGM series for the request's hosts (see the span table's GPU notice)")
	}
	// Queue low or high.
	queueKnown, queueHigh := false, false
	var queue []string
	if engine != nil && engineErr == nil {
		for _, f := range engine.Figures {
			switch f.Name {
			case "requests waiting", "pending requests":
				queueKnown = true
				queueHigh = queueHigh || f.Mean >= queueHighWaiting
				queue = append(queue, fmt.Sprintf("%s %.1f on average (%s)", f.Name, f.Mean, f.Metric))
			case "queue time per request":
				queueKnown = true
				queueHigh = queueHigh || f.Mean >= queueHighTime.Seconds()
				queue = append(queue, fmt.Sprintf("%s per request on average (%s)", time.Duration(f.Mean*float64(time.Second)).Round(time.Millisecond), f.Metric))
			}
		}
	}
	switch {
	case queueKnown && queueHigh:
		l.Answers = append(l.Answers, "queue high: "+strings.Join(queue, ", "))
	case queueKnown:
		l.Answers = append(l.Answers, "queue low: "+strings.Join(queue, ", "))
	case engineErr != nil:
		l.Unknown = append(l.Unknown, fmt.Sprintf("queue low or high: %v", engineErr))
	default:
		l.Unknown = append(l.Unknown, "queue low or high: the request met no serving engine whose metrics Prometheus holds (vLLM's vllm:num_requests_waiting, Triton's nv_inference_pending_request_count)")
	}
	// p99 within its threshold or not.
	p99Known := latErr == nil && lat.P99 > 0 && slo > 0
	switch {
	case p99Known:
		rel := "within"
		if lat.P99 > slo {
			rel = "over"
		}
		l.Answers = append(l.Answers, fmt.Sprintf("p99 %s %s the %s threshold (%s, %s, %.0f requests)", lat.P99.Round(time.Millisecond), rel, slo, lat.Source, lat.Endpoint, lat.Requests))
	case latErr != nil:
		l.Unknown = append(l.Unknown, fmt.Sprintf("p99: %v", latErr))
	default:
		l.Unknown = append(l.Unknown, "p99: no latency histogram of "+l.Service+" in the range (jsonData.latencyHistograms)")
	}
	// Memory high.
	memHigh := false
	if !math.IsNaN(fbMax) {
		memHigh = fbMax >= memoryHighPct
		l.Answers = append(l.Answers, fmt.Sprintf("GPU memory up to %.0f%% used (DCGM_FI_DEV_FB_USED / (USED + FREE))", fbMax))
	} else if memErr != nil {
		l.Unknown = append(l.Unknown, fmt.Sprintf("memory: %v", memErr))
	}
	if engine != nil {
		for _, f := range engine.Figures {
			if f.Name == "KV cache usage" {
				memHigh = memHigh || f.Max >= kvCacheHigh
				l.Answers = append(l.Answers, fmt.Sprintf("KV cache up to %.0f%% (%s)", 100*f.Max, f.Metric))
			}
		}
	}

	switch {
	case memHigh:
		l.Name = "the memory envelope"
		l.Action = "memory is near full: reduce the request, batch, instance or KV-cache envelope (max tokens, concurrent sequences), or move to a larger GPU or MIG profile"
	case !gpuKnown:
		return withoutLever(l)
	case idle && queueHigh:
		l.Name = "batching and queue delay"
		l.Action = "the GPU idles while requests queue: improve batching, the queue delay and concurrency (max_num_seqs, dynamic batching, instance count)"
	case idle:
		l.Name = "host-side work"
		l.Action = "the GPU idles and requests do not queue: fix the host side (client, CPU, tokenizer, I/O, serialization)"
		if !queueKnown {
			l.Action += "; no engine queue figures, so a queue before the GPU cannot be ruled out"
		}
	case !p99Known:
		return withoutLever(l)
	case lat.P99 <= slo:
		l.Name = "headroom"
		l.Action = "the GPU is busy and p99 holds: track headroom and cost per request before changing anything"
	default:
		l.Name = "isolating workload classes"
		l.Action = "the GPU is busy and p99 is over its threshold: admission control, scale out, or separate latency-sensitive from batch and long-context work"
	}
	return l
}

func withoutLever(l *Lever) *Lever {
	l.Name = "unknown"
	l.Action = "runbook 002 needs the GPU's state (and p99 when the GPU is busy) to pick a lever"
	return l
}

// meanCompute is the mean compute figure of every reading of every GPU, which figure it is, and
// the GPUs in words.
func meanCompute(series []classify.GPUSeries) (mean float64, from, gpus string) {
	var sum float64
	var n int
	byHost := map[string][]string{}
	for _, s := range series {
		byHost[s.GPU.Host] = append(byHost[s.GPU.Host], s.GPU.OnHost())
		for _, smp := range s.Samples {
			v, src := classify.Compute(smp.Figures)
			if math.IsNaN(v) {
				continue
			}
			sum += v
			n++
			from = src
		}
	}
	if n == 0 {
		return math.NaN(), "", ""
	}
	var names []string
	for _, h := range slices.Sorted(maps.Keys(byHost)) {
		names = append(names, h+" "+strings.Join(byHost[h], ", "))
	}
	return sum / float64(n), from, strings.Join(names, "; ")
}

func maxValue(series []models.GPUMetricSeries) float64 {
	m := math.NaN()
	for _, s := range series {
		for _, v := range s.Values {
			if !math.IsNaN(v) && (math.IsNaN(m) || v > m) {
				m = v
			}
		}
	}
	return m
}

// ServiceLatencies answers a service's p99 from the latency histograms slowRequests reads (Store,
// nil without Prometheus), else from the trace store's metrics (Traces, where it has them): the
// highest p99 among the service's endpoints over the range.
type ServiceLatencies struct {
	Store      Latencies
	Histograms []models.LatencyHistogram
	Traces     Source[TraceLatencies]
}

// ServiceP99 is the highest p99 among the service's endpoints over the range.
func (s ServiceLatencies) ServiceP99(ctx context.Context, service string, start, end time.Time) (LatencyFigure, error) {
	var res models.LatencyResult
	err := errors.New("no latency histograms are read (Prometheus is not configured)")
	if s.Store != nil {
		res, err = s.Store.EndpointLatencies(ctx, models.LatencyQuery{
			Histograms: s.Histograms, Service: service, End: end, Range: end.Sub(start),
		})
	}
	if (err != nil || len(res.Rows) == 0) && s.Traces.Ready() {
		if fromTraces, terr := latencyFromTraces(ctx, s.Traces, service, "", start, end); terr == nil && len(fromTraces.Rows) > 0 {
			res, err = fromTraces, nil
		}
	}
	if err != nil {
		return LatencyFigure{}, err
	}
	p99 := slices.Index(models.LatencyQuantiles, 0.99)
	var best LatencyFigure
	for _, r := range res.Rows {
		v := r.Quantiles[p99]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if d := time.Duration(v * float64(time.Second)); d > best.P99 {
			best = LatencyFigure{Endpoint: r.Endpoint, P99: d, Requests: r.Requests, Source: r.Metric}
		}
	}
	if best.P99 == 0 {
		return best, fmt.Errorf("no latency histogram (nor the trace store's metrics) of %s has requests in the range", service)
	}
	return best, nil
}
