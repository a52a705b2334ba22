package frames

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/triage"
)

func triageAnswer() *triage.Answer {
	at := time.Date(2026, 11, 27, 3, 41, 31, 153e6, time.UTC)
	xid := triage.Failure{At: at, Class: models.ClassXID, Title: "XID 79 on GPU 0 of node-a: GPU has fallen off the bus", Host: "node-a", GPU: "0",
		UUID: "GPU-aaaa", Pod: "llm-0", Namespace: "inference", Container: "server", Count: 1, Runbook: triage.RunbookOf(models.ClassXID),
		Evidence: []string{"DCGM_FI_DEV_XID_ERRORS = 79 from 03:41:31 (the last XID the driver reported)"},
		Chain:    triage.Chain{Pod: "inference/llm-0", Container: "server", GPU: "GPU-aaaa (0)", Node: "node-a", Driver: "570.124.06"}}
	oom := triage.Failure{At: at.Add(-time.Minute), Class: models.ClassCUDAOOM, Title: "CUDA out-of-memory while serving in llm (generate)",
		Host: "node-a", GPU: "1", Service: "llm", Operation: "generate", Count: 2, Runbook: triage.RunbookOf(models.ClassCUDAOOM),
		Evidence: []string{"2 requests failed", "GPU 1 of node-a had 97% of its framebuffer in use then"},
		TraceIDs: []string{"4bf92f3577b34da6a3ce929d0e0e4736", "5bf92f3577b34da6a3ce929d0e0e4736"}, SharedWith: []string{"inference/llm-1", "batch/trainer-0"},
		Chain: triage.Chain{Request: "4bf92f3577b34da6a3ce929d0e0e4736", Missing: []string{"model: no model attribute"}}}
	var n notices.List
	n.Infof("Uncorrectable (double-bit) ECC errors cannot be seen: no series")
	return &triage.Answer{
		Failures: []triage.Failure{xid, oom},
		Requests: []triage.Request{{At: at, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Service: "llm", Operation: "generate", Class: models.ClassCUDAOOM,
			Error: "torch.OutOfMemoryError: CUDA out of memory.", Pod: "llm-1", Namespace: "inference", Host: "node-a", GPU: "1", FramebufferUsed: 97},
			{At: at, TraceID: "6bf92f3577b34da6a3ce929d0e0e4736", Service: "llm", Operation: "generate", Class: models.ClassXID, FramebufferUsed: math.NaN()}},
		Signals: []triage.Signal{{Class: models.ClassECC, Signal: "ecc_dbe", Status: triage.SignalMissing, Detail: "no series"}},
		Notices: n,
	}
}

func TestTriageFramesGolden(t *testing.T) {
	links := TriageLinks{GPUDashboardUID: models.DefaultGPUDashboardUID, RequestDashboardUID: models.DefaultRequestDashboardUID}
	ans := triageAnswer()
	for _, view := range models.TriageViews {
		out := Triage(ans, view, links)
		if len(out) != 1 || out[0].Name != view {
			t.Fatalf("%s: frames %v", view, out)
		}
		if out[0].Meta == nil || len(out[0].Meta.Notices) != 1 || out[0].Meta.PreferredVisualization != data.VisTypeTable {
			t.Errorf("%s: meta %+v: want a table with the answer's notice", view, out[0].Meta)
		}
		checkGolden(t, "triage_"+view, out[0])
	}
}

// The traces cell opens the latest failed request's verdict (no link without one); the GPU
// link opens the GPU dashboard around the failure's minute.
func TestTriageLinks(t *testing.T) {
	ans := triageAnswer()
	explore := Triage(ans, models.TriageFailures, TriageLinks{GPUDashboardUID: "gpu", TraceDatasourceUID: "jaeger-1", RequestDashboardUID: "req"})[0]
	traces, _ := explore.FieldByName("traces")
	if u := traces.At(1).(string); u != "/d/req?from=1795749931153&to=1795751731153&var-trace_id=4bf92f3577b34da6a3ce929d0e0e4736" || strings.Contains(u, "%") {
		t.Errorf("traces cell %q, want the latest request's verdict around the failure, nothing Grafana would encode again", u)
	}
	if u := traces.At(0).(string); u != "" {
		t.Errorf("a failure without requests links %q", u)
	}
	gpu, _ := explore.FieldByName("gpu dashboard")
	if u := gpu.At(0).(string); !strings.HasPrefix(u, "/d/gpu?") || !strings.Contains(u, "var-host=node-a") || !strings.Contains(u, "var-gpu=0") ||
		!strings.Contains(u, "from=1795750560000") || !strings.Contains(u, "to=1795751220000") {
		t.Errorf("GPU link %q: want the GPU dashboard from 5 minutes before the failure's minute to 5 after its end", u)
	}
}
