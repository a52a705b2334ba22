package correlate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// SharedGPUBlock is the length of the blocks the shared GPU reads fetch: the joins of requests
// that fall in one block read its series once. At the join's one-second step a block is 600
// samples per series, far under Prometheus' 11,000-point limit.
const SharedGPUBlock = 10 * time.Minute

// Shared is s with the reads that many joins of one query have in common made once, for the
// joins of that query only (nothing outlives it):
//   - the lever's reads (the service's GPUs, memory, engine and p99 over the panel's range),
//     the same for every request of an endpoint;
//   - the GPU series of the trace's hosts, read in SharedGPUBlock blocks aligned to the clock,
//     so the requests of one block share a read. A span's GPU figures are cut from the series
//     by its own window, so the wider read changes none of them.
//
// A read that fails fails every join that shares it, once: a store that is down costs one
// timeout, not one per request.
func (s TraceSources) Shared() TraceSources {
	if g, err := s.GPUs.Get(); err == nil {
		s.GPUs = Ready[GPUFigures](&blockGPUs{store: g})
	}
	if g, err := s.Lever.GPUs.Get(); err == nil {
		s.Lever.GPUs = Ready[GPUFigures](&sharedGPUs{store: g})
	}
	if m, err := s.Lever.Memory.Get(); err == nil {
		s.Lever.Memory = Ready[GPUMetrics](&sharedMemory{store: m})
	}
	if e, err := s.Lever.Engines.Get(); err == nil {
		s.Lever.Engines = Ready[Engines](&sharedEngines{store: e})
	}
	if l, err := s.Lever.Latency.Get(); err == nil {
		s.Lever.Latency = Ready[ServiceLatency](&sharedLatency{store: l})
	}
	return s
}

// once runs each key's read once: later callers wait for the first one's answer (or their own
// context's end) and get the same values, which they only read.
type once[V any] struct {
	mu    sync.Mutex
	calls map[string]*onceCall[V]
}

type onceCall[V any] struct {
	done chan struct{}
	v    V
	err  error
}

func (o *once[V]) do(ctx context.Context, key string, read func(context.Context) (V, error)) (V, error) {
	o.mu.Lock()
	if o.calls == nil {
		o.calls = map[string]*onceCall[V]{}
	}
	if c, ok := o.calls[key]; ok {
		o.mu.Unlock()
		select {
		case <-c.done:
			return c.v, c.err
		case <-ctx.Done():
			var none V
			return none, ctx.Err()
		}
	}
	c := &onceCall[V]{done: make(chan struct{}), err: safe.ErrPanicked}
	o.calls[key] = c
	o.mu.Unlock()
	// A read that panics leaves ErrPanicked for those waiting; the panic goes on to the caller's
	// own recovery.
	defer close(c.done)
	c.v, c.err = read(ctx)
	return c.v, c.err
}

// gpuRead is GPUFigures' answer.
type gpuRead struct {
	series []classify.GPUSeries
	notes  notices.List
}

func filterKey(f models.GPUFilter) string { return fmt.Sprintf("%q", f) }

// blockGPUs widens each read to whole SharedGPUBlock blocks and shares them.
type blockGPUs struct {
	store GPUFigures
	reads once[gpuRead]
}

func (b *blockGPUs) GPUFigures(ctx context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	from := start.Truncate(SharedGPUBlock)
	to := end.Truncate(SharedGPUBlock).Add(SharedGPUBlock)
	key := fmt.Sprintf("%s|%d|%d|%d", filterKey(filter), from.UnixNano(), to.UnixNano(), step)
	r, err := b.reads.do(ctx, key, func(ctx context.Context) (gpuRead, error) {
		series, notes, err := b.store.GPUFigures(ctx, filter, from, to, step)
		return gpuRead{series, notes}, err
	})
	return r.series, r.notes, err
}

// sharedGPUs shares reads of the very same range.
type sharedGPUs struct {
	store GPUFigures
	reads once[gpuRead]
}

func (s *sharedGPUs) GPUFigures(ctx context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	key := fmt.Sprintf("%s|%d|%d|%d", filterKey(filter), start.UnixNano(), end.UnixNano(), step)
	r, err := s.reads.do(ctx, key, func(ctx context.Context) (gpuRead, error) {
		series, notes, err := s.store.GPUFigures(ctx, filter, start, end, step)
		return gpuRead{series, notes}, err
	})
	return r.series, r.notes, err
}

type sharedMemory struct {
	store GPUMetrics
	reads once[*models.GPUMetricResult]
}

func (s *sharedMemory) GPUMetric(ctx context.Context, name string, filter models.GPUFilter, aggregation string, start, end time.Time, step time.Duration) (*models.GPUMetricResult, error) {
	key := fmt.Sprintf("%q|%s|%q|%d|%d|%d", name, filterKey(filter), aggregation, start.UnixNano(), end.UnixNano(), step)
	return s.reads.do(ctx, key, func(ctx context.Context) (*models.GPUMetricResult, error) {
		return s.store.GPUMetric(ctx, name, filter, aggregation, start, end, step)
	})
}

type sharedEngines struct {
	store Engines
	reads once[models.EngineFigures]
}

func (s *sharedEngines) EngineFigures(ctx context.Context, q models.EngineQuery) (models.EngineFigures, error) {
	key := fmt.Sprintf("%q|%q|%d|%d", q.Engine, q.Model, q.Start.UnixNano(), q.End.UnixNano())
	return s.reads.do(ctx, key, func(ctx context.Context) (models.EngineFigures, error) { return s.store.EngineFigures(ctx, q) })
}

type sharedLatency struct {
	store ServiceLatency
	reads once[LatencyFigure]
}

func (s *sharedLatency) ServiceP99(ctx context.Context, service string, start, end time.Time) (LatencyFigure, error) {
	key := fmt.Sprintf("%q|%d|%d", service, start.UnixNano(), end.UnixNano())
	return s.reads.do(ctx, key, func(ctx context.Context) (LatencyFigure, error) { return s.store.ServiceP99(ctx, service, start, end) })
}
