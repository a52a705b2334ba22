// Package nvml reads the GPUs of the host the plugin runs on through NVIDIA's NVML
// (github.com/NVIDIA/go-nvml): devices, per-process GPU memory, XID events and short live series
// from one shared sampler per data source instance.
//
// go-nvml needs cgo and dlopens libnvidia-ml.so.1 at Init, so the NVML code builds only on linux
// with cgo (sampler_nvml.go); every other build gets a stub (stub.go) whose every method answers
// NotBuiltMessage. Without a driver Init fails, and any further NVML call would kill the process:
// the sampler never calls NVML unless Init succeeded. This file is cgo-free: the types the plugin
// uses, the throttle-reason words and the XID table.
package nvml

import (
	"errors"
	"time"
)

// NotBuiltMessage is the answer of builds without NVML (not linux, or CGO_ENABLED=0).
const NotBuiltMessage = "NVML is not available on this build (it needs linux and cgo)"

// ErrNotBuilt is returned by every method of the stub.
var ErrNotBuilt = errors.New(NotBuiltMessage)

// Defaults of Options.
const (
	DefaultInterval = time.Second
	DefaultCapacity = 300 // 5 minutes at 1 s
	DefaultXIDs     = 100
	// retryAfter is how long a failed Init is remembered before the next query tries again
	// (a driver installed or a device node made readable later is then picked up).
	retryAfter = 30 * time.Second
)

// Options tune the sampler; zero values take the defaults.
type Options struct {
	Interval time.Duration // between samples
	Capacity int           // samples kept per GPU (the ring buffer's size)
	XIDs     int           // XID events kept
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Capacity <= 0 {
		o.Capacity = DefaultCapacity
	}
	if o.XIDs <= 0 {
		o.XIDs = DefaultXIDs
	}
	return o
}

// ErrClosed answers calls after Close.
var ErrClosed = errors.New("NVML sampler is closed (the data source was reloaded)")

// ring is a bounded buffer of the last n items.
type ring[T any] struct {
	items []T
	next  int
	full  bool
}

func newRing[T any](n int) *ring[T] { return &ring[T]{items: make([]T, n)} }

func (r *ring[T]) push(v T) {
	r.items[r.next] = v
	r.next = (r.next + 1) % len(r.items)
	if r.next == 0 {
		r.full = true
	}
}

// all returns the items oldest first.
func (r *ring[T]) all() []T {
	if !r.full {
		return append([]T(nil), r.items[:r.next]...)
	}
	return append(append([]T(nil), r.items[r.next:]...), r.items[:r.next]...)
}

func (r *ring[T]) last() (T, bool) {
	var zero T
	if !r.full && r.next == 0 {
		return zero, false
	}
	return r.items[(r.next-1+len(r.items))%len(r.items)], true
}
