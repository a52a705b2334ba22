package models

import (
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
)

func TestClassifySettingsDefaultToTheSeeds(t *testing.T) {
	s := load(t, `{}`, nil)
	if s.bad.GPU != nil {
		t.Fatalf("invalid GPU settings: %v", s.bad.GPU)
	}
	if s.Classify.Thresholds != classify.DefaultThresholds() || len(s.Classify.Changed) != 0 {
		t.Errorf("thresholds %+v changed %v, want the defaults", s.Classify.Thresholds, s.Classify.Changed)
	}
}

func TestClassifySettingsReadNamedKeysAndPCIeLink(t *testing.T) {
	s := load(t, `{
		"gpuThresholds": {"computeBoundPct": 90, "memoryBoundPct": "90", "pcieBoundLinkShare": 0.5, "shareWindow": "30m", "clockMaxWindow": "2d", "dramActivePeak": null},
		"pcieGeneration": 5, "pcieWidth": "8"
	}`, nil)
	if s.bad.GPU != nil {
		t.Fatalf("invalid GPU settings: %v", s.bad.GPU)
	}
	th := s.Classify.Thresholds
	want := classify.DefaultThresholds()
	want.ComputeBoundPct, want.MemoryBoundPct, want.PCIeBoundLinkShare = 90, 90, 0.5
	want.ShareWindow, want.ClockMaxWindow = 30*time.Minute, 48*time.Hour
	want.PCIeGeneration, want.PCIeWidth = 5, 8
	if th != want {
		t.Errorf("thresholds\n %+v, want\n %+v", th, want)
	}
	// Gen5 x8 has the capacity of the default Gen4 x16: not a change the rules would notice.
	if got := strings.Join(s.Classify.Changed, ","); got != "computeBoundPct,memoryBoundPct,pcieBoundLinkShare,clockMaxWindow,shareWindow" {
		t.Errorf("changed = %s", got)
	}
}

func TestClassifySettingsErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ jsonData, want string }{
		{`{"gpuThresholds": [80]}`, `jsonData.gpuThresholds must be an object such as {"computeBoundPct": 80}, got [80]`},
		{`{"gpuThresholds": {"computeBound": 80}}`, `jsonData.gpuThresholds has no key "computeBound"; known keys: computeBoundPct, computeBoundMaxMemoryPct,`},
		{`{"gpuThresholds": {"memoryBoundPct": 170}}`, "jsonData.gpuThresholds.memoryBoundPct must be in [0, 100], got 170"},
		{`{"gpuThresholds": {"idleBelowPct": true}}`, "jsonData.gpuThresholds.idleBelowPct must be a number, got true"},
		{`{"gpuThresholds": {"idleBelowPct": "half"}}`, `jsonData.gpuThresholds.idleBelowPct must be a number, got "half"`},
		{`{"gpuThresholds": {"thermalClockRatio": 0}}`, "jsonData.gpuThresholds.thermalClockRatio must be in (0, 1], got 0"},
		{`{"gpuThresholds": {"shareWindow": "10s"}}`, `jsonData.gpuThresholds.shareWindow must be whole seconds between 1m and 1w, got 10s`},
		{`{"gpuThresholds": {"clockMaxWindow": "1 day"}}`, `jsonData.gpuThresholds.clockMaxWindow must be a duration such as "1h" or "30m", got "1 day"`},
		{`{"gpuThresholds": {"shareWindow": 3600}}`, `jsonData.gpuThresholds.shareWindow must be a duration such as "1h" or "30m", got 3600`},
		{`{"pcieGeneration": 7}`, "jsonData.pcieGeneration must be 1 to 6, got 7"},
		{`{"pcieGeneration": 4.5}`, "jsonData.pcieGeneration must be a whole number, got 4.5"},
		{`{"pcieWidth": 3}`, "jsonData.pcieWidth must be one of [1 2 4 8 12 16 32] lanes, got 3"},
		{`{"pcieWidth": "x16"}`, `jsonData.pcieWidth must be a number, got "x16"`},
	} {
		s := load(t, c.jsonData, nil)
		if s.bad.GPU == nil || !strings.Contains(s.bad.GPU.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.jsonData, s.bad.GPU, c.want)
		}
		// An invalid key never leaves a half-set threshold: the rest stays usable.
		if err := s.Classify.Thresholds.Validate(); err != nil {
			t.Errorf("%s: thresholds left invalid: %v", c.jsonData, err)
		}
	}
}
