package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
)

// The kernel timelines the frontend's trace-view test reads (src/__grafana__/timeline.test.ts):
// test/frames writes them from the plugin binary for scripts/test.sh.

// KernelTimelineTraceID is the request whose kernel trace the timeline fixture reads.
const KernelTimelineTraceID = "5ca1ab1e0ddba11c0ffee0000000d00d"

// KernelTimelineScenario is that request's GPU work: the sync mechanism (kernels, device-to-host
// copies and blocking synchronisations, so kernels, copies and sync records all link to their
// calls), 4 ms from 2025-06-01 12:00:00.123456789 UTC.
var KernelTimelineScenario = kinetogen.Scenario{Mechanism: kinetogen.MechSync, TraceID: KernelTimelineTraceID, Seed: 3,
	Start: time.Date(2025, 6, 1, 12, 0, 0, 123_456_789, time.UTC), Duration: 4 * time.Millisecond}

// ResNetTimelineFile is the real trace (shared/realdata) whose timeline, at the default cap of
// 10,000 activities out of 21,019, shows the cap's warning.
const ResNetTimelineFile = "resnet50_worker0.pt.trace.json.gz"

// WriteKernelTimelineTrace writes KernelTimelineScenario's trace in dir, named for its request as
// the seeds' services name theirs, and returns what it holds.
func WriteKernelTimelineTrace(dir string) (kinetogen.Truth, error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("infer_%s.pt.trace.json", KernelTimelineTraceID)))
	if err != nil {
		return kinetogen.Truth{}, err
	}
	truth, err := kinetogen.Write(f, KernelTimelineScenario)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return truth, err
}

// KernelTimelineTruth is what the fixture says the trace holds, for the frontend test to check
// the spans against: GPU activities, their launch calls, blocking calls.
func KernelTimelineTruth(t kinetogen.Truth) map[string]int64 {
	return map[string]int64{"kernels": t.Kernels, "transfers": t.Transfers, "launches": t.Launches, "syncCalls": t.SyncCalls}
}
