// Package plugin is the glue between Grafana and the plugin's packages: the data source
// instance, QueryData, CheckHealth and CallResource. Logic lives in the other packages.
package plugin

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"
	"golang.org/x/sync/singleflight"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/selfprofile"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/tail"
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

// Datasource is one instance per data source settings: its stores, each available or with the
// reason it is not (correlate.Sources), built once.
type Datasource struct {
	settings *models.Settings
	// invalid is what of the settings could not be used; the stores and the queries say so.
	invalid models.Invalid
	src     correlate.Sources

	httpClients []*upstream.HTTPClient
	// healthChecks are the made clients' cheap calls, by upstream name (CheckHealth).
	healthChecks map[string]healthCheck
	queries      *datasource.QueryTypeMux
	resources    backend.CallResourceHandler
	// maxConcurrentQueries bounds the queries of one QueryData call answered at once: Grafana's
	// concurrent_query_limit, as Grafana sends it to every data source.
	maxConcurrentQueries int
	// traceJoins shares one request-level join among the trace queries asking the same request
	// at once: a dashboard's verdict, breakdown and span panels each ask for their own part.
	traceJoins singleflight.Group
	// tailJoins shares one tail among the tail queries asking the same one at once (a
	// dashboard's summary, bar chart and table of an endpoint's tail); tailVerdicts keeps each
	// request's verdict for the next query of the refresh (tail.Verdicts).
	tailJoins    singleflight.Group
	tailVerdicts tail.Verdicts
}

// NewDatasource is the instance factory datasource.Manage calls for each settings version.
func NewDatasource(_ context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	settings, invalid, err := models.LoadSettings(s)
	if err != nil {
		return nil, err
	}
	ds := &Datasource{settings: settings, invalid: invalid}
	ds.src, ds.httpClients, ds.healthChecks = newSources(settings, &ds.invalid)
	if settings.SelfProfilingURL != "" {
		selfprofile.Start(settings.SelfProfilingURL)
	}
	ds.queries = ds.newQueryMux()
	ds.resources = httpadapter.New(ds.newResourceMux())
	return ds, nil
}

// Dispose closes the upstream clients' idle connections and the kernel-trace buckets' clients, and stops the NVML sampler; Grafana calls it when the settings
// change or the data source is deleted.
func (d *Datasource) Dispose() {
	for _, hc := range d.httpClients {
		hc.Close()
	}
	if gpus, err := d.src.LocalGPUs.Get(); err == nil {
		gpus.Close()
	}
	if kernels, err := d.src.Kernels.Get(); err == nil {
		_ = kernels.Close()
	}
}

// QueryData routes each query by its queryType.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	safe.GrowStack()
	return d.queries.QueryData(ctx, withModelQueryTypes(req))
}

// CallResource serves the editors' lookups (profile types, upstream state).
func (d *Datasource) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	safe.GrowStack()
	return d.resources.CallResource(ctx, req, sender)
}
