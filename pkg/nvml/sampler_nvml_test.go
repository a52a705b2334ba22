//go:build linux && cgo

package nvml

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// fakeHost is 8 mock A100s with every reading the sampler takes wired, an XID queue and
// switches for the failure returns.
type fakeHost struct {
	srv      *dgxa100.Server
	xids     chan gonvml.EventData
	lost     atomic.Bool // GPU 1 answers ERROR_GPU_IS_LOST from now on
	freed    atomic.Int32
	shutdown atomic.Int32
}

func newFakeHost(t *testing.T) *fakeHost {
	t.Helper()
	h := &fakeHost{srv: dgxa100.New(), xids: make(chan gonvml.EventData, 8)}
	h.srv.ShutdownFunc = func() gonvml.Return { h.shutdown.Add(1); return gonvml.SUCCESS }
	es := &mock.EventSet{
		WaitFunc: func(ms uint32) (gonvml.EventData, gonvml.Return) {
			select {
			case ev := <-h.xids:
				return ev, gonvml.SUCCESS
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
			}
		},
		FreeFunc: func() gonvml.Return { h.freed.Add(1); return gonvml.SUCCESS },
	}
	h.srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return es, gonvml.SUCCESS }
	for i, dv := range h.srv.Devices {
		d := dv.(*dgxa100.Device)
		lost := func(r gonvml.Return) gonvml.Return {
			if i == 1 && h.lost.Load() {
				return gonvml.ERROR_GPU_IS_LOST
			}
			return r
		}
		d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
			p := gonvml.PciInfo{}
			for j, c := range []byte(d.PciBusID) {
				p.BusId[j] = int8(c)
			}
			return p, gonvml.SUCCESS
		}
		memInfo := d.GetMemoryInfoFunc
		d.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) {
			m, r := memInfo()
			m.Used = 10 << 30
			m.Free = m.Total - m.Used
			return m, lost(r)
		}
		d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
			return gonvml.Utilization{Gpu: 95, Memory: 20}, lost(gonvml.SUCCESS)
		}
		d.GetPcieThroughputFunc = func(c gonvml.PcieUtilCounter) (uint32, gonvml.Return) {
			return 1000, lost(gonvml.SUCCESS)
		}
		d.GetCurrPcieLinkGenerationFunc = func() (int, gonvml.Return) { return 4, lost(gonvml.SUCCESS) }
		d.GetCurrPcieLinkWidthFunc = func() (int, gonvml.Return) { return 16, lost(gonvml.SUCCESS) }
		d.GetClockInfoFunc = func(c gonvml.ClockType) (uint32, gonvml.Return) {
			if c == gonvml.CLOCK_SM {
				return 1410, lost(gonvml.SUCCESS)
			}
			return 1215, lost(gonvml.SUCCESS)
		}
		d.GetMaxClockInfoFunc = d.GetClockInfoFunc
		d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 61, lost(gonvml.SUCCESS) }
		d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 312_000, lost(gonvml.SUCCESS) }
		d.GetEnforcedPowerLimitFunc = func() (uint32, gonvml.Return) { return 400_000, lost(gonvml.SUCCESS) }
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, gonvml.Return) { return 0x40, lost(gonvml.SUCCESS) }
		d.GetTotalEccErrorsFunc = func(gonvml.MemoryErrorType, gonvml.EccCounterType) (uint64, gonvml.Return) {
			return 0, lost(gonvml.SUCCESS)
		}
		d.RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return { return gonvml.SUCCESS }
		d.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
			if i != 0 {
				return nil, lost(gonvml.SUCCESS)
			}
			return []gonvml.ProcessInfo{{Pid: uint32(os.Getpid()), UsedGpuMemory: 3 << 30}, {Pid: 1 << 30, UsedGpuMemory: ^uint64(0)}}, gonvml.SUCCESS
		}
		d.GetGraphicsRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) { return nil, lost(gonvml.SUCCESS) }
	}
	return h
}

func (h *fakeHost) sampler(t *testing.T) *Sampler {
	s := NewWithLibrary(h.srv, Options{Interval: 20 * time.Millisecond, Capacity: 10})
	t.Cleanup(s.Close)
	return s
}

