package main

import (
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

func TestValuesAreShownInTheirUnitsRounded(t *testing.T) {
	one := uint16(0)
	for _, c := range []struct {
		v        float64
		unit     string
		decimals *uint16
		want     string
	}{
		{280000000, "ns", nil, "280 ms"},
		{1.3050042596767812, "s", nil, "1.31 s"},
		{1305.0042596767812, "ms", nil, "1.31 s"},
		{574.623857, "ms", nil, "575 ms"},
		{74.78452, "ms", nil, "74.8 ms"},
		{0.621, "ms", nil, "621 µs"},
		{0, "ms", nil, "0 ms"},
		{90, "s", nil, "1.5 min"},
		{0.41839264017918976, "percentunit", nil, "41.8%"},
		{1, "percentunit", nil, "100%"},
		{0.000826, "percentunit", nil, "0.08%"},
		{9.6e-07, "percentunit", nil, "<0.01%"},
		{34.287800000000004, "percent", nil, "34.3%"},
		{59, "percent", &one, "59%"},
		{2.223064147e+09, "Bps", nil, "2.22 GB/s"},
		{1536, "bytes", nil, "1.5 KiB"},
		{81920, "mbytes", nil, "80 GiB"},
		{13200000, "short", nil, "13.2 Mil"},
		{512, "short", nil, "512"},
		{1410, "rotmhz", nil, "1.41 GHz"},
		{65, "celsius", nil, "65 °C"},
		{0.456, "reqps", nil, "0.456 req/s"},
		{34.287800000000004, "", nil, "34.3"},
		{2223064147, "", nil, "2223064147"},
		{0.000123456, "", nil, "0.000123"},
		{7, "widgets", nil, "7 widgets"},
	} {
		if got := formatValue(c.v, c.unit, c.decimals); got != c.want {
			t.Errorf("formatValue(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestCellsReadEveryFieldType(t *testing.T) {
	cpu := int64(240000000)
	at := time.Date(2026, 11, 24, 2, 4, 55, 152000000, time.Local)
	f := data.NewFrame("t",
		data.NewField("depth", nil, []int64{3}),
		data.NewField("cpu", nil, []*int64{&cpu}).SetConfig(&data.FieldConfig{Unit: "ns"}),
		data.NewField("alloc", nil, []*int64{nil}).SetConfig(&data.FieldConfig{Unit: "bytes"}),
		data.NewField("mask", nil, []int64{4}).SetConfig(&data.FieldConfig{Unit: "hex0x"}),
		data.NewField("start", nil, []time.Time{at}),
		data.NewField("evidence", nil, []string{"two\nlines"}),
	)
	want := []string{"3", "240 ms", "", "0x4", "2026-11-24 02:04:55.152", "two lines"}
	for j, field := range f.Fields {
		if got := cell(field, 0); got != want[j] {
			t.Errorf("%s: %q, want %q", field.Name, got, want[j])
		}
	}
}
