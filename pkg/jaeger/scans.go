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
// and their 64-bit hash under a seed drawn at start (two replies of one length that differ share
// it with a chance of 2^-64; a second hash doubled the hashing, about 1.2 % of the plugin's CPU
// under load): what it answers is a function of the bytes alone, so nothing in it goes stale.
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
	hash uint64
}

// maxFailedScans is how many replies are remembered: a triage's searches at most (one per
// service, models.MaxTriageServices), so that its services all share.
const maxFailedScans = models.MaxTriageServices

var scanSeed = maphash.MakeSeed()

func keyOf(b []byte) replyKey {
	return replyKey{n: len(b), hash: maphash.Bytes(scanSeed, b)}
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
