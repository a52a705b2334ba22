package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// roundTrip passes frames through Arrow, as they reach hsi-query from the plugin binary.
func roundTrip(t *testing.T, fs ...*data.Frame) []*data.Frame {
	t.Helper()
	raw, err := data.Frames(fs).MarshalArrow()
	if err != nil {
		t.Fatal(err)
	}
	out, err := data.UnmarshalArrowFrames(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkWidth(t *testing.T, out string, width int) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > width {
			t.Errorf("line of %d characters, wider than %d: %q", n, width, line)
		}
	}
}

func TestTablesShowDisplayNamesUnitsAndNoTypeRows(t *testing.T) {
	f := roundTrip(t, data.NewFrame("breakdown",
		data.NewField("part", nil, []string{"CPU in nemotron-backend", "queued in nemotron-llm"}),
		data.NewField("duration", nil, []float64{280.000001, 1305.0042596767812}).SetConfig(&data.FieldConfig{Unit: "ms", DisplayNameFromDS: "time"}),
		data.NewField("share", nil, []float64{0.176, 0.8241}).SetConfig(&data.FieldConfig{Unit: "percentunit"}),
		data.NewField("link", nil, []string{"/explore?x", "/explore?y"}).SetConfig(&data.FieldConfig{Custom: map[string]any{"hidden": true}}),
	))[0]
	var b bytes.Buffer
	printFrameTable(&b, f, 20, 120, nil)
	out := b.String()
	for _, want := range []string{"breakdown: 2 rows", "time", "280 ms", "1.31 s", "17.6%", "82.4%"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"Type:", "[]float64", "Name:", "280000", "1.305004", "/explore", "link"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("%q in\n%s", unwanted, out)
		}
	}
	checkWidth(t, out, 120)
}

func TestWideTablesAreCutToTheWidthKeepingIdentifiersWhole(t *testing.T) {
	id := "4bf92f3577b34da6a3ce929d0e0e4736"
	long := strings.Repeat("critical path less the span profiles' CPU ", 4)
	f := data.NewFrame("slow traces",
		data.NewField("traceID", nil, []string{id}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Trace ID"}),
		data.NewField("services", nil, []string{long}),
		data.NewField("source", nil, []string{long}),
		data.NewField("duration", nil, []float64{437}).SetConfig(&data.FieldConfig{Unit: "ms"}),
	)
	var b bytes.Buffer
	printFrameTable(&b, f, 20, 80, nil)
	out := b.String()
	checkWidth(t, out, 80)
	for _, want := range []string{id, "…", "437 ms", "Trace ID"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

func TestTablesTooWideForColumnsBecomeRecords(t *testing.T) {
	var fields []*data.Field
	for _, name := range []string{"compute-bound", "memory-bound", "pcie-bound", "thermal-throttled", "power-throttled", "idle", "balanced", "no data"} {
		fields = append(fields, data.NewField(name, nil, []float64{0.129}).SetConfig(&data.FieldConfig{Unit: "percentunit"}))
	}
	evidence := "memory bandwidth 92.7% (DCGM_FI_PROF_DRAM_ACTIVE 0.741 / dramActivePeak 0.80) > memoryBoundPct 70"
	fields = append(fields, data.NewField("evidence", nil, []string{evidence}))
	var b bytes.Buffer
	printFrameTable(&b, data.NewFrame("GPU class summary", fields...), 20, 60, nil)
	out := b.String()
	checkWidth(t, out, 60)
	for _, want := range []string{"-- row 1", "thermal-throttled:", "12.9%", "dramActivePeak"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "…") {
		t.Errorf("a record cuts nothing:\n%s", out)
	}
}

func TestRowsAreLimitedAndSaySo(t *testing.T) {
	f := data.NewFrame("latency", data.NewField("p99", nil, []float64{1, 2, 3, 4, 5}).SetConfig(&data.FieldConfig{Unit: "s"}))
	var b bytes.Buffer
	printFrameTable(&b, f, 2, 120, nil)
	if out := b.String(); !strings.Contains(out, "first 2 of 5 rows") || strings.Contains(out, "3 s") {
		t.Errorf("want the first 2 of 5 rows:\n%s", out)
	}
}
