package nvml

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
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
		if got := models.ThrottleReasons(c.mask); !slices.Equal(got, c.want) {
			t.Errorf("models.ThrottleReasons(%#x) = %q, want %q", c.mask, got, c.want)
		}
	}
	mask := uint64(0x44)
	if got := (models.GPUDevice{ClockEventReasons: &mask}).Throttle(); got != "software power cap, hardware thermal slowdown" {
		t.Errorf("Throttle = %q", got)
	}
	if got := (models.GPUDevice{}).Throttle(); got != "" {
		t.Errorf("unknown mask: Throttle = %q", got)
	}
}

func TestFiguresLeaveMissingReadingsNaN(t *testing.T) {
	util, mask := 93.0, uint64(0x40)
	f := models.GPUDevice{GPUUtilPercent: &util, ClockEventReasons: &mask}.Figures()
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
