package gpusim

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"time"
)

// SimulatedDriver is the DCGM_FI_DRIVER_VERSION label of the live simulator's GPUs.
const SimulatedDriver = "570.124.06"

// Simulator serves a host's GPUs as dcgm-exporter 4.x would, following a Schedule. Every series
// carries simulated="true" so nobody mistakes it for hardware.
type Simulator struct {
	GPUs     []GPU
	Schedule Schedule
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewSimulator simulates n A100-SXM4-80GB GPUs on host under the Live schedule.
func NewSimulator(host string, n int) *Simulator {
	s := &Simulator{Schedule: Live}
	for i := range n {
		s.GPUs = append(s.GPUs, NewGPU(host, i, A100SXM480GB, Current, SimulatedDriver, map[string]string{"simulated": "true"}))
	}
	return s
}

// bootTime is when the simulated GPUs "booted": the energy counter counts from it.
var bootTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Samples are the GPUs' figures at t: the schedule's class with noise that changes every second.
func (s *Simulator) Samples(t time.Time) []Sample {
	out := make([]Sample, len(s.GPUs))
	for i, g := range s.GPUs {
		class := s.Schedule.ClassAt(g.Index, t)
		r := Noisy(Nominal(class, g.Model), class, g.Host+"/"+strconv.Itoa(g.Index)+"/"+strconv.FormatInt(t.Unix(), 10))
		out[i] = newSample(g, r, s.energy(g, t)-s.energy(g, bootTime))
	}
	return out
}

// energy is the energy a GPU drew from the Unix epoch to t at its classes' nominal power, in mJ:
// whole cycles, then the whole slots of the current cycle, then the current slot so far. Being
// computed from the clock alone, the counter only grows, across restarts too.
func (s *Simulator) energy(g GPU, t time.Time) float64 {
	sch := s.Schedule
	n := int64(len(sch.Classes))
	slotMS := float64(sch.Slot.Milliseconds())
	power := func(j int64) float64 { return Nominal(sch.Classes[mod(j, n)], g.Model).PowerW }
	cycle := 0.0
	for j := range n {
		cycle += power(j) * slotMS
	}
	k, from := sch.slot(g.Index, t)
	e := float64(floorDiv(k, n)) * cycle
	for j := floorDiv(k, n) * n; j < k; j++ {
		e += power(j) * slotMS
	}
	return e + power(k)*float64(t.Sub(from).Milliseconds())
}

// WriteMetrics writes the GPUs' series at t in dcgm-exporter's text format.
func (s *Simulator) WriteMetrics(w io.Writer, t time.Time) error {
	return WriteText(w, s.GPUs, s.Samples(t))
}

// ServeHTTP answers GET /metrics (the exporter's path) and GET /health.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveExporter(w, r, s.WriteMetrics, s.Now)
}

// serveExporter answers an exporter's GET /metrics with write's text at now() (time.Now when
// nil) and GET /health with OK.
func serveExporter(w http.ResponseWriter, r *http.Request, write func(io.Writer, time.Time) error, now func() time.Time) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/metrics":
		if now == nil {
			now = time.Now
		}
		var buf bytes.Buffer
		if err := write(&buf, now()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(buf.Bytes())
	case "/health":
		_, _ = w.Write([]byte("OK"))
	default:
		http.NotFound(w, r)
	}
}

// Scrape writes gpus' series at t in dcgm-exporter's text format, each GPU in class with the live
// simulator's noise: a scrape to write elsewhere (a scenario's GPUs, pushed into Prometheus).
// GPUs of one host and index with other Labels are one device's copies per pod, as
// --kubernetes-virtual-gpus writes a time-sliced GPU: the same reading under each.
func Scrape(w io.Writer, gpus []GPU, class string, t time.Time) error {
	samples := make([]Sample, len(gpus))
	for i, g := range gpus {
		r := Noisy(Nominal(class, g.Model), class, g.Host+"/"+strconv.Itoa(g.Index)+"/"+strconv.FormatInt(t.Unix(), 10))
		samples[i] = newSample(g, r, float64(t.Sub(bootTime).Milliseconds())*Nominal(class, g.Model).PowerW)
	}
	return WriteText(w, gpus, samples)
}
