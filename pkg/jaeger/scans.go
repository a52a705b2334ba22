package jaeger

import (
	"hash/maphash"
	"slices"
	"sync"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// failedScans remembers what the last few failed-trace searches' replies held (their failed
// traces' spans), keyed by the reply's bytes: a triage searches every service, and the services
// of one request chain share their recent traces, so their replies are often the very same bytes
// (three of the demo's four services answer byte for byte the same 370 KB). Scanning a reply was
// most of a triage's CPU; a reply seen before is not scanned again. The key is the bytes' length
// and two 64-bit hashes under different seeds: what it answers is a function of the bytes alone,
// so nothing in it goes stale.
type failedScans struct {
	mu      sync.Mutex
	entries []scanEntry // newest last
}

type scanEntry struct {
	key   replyKey
	spans []models.Span
}

type replyKey struct {
	n    int
	a, b uint64
}

// maxFailedScans is how many replies are remembered: a triage's searches at most (one per
// service, models.MaxTriageServices), so that its services all share.
const maxFailedScans = models.MaxTriageServices

var scanSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func keyOf(b []byte) replyKey {
	return replyKey{n: len(b), a: maphash.Bytes(scanSeeds[0], b), b: maphash.Bytes(scanSeeds[1], b)}
}

// get answers a copy of the spans of the reply with key k, if it was seen.
func (f *failedScans) get(k replyKey) ([]models.Span, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.entries {
		if e.key == k {
			return slices.Clone(e.spans), true
		}
	}
	return nil, false
}

func (f *failedScans) put(k replyKey, spans []models.Span) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.entries) >= maxFailedScans {
		f.entries = slices.Delete(f.entries, 0, 1)
	}
	f.entries = append(f.entries, scanEntry{key: k, spans: slices.Clone(spans)})
}
