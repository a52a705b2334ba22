package plugin

import (
	"context"
	"errors"
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/thanos-io/objstore"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/buckets"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/tracestore"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/nvml"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/prometheus"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/tempo"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// The clients are the stores the queries read.
var (
	_ correlate.ProfileStore = (*pyroscope.Client)(nil)
	_ correlate.TraceStore   = (*jaeger.Client)(nil)
	_ correlate.TraceStore   = (*tempo.Client)(nil)
	_ correlate.MetricStore  = (*prometheus.Client)(nil)
	_ correlate.GPUStore     = (*prometheus.Client)(nil)
	_ correlate.KernelStore  = (*tracestore.Store)(nil)
)

// healthCheck makes an upstream's cheap real call and says what follows "OK" in its health line.
type healthCheck func(ctx context.Context) (string, error)

// newSources builds every store of an instance once: its client, or the reason it cannot be
// used (not configured, invalid settings), filed as the user's to fix; a client that cannot be
// made is recorded in bad. It also returns the HTTP clients to close when the instance goes, and
// each made client's health check, by upstream name (both trace stores are checked when both
// are set, whichever the queries read).
func newSources(s *models.Settings, bad *models.Invalid) (correlate.Sources, []*upstream.HTTPClient, map[string]healthCheck) {
	var (
		src     correlate.Sources
		clients []*upstream.HTTPClient
		pyro    *pyroscope.Client
		prom    *prometheus.Client
		jae     *jaeger.Client
		tem     *tempo.Client
	)
	for _, u := range s.Upstreams() {
		if !u.Configured() || bad.Upstream(u.Name) != nil {
			continue
		}
		hc, err := upstream.NewHTTPClient(*u)
		if err != nil {
			bad.SetUpstream(u.Name, err)
			continue
		}
		clients = append(clients, hc)
		switch u.Name {
		case models.Pyroscope:
			pyro = pyroscope.New(*u, hc.Client)
		case models.Prometheus:
			if prom, err = prometheus.New(*u, hc.Client); err != nil {
				bad.SetUpstream(u.Name, err)
			} else {
				prom = prom.WithContainers(s.Containers)
			}
		case models.Jaeger:
			jae = jaeger.New(*u, hc.Client)
		case models.Tempo:
			tem = tempo.New(*u, hc.Client)
		}
	}
	src.Profiles = source[correlate.ProfileStore](&s.Pyroscope, bad, pyro)
	src.Traces = traceStore(s, bad, jae, tem)
	src.Metrics = source[correlate.MetricStore](&s.Prometheus, bad, prom)
	switch {
	case !src.Metrics.Ready():
		_, err := src.Metrics.Get()
		src.GPUs = correlate.Unavailable[correlate.GPUStore](err)
	case bad.GPU != nil:
		src.GPUs = correlate.Unavailable[correlate.GPUStore](backend.DownstreamError(fmt.Errorf("invalid GPU settings: %w", bad.GPU)))
	default:
		src.GPUs = correlate.Ready[correlate.GPUStore](prom.WithDCGM(s.DCGM))
	}
	src.Kernels = kernelStore(s.Kernels, bad.Kernels)
	src.LocalGPUs = localGPUs(s, bad.NVML)
	return src, clients, healthChecks(s, pyro, prom, jae, tem)
}

// traceStore is the trace store the settings choose (models.Settings.TraceUpstream), or why
// none can be used.
func traceStore(s *models.Settings, bad *models.Invalid, jae *jaeger.Client, tem *tempo.Client) correlate.Source[correlate.TraceStore] {
	if bad.TraceStore != nil {
		return correlate.Unavailable[correlate.TraceStore](backend.DownstreamError(bad.TraceStore))
	}
	u, err := s.TraceUpstream()
	if err != nil {
		return correlate.Unavailable[correlate.TraceStore](backend.DownstreamError(err))
	}
	if u.Name == models.Tempo {
		return source[correlate.TraceStore](u, bad, tem)
	}
	return source[correlate.TraceStore](u, bad, jae)
}

// source is an upstream's store, or why it cannot be used.
func source[T any, C interface {
	*pyroscope.Client | *jaeger.Client | *tempo.Client | *prometheus.Client
}](u *models.Upstream, bad *models.Invalid, client C) correlate.Source[T] {
	switch {
	case !u.Configured():
		return correlate.Unavailable[T](backend.DownstreamError(fmt.Errorf("%s is not configured: set its URL (jsonData.%sUrl) in the data source settings", u.Name, u.Key)))
	case bad.Upstream(u.Name) != nil:
		return correlate.Unavailable[T](backend.DownstreamError(bad.Upstream(u.Name)))
	case client == nil:
		return correlate.Unavailable[T](fmt.Errorf("the %s client was not created although its settings are valid", u.Name))
	}
	return correlate.Ready(any(client).(T))
}

// errKernelsOff is why the kernel store is unavailable while no trace directory or bucket is
// configured: the kernels query answers it as a notice (an optional source left unset is not an
// error on a dashboard), the editor's file list as an error.
var errKernelsOff = errors.New(traceDirsOffMessage)

// traceDirsOffMessage answers kernels queries while no trace directory is configured.
const traceDirsOffMessage = "GPU kernel traces: jsonData.traceDirectories is not configured for this data source: add a directory under \"GPU kernel traces\" in its settings (jsonData.traceDirectories, a list of absolute paths such as the PYTORCH_PROFILE_DIR of the PyTorch profiler's trace handler), or a bucket (jsonData.kernelBuckets)"

// kernelStore is the store of the configured trace directories and buckets, or why there is
// none. A bucket's client is made on its first use (some providers call the bucket as they
// make it), so no upstream is waited on here.
func kernelStore(ks models.KernelTraceSettings, invalid error) correlate.Source[correlate.KernelStore] {
	switch {
	case invalid != nil:
		return correlate.Unavailable[correlate.KernelStore](backend.DownstreamError(fmt.Errorf("invalid GPU kernel trace settings: %w", invalid)))
	case len(ks.Directories) == 0 && len(ks.Buckets) == 0:
		return correlate.Unavailable[correlate.KernelStore](backend.DownstreamError(errKernelsOff))
	}
	store := tracestore.NewStore(ks.Directories, ks.MaxFiles, ks.MaxFileBytes)
	for _, b := range ks.Buckets {
		store.WithBuckets(tracestore.OpenBucket(b.Name, func(ctx context.Context) (objstore.Bucket, error) {
			return buckets.Open(ctx, b)
		}, tracestore.BucketOptions{Prefix: b.Prefix, Secrets: b.Secrets(), Timeout: b.Timeout()}))
	}
	return correlate.Ready[correlate.KernelStore](store)
}

const nvmlOffMessage = "local GPUs (NVML) are off for this data source: turn on \"Local GPUs (NVML)\" in its settings (jsonData.nvmlEnabled: true); it reads the GPUs of the host Grafana runs on and needs the NVIDIA driver there"

// localGPUs is the host's NVML sampler (it starts on first use), or why there is none.
func localGPUs(s *models.Settings, invalid error) correlate.Source[models.LocalGPUSource] {
	switch {
	case invalid != nil:
		return correlate.Unavailable[models.LocalGPUSource](backend.DownstreamError(invalid))
	case !s.NVMLEnabled:
		return correlate.Unavailable[models.LocalGPUSource](backend.DownstreamError(errors.New(nvmlOffMessage)))
	}
	return correlate.Ready(nvml.New(nvml.Options{}))
}
