package frames

import (
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
)

// BreakdownFrameName names the trace query's latency breakdown.
const BreakdownFrameName = "breakdown"

// breakdownLabels say each kind of part in the user's words.
var breakdownLabels = map[string]string{
	diagnose.PartQueue:       "queued in %s",
	diagnose.PartPreempted:   "preempted for KV-cache space in %s",
	diagnose.PartPrefill:     "prefill in %s",
	diagnose.PartDecode:      "decode in %s",
	diagnose.PartCompute:     "compute in %s",
	diagnose.PartGPUKernels:  "GPU kernels of %s",
	diagnose.PartGPUIdle:     "GPU idle in %s (outside its kernel traces' gaps)",
	diagnose.PartSharedGPU:   "GPU running other work in %s",
	diagnose.PartHostSync:    "GPU waiting on host syncs in %s",
	diagnose.PartLaunch:      "GPU waiting on launches and op dispatch in %s",
	diagnose.PartCopies:      "copies holding the GPU in %s",
	diagnose.PartHostWork:    "host work between kernels in %s",
	diagnose.PartCPU:         "CPU in %s",
	diagnose.PartThrottled:   "CPU throttled by the container's limit in %s",
	diagnose.PartOffCPU:      "off-CPU in %s (I/O, locks, untraced calls)",
	diagnose.PartUnexplained: "unexplained in %s",
	diagnose.PartFailed:      "failed attempt in %s",
}

// TraceBreakdown is the request's duration split into parts (correlate.Breakdown), one row per
// part, largest first, ready for a bar chart: the part in words, its duration in ms, its share of
// the request, its kind and service, and where the figure comes from. The parts sum to the
// request's duration.
func TraceBreakdown(parts []diagnose.BreakdownPart, request time.Duration) *data.Frame {
	n := len(parts)
	part, kind, service, source := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ms, share := make([]float64, n), make([]float64, n)
	for i, p := range parts {
		part[i] = fmt.Sprintf(breakdownLabels[p.Kind], p.Service)
		if p.Kind == diagnose.PartDownstream {
			part[i] = fmt.Sprintf("%s waiting on %s", p.Service, p.Peer)
		}
		kind[i], service[i], source[i] = p.Kind, p.Service, p.Source
		ms[i] = float64(p.Duration) / float64(time.Millisecond)
		if request > 0 {
			share[i] = float64(p.Duration) / float64(request)
		}
	}
	f := data.NewFrame(BreakdownFrameName,
		data.NewField("part", nil, part),
		data.NewField("duration", nil, ms).SetConfig(&data.FieldConfig{Unit: "ms", DisplayNameFromDS: "time"}),
		data.NewField("share", nil, share).SetConfig(&data.FieldConfig{Unit: "percentunit", DisplayNameFromDS: "share of the request"}),
		data.NewField("kind", nil, kind),
		data.NewField("service", nil, service),
		data.NewField("source", nil, source),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}
