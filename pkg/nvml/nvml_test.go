package nvml

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestThrottleReasonsDecodeEveryBit(t *testing.T) {
	for _, c := range []struct {
		mask uint64
		want []string
	}{
		{0, []string{"none"}},
		{0x1, []string{"GPU idle"}},
		{0x4, []string{"software power cap"}},
		{0x20 | 0x40, []string{"software thermal slowdown", "hardware thermal slowdown"}},
		{0x80 | 0x8, []string{"hardware slowdown", "hardware power brake slowdown"}},
		{0x2 | 0x10 | 0x100, []string{"applications clocks setting", "sync boost", "display clock setting"}},
		{0x4 | 0x1000, []string{"software power cap", "unknown bits 0x1000"}},
	} {
		if got := ThrottleReasons(c.mask); !slices.Equal(got, c.want) {
			t.Errorf("ThrottleReasons(%#x) = %q, want %q", c.mask, got, c.want)
		}
	}
	mask := uint64(0x44)
	if got := (Device{ClockEventReasons: &mask}).Throttle(); got != "software power cap, hardware thermal slowdown" {
		t.Errorf("Throttle = %q", got)
	}
	if got := (Device{}).Throttle(); got != "" {
		t.Errorf("unknown mask: Throttle = %q", got)
	}
}

func TestXIDMeanings(t *testing.T) {
	for _, x := range []uint64{13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 119, 120} {
		if m, a := XIDMeaning(x); m == "" || a == "" || m == "unlisted XID" {
			t.Errorf("XID %d has no meaning", x)
		}
	}
	if m, _ := XIDMeaning(79); m != "GPU has fallen off the bus" {
		t.Errorf("XID 79 = %q", m)
	}
	if m, a := XIDMeaning(9999); m != "unlisted XID" || a == "" {
		t.Errorf("XID 9999 = %q %q", m, a)
	}
}

func TestFiguresLeaveMissingReadingsNaN(t *testing.T) {
	util, mask := 93.0, uint64(0x40)
	f := Device{GPUUtilPercent: &util, ClockEventReasons: &mask}.Figures()
	if f.GPUUtil != 93 || f.ClockEvents != 64 || !math.IsNaN(f.MemCopyUtil) || !math.IsNaN(f.PowerW) || !math.IsNaN(f.SMActive) {
		t.Errorf("figures = %+v", f)
	}
}

func TestRingKeepsTheLastN(t *testing.T) {
	r := newRing[int](3)
	if _, ok := r.last(); ok || len(r.all()) != 0 {
		t.Fatal("empty ring has items")
	}
	for i := 1; i <= 5; i++ {
		r.push(i)
	}
	if got := r.all(); !slices.Equal(got, []int{3, 4, 5}) {
		t.Errorf("all = %v", got)
	}
	if v, _ := r.last(); v != 5 {
		t.Errorf("last = %d", v)
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.Interval != time.Second || o.Capacity != DefaultCapacity || o.XIDs != DefaultXIDs {
		t.Errorf("defaults = %+v", o)
	}
}
