package gpusim

import (
	"hash/fnv"
	"math"
)

// Model is a GPU model's fixed figures, as NVML and DCGM report them.
type Model struct {
	Name          string  // modelName label
	FBTotalMiB    float64 // framebuffer, MiB (DCGM_FI_DEV_FB_FREE + USED + RESERVED)
	FBReservedMiB float64
	MaxSMClock    float64 // MHz, the highest SM clock the GPU reaches (boost)
	IdleSMClock   float64 // MHz, the SM clock when idle
	MemClock      float64 // MHz
	// ThermalSMClock and PowerCapSMClock are the SM clocks while thermal- and power-throttled.
	ThermalSMClock  float64
	PowerCapSMClock float64
	PowerLimitW     float64 // enforced power limit
	IdlePowerW      float64
	// PCIeBytesPerSec is the link's capacity per direction (generation × width).
	PCIeBytesPerSec float64
	HBM             bool // memory temperature is reported (HBM); GDDR boards report 0
}

// The models the simulator and the fixtures use.
var (
	// A100SXM480GB: PCIe Gen4 x16 (~31.5 GB/s per direction), 400 W, 1410 MHz boost.
	A100SXM480GB = Model{
		Name: "NVIDIA A100-SXM4-80GB", FBTotalMiB: 81920, FBReservedMiB: 635,
		MaxSMClock: 1410, IdleSMClock: 210, MemClock: 1593, ThermalSMClock: 1100, PowerCapSMClock: 1275,
		PowerLimitW: 400, IdlePowerW: 56, PCIeBytesPerSec: 31.5e9, HBM: true,
	}
	// H10080GBHBM3: an H100 SXM5 as nvidia-smi shows it (81559 MiB), PCIe Gen5 x16 (~63 GB/s per
	// direction), 700 W, 1980 MHz boost. The reserved framebuffer is a plausible figure, not a
	// measured one.
	H10080GBHBM3 = Model{
		Name: "NVIDIA H100 80GB HBM3", FBTotalMiB: 81559, FBReservedMiB: 329,
		MaxSMClock: 1980, IdleSMClock: 345, MemClock: 2619, ThermalSMClock: 1500, PowerCapSMClock: 1755,
		PowerLimitW: 700, IdlePowerW: 72, PCIeBytesPerSec: 63e9, HBM: true,
	}
	// TeslaT4: PCIe Gen3 x16 (~15.75 GB/s per direction), 70 W, 1590 MHz boost, GDDR6.
	TeslaT4 = Model{
		Name: "Tesla T4", FBTotalMiB: 15360, FBReservedMiB: 257,
		MaxSMClock: 1590, IdleSMClock: 300, MemClock: 5000, ThermalSMClock: 900, PowerCapSMClock: 1200,
		PowerLimitW: 70, IdlePowerW: 27, PCIeBytesPerSec: 15.75e9,
	}
)

// Reading is one GPU's figures at one moment, in the units of the DCGM series.
type Reading struct {
	GPUUtil     float64 // DCGM_FI_DEV_GPU_UTIL, %
	MemCopyUtil float64 // DCGM_FI_DEV_MEM_COPY_UTIL, %
	SMActive    float64 // DCGM_FI_PROF_SM_ACTIVE, 0..1
	GrEngine    float64 // DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0..1
	Tensor      float64 // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, 0..1
	DRAMActive  float64 // DCGM_FI_PROF_DRAM_ACTIVE, 0..1
	PCIeTx      float64 // bytes/s (DCGM_FI_PROF_PCIE_TX_BYTES; the deprecated series is this / 1024)
	PCIeRx      float64 // bytes/s
	TempC       float64 // DCGM_FI_DEV_GPU_TEMP
	MemTempC    float64 // DCGM_FI_DEV_MEMORY_TEMP
	PowerW      float64 // DCGM_FI_DEV_POWER_USAGE
	SMClock     float64 // DCGM_FI_DEV_SM_CLOCK, MHz
	MemClock    float64 // DCGM_FI_DEV_MEM_CLOCK, MHz
	FBUsedMiB   float64 // DCGM_FI_DEV_FB_USED
	ClockEvents float64 // DCGM_FI_DEV_CLOCKS_EVENT_REASONS bitmask
}

// Clock event (throttle) bits of DCGM_FI_DEV_CLOCKS_EVENT_REASONS.
const (
	ClockEventIdle         = 0x1
	ClockEventSWPowerCap   = 0x4
	ClockEventSWThermal    = 0x20
	ClockEventHWThermal    = 0x40
	ClockEventHWPowerBrake = 0x80
)

