package plugin

import (
	"errors"
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/nvml"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/prometheus"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

// One accessor per source: the client, or the reason it cannot be used (not configured, invalid
// settings), filed as the user's to fix. Handlers ask here and never read the fields directly.

// unavailable explains why an upstream cannot be used, or returns nil when it can.
func (d *Datasource) unavailable(u *models.Upstream) error {
	if !u.Configured() {
		return backend.DownstreamError(fmt.Errorf("%s is not configured: set its URL (jsonData.%sUrl) in the data source settings", u.Name, u.Key))
	}
	if u.Err != nil {
		return backend.DownstreamError(u.Err)
	}
	return nil
}

// pyroscopeClient is the Pyroscope client, or why there is none.
func (d *Datasource) pyroscopeClient() (*pyroscope.Client, error) {
	if err := d.unavailable(&d.settings.Pyroscope); err != nil {
		return nil, err
	}
	return d.pyroscope, nil
}

// jaegerClient is the Jaeger client, or why there is none.
func (d *Datasource) jaegerClient() (*jaeger.Client, error) {
	if err := d.unavailable(&d.settings.Jaeger); err != nil {
		return nil, err
	}
	return d.jaeger, nil
}

// prometheusClient is the Prometheus client for non-GPU queries (latencies, health), or why
// there is none; GPU queries use gpuPrometheus.
func (d *Datasource) prometheusClient() (*prometheus.Client, error) {
	if err := d.unavailable(&d.settings.Prometheus); err != nil {
		return nil, err
	}
	return d.prometheus, nil
}

// gpuPrometheus is the Prometheus client for GPU queries, with the data source's DCGM names
// applied, or the reason there is none: Prometheus not configured or invalid, or invalid GPU
// settings. Every GPU query type (gpuMetrics, gpuClass, the request join) gets its client here:
//
//	prom, err := d.gpuPrometheus()
//	series, notices, err := prom.GPUFigures(ctx, filter, from, to, step)
func (d *Datasource) gpuPrometheus() (*prometheus.Client, error) {
	if err := d.unavailable(&d.settings.Prometheus); err != nil {
		return nil, err
	}
	if d.settings.GPUSettingsErr != nil {
		return nil, backend.DownstreamError(fmt.Errorf("invalid GPU settings: %w", d.settings.GPUSettingsErr))
	}
	if d.prometheus == nil {
		return nil, errors.New("the Prometheus client was not created although its settings are valid")
	}
	return d.prometheus.WithDCGM(d.settings.DCGM), nil
}

// nvmlOffMessage answers gpuLocal queries while jsonData.nvmlEnabled is off.

// localGPUs explains why the gpuLocal query cannot run, or returns the instance's sampler.
func (d *Datasource) localGPUs() (nvml.Source, error) {
	if d.settings.NVMLErr != nil {
		return nil, backend.DownstreamError(d.settings.NVMLErr)
	}
	if !d.settings.NVMLEnabled || d.nvml == nil {
		return nil, backend.DownstreamError(errors.New(nvmlOffMessage))
	}
	return d.nvml, nil
}

// traceDirsOffMessage answers kernels queries while no trace directory is configured.
const traceDirsOffMessage = "GPU kernel traces: jsonData.traceDirectories is not configured for this data source: add a directory under \"GPU kernel traces\" in its settings (jsonData.traceDirectories, a list of absolute paths such as the seeds' PYTORCH_PROFILE_DIR)"

// newKernelStore is the store of the configured trace directories, nil while they are invalid
// or none is configured (traceDirs says why).
func newKernelStore(ts models.TraceSettings) *gputrace.Store {
	if ts.Err != nil || len(ts.Directories) == 0 {
		return nil
	}
	return gputrace.NewStore(ts.Directories, ts.MaxFiles, ts.MaxFileBytes)
}

// traceDirs explains why the kernels query cannot run, or returns the instance's trace store.
func (d *Datasource) traceDirs() (*gputrace.Store, error) {
	ts := d.settings.Traces
	if ts.Err != nil {
		return nil, backend.DownstreamError(fmt.Errorf("invalid GPU kernel trace settings: %w", ts.Err))
	}
	if len(ts.Directories) == 0 || d.kernels == nil {
		return nil, backend.DownstreamError(errors.New(traceDirsOffMessage))
	}
	return d.kernels, nil
}
