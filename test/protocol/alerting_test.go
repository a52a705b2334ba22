//go:build integration

package protocol

import (
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
)

// alertModel is a query as an alert rule written by file provisioning, the HTTP API or Terraform
// stores it: queryType only in the model, beside the fields Grafana adds to every rule's model.
func alertModel(fields map[string]any) map[string]any {
	m := map[string]any{
		"refId":         "A",
		"datasource":    map[string]any{"type": "hsi-profiling-datasource", "uid": "hsi-test"},
		"intervalMs":    1000,
		"maxDataPoints": 43200,
	}
	for k, v := range fields {
		m[k] = v
	}
	return m
}

// Grafana's alerting routes by the rule's top-level queryType, which such rules leave empty: the
// plugin must route by the model's, and answer the numeric series a rule's condition reads.
func TestBinaryAnswersAlertRulesWithTheQueryTypeOnlyInTheModel(t *testing.T) {
	if bed.FixtureEnd.IsZero() {
		t.Fatal("the test bed has no GPU fixtures (HSI_TESTBED_FIXTURE_END unset): start it with the demo")
	}
	h, _ := start(t, allUpstreams())
	now := time.Now()
	res, err := h.QueryData(ctx(t),
		pluginhost.Query{RefID: "shares", Alert: true, From: bed.FixtureEnd.Add(-time.Hour), To: bed.FixtureEnd,
			Interval: time.Minute, JSON: alertModel(map[string]any{
				"queryType": "gpuClass", "hosts": []string{gpusim.FixtureHostA}, "format": "shares",
			})},
		pluginhost.Query{RefID: "cpu", Alert: true, From: now.Add(-15 * time.Minute), To: now, JSON: alertModel(map[string]any{
			"queryType": "metrics", "labelSelector": `{service_name="nemotron-backend"}`,
			"profileTypeId": "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
		})},
		pluginhost.Query{RefID: "none", Alert: true, From: now.Add(-time.Minute), To: now, JSON: alertModel(nil)},
	)
	if err != nil {
		t.Fatal(err)
	}
	shares := res.Responses["shares"]
	if shares.Error != "" {
		t.Fatalf("gpuClass shares: %s", shares.Error)
	}
	frames, err := data.UnmarshalArrowFrames(shares.Frames)
	if err != nil {
		t.Fatal(err)
	}
	numeric := 0
	for _, f := range frames {
		if f.Meta == nil || f.Meta.Type != data.FrameTypeTimeSeriesMulti || len(f.Fields) != 2 || f.Fields[1].Type() != data.FieldTypeNullableFloat64 {
			t.Fatalf("share frame %q is not a numeric series an alert condition can read: %v", f.Name, f.Fields)
		}
		for i := range f.Rows() {
			if v, ok := f.Fields[1].ConcreteAt(i); ok && v.(float64) >= 0 && v.(float64) <= 1 {
				numeric++
			}
		}
	}
	if numeric == 0 {
		t.Errorf("gpuClass shares for %s over the fixtures' last hour hold no share in [0, 1]", gpusim.FixtureHostA)
	}
	cpu := res.Responses["cpu"]
	if cpu.Error != "" {
		t.Fatalf("metrics: %s", cpu.Error)
	}
	if series, err := data.UnmarshalArrowFrames(cpu.Frames); err != nil || len(series) == 0 || series[0].Name != "series" || series[0].Rows() == 0 {
		t.Errorf("metrics: %d frames (%v), want the CPU series of the demo backend", len(series), err)
	}
	// Without a queryType anywhere the error still lists the valid ones.
	if none := res.Responses["none"]; !strings.Contains(none.Error, "the query has no queryType: valid query types are both, diff, ") {
		t.Errorf("a rule without queryType: %q", none.Error)
	}
}
