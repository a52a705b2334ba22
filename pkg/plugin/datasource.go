// Package plugin is the glue between Grafana and the plugin's packages: the data source
// instance, QueryData, CheckHealth and CallResource. Logic lives in the other packages.
package plugin

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/nvml"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/prometheus"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/selfprofile"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// PluginID is the id in plugin.json.
const PluginID = "hsi-profiling-datasource"

var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ backend.CallResourceHandler   = (*Datasource)(nil)
	_ instancemgmt.InstanceDisposer = (*Datasource)(nil)
)

// Datasource is one instance per data source settings: one HTTP client per configured upstream.
type Datasource struct {
	settings *models.Settings

	// nil when the upstream is not configured or its settings are invalid (see unavailable).
	pyroscope  *pyroscope.Client
	prometheus *prometheus.Client
	jaeger     *jaeger.Client
	// nvml is the host's GPUs (gpuLocal), nil unless jsonData.nvmlEnabled; it starts on first use.
	nvml nvml.Source
	// kernels is the GPU kernel trace files of jsonData.traceDirectories, nil when none is set.
	kernels *gputrace.Store

	httpClients []*upstream.HTTPClient
	queries     *datasource.QueryTypeMux
	resources   backend.CallResourceHandler
}

// NewDatasource is the instance factory datasource.Manage calls for each settings version.
func NewDatasource(_ context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	settings, err := models.LoadSettings(s)
	if err != nil {
		return nil, err
	}
	ds := &Datasource{settings: settings}
	for _, u := range settings.Upstreams() {
		if !u.Configured() || u.Err != nil {
			continue
		}
		hc, err := upstream.NewHTTPClient(*u)
		if err != nil {
			u.Err = err
			continue
		}
		ds.httpClients = append(ds.httpClients, hc)
		switch u.Name {
		case models.Pyroscope:
			ds.pyroscope = pyroscope.New(*u, hc.Client)
		case models.Prometheus:
			if ds.prometheus, err = prometheus.New(*u, hc.Client); err != nil {
				u.Err = err
			}
		case models.Jaeger:
			ds.jaeger = jaeger.New(*u, hc.Client)
		}
	}
	ds.kernels = newKernelStore(settings.Traces)
	if settings.NVMLEnabled && settings.NVMLErr == nil {
		ds.nvml = nvml.New(nvml.Options{})
	}
	if settings.SelfProfilingURL != "" {
		selfprofile.Start(settings.SelfProfilingURL)
	}
	ds.queries = ds.newQueryMux()
	ds.resources = httpadapter.New(ds.newResourceMux())
	return ds, nil
}

// Dispose closes the upstream clients' idle connections and stops the NVML sampler; Grafana calls it when the settings
// change or the data source is deleted.
func (d *Datasource) Dispose() {
	for _, hc := range d.httpClients {
		hc.Close()
	}
	if d.nvml != nil {
		d.nvml.Close()
	}
}

// QueryData routes each query by its queryType.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	return d.queries.QueryData(ctx, withModelQueryTypes(req))
}

// CallResource serves the editors' lookups (profile types, upstream state).
func (d *Datasource) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	return d.resources.CallResource(ctx, req, sender)
}
