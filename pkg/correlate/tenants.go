package correlate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// ProcessPIDAttribute is OpenTelemetry's resource attribute naming the process that wrote a
// span: on the GPU's host, NVML lists the processes on each GPU by the same PID.
const ProcessPIDAttribute = "process.pid"

// LocalProcesses lists the processes NVML sees on this host's GPUs now.
type LocalProcesses interface {
	Processes() ([]models.GPUProcess, notices.List, error)
}

// LocalTenants are the other processes NVML lists on a span's GPUs, when the span ran on the
// host the plugin runs on. NVML answers for the moment of the query, not for the span's window.
type LocalTenants struct {
	Host string
	// Processes are the processes on the span's GPUs other than the span's own (by process.pid);
	// when the span names no PID, every process of its GPUs, its own among them.
	Processes []models.GPUProcess
	// OwnPID is the span's process.pid, 0 when it names none or NVML lists no such process;
	// ForeignPID is the span's PID in that last case (a container's own PID namespace: NVML
	// gives host PIDs).
	OwnPID, ForeignPID uint32
}

// Names lists the processes as "name (pid N)", or "pid N" when /proc does not name them.
func (t *LocalTenants) Names() []string {
	out := make([]string, 0, len(t.Processes))
	for _, p := range t.Processes {
		n := fmt.Sprintf("pid %d", p.PID)
		if p.Name != "" {
			n = fmt.Sprintf("%s (pid %d)", p.Name, p.PID)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// isLocalHost reports whether a span's host is this one: by its full or short name, either the
// span's own host attribute or the DCGM host it maps to.
func isLocalHost(local string, hosts ...string) bool {
	if local == "" {
		return false
	}
	short := func(h string) string { return strings.ToLower(strings.SplitN(h, ".", 2)[0]) }
	for _, h := range hosts {
		if h != "" && short(h) == short(local) {
			return true
		}
	}
	return false
}

// attachLocalTenants names, for the rows whose kernels queued behind other work on their GPU
// (GPUIdle.Queued) and that ran on this host, the other processes NVML lists on their GPUs. NVML
// is asked once, and only then: it starts the sampler on a host that may have no GPU at all.
func attachLocalTenants(rows []SpanRow, src Source[LocalProcesses], local string, j models.SpanMatch) notices.List {
	var want []int
	for i := range rows {
		r := &rows[i]
		if r.GPUIdle == nil || r.GPUIdle.Queued <= 0 {
			continue
		}
		if isLocalHost(local, r.Host, r.Span.Resource[j.HostAttribute], r.Span.Attributes[j.HostAttribute]) {
			want = append(want, i)
		}
	}
	if len(want) == 0 {
		return nil
	}
	lister, err := src.Get()
	if err != nil {
		return nil // NVML is off: the caveat on the cause says what would name the tenants
	}
	procs, found, err := lister.Processes()
	if err != nil {
		var n notices.List
		n.Warnf("NVML could not list the processes on this host's GPUs, so the GPU's other tenants are not named: %v", err)
		return n
	}
	for _, i := range want {
		r := &rows[i]
		t := &LocalTenants{Host: local}
		if v := r.Span.Resource[ProcessPIDAttribute]; v != "" {
			if pid, err := strconv.ParseUint(v, 10, 32); err == nil {
				t.OwnPID = uint32(pid)
			}
		}
		if t.OwnPID != 0 && !slices.ContainsFunc(procs, func(q models.GPUProcess) bool { return q.PID == t.OwnPID }) {
			t.OwnPID, t.ForeignPID = 0, t.OwnPID
		}
		onGPU := func(p models.GPUProcess) bool {
			if len(r.GPUs) > 0 {
				return slices.ContainsFunc(r.GPUs, func(g string) bool {
					return g == strconv.Itoa(p.GPU) || p.GPUUUID != "" && strings.EqualFold(g, p.GPUUUID)
				})
			}
			if t.OwnPID != 0 { // the span's own process's GPUs
				return slices.ContainsFunc(procs, func(q models.GPUProcess) bool { return q.PID == t.OwnPID && q.GPU == p.GPU })
			}
			return true
		}
		var all []models.GPUProcess
		for _, p := range procs {
			if onGPU(p) {
				all = append(all, p)
			}
		}
		for _, p := range all {
			if p.PID != t.OwnPID {
				t.Processes = append(t.Processes, p)
			}
		}
		// Without the span's PID, one process on the GPU is most likely the service itself.
		if t.OwnPID == 0 && len(all) < 2 {
			t.Processes = nil
		}
		if len(t.Processes) > 0 {
			r.Tenants = t
		}
	}
	return found
}
