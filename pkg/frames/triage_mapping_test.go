package frames

import (
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/triage"
)

// The mapping column reads as the user manual shows it, with the trace ID and the GPU's UUID
// shortened (the GPU incident dashboard wraps the column at 180 px: a whole UUID or trace ID is
// one word wider than that); the uuid column keeps the UUID whole.
func TestTriageMappingShortensTheLongIDs(t *testing.T) {
	uuid := "GPU-5fd4a0c2-1b3e-4f5a-9c8d-7e6f5a4b3c2d"
	ans := &triage.Answer{Failures: []triage.Failure{{
		At: time.Unix(1_700_000_000, 0), Class: models.ClassCUDAOOM, Host: "gpu-node-1", GPU: "1", UUID: uuid,
		Chain: triage.Chain{Request: "4bf92f3577b34da6a3ce929d0e0e4736", Model: "llama-3-70b", Pod: "inference/llm-1",
			Container: "server", GPU: uuid + " (1)", Node: "gpu-node-1", Driver: "570.124.06"},
	}}}
	f := Triage(ans, models.TriageFailures, TriageLinks{})[0]
	mapping, _ := f.FieldByName("mapping")
	want := "request 4bf92f35… → model llama-3-70b → pod inference/llm-1 → container server → GPU GPU-5fd4… (1) → node gpu-node-1 → driver 570.124.06"
	if got := mapping.At(0); got != want {
		t.Errorf("mapping\n%q\nwant\n%q", got, want)
	}
	if u, _ := f.FieldByName("uuid"); u.At(0) != uuid {
		t.Errorf("uuid %v", u.At(0))
	}
	for _, c := range []struct{ in, want string }{{"", ""}, {"index 3", "index 3"}, {"MIG-0123456789ab (0) MIG 1g.10gb", "MIG-0123… (0) MIG 1g.10gb"}} {
		if got := mappingText(triage.Chain{GPU: c.in}); got != "GPU "+c.want && !(c.in == "" && got == "") {
			t.Errorf("GPU %q: %q, want %q", c.in, got, "GPU "+c.want)
		}
	}
}
