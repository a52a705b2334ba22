package prometheus

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/dcgm"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// Some DCGM names do not fix their unit: DCGM_FI_DEV_GPU_UTIL_RATIO is an integer percentage
// under DCGM 4.6's bindings (field 203) and a 0..1 ratio under DCGM 4.7 (dcgm-exporter 4.9).
// Such a source (dcgm.Source.UnitFromHelp) is read in the unit its series' HELP text says:
// dcgm-exporter writes its counters CSV's help column as HELP, and Prometheus keeps it as the
// metric's metadata (/api/v1/metadata). A HELP text that says neither unit, metadata that
// disagree between targets, or none at all leave the source unread, with a notice: a value is
// never shown in a unit it may not be in.

// unitDecision is what a source's metadata decided: the factor to the entry's unit, or why
// the source is not read.
type unitDecision struct {
	scale float64
	skip  string // non-empty: not read, and why
}

// helpRatio and helpPercent recognise a HELP text's unit: "ratio", "fraction", "0..1",
// "0.0-1.0", "0 to 1"; "%", "percent", "0-100". \b keeps "0-100" from reading as "0-1".
var (
	helpRatio   = regexp.MustCompile(`(?i)\bratio\b|\bfraction\b|\b0(?:\.0+)?\s*(?:-|–|to|\.\.)\s*1(?:\.0+)?\b`)
	helpPercent = regexp.MustCompile(`(?i)%|\bpercent(?:age)?\b|\bpct\b|\b0\s*(?:-|–|to|\.\.)\s*100\b`)
)

// metadataUnit says what one metadata entry gives as the unit: "ratio", "percent" or "" when it
// says neither or both. OpenMetrics' unit field, when set, is taken before the HELP text.
func metadataUnit(md promv1.Metadata) string {
	switch strings.ToLower(md.Unit) {
	case "ratio":
		return "ratio"
	case "percent":
		return "percent"
	}
	ratio, percent := helpRatio.MatchString(md.Help), helpPercent.MatchString(md.Help)
	switch {
	case ratio && !percent:
		return "ratio"
	case percent && !ratio:
		return "percent"
	}
	return ""
}

// helpKilo, helpMega and helpBytes recognise a throughput's unit in a HELP text: KB or KiB,
// MB or MiB (per second), or plain bytes.
var (
	helpKilo  = regexp.MustCompile(`(?i)\bki?b\b|\bkilobytes?\b|\bki?b/s\b`)
	helpMega  = regexp.MustCompile(`(?i)\bmi?b\b|\bmegabytes?\b|\bmi?b/s\b`)
	helpBytes = regexp.MustCompile(`(?i)\bbytes?\b|\bb/s\b`)
)

// throughputUnit says what one metadata entry gives as a throughput's unit: "bytes", "KB",
// "MB", or "" when it says none or more than one of them. A unit prefix wins over a plain
// "bytes" beside it ("in KB (1024 bytes)").
func throughputUnit(md promv1.Metadata) string {
	switch strings.ToLower(md.Unit) {
	case "bytes", "bytes_per_second":
		return "bytes"
	}
	kilo, mega := helpKilo.MatchString(md.Help), helpMega.MatchString(md.Help)
	switch {
	case kilo && !mega:
		return "KB"
	case mega && !kilo:
		return "MB"
	case !kilo && !mega && helpBytes.MatchString(md.Help):
		return "bytes"
	}
	return ""
}

// unitRule is how one rule reads a metadata entry: its unit's name, the scale of each unit to
// the entry's, and what the rule is choosing between (for the notices).
type unitRule struct {
	read   func(promv1.Metadata) string
	scales map[string]float64
	// choice is what the rule chooses between, neither what a HELP text said that names none.
	choice, neither string
}

var unitRules = map[dcgm.HelpUnit]unitRule{
	dcgm.PercentOrRatio: {read: metadataUnit, scales: map[string]float64{"ratio": 100, "percent": 1},
		choice: "a percentage or a 0..1 ratio", neither: "neither a percentage nor a 0..1 ratio"},
	dcgm.BytesPerSecond: {read: throughputUnit, scales: map[string]float64{"bytes": 1, "KB": 1024, "MB": 1 << 20},
		choice: "bytes, KB or MB per second", neither: "none (or more than one) of bytes, KB and MB"},
}

// decideUnit applies a rule to a metric's metadata entries (one per distinct HELP text among
// the targets Prometheus scrapes).
func decideUnit(rule dcgm.HelpUnit, entries []promv1.Metadata) unitDecision {
	r, ok := unitRules[rule]
	if !ok {
		return unitDecision{skip: fmt.Sprintf("the plugin knows no unit rule %q", rule)}
	}
	if len(entries) == 0 {
		return unitDecision{skip: "Prometheus has no metadata (HELP text) for it, so its unit (" + r.choice + ", by exporter version) is unknown"}
	}
	units := map[string]bool{}
	for _, md := range entries {
		u := r.read(md)
		if u == "" {
			return unitDecision{skip: fmt.Sprintf("its HELP text %q says %s, and exporter versions write this name in either", md.Help, r.neither)}
		}
		units[u] = true
	}
	if len(units) > 1 {
		helps := make([]string, len(entries))
		for i, md := range entries {
			helps[i] = fmt.Sprintf("%q", md.Help)
		}
		return unitDecision{skip: "its targets' HELP texts disagree on the unit (" + strings.Join(helps, ", ") + "), so no one series' unit is known"}
	}
	for u := range units {
		return unitDecision{scale: r.scales[u]}
	}
	return unitDecision{}
}

