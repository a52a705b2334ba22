package correlate

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// processLister is NVML's process list as the sampler answers it, counting the calls.
type processLister struct {
	procs []models.GPUProcess
	err   error
	calls int
}

func (p *processLister) Processes() ([]models.GPUProcess, notices.List, error) {
	p.calls++
	return p.procs, nil, p.err
}

// A span whose kernels queued behind other work, on the plugin's own host, names the other
// processes NVML lists on its GPU: by its gpu attribute, else by its own process's GPUs, never
// its own PID; without a PID, a lone process is taken for its own. NVML is asked once, and not
// at all when no such span ran on this host.
func TestLocalTenantsNameTheOtherProcessesOnTheSpansGPU(t *testing.T) {
	j := models.SpanMatch{HostAttribute: "host.name", GPUAttribute: "gpu.index"}
	procs := []models.GPUProcess{
		{GPU: 0, GPUUUID: "GPU-aaaa", PID: 100, Name: "python"},
		{GPU: 0, GPUUUID: "GPU-aaaa", PID: 200, Name: "trainer"},
		{GPU: 1, GPUUUID: "GPU-bbbb", PID: 300, Name: "vllm"},
		{GPU: 1, GPUUUID: "GPU-bbbb", PID: 400, Name: "notebook"},
		{GPU: 2, GPUUUID: "GPU-cccc", PID: 500, Name: "alone"},
	}
	row := func(host, pid string, gpus []string, queued int64) SpanRow {
		res := map[string]string{"host.name": host}
		if pid != "" {
			res[ProcessPIDAttribute] = pid
		}
		return SpanRow{Span: &models.Span{Service: "svc", Resource: res}, Host: host, GPUs: gpus, GPUIdle: &gputrace.IdleMechanisms{Queued: queued}}
	}
	cases := []struct {
		name string
		row  SpanRow
		want []int32 // PIDs; nil: no tenants
	}{
		{"gpu attribute, own pid", row("box-1.example.com", "100", []string{"0"}, 5), []int32{200}},
		{"gpu by UUID", row("box-1", "300", []string{"gpu-bbbb"}, 5), []int32{400}},
		{"own process's GPUs", row("BOX-1", "300", nil, 5), []int32{400}},
		{"no pid, two processes", row("box-1", "", []string{"1"}, 5), []int32{300, 400}},
		{"no pid, one process", row("box-1", "", []string{"2"}, 5), nil},
		{"alone with its pid", row("box-1", "500", nil, 5), nil},
		{"container's own pid", row("box-1", "7", []string{"0"}, 5), []int32{100, 200}},
		{"container's own pid, alone", row("box-1", "7", []string{"2"}, 5), nil},
		{"not queued", row("box-1", "100", []string{"0"}, 0), nil},
		{"another host", row("box-2", "100", []string{"0"}, 5), nil},
	}
	for _, c := range cases {
		src := &processLister{procs: procs}
		rows := []SpanRow{c.row}
		attachLocalTenants(rows, Ready[LocalProcesses](src), "box-1", j)
		var got []int32
		if tn := rows[0].Tenants; tn != nil {
			for _, p := range tn.Processes {
				got = append(got, int32(p.PID))
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: tenants %v, want %v", c.name, got, c.want)
		}
		local := c.name != "another host" && c.name != "not queued"
		if local != (src.calls == 1) || src.calls > 1 {
			t.Errorf("%s: NVML asked %d times", c.name, src.calls)
		}
	}

	// NVML off: nothing asked, nothing said (the cause's caveat says what would name them).
	rows := []SpanRow{row("box-1", "100", []string{"0"}, 5)}
	if n := attachLocalTenants(rows, Unavailable[LocalProcesses](errors.New("NVML is off")), "box-1", j); len(n) != 0 || rows[0].Tenants != nil {
		t.Errorf("NVML off: notices %v, tenants %+v", n, rows[0].Tenants)
	}
	// NVML failing: a warning, no tenants, nothing else lost.
	n := attachLocalTenants(rows, Ready[LocalProcesses](&processLister{err: errors.New("NVML_ERROR_UNKNOWN")}), "box-1", j)
	if len(n) != 1 || n[0].Severity != notices.Warning || !strings.Contains(n[0].Text, "NVML_ERROR_UNKNOWN") || rows[0].Tenants != nil {
		t.Errorf("NVML failing: notices %v, tenants %+v", n, rows[0].Tenants)
	}
}
