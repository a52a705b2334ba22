package promwrite

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// FromText turns scrapes in the Prometheus text format (an exporter's /metrics), one per time,
// into series to write: every gauge and counter sample, at its scrape's time.
func FromText(scrapes map[time.Time][]byte) ([]Series, error) {
	times := make([]time.Time, 0, len(scrapes))
	for t := range scrapes {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	byKey := map[string]*Series{}
	var order []string
	for _, t := range times {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(scrapes[t]))
		if err != nil {
			return nil, fmt.Errorf("scrape at %s: %w", t.Format(time.RFC3339), err)
		}
		for name, f := range fams {
			for _, m := range f.GetMetric() {
				var v float64
				switch f.GetType() {
				case dto.MetricType_GAUGE:
					v = m.GetGauge().GetValue()
				case dto.MetricType_COUNTER:
					v = m.GetCounter().GetValue()
				default:
					continue
				}
				labels := map[string]string{"__name__": name}
				keys := []string{name}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
					keys = append(keys, l.GetName()+"="+l.GetValue())
				}
				sort.Strings(keys[1:])
				key := strings.Join(keys, ",")
				s := byKey[key]
				if s == nil {
					s = &Series{Labels: labels}
					byKey[key] = s
					order = append(order, key)
				}
				s.Samples = append(s.Samples, Sample{At: t, Value: v})
			}
		}
	}
	out := make([]Series, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out, nil
}
