// Package gpusim makes NVIDIA DCGM exporter series without a GPU: a live simulator (served by
// `hsi-demo gpus`, every series labelled simulated="true") and deterministic fixtures for tests
// (OpenMetrics with timestamps, loaded into Prometheus with promtool). Both follow schedules
// defined here, so a test can ask which class a GPU should show at a time instead of hard-coding
// it: Live.ClassAt for the simulator, FixtureClass for the fixtures. See README.md.
//
// Values are deterministic: they depend only on the GPU, the series and the time (noise comes
// from a hash of those, not from a random generator).
package gpusim

import (
	"time"
)

// The class names, the same strings as pkg/classify's Class constants (a test checks), kept as
// plain strings so the simulator builds without the plugin's packages.
const (
	ComputeBound     = "compute-bound"
	MemoryBound      = "memory-bound"
	PCIeBound        = "pcie-bound"
	ThermalThrottled = "thermal-throttled"
	PowerThrottled   = "power-throttled"
	Idle             = "idle"
	Balanced         = "balanced"
	// NoData is what FixtureClass answers where a GPU has no samples (a gap, outside the window,
	// an unknown GPU).
	NoData = "no data"
)

// Classes are the seven classes a GPU can show, in pkg/classify's display order.
var Classes = []string{ComputeBound, MemoryBound, PCIeBound, ThermalThrottled, PowerThrottled, Idle, Balanced}

// Schedule moves GPUs through classes with the wall clock: the time line is cut into slots of
// Slot, counted from the Unix epoch; slot k shows Classes[k mod len(Classes)]. GPU i runs
// i×GPUOffset ahead of GPU 0, so GPUs of one host show different classes at the same moment.
type Schedule struct {
	Slot      time.Duration
	Classes   []string
	GPUOffset time.Duration
}

// Live is the simulator's schedule: the seven classes, two minutes each (a 14-minute cycle), GPU
// i six minutes (three classes) ahead of GPU 0.
var Live = Schedule{Slot: 2 * time.Minute, Classes: Classes, GPUOffset: 6 * time.Minute}

// Cycle is the time after which the schedule repeats.
func (s Schedule) Cycle() time.Duration { return s.Slot * time.Duration(len(s.Classes)) }

// ClassAt is the class GPU gpu shows at t.
func (s Schedule) ClassAt(gpu int, t time.Time) string {
	class, _, _ := s.Phase(gpu, t)
	return class
}

// Phase is the class GPU gpu shows at t and the interval [from, to) in which it shows it. Tests
// sampling a live series should keep a scrape interval or two away from from and to.
func (s Schedule) Phase(gpu int, t time.Time) (class string, from, to time.Time) {
	k, from := s.slot(gpu, t)
	return s.Classes[mod(k, int64(len(s.Classes)))], from, from.Add(s.Slot)
}

// slot numbers the slot of GPU gpu holding t, and gives its start in wall time.
func (s Schedule) slot(gpu int, t time.Time) (int64, time.Time) {
	shift := time.Duration(gpu) * s.GPUOffset
	shifted := t.UnixNano() + int64(shift)
	k := floorDiv(shifted, int64(s.Slot))
	return k, time.Unix(0, k*int64(s.Slot)-int64(shift))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