func TestDevicesView(t *testing.T) {
	h := newFakeHost(t)
	s := h.sampler(t)
	st, err := s.Status()
	if err != nil || st.DriverVersion != "550.54.15" || st.DeviceCount != 8 {
		t.Fatalf("status = %+v, %v", st, err)
	}
	devs, notices, err := s.Devices()
	if err != nil || len(devs) != 8 || len(notices) != 0 {
		t.Fatalf("devices = %d, notices %q, %v", len(devs), notices, err)
	}
	d := devs[3]
	if d.Index != 3 || d.Name != "Mock NVIDIA A100-SXM4-40GB" || !strings.HasPrefix(d.UUID, "GPU-") || d.PCIBusID != h.srv.Devices[3].(*dgxa100.Device).PciBusID || d.PCIBusID == "" {
		t.Errorf("identity = %d %q %q %q", d.Index, d.Name, d.UUID, d.PCIBusID)
	}
	if *d.MemoryTotalBytes != 40*1024*1024*1024 || *d.MemoryUsedBytes != 10<<30 || *d.GPUUtilPercent != 95 || *d.MemoryUtilPercent != 20 ||
		*d.PCIeTxBytesPerSec != 1000*1024 || *d.PCIeLinkGen != 4 || *d.PCIeLinkWidth != 16 || *d.SMClockMHz != 1410 || *d.SMClockMaxMHz != 1410 ||
		*d.MemClockMaxMHz != 1215 || *d.TemperatureC != 61 || *d.PowerW != 312 || *d.PowerLimitW != 400 || *d.ECCUncorrected != 0 {
		t.Errorf("readings = %+v", d)
	}
	if d.Throttle() != "hardware thermal slowdown" {
		t.Errorf("throttle = %q", d.Throttle())
	}
}

func TestProcessesView(t *testing.T) {
	s := newFakeHost(t).sampler(t)
	procs, notices, err := s.Processes()
	if err != nil || len(procs) != 2 {
		t.Fatalf("processes = %+v, %v", procs, err)
	}
	me := procs[0]
	if me.GPU != 0 || me.PID != uint32(os.Getpid()) || me.Name == "" || !strings.Contains(me.Cmdline, "nvml.test") || *me.UsedBytes != 3<<30 || me.Type != "compute" {
		t.Errorf("own process = %+v", me)
	}
	if procs[1].Name != "" || procs[1].UsedBytes != nil {
		t.Errorf("unreadable process = %+v", procs[1])
	}
	joined := strings.Join(notices.Texts(), "\n")
	if !strings.Contains(joined, "1 process(es) without a name: /proc/PID is not readable") || !strings.Contains(joined, "VALUE_NOT_AVAILABLE") {
		t.Errorf("notices = %q", notices)
	}
}

func TestXIDView(t *testing.T) {
	h := newFakeHost(t)
	s := h.sampler(t)
	if _, err := s.Status(); err != nil {
		t.Fatal(err)
	}
	h.xids <- gonvml.EventData{Device: h.srv.Devices[2], EventType: gonvml.EventTypeXidCriticalError, EventData: 79}
	var events []models.XIDEvent
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && len(events) == 0; time.Sleep(10 * time.Millisecond) {
		events, _, _ = s.XIDs()
	}
	if len(events) != 1 || events[0].XID != 79 || events[0].GPU != 2 || events[0].Meaning != "GPU has fallen off the bus" || events[0].GPUUUID == "" {
		t.Fatalf("xids = %+v", events)
	}
}

func TestSeriesViewAndClassification(t *testing.T) {
	s := newFakeHost(t).sampler(t)
	var series []models.GPUDeviceSeries
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if series, _, err = s.Series(); err != nil {
			t.Fatal(err)
		}
		if len(series[0].Samples) == 10 {
			break
		}
	}
	if len(series) != 8 || len(series[0].Samples) != 10 {
		t.Fatalf("ring not full or not bounded: %d GPUs, %d samples", len(series), len(series[0].Samples))
	}
	for i := 1; i < 10; i++ {
		if !series[0].Samples[i].Time.After(series[0].Samples[i-1].Time) {
			t.Fatal("samples out of order")
		}
	}
	gs := series[0].ClassifySeries("host1")
	if gs.GPU.Index != "0" || gs.GPU.Host != "host1" {
		t.Errorf("gpu = %+v", gs.GPU)
	}
	// 95 % utilisation and the hardware-thermal bit: thermal throttling wins, as in pkg/classify.
	classes := classify.ClassesOf(gs, classify.DefaultThresholds())
	if classes[len(classes)-1] != classify.ThermalThrottled {
		t.Errorf("classes = %v", classes)
	}
}

