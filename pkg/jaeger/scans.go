package jaeger

import (
	"hash/maphash"
	"slices"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/recent"
)

// replyScans remembers what the last v3 replies read held (their spans, as each reading takes
// them), keyed by the reply's bytes and the reading, for a few seconds. The panels of one refresh
// ask the same searches and traces one after another, and Jaeger answers them byte for byte the
// same: under the load test four v3 replies in five (seven tenths of the bytes) had been read
// moments before (half a second before at the median, under seven at most), and reading the
// replies was a tenth of the plugin's CPU (a twenty-fifth with this memory). A
// triage searches every service, and the services of one request chain share their recent traces,
// so their replies are often the very same bytes too (three of the demo's four services answer
// the same 370 KB). A reply seen before is not read again.
//
// What an entry answers is a function of the bytes alone, so nothing in it goes stale; the
// entries are dropped after scanTTL (and beyond maxScans, or maxScanSpans spans in all:
// recent.Store) only so that what they hold goes back to the heap once the panels are answered.
// The key is the bytes' length and their 64-bit hash under a seed drawn at start (two replies of
// one length that differ share it with a chance of 2^-64; a second hash doubled the hashing,
// about 1.2 % of the plugin's CPU under load).
type replyScans struct {
	kept *recent.Store[scanKey, []models.Span]
}

func newReplyScans() replyScans {
	return replyScans{kept: recent.New[scanKey, []models.Span](scanTTL, maxScans, maxScanSpans, nil)}
}

// scanKey is a reply and how it was read: readWhole, readFailed, or the service read whole by a
// skimming search.
type scanKey struct {
	reply   replyKey
	reading string
}

type replyKey struct {
	n    int
	hash uint64
}

// The readings of a reply besides a search's skimming.
const (
	readWhole  = "\x00every span" // a trace's reply: every span whole
	readFailed = "\x00failed"     // a failed-trace search: the failed traces' spans only
)

// Bounds of the replies remembered: the repeats came within seconds (scanTTL); a triage's
// searches at most (one per service, models.MaxTriageServices) share; and the spans kept stay a
// few megabytes (a 600 KB search reply holds about two thousand spans).
const (
	scanTTL      = 10 * time.Second
	maxScans     = 2 * models.MaxTriageServices
	maxScanSpans = 30_000
)

var scanSeed = maphash.MakeSeed()

func keyOf(b []byte, reading string) scanKey {
	return scanKey{replyKey{n: len(b), hash: maphash.Bytes(scanSeed, b)}, reading}
}

// get answers a copy of the spans of the reply read as k says, if it was read within scanTTL.
func (f replyScans) get(k scanKey) ([]models.Span, bool) {
	spans, ok := f.kept.Get(k)
	return slices.Clone(spans), ok
}

// put keeps a copy of the spans read of the reply k (a reply too large for the bounds is not kept).
func (f replyScans) put(k scanKey, spans []models.Span) {
	if len(spans) <= maxScanSpans {
		f.kept.Put(k, slices.Clone(spans), len(spans))
	}
}