// Nominal is what a GPU of model m shows in a class, before noise. Each class is clear-cut for
// the seeds' rules (GPU.md §2): only the class's own signal crosses a threshold, with margin
// for the noise Noisy adds.
func Nominal(class string, m Model) Reading {
	r := Reading{MemClock: m.MemClock, SMClock: m.MaxSMClock}
	link := m.PCIeBytesPerSec
	set := func(util, memCopy, sm, gr, tensor, dram, tx, rx, temp, powerShare, fbShare float64) {
		r.GPUUtil, r.MemCopyUtil, r.SMActive, r.GrEngine, r.Tensor, r.DRAMActive = util, memCopy, sm, gr, tensor, dram
		r.PCIeTx, r.PCIeRx, r.TempC = tx*link, rx*link, temp
		r.PowerW = powerShare * m.PowerLimitW
		r.FBUsedMiB = math.Round(fbShare * (m.FBTotalMiB - m.FBReservedMiB))
	}
	switch class {
	case ComputeBound:
		set(95, 30, 0.92, 0.97, 0.62, 0.25, 0.02, 0.04, 72, 0.85, 0.64)
	case MemoryBound:
		set(40, 85, 0.35, 0.45, 0.08, 0.75, 0.03, 0.03, 66, 0.70, 0.87)
	case PCIeBound:
		set(30, 20, 0.25, 0.32, 0.03, 0.15, 0.80, 0.80, 55, 0.45, 0.30)
	case ThermalThrottled:
		set(65, 35, 0.60, 0.70, 0.35, 0.30, 0.03, 0.05, 88, 0.75, 0.50)
		r.SMClock = m.ThermalSMClock
		r.ClockEvents = ClockEventHWThermal
	case PowerThrottled:
		set(75, 45, 0.68, 0.80, 0.40, 0.35, 0.03, 0.05, 78, 1, 0.60)
		r.SMClock = m.PowerCapSMClock
		r.ClockEvents = ClockEventSWPowerCap
	case Idle:
		set(2, 1, 0.01, 0.02, 0, 0.005, 0.0005, 0.0005, 34, 0, 0)
		r.PowerW = m.IdlePowerW
		r.SMClock = m.IdleSMClock
		r.ClockEvents = ClockEventIdle
	default: // Balanced
		set(60, 40, 0.55, 0.63, 0.25, 0.40, 0.06, 0.08, 62, 0.60, 0.37)
	}
	if m.HBM {
		r.MemTempC = r.TempC + 4
	}
	return r
}

// Noisy adds small deterministic noise to a nominal reading: key identifies the GPU and the
// moment (the same key gives the same reading). The noise never moves a figure across the
// thresholds that separate the classes.
func Noisy(r Reading, class string, key string) Reading {
	h := fnv.New64a()
	h.Write([]byte(key))
	seed := h.Sum64()
	n := func(i uint64) float64 { return unit(seed + i*0x9e3779b97f4a7c15) }

	utilSpread := 2.0
	if class == ThermalThrottled {
		utilSpread = 12 // "utilisation fluctuating" (the Continuous Profiling Guide)
	}
	r.GPUUtil = clamp(math.Round(r.GPUUtil+utilSpread*n(1)), 0, 100)
	r.MemCopyUtil = clamp(math.Round(r.MemCopyUtil+2*n(2)), 0, 100)
	r.SMActive = clamp(r.SMActive+0.01*n(3), 0, 1)
	r.GrEngine = clamp(r.GrEngine+0.01*n(4), 0, 1)
	r.Tensor = clamp(r.Tensor+0.01*n(5), 0, 1)
	r.DRAMActive = clamp(r.DRAMActive+0.015*n(6), 0, 1)
	r.PCIeTx = math.Round(r.PCIeTx * (1 + 0.02*n(7)))
	r.PCIeRx = math.Round(r.PCIeRx * (1 + 0.02*n(8)))
	r.TempC = math.Round(r.TempC + n(9))
	if r.MemTempC != 0 {
		r.MemTempC = math.Round(r.MemTempC + n(10))
	}
	if class == PowerThrottled {
		// At the cap: never above it.
		r.PowerW = r.PowerW * (1 - 0.005*(1+n(11)))
	} else {
		r.PowerW = r.PowerW * (1 + 0.03*n(11))
	}
	r.PowerW = math.Round(r.PowerW*1000) / 1000 // DCGM reports mW resolution
	if class == ThermalThrottled || class == PowerThrottled {
		r.SMClock = math.Round(r.SMClock + 15*n(12))
	}
	r.FBUsedMiB = math.Round(r.FBUsedMiB * (1 + 0.005*n(13)))
	return r
}

// unit maps a 64-bit value to [-1, 1] through splitmix64's finaliser.
func unit(x uint64) float64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/float64(1<<53)*2 - 1
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }
