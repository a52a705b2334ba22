package triage

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// BenchmarkTriageFleet: a fleet at gpuMaxSeries' default (500 GPUs) over 2 h at 15 s (480 steps),
// with 200 failed requests and a failure on one GPU in ten: what one triage panel classifies.
func BenchmarkTriageFleet(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	f := newFleet(time.Unix(1_790_000_000, 0).UTC(), 480, 15*time.Second)
	var gpus []*fleetGPU
	for i := range 500 {
		g := &fleetGPU{host: fmt.Sprintf("node-%d", i/8), index: fmt.Sprint(i % 8), uuid: fmt.Sprintf("GPU-%d", i), pod: fmt.Sprintf("p-%d", i), namespace: "ns"}
		f.addGPU(g, 50)
		if i%10 == 0 {
			for j := 300; j < 480; j++ {
				g.values[MetricXID][j] = 79
			}
		}
		gpus = append(gpus, g)
	}
	f.flush(gpus)
	for i := range 200 {
		g := gpus[rng.IntN(len(gpus))]
		f.ev.FailedTraces = append(f.ev.FailedTraces, failedTrace(rng, "gw", "llm", "generate", g, f.at(i*2), "torch.OutOfMemoryError", "CUDA out of memory"))
	}
	f.ev.Terminations = []models.ContainerTermination{{Namespace: "ns", Pod: "p-3", Container: "tok", Reason: ReasonOOMKilled, At: f.at(100), Restarts: 1}}
	b.ReportAllocs()
	for b.Loop() {
		if ans := Triage(f.ev, nil); len(ans.Failures) == 0 {
			b.Fatal("no failures")
		}
	}
}
