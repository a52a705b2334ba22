package correlate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// Shared is s with the reads that many joins of one query have in common made once, for the
// joins of that query only (nothing outlives it):
//   - the lever's reads (the service's GPUs, memory, engine and p99 over the panel's range),
//     the same for every request of an endpoint;
//   - the GPU series of a trace's hosts over its window, when another request asks the same.
//
// A request's own reads stay its own: read over a wider window (a block of minutes shared by
// the requests in it), the GPU series of an hour's tail held every block's samples until its
// last request was joined (52 MB for 30 requests against 14 MB) and asked Prometheus for more
// samples than the requests' windows hold.
//
// A read that fails fails every join that shares it, once; and a store that fails one read
// (the profile store, the engines' and containers' metrics, the GPUs') answers every later read
// of the query with that failure at once: a store that is down or slow costs one timeout, not one
// per round of requests.
func (s TraceSources) Shared() TraceSources {
	if g, err := s.GPUs.Get(); err == nil {
		s.GPUs = Ready[GPUFigures](&sharedTraceGPUs{store: g})
	}
	if p, err := s.Profiles.Get(); err == nil {
		s.Profiles = Ready[Profiles](&trippingProfiles{store: p})
	}
	if e, err := s.Engines.Get(); err == nil {
		s.Engines = Ready[Engines](&trippingEngines{store: e})
	}
	if c, err := s.Containers.Get(); err == nil {
		s.Containers = Ready[Containers](&trippingContainers{store: c})
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

// sharedTraceGPUs shares the joins' reads of the very same window, and stops asking a store that
// failed.
type sharedTraceGPUs struct {
	store   GPUFigures
	reads   once[gpuRead]
	breaker breaker
}

func (b *sharedTraceGPUs) GPUFigures(ctx context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	key := fmt.Sprintf("%s|%d|%d|%d", filterKey(filter), start.UnixNano(), end.UnixNano(), step)
	r, err := b.reads.do(ctx, key, func(ctx context.Context) (r gpuRead, err error) {
		err = b.breaker.call(ctx, func() error {
			r.series, r.notes, err = b.store.GPUFigures(ctx, filter, start, end, step)
			return err
		})
		return r, err
	})
	return r.series, r.notes, err
}

// breaker keeps a store's first failure of a query: the reads after it get that failure at once
// rather than each waiting for its own. A read cancelled by its caller's context is not the
// store's failure.
type breaker struct {
	mu  sync.Mutex
	err error
}

func (b *breaker) call(ctx context.Context, read func() error) error {
	b.mu.Lock()
	failed := b.err
	b.mu.Unlock()
	if failed != nil {
		return failed
	}
	err := read()
	if err != nil && ctx.Err() == nil {
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	return err
}

type trippingProfiles struct {
	store Profiles
	breaker
}

func (t *trippingProfiles) MergedFlameGraph(ctx context.Context, q models.FlameGraphQuery) (tree *flamegraph.Node, err error) {
	err = t.call(ctx, func() error {
		tree, err = t.store.MergedFlameGraph(ctx, q)
		return err
	})
	return tree, err
}

type trippingEngines struct {
	store Engines
	breaker
}

func (t *trippingEngines) EngineFigures(ctx context.Context, q models.EngineQuery) (f models.EngineFigures, err error) {
	err = t.call(ctx, func() error {
		f, err = t.store.EngineFigures(ctx, q)
		return err
	})
	return f, err
}

type trippingContainers struct {
	store Containers
	breaker
}

func (t *trippingContainers) ContainerCPU(ctx context.Context, q models.ContainerQuery) (c models.ContainerCPU, err error) {
	err = t.call(ctx, func() error {
		c, err = t.store.ContainerCPU(ctx, q)
		return err
	})
	return c, err
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
