package classify

import (
	"math"
	"strings"
	"testing"
	"time"
)

var fleetT0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// steady is a GPU reading the same figures every step; bitmask false leaves the clock-event
// bitmask out, as old exporters do.
func steady(g GPU, steps int, step time.Duration, smActive, dramActive float64, bitmask bool) GPUSeries {
	s := GPUSeries{GPU: g}
	for i := range steps {
		f := Missing()
		f.SMActive, f.GrEngine, f.DRAMActive = smActive, smActive, dramActive
		f.TempC, f.SMClockMHz = 60, 1410
		if bitmask {
			f.ClockEvents = 0
		}
		s.Samples = append(s.Samples, Sample{Time: fleetT0.Add(time.Duration(i) * step), Figures: f})
	}
	return s
}

func TestClockHistoryIsFetchedOnlyForGPUsWithoutTheBitmask(t *testing.T) {
	th := DefaultThresholds() // clock maximum over 24 h, shares over 1 h
	withMask := steady(GPU{Host: "a", Index: "0"}, 10, 15*time.Second, 0.9, 0.2, true)
	if _, _, _, ok := ClockHistoryWindow([]GPUSeries{withMask}, th, 15*time.Second); ok {
		t.Error("a fleet with the bitmask asks for the clock history")
	}
	without := steady(GPU{Host: "a", Index: "1"}, 10, 15*time.Second, 0.9, 0.2, false)
	start, end, step, ok := ClockHistoryWindow([]GPUSeries{withMask, without}, th, 15*time.Second)
	if !ok {
		t.Fatal("no clock history for a GPU without the bitmask")
	}
	// The 23 h before the fetched range (which starts with the share window), strictly before
	// its first step, in ClockHistorySteps steps.
	if !start.Equal(fleetT0.Add(-23*time.Hour)) || !end.Before(fleetT0) || fleetT0.Sub(end) > time.Microsecond || step != 115*time.Second {
		t.Errorf("history %s to %s at %s", start, end, step)
	}
	// A panel step coarser than that is kept.
	if _, _, step, _ := ClockHistoryWindow([]GPUSeries{without}, th, 5*time.Minute); step != 5*time.Minute {
		t.Errorf("step %s", step)
	}
}

func TestClassifyFleetKeepsTheStepsFromThePanelsStart(t *testing.T) {
	th := DefaultThresholds()
	busy := steady(GPU{Host: "a", Index: "0"}, 20, time.Minute, 0.95, 0.2, true)
	idle := steady(GPU{Host: "a", Index: "1"}, 20, time.Minute, 0.01, 0.01, true)
	// The panel starts 10.5 steps into the fetched range: its first step is the one before.
	from := fleetT0.Add(10*time.Minute + 30*time.Second)
	got := ClassifyFleet([]GPUSeries{busy, idle}, nil, th, from)
	if len(got) != 2 || got[0].GPU != busy.GPU || got[1].GPU != idle.GPU {
		t.Fatalf("results %+v", got)
	}
	for i, want := range []Class{ComputeBound, Idle} {
		r := got[i]
		if len(r.Times) != 10 || !r.Times[0].Equal(fleetT0.Add(10*time.Minute)) || r.Classes[0] != want {
			t.Errorf("%s: %d steps from %s, first %s", r.GPU.Name(), len(r.Times), r.Times[0], r.Classes[0])
		}
		if len(r.Evidence) == 0 || !r.EvidenceTime.Equal(r.Times[len(r.Times)-1]) {
			t.Errorf("%s: evidence %v at %s", r.GPU.Name(), r.Evidence, r.EvidenceTime)
		}
		if s := r.Shares[want]; len(s) != 10 || s[9] != 1 {
			t.Errorf("%s: %s shares %v", r.GPU.Name(), want, s)
		}
	}
}

func TestCoverageNamesGPUsWithoutClassOrBitmask(t *testing.T) {
	th := DefaultThresholds()
	ok := steady(GPU{Host: "a", Index: "0"}, 5, time.Minute, 0.9, 0.2, true)
	noMem := steady(GPU{Host: "a", Index: "1"}, 5, time.Minute, 0.9, math.NaN(), true)
	old := steady(GPU{Host: "b", Index: "0"}, 5, time.Minute, 0.9, 0.2, false)
	series := []GPUSeries{ok, noMem, old}
	notices := strings.Join(Coverage(ClassifyFleet(series, nil, th, fleetT0), series, th).Texts(), "\n")
	for _, part := range []string{
		"no class for a/1: a compute figure",
		"no clock-event bitmask (DCGM_FI_DEV_CLOCKS_EVENT_REASONS) for b/0 at some steps",
	} {
		if !strings.Contains(notices, part) {
			t.Errorf("lacks %q:\n%s", part, notices)
		}
	}
	if strings.Contains(notices, "a/0") {
		t.Errorf("names a GPU classified with its bitmask:\n%s", notices)
	}
}

func TestWindowsKeepEachMIGInstanceOfOneGPU(t *testing.T) {
	th := DefaultThresholds()
	gpu := GPU{Host: "a", Index: "0", UUID: "GPU-5fd4", Model: "NVIDIA A100-SXM4-40GB"}
	big, small := gpu, gpu
	big.MIG, big.MIGProfile = "1", "3g.20gb"
	small.MIG, small.MIGProfile = "2", "1g.5gb"
	busy := steady(big, 5, time.Second, 0.95, 0.2, true)
	idle := steady(small, 5, time.Second, 0.01, 0.01, true)
	w := NewWindows([]GPUSeries{busy, idle}, th)
	cut := func(s GPUSeries) GPUSeries { return GPUSeries{GPU: s.GPU, Samples: s.Samples[1:3]} }
	if c, share, _ := w.Dominant([]GPUSeries{cut(busy)}); c != ComputeBound || share != 1 {
		t.Errorf("instance 1: %s %v", c, share)
	}
	if c, share, _ := w.Dominant([]GPUSeries{cut(idle)}); c != Idle || share != 1 {
		t.Errorf("instance 2: %s %v", c, share)
	}
	// Over both, the evidence names the instance it is about.
	c, share, ev := w.Dominant([]GPUSeries{cut(busy), cut(idle)})
	if c != ComputeBound || share != 0.5 || len(ev) == 0 || !strings.HasPrefix(ev[0], busy.GPU.OnHost()+": ") || !strings.Contains(busy.GPU.OnHost(), "3g.20gb") {
		t.Errorf("both: %s %v %v", c, share, ev)
	}
}