func TestInitFailuresNeverCallNVMLAgain(t *testing.T) {
	for _, c := range []struct {
		ret  gonvml.Return
		want string
	}{
		{gonvml.ERROR_LIBRARY_NOT_FOUND, "libnvidia-ml.so.1 could not be loaded (ERROR_LIBRARY_NOT_FOUND)"},
		{gonvml.ERROR_DRIVER_NOT_LOADED, "kernel driver is not loaded"},
		{gonvml.ERROR_NO_PERMISSION, "no permission to open the GPUs (ERROR_NO_PERMISSION)"},
		{gonvml.ERROR_UNKNOWN, "Init failed (ERROR_UNKNOWN)"},
	} {
		h := newFakeHost(t)
		inits := 0
		h.srv.InitFunc = func() gonvml.Return { inits++; return c.ret }
		// Any other call panics, as the real library's unresolved symbols kill the process.
		h.srv.SystemGetDriverVersionFunc, h.srv.DeviceGetCountFunc, h.srv.ShutdownFunc = nil, nil, nil
		s := h.sampler(t)
		now := time.Now()
		s.now = func() time.Time { return now }
		for _, call := range []func() error{
			func() error { _, err := s.Status(); return err },
			func() error { _, _, err := s.Devices(); return err },
			func() error { _, _, err := s.Processes(); return err },
			func() error { _, _, err := s.XIDs(); return err },
			func() error { _, _, err := s.Series(); return err },
		} {
			if err := call(); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "NVML is unavailable") {
				t.Errorf("%v: err = %v, want %q", c.ret, err, c.want)
			}
		}
		if inits != 1 {
			t.Errorf("%v: Init called %d times within the retry delay", c.ret, inits)
		}
		now = now.Add(retryAfter)
		_, _ = s.Status()
		if inits != 2 {
			t.Errorf("%v: Init not retried after %s", c.ret, retryAfter)
		}
		s.Close() // must not call Shutdown after a failed Init
		if len(h.srv.SystemGetDriverVersionCalls()) != 0 || len(h.srv.DeviceGetCountCalls()) != 0 || len(h.srv.ShutdownCalls()) != 0 {
			t.Errorf("%v: NVML called after a failed Init", c.ret)
		}
	}
}

func TestNoDevice(t *testing.T) {
	h := newFakeHost(t)
	h.srv.Devices = nil
	s := h.sampler(t)
	devs, notices, err := s.Devices()
	if err != nil || len(devs) != 0 || len(notices) != 1 || notices[0].Text != "NVML found no GPU on this host" {
		t.Errorf("devices = %v, %q, %v", devs, notices, err)
	}
	if _, notices, _ := s.Processes(); len(notices) != 1 || notices[0].Text != "NVML found no GPU on this host" {
		t.Errorf("processes notices = %q", notices)
	}
}

func TestNotSupportedGivesAnEmptyColumnAndANotice(t *testing.T) {
	h := newFakeHost(t)
	for _, i := range []int{0, 5} {
		d := h.srv.Devices[i].(*dgxa100.Device)
		d.GetTotalEccErrorsFunc = func(gonvml.MemoryErrorType, gonvml.EccCounterType) (uint64, gonvml.Return) {
			return 0, gonvml.ERROR_NOT_SUPPORTED
		}
		d.GetEnforcedPowerLimitFunc = func() (uint32, gonvml.Return) { return 0, gonvml.ERROR_NO_PERMISSION }
	}
	h.srv.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return nil, gonvml.ERROR_NOT_SUPPORTED }
	s := h.sampler(t)
	devs, notices, err := s.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if devs[0].ECCCorrected != nil || devs[0].PowerLimitW != nil || devs[1].ECCCorrected == nil || devs[0].PowerW == nil {
		t.Errorf("columns = %+v", devs[0])
	}
	joined := strings.Join(notices.Texts(), "\n")
	for _, want := range []string{
		"ECC counts of GPUs 0, 5: not supported on this GPU (ERROR_NOT_SUPPORTED); the column is empty",
		"power limit of GPUs 0, 5: no permission (ERROR_NO_PERMISSION); the column is empty",
		"XID events cannot be watched: EventSetCreate failed (not supported on this GPU (ERROR_NOT_SUPPORTED))",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("notices %q lack %q", notices, want)
		}
	}
	if _, xn, _ := s.XIDs(); len(xn) != 1 || !strings.HasPrefix(xn[0].Text, "XID events cannot be watched") {
		t.Errorf("xid notices = %q", xn)
	}
}

