package prometheus

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// inventory is what Prometheus holds of the catalogue's metrics over a time range: which
// metric names have series, and which label names those series carry. Old and new exporters
// differ (Hostname or hostname, pod or pod_name, PROF_* metrics or not) and a fleet may mix
// them, so every GPU query first asks which names are in use.
type inventory struct {
	metrics map[string]bool
	labels  map[string]bool
	// units are the decided units of the sources that read theirs from their HELP text
	// (units.go); set on a query's copy by withUnits, never in the cache.
	units map[string]unitDecision
}

func (inv *inventory) hasMetric(name string) bool { return inv.metrics[name] }

// aliases returns the role's label names that series carry; fixed means the settings named
// the label, which is then used whether or not it was seen.
func (inv *inventory) aliases(cat *Catalogue, role string, fixed bool) []string {
	all := cat.Aliases(role)
	if fixed {
		return all
	}
	var out []string
	for _, a := range all {
		if inv.labels[a] {
			out = append(out, a)
		}
	}
	return out
}

// inventoryTTL is how long an inventory is reused: label names change when exporters are
// upgraded, not between two panel refreshes, and a dashboard of 20 GPU panels then asks once.
const inventoryTTL = time.Minute

// inventoryCacheSize bounds the cache (one entry per range and catalogue, per minute).
const inventoryCacheSize = 64

// inventoryCache is shared by all copies of one Client (WithDCGM): one per data source instance.
type inventoryCache struct {
	mu      sync.Mutex
	entries map[string]inventoryEntry
	now     func() time.Time
}

type inventoryEntry struct {
	at  time.Time
	inv *inventory
}

func newInventoryCache() *inventoryCache {
	return &inventoryCache{entries: map[string]inventoryEntry{}, now: time.Now}
}

func (c *inventoryCache) get(key string) *inventory {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || c.now().Sub(e.at) > inventoryTTL {
		return nil
	}
	return e.inv
}

func (c *inventoryCache) put(key string, inv *inventory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, e := range c.entries {
		if now.Sub(e.at) > inventoryTTL {
			delete(c.entries, k)
		}
	}
	if len(c.entries) >= inventoryCacheSize {
		// Full of fresh entries (many distinct ranges at once): drop the oldest.
		oldest := ""
		for k, e := range c.entries {
			if oldest == "" || e.at.Before(c.entries[oldest].at) {
				oldest = k
			}
		}
		delete(c.entries, oldest)
	}
	c.entries[key] = inventoryEntry{at: now, inv: inv}
}

// inventory asks Prometheus (label values of __name__, and label names, both restricted to the
// catalogue's metric names) over the range widened to whole minutes, so that refreshes within
// a minute share one answer and the widened range never misses a series of the exact one.
func (c *Client) inventory(ctx context.Context, start, end time.Time) (inv *inventory, err error) {
	return c.seriesInventory(ctx, "GPUInventory", c.catalogue().MetricNames(), start, end)
}

// seriesInventory is what Prometheus holds of the metric names over [start, end], widened to
// whole minutes: which of them have series, and the label names those series carry. It is
// cached for inventoryTTL, per names and range; what names the span that asks.
func (c *Client) seriesInventory(ctx context.Context, what string, names []string, start, end time.Time) (inv *inventory, err error) {
	start = start.Truncate(time.Minute)
	if t := end.Truncate(time.Minute); !t.Equal(end) {
		end = t.Add(time.Minute)
	}
	match, err := namesMatch(names)
	if err != nil {
		return nil, err
	}
	key := match + "|" + start.UTC().Format(time.RFC3339) + "|" + end.UTC().Format(time.RFC3339)
	if inv := c.cache.get(key); inv != nil {
		return inv, nil
	}

	ctx, span := upstream.StartSpan(ctx, models.Prometheus, what)
	defer func() { err = upstream.EndSpan(span, err) }()
	inv = &inventory{metrics: map[string]bool{}, labels: map[string]bool{}}
	lookups := []func() error{
		func() error { // the metric names
			values, _, _, err := c.api.LabelValues(ctx, "__name__", []string{match}, start, end)
			for _, v := range values {
				inv.metrics[string(v)] = true
			}
			return err
		},
		func() error { // their label names
			labelNames, _, _, err := c.api.LabelNames(ctx, []string{match}, start, end)
			for _, l := range labelNames {
				inv.labels[string(l)] = true
			}
			return err
		},
	}
	if err := cmp.Or(safe.ForEach(what, len(lookups), 0, func(i int) error { return lookups[i]() })...); err != nil {
		return nil, c.wrap(err)
	}
	c.cache.put(key, inv)
	return inv, nil
}

// namesMatch is the series selector {__name__=~"A|B|…"} of the metric names, printed. Every GPU
// and container query asks for its inventory, and building the selector (a regular expression
// of the catalogue's names, compiled, then printed) on each was most of what a cached inventory
// cost: the text is kept per list of names (matchTexts).
func namesMatch(names []string) (string, error) {
	key := strings.Join(names, "\x00")
	if match, ok := matchTexts.get(key); ok {
		return match, nil
	}
	sel, err := metricNamesSelector(names, nil)
	if err != nil {
		return "", err
	}
	match := sel.String()
	matchTexts.put(key, match)
	return match, nil
}

// matchTexts are namesMatch's texts; lists of names are few (the settings' catalogues).
var matchTexts = newTextMemo(64)

// presentMetrics lists the metric names of names that Prometheus holds.
func (inv *inventory) presentMetrics(names []string) []string {
	var out []string
	for _, n := range names {
		if inv.metrics[n] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
