package testbed

import "testing"

// The notices are the plugin's own (pkg/correlate spanMatchNotice), as the README quotes them.
func TestProfiledInEveryServiceReadsTheWholeRequestNotice(t *testing.T) {
	for notice, want := range map[string]bool{
		"Whole request 4bf9…, matched by span ID: 3 of 3 profiled span(s) had samples, in 3 of 3 service(s) (ai-detector, ai-enrichment, nemotron-backend).": true,
		"Whole request 4bf9…, matched by span ID: 2 of 3 profiled span(s) had samples, in 2 of 3 service(s) (ai-detector, nemotron-backend).":                false,
		"No span of trace 4bf9… has span-profile samples; matched by the trace_id label instead (older SDKs tag samples this way): samples in 1 service(s).": false,
		// Jaeger had not stored the backend's spans yet: every service it holds is profiled, but
		// the request is not whole.
		"Whole request 4bf9…, matched by span ID: 2 of 2 profiled span(s) had samples, in 2 of 2 service(s) (ai-detector, ai-enrichment).": false,
		"": false,
	} {
		if got := ProfiledInEveryService(notice); got != want {
			t.Errorf("ProfiledInEveryService(%q) = %v, want %v", notice, got, want)
		}
	}
}