func TestLostGPUIsNoticedAndNoLongerRead(t *testing.T) {
	h := newFakeHost(t)
	s := h.sampler(t)
	if _, err := s.Status(); err != nil {
		t.Fatal(err)
	}
	h.lost.Store(true)
	var devs []models.GPUDevice
	var notices notices.List
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		devs, notices, _ = s.Devices()
		if devs[1].Lost {
			break
		}
	}
	if !devs[1].Lost || devs[1].MemoryTotalBytes != nil || devs[0].Lost || devs[0].MemoryTotalBytes == nil {
		t.Fatalf("devices 0 and 1 = %+v / %+v", devs[0], devs[1])
	}
	if !strings.Contains(strings.Join(notices.Texts(), "\n"), "GPU of GPU 1: the GPU is lost (ERROR_GPU_IS_LOST)") {
		t.Errorf("notices = %q", notices)
	}
	d1 := h.srv.Devices[1].(*dgxa100.Device)
	calls := len(d1.GetMemoryInfoCalls())
	time.Sleep(100 * time.Millisecond)
	if len(d1.GetMemoryInfoCalls()) != calls {
		t.Error("a lost GPU is still read")
	}
	if _, notices, err := s.Processes(); err != nil || !strings.Contains(strings.Join(notices.Texts(), "\n"), "GPU 1: the GPU is lost") {
		t.Errorf("processes: %q, %v", notices, err)
	}
}

func TestOldDriverGetsTheThrottleReasonsCall(t *testing.T) {
	h := newFakeHost(t)
	h.srv.LookupSymbolFunc = func(string) error { return errors.New("undefined symbol") }
	for _, dv := range h.srv.Devices {
		d := dv.(*dgxa100.Device)
		d.GetCurrentClocksEventReasonsFunc = nil // would panic
		d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, gonvml.Return) { return 0x4, gonvml.SUCCESS }
	}
	devs, _, err := h.sampler(t).Devices()
	if err != nil || devs[0].Throttle() != "software power cap" {
		t.Errorf("throttle = %q, %v", devs[0].Throttle(), err)
	}
}

func TestSamplerLifecycleLeavesNoGoroutine(t *testing.T) {
	before := settledGoroutines()
	h := newFakeHost(t)
	s := NewWithLibrary(h.srv, Options{Interval: 10 * time.Millisecond})
	if len(h.srv.InitCalls()) != 0 {
		t.Fatal("New must not call Init")
	}
	for range 3 { // many queries, one sampler
		if _, _, err := s.Devices(); err != nil {
			t.Fatal(err)
		}
	}
	if len(h.srv.InitCalls()) != 1 || runtime.NumGoroutine() <= before {
		t.Fatalf("Init calls %d, goroutines %d → %d", len(h.srv.InitCalls()), before, runtime.NumGoroutine())
	}
	s.Close()
	s.Close() // idempotent
	if h.shutdown.Load() != 1 || h.freed.Load() != 1 {
		t.Errorf("Shutdown %d, Free %d", h.shutdown.Load(), h.freed.Load())
	}
	if _, _, err := s.Devices(); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("goroutines: %d before, %d after Close", before, n)
	}
	// Closing a sampler that never started calls nothing.
	h2 := newFakeHost(t)
	NewWithLibrary(h2.srv, Options{}).Close()
	if len(h2.srv.InitCalls()) != 0 || h2.shutdown.Load() != 0 {
		t.Error("Close of an unstarted sampler called NVML")
	}
}

// settledGoroutines counts the goroutines once earlier tests' have wound down (the count holds
// for 50 ms, within 2 s): a goroutine exiting during the test would otherwise hide the sampler's.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}
