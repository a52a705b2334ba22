package tempofake

import (
	"strings"
	"testing"
)

// The queries the plugin sends parse; anything beyond the subset is refused as Tempo refuses a
// query it cannot parse, so a new query fails the tests rather than being answered wrongly.
func TestTraceQLSubset(t *testing.T) {
	for _, q := range []string{
		`{ resource.service.name = "api" && name = "GET /" && duration >= 250000000ns } with (most_recent=true)`,
		`{ resource.service.name = "we\"ird" && name = "score" } | select(span.pyroscope.profile.id) with (most_recent=true)`,
		`{ resource.service.name = "api" && status = error } with (most_recent=true)`,
		`{ kind = server && resource.service.name = "api" } | quantile_over_time(duration, 0.5, 0.95, 0.99) by (resource.service.name, name)`,
		`{ kind = server } | count_over_time() by (resource.service.name, name)`,
		`{ }`,
	} {
		if _, err := parseTraceQL(q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		`{ resource.service.name =~ "api.*" }`,
		`{ .http.status_code = 500 }`,
		`{ name = "a" || name = "b" }`,
		`{ name = "a" } >> { name = "b" }`,
		`{ name = "a" } | rate()`,
		`{ name = "a" } with (sample=true)`,
		`{ duration > "1s" }`,
	} {
		if _, err := parseTraceQL(q); err == nil || !strings.HasPrefix(err.Error(), "invalid TraceQL query: parse error") {
			t.Errorf("%s: %v, want a parse error", q, err)
		}
	}
}

// Quantiles are estimated from power-of-two buckets, as Tempo estimates them: within the bucket
// of the true value.
func TestLog2QuantileStaysInTheTrueValuesBucket(t *testing.T) {
	ns := []int64{390e6, 450e6, 900e6, 1200e6}
	for _, tc := range []struct {
		q         float64
		truth, hi float64 // seconds; the estimate is in (truth/2, 2·truth]
	}{{0.5, 0.45, 0.45}, {0.99, 1.2, 1.2}, {0.25, 0.39, 0.39}} {
		got := log2Quantile(tc.q, ns)
		if got <= tc.truth/2 || got > 2*tc.hi {
			t.Errorf("p%v = %v s, want within a factor 2 of %v s", tc.q*100, got, tc.truth)
		}
	}
}
