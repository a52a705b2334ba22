package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// cell is one value of a field as Grafana's table would show it: in the field's unit, rounded,
// null as an empty cell.
func cell(f *data.Field, i int) string {
	v, ok := f.ConcreteAt(i)
	if !ok {
		return ""
	}
	unit, decimals := "", (*uint16)(nil)
	if f.Config != nil {
		unit, decimals = f.Config.Unit, f.Config.Decimals
	}
	switch x := v.(type) {
	case string:
		return oneLine(x)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		if x.Nanosecond() == 0 {
			return x.Local().Format("2006-01-02 15:04:05")
		}
		return x.Local().Format("2006-01-02 15:04:05.000")
	case json.RawMessage:
		return oneLine(string(x))
	case data.EnumItemIndex:
		if f.Config != nil && f.Config.TypeConfig != nil && f.Config.TypeConfig.Enum != nil {
			if text := f.Config.TypeConfig.Enum.Text; int(x) < len(text) {
				return text[x]
			}
		}
		return strconv.Itoa(int(x))
	}
	n, isInt, ok := number(v)
	if !ok {
		return oneLine(fmt.Sprint(v))
	}
	if unit == "hex0x" && isInt {
		return fmt.Sprintf("0x%X", int64(n))
	}
	if (unit == "" || unit == "none") && isInt && decimals == nil {
		return strconv.FormatInt(int64(n), 10)
	}
	return formatValue(n, unit, decimals)
}

// number reads any of the frame's numeric types.
func number(v any) (n float64, isInt, ok bool) {
	switch x := v.(type) {
	case int8:
		return float64(x), true, true
	case int16:
		return float64(x), true, true
	case int32:
		return float64(x), true, true
	case int64:
		return float64(x), true, true
	case uint8:
		return float64(x), true, true
	case uint16:
		return float64(x), true, true
	case uint32:
		return float64(x), true, true
	case uint64:
		return float64(x), true, true
	case float32:
		return float64(x), false, true
	case float64:
		return x, false, true
	}
	return 0, false, false
}

// timeUnits are Grafana's time units in seconds; scaled is the ladder a time is shown on.
var timeUnits = map[string]float64{"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}

var timeLadder = []struct {
	seconds float64
	suffix  string
}{{86400, "day"}, {3600, "hour"}, {60, "min"}, {1, "s"}, {1e-3, "ms"}, {1e-6, "µs"}, {1e-9, "ns"}}

// formatValue writes a number in a Grafana unit, scaled to a readable magnitude (280000000 ns is
// "280 ms", 0.42 percentunit "42%") and rounded to about three significant digits, or to the
// field's decimals when it sets them.
func formatValue(v float64, unit string, decimals *uint16) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	round := func(x float64) string {
		if decimals != nil {
			return strconv.FormatFloat(x, 'f', int(*decimals), 64)
		}
		return roundSignificant(x)
	}
	if per, ok := timeUnits[unit]; ok {
		if v == 0 { // in the field's own unit, not "0 ns"
			return "0 " + strings.Replace(unit, "us", "µs", 1)
		}
		s := v * per
		for _, step := range timeLadder {
			if math.Abs(s) >= step.seconds || step.suffix == "ns" {
				return round(s/step.seconds) + " " + step.suffix
			}
		}
	}
	switch unit {
	case "", "none":
		return round(v)
	case "percent":
		return roundPercent(v, decimals) + "%"
	case "percentunit":
		return roundPercent(v*100, decimals) + "%"
	case "bytes":
		return scaled(v, 1024, []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}, round)
	case "kbytes":
		return scaled(v*1024, 1024, []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}, round)
	case "mbytes":
		return scaled(v*1024*1024, 1024, []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}, round)
	case "Bps":
		return scaled(v, 1000, []string{"B/s", "kB/s", "MB/s", "GB/s", "TB/s"}, round)
	case "GBs":
		return scaled(v*1e9, 1000, []string{"B/s", "kB/s", "MB/s", "GB/s", "TB/s"}, round)
	case "short":
		return strings.TrimSpace(scaled(v, 1000, []string{"", "K", "Mil", "Bil", "Tri"}, round))
	case "celsius":
		return round(v) + " °C"
	case "watt":
		return scaled(v, 1000, []string{"W", "kW", "MW"}, round)
	case "joule":
		return scaled(v, 1000, []string{"J", "kJ", "MJ", "GJ"}, round)
	case "rotmhz":
		return scaled(v, 1000, []string{"MHz", "GHz"}, round)
	case "reqps":
		return round(v) + " req/s"
	case "ops":
		return round(v) + " ops/s"
	}
	return round(v) + " " + unit
}

// scaled divides by base until the number fits its suffix.
func scaled(v, base float64, suffixes []string, round func(float64) string) string {
	i := 0
	for math.Abs(v) >= base && i < len(suffixes)-1 {
		v /= base
		i++
	}
	return round(v) + " " + suffixes[i]
}

// roundSignificant keeps about three significant digits (1.3050042596767812 is "1.31",
// 274.6 is "275", 2223064147 stays whole) without trailing zeros.
func roundSignificant(v float64) string {
	a := math.Abs(v)
	var s string
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		// 3 significant digits of a small number, never in exponent form.
		d := min(2-int(math.Floor(math.Log10(a))), 12)
		s = strconv.FormatFloat(v, 'f', d, 64)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// roundPercent shows a share with one decimal, under 0.1% with two, and a share too small for
// those as "<0.01" rather than 0.
func roundPercent(p float64, decimals *uint16) string {
	if decimals != nil {
		return strconv.FormatFloat(p, 'f', int(*decimals), 64)
	}
	a := math.Abs(p)
	switch {
	case a == 0:
		return "0"
	case a >= 99.95:
		return strconv.FormatFloat(p, 'f', 0, 64)
	case a >= 0.1:
		return strconv.FormatFloat(p, 'f', 1, 64)
	case a >= 0.005:
		return strconv.FormatFloat(p, 'f', 2, 64)
	case p > 0:
		return "<0.01"
	default:
		return ">-0.01"
	}
}

// oneLine keeps a cell on its row.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