// metadataCache holds Prometheus' metadata of metric names, a minute each (as the inventory):
// shared by all copies of one Client (WithDCGM), one per data source instance. Only names of
// sources with a unit rule are asked for (the catalogue's few, or an override naming one of
// them), so it needs no bound beyond dropping stale entries.
type metadataCache struct {
	mu      sync.Mutex
	entries map[string]metadataEntry
	now     func() time.Time
}

type metadataEntry struct {
	at time.Time
	md []promv1.Metadata
}

func newMetadataCache() *metadataCache {
	return &metadataCache{entries: map[string]metadataEntry{}, now: time.Now}
}

func (c *metadataCache) get(metric string) ([]promv1.Metadata, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[metric]
	if !ok || c.now().Sub(e.at) > inventoryTTL {
		return nil, false
	}
	return e.md, true
}

func (c *metadataCache) put(metric string, md []promv1.Metadata) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, e := range c.entries {
		if now.Sub(e.at) > inventoryTTL {
			delete(c.entries, k)
		}
	}
	c.entries[metric] = metadataEntry{at: now, md: md}
}

// metadata asks Prometheus for a metric's metadata, or takes it from the cache.
func (c *Client) metadata(ctx context.Context, metric string) ([]promv1.Metadata, error) {
	if md, ok := c.meta.get(metric); ok {
		return md, nil
	}
	all, err := c.api.Metadata(ctx, metric, "")
	if err != nil {
		return nil, c.wrap(err)
	}
	md := all[metric]
	c.meta.put(metric, md)
	return md, nil
}

// withParts lists the entries and, once each, the entries a computed one combines.
func (c *Client) withParts(ms []Metric) []Metric {
	var out []Metric
	seen := map[string]bool{}
	var add func(m Metric)
	add = func(m Metric) {
		if seen[m.Name] {
			return
		}
		seen[m.Name] = true
		out = append(out, m)
		for _, name := range m.ComputedFrom {
			if part, ok := c.catalogue().Lookup(name); ok {
				add(part)
			}
		}
	}
	for _, m := range ms {
		add(m)
	}
	return out
}

// withUnits decides the unit of every source of ms (and their parts) that reads its unit from
// its HELP text and that Prometheus holds, and returns the inventory with those decisions and
// a warning per source left unread. A failed metadata call leaves its source unread (with a
// notice naming the error); it does not fail the query.
func (c *Client) withUnits(ctx context.Context, inv *inventory, ms []Metric) (*inventory, notices.List) {
	type ruled struct {
		metric Metric
		source Source
	}
	var todo []ruled
	var names []string
	for _, m := range c.withParts(ms) {
		for _, s := range m.Sources {
			if s.UnitFromHelp != "" && inv.hasMetric(s.Metric) {
				todo = append(todo, ruled{m, s})
				if !slices.Contains(names, s.Metric) {
					names = append(names, s.Metric)
				}
			}
		}
	}
	out := *inv
	out.units = map[string]unitDecision{}
	if len(todo) == 0 {
		return &out, nil
	}
	ctx, span := upstream.StartSpan(ctx, models.Prometheus, "GPUMetricUnits", attribute.StringSlice("hsi.metrics", names))
	mds := make([][]promv1.Metadata, len(names))
	errs := safe.ForEach("DCGM metadata", len(names), figureConcurrency, func(i int) (err error) {
		mds[i], err = c.metadata(ctx, names[i])
		return err
	})
	var spanErr error
	for _, e := range errs {
		if e != nil {
			spanErr = e
		}
	}
	_ = upstream.EndSpan(span, spanErr)
	var notes notices.List
	for _, r := range todo {
		i := slices.Index(names, r.source.Metric)
		d := decideUnit(r.source.UnitFromHelp, mds[i])
		if errs[i] != nil {
			d = unitDecision{skip: "its metadata (HELP text), which says its unit, could not be read: " + errs[i].Error()}
		}
		out.units[r.source.Metric] = d
		if d.skip != "" {
			notes.Warnf("%s (%s): %s is not read: %s. Name the unit in the HELP text (the exporter's counters CSV, third column), or map the entry to a series of known unit in jsonData.dcgmMetricNames",
				r.metric.Title, r.metric.Name, r.source.Metric, d.skip)
		}
	}
	return &out, notes
}

// resolve returns m with its HELP-ruled sources that Prometheus holds decided: scaled as their
// metadata say, or left out when it says neither unit or was not asked for (withUnits). Other
// sources are as they were.
func (inv *inventory) resolve(m Metric) Metric {
	if !slices.ContainsFunc(m.Sources, func(s Source) bool { return s.UnitFromHelp != "" }) {
		return m
	}
	sources := make([]Source, 0, len(m.Sources))
	for _, s := range m.Sources {
		if s.UnitFromHelp != "" {
			d, ok := inv.units[s.Metric]
			switch {
			case !ok && !inv.hasMetric(s.Metric): // absent: never read, still named as tried
			case !ok || d.skip != "":
				continue
			default:
				s.Scale, s.UnitFromHelp = d.scale, ""
			}
		}
		sources = append(sources, s)
	}
	m.Sources = sources
	return m
}
