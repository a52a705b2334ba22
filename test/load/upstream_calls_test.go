//go:build integration

package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// upstreamCalls counts the queries the bed's Prometheus and Pyroscope have answered, by server
// and endpoint ("Prometheus query_range", "Pyroscope SelectMergeSpanProfile"), from their own
// metrics: what the plugin asked of them, and what they spend their CPU on under load (with the
// demo's own traffic, which writes and does not query). Jaeger's query server keeps no such
// counter.
type upstreamCalls map[string]float64

// readUpstreamCalls reads both servers' counters: Prometheus' prometheus_http_requests_total of
// its /api/v1 handlers, Pyroscope's pyroscope_request_duration_seconds of its querier routes.
func readUpstreamCalls(ctx context.Context) (upstreamCalls, error) {
	calls := upstreamCalls{}
	for _, src := range []struct {
		name, url, family, label, prefix string
	}{
		{"Prometheus", bed.PrometheusURL, "prometheus_http_requests_total", "handler", "/api/v1/"},
		{"Pyroscope", bed.PyroscopeURL, "pyroscope_request_duration_seconds", "route", "querier_v1_querierservice_"},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.url+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%s's metrics: %w", src.name, err)
		}
		f, ok := families[src.family]
		if !ok {
			return nil, fmt.Errorf("%s's metrics lack %s", src.name, src.family)
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != src.label || !strings.HasPrefix(l.GetValue(), src.prefix) {
					continue
				}
				n := m.GetCounter().GetValue()
				if h := m.GetHistogram(); h != nil {
					n = float64(h.GetSampleCount())
				}
				calls[src.name+" "+strings.TrimPrefix(l.GetValue(), src.prefix)] += n
			}
		}
	}
	return calls, nil
}

// since is what was answered between before and c.
func (c upstreamCalls) since(before upstreamCalls) upstreamCalls {
	out := upstreamCalls{}
	for k, n := range c {
		if d := n - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// text says the calls per server, its endpoints by count: "Prometheus 1530 (query_range 908,
// query 308, ...); Pyroscope 497 (selectmergespanprofile 273, ...)".
func (c upstreamCalls) text() string {
	var parts []string
	for _, server := range []string{"Prometheus", "Pyroscope"} {
		type ep struct {
			name string
			n    float64
		}
		var eps []ep
		total := 0.0
		for k, n := range c {
			if name, ok := strings.CutPrefix(k, server+" "); ok {
				eps = append(eps, ep{name, n})
				total += n
			}
		}
		sort.Slice(eps, func(i, j int) bool { return eps[i].n > eps[j].n || eps[i].n == eps[j].n && eps[i].name < eps[j].name })
		var each []string
		for _, e := range eps {
			each = append(each, fmt.Sprintf("%s %.0f", e.name, e.n))
		}
		parts = append(parts, fmt.Sprintf("%s %.0f (%s)", server, total, strings.Join(each, ", ")))
	}
	return strings.Join(parts, "; ")
}
