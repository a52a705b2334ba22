package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/prometheus"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/tempo"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// healthWindow is how far back the Pyroscope check looks for profile types.
const healthWindow = 24 * time.Hour

// upstreamHealth is one upstream's line in the health message.
type upstreamHealth struct {
	Upstream   string `json:"upstream"`
	Configured bool   `json:"configured"`
	OK         bool   `json:"ok"`
	Message    string `json:"message"`
}

// CheckHealth makes one cheap real call per configured upstream, in parallel, and names each
// upstream with its result. The status is OK only when every configured upstream answered.
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	ups := d.settings.Upstreams()
	results := make([]upstreamHealth, len(ups))
	answers := make([]string, len(ups))
	errs := safe.ForEach("health check", len(ups), 0, func(i int) (err error) {
		if u := ups[i]; u.Configured() && d.invalid.Upstream(u.Name) == nil {
			check, ok := d.healthChecks[u.Name]
			if !ok {
				return fmt.Errorf("the %s client was not created although its settings are valid", u.Name)
			}
			answers[i], err = check(ctx)
		}
		return err
	})
	for i, u := range ups {
		results[i] = upstreamHealth{Upstream: u.Name, Configured: u.Configured()}
		switch {
		case !u.Configured():
			results[i].Message = "not configured"
		case d.invalid.Upstream(u.Name) != nil:
			results[i].Message = d.invalid.Upstream(u.Name).Error()
		case errs[i] != nil:
			results[i].Message = healthCause(errs[i])
		default:
			results[i].OK = true
			results[i].Message = "OK" + answers[i]
		}
	}
	if h, ok := d.traceStoreHealth(); ok {
		results = append(results, h)
	}
	if h, ok := d.nvmlHealth(); ok {
		results = append(results, h)
	}
	results = append(results, d.bucketHealth(ctx)...)

	status := backend.HealthStatusOk
	configured := 0
	lines := make([]string, len(results))
	for i, r := range results {
		lines[i] = r.Upstream + ": " + r.Message
		if r.Configured {
			configured++
			if !r.OK {
				status = backend.HealthStatusError
			}
		}
	}
	msg := strings.Join(lines, " · ")
	if configured == 0 {
		status = backend.HealthStatusError
		msg = "No upstream configured: set at least one of the Pyroscope, Prometheus, Jaeger or Tempo URLs. " + msg
	}
	details, _ := json.Marshal(map[string]any{"upstreams": results})
	return &backend.CheckHealthResult{Status: status, Message: msg, JSONDetails: details}, nil
}

// traceStoreHealth is a line of its own when the trace store cannot be chosen although the user
// set something for it (an unknown jsonData.traceStore, or one naming a store without a URL):
// every upstream may answer, yet no trace would be read.
func (d *Datasource) traceStoreHealth() (upstreamHealth, bool) {
	s := d.settings
	if s.TraceStore == "" && d.invalid.TraceStore == nil {
		return upstreamHealth{}, false
	}
	err := d.invalid.TraceStore
	if err == nil {
		_, err = s.TraceUpstream()
	}
	if err == nil {
		return upstreamHealth{}, false
	}
	return upstreamHealth{Upstream: "Trace store", Configured: true, Message: err.Error()}, true
}

// nvmlHealth is NVML's line, only when jsonData.nvmlEnabled is set (or invalid): the driver
// version and GPU count, or why NVML is unavailable. It starts the instance's sampler.
func (d *Datasource) nvmlHealth() (upstreamHealth, bool) {
	h := upstreamHealth{Upstream: "NVML", Configured: true}
	switch {
	case d.invalid.NVML != nil:
		h.Message = d.invalid.NVML.Error()
	case !d.src.LocalGPUs.Ready():
		return h, false
	default:
		gpus, _ := d.src.LocalGPUs.Get()
		var st models.NVMLStatus
		err := safe.Do("health check of NVML", func() (err error) {
			st, err = gpus.Status()
			return err
		})
		if err != nil {
			h.Message = err.Error()
		} else {
			h.OK = true
			h.Message = fmt.Sprintf("OK (driver %s, %d GPUs)", st.DriverVersion, st.DeviceCount)
		}
	}
	return h, true
}

// bucketHealth is one line per kernel-trace bucket: listed, with the trace objects seen under
// its prefix, or why not; invalid kernel-trace settings are one line of their own.
func (d *Datasource) bucketHealth(ctx context.Context) []upstreamHealth {
	if d.invalid.Kernels != nil {
		return []upstreamHealth{{Upstream: "GPU kernel traces", Configured: true, Message: d.invalid.Kernels.Error()}}
	}
	store, err := d.src.Kernels.Get()
	if err != nil {
		return nil
	}
	var out []upstreamHealth
	for _, c := range store.CheckBuckets(ctx) {
		h := upstreamHealth{Upstream: "bucket " + c.Name, Configured: true}
		switch {
		case c.Err != nil:
			h.Message = strings.TrimPrefix(c.Err.Error(), h.Upstream+": ")
		case c.Truncated:
			h.OK, h.Message = true, fmt.Sprintf("OK (listed; %d trace objects seen, the most recent kept)", c.Objects)
		default:
			h.OK, h.Message = true, fmt.Sprintf("OK (listed; %d trace objects seen)", c.Objects)
		}
		out = append(out, h)
	}
	return out
}

// healthChecks are the cheap calls of the clients that were made: Pyroscope's profile types,
// Prometheus' version, Jaeger's services, Tempo's build and services. A trace store the queries
// do not read says so, so that a user with both URLs set sees which one answers.
func healthChecks(s *models.Settings, pyro *pyroscope.Client, prom *prometheus.Client, jae *jaeger.Client, tem *tempo.Client) map[string]healthCheck {
	checks := map[string]healthCheck{}
	if pyro != nil {
		checks[models.Pyroscope] = func(ctx context.Context) (string, error) {
			now := time.Now()
			types, err := pyro.ProfileTypes(ctx, now.Add(-healthWindow), now)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf(" (%d profile types)", len(types)), nil
		}
	}
	if prom != nil {
		checks[models.Prometheus] = func(ctx context.Context) (string, error) {
			version, err := prom.Version(ctx)
			if err != nil {
				return "", err
			}
			return " (version " + version + ")", nil
		}
	}
	// With both trace stores set, the one the queries do not read says so.
	traceRole := func(name string) string {
		u, err := s.TraceUpstream()
		switch {
		case err != nil || u.Name == name || !s.Jaeger.Configured() || !s.Tempo.Configured():
			return ""
		case s.TraceStore == "":
			return "; not read: with both URLs set, traces are read from Jaeger unless jsonData.traceStore says tempo"
		}
		return "; not read: jsonData.traceStore is " + s.TraceStore
	}
	if jae != nil {
		checks[models.Jaeger] = func(ctx context.Context) (string, error) {
			services, api, err := jae.Services(ctx)
			if err != nil {
				return "", err
			}
			closes := ""
			if jae.ClosesConnections() {
				closes = "; it closes the connection after every reply, so each request opens a new one: " +
					"set extensions.jaeger_query.http.keep_alives_enabled: true in Jaeger's configuration"
			}
			return fmt.Sprintf(" (%d services, API %s%s%s)", len(services), api, traceRole(models.Jaeger), closes), nil
		}
	}
	if tem != nil {
		checks[models.Tempo] = func(ctx context.Context) (string, error) {
			version, err := tem.Version(ctx)
			if err != nil {
				return "", err
			}
			services, _, err := tem.Services(ctx)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf(" (version %s, %d services%s)", version, len(services), traceRole(models.Tempo)), nil
		}
	}
	return checks
}

// healthCause keeps the health line short: the upstream is already named at its start.
func healthCause(err error) string {
	if e, ok := errors.AsType[*upstream.Error](err); ok {
		return e.Cause
	}
	return err.Error()
}
