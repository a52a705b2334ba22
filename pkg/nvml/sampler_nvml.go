//go:build linux && cgo

package nvml

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// Available says whether this build can read GPUs through NVML.
const Available = true

// library is the one go-nvml library of the process: Init and Shutdown are reference-counted
// by go-nvml and NVML, so every data source instance Inits and Shuts down its own reference.
var library = sync.OnceValue(func() gonvml.Interface { return gonvml.New() })

// New returns the models.LocalGPUSource of the host's GPUs. Nothing is called before the first method call.
func New(opts Options) models.LocalGPUSource { return NewWithLibrary(library(), opts) }

// NewWithLibrary is New on any go-nvml Interface (tests pass go-nvml's mocks).
func NewWithLibrary(lib gonvml.Interface, opts Options) *Sampler {
	return &Sampler{lib: lib, opts: opts.withDefaults(), procRoot: "/proc", now: time.Now}
}

type samplerState int

const (
	stateIdle samplerState = iota
	stateRunning
	stateFailed
	stateClosed
)

// eventWait bounds each blocking EventSet.Wait, so Close returns within it.
const eventWait = 200 * time.Millisecond

// Sampler samples every GPU of the host at Options.Interval into a ring buffer per GPU, and
// records XID events, from the first call until Close.
type Sampler struct {
	lib      gonvml.Interface
	opts     Options
	procRoot string
	now      func() time.Time

	mu       sync.Mutex // guards the lifecycle fields below
	state    samplerState
	initErr  error
	failedAt time.Time
	stop     chan struct{}
	done     chan struct{}

	// callMu is held (read) around NVML calls made outside the sampling goroutine, and
	// (write) by Close around Shutdown, so no call ever follows Shutdown.
	callMu sync.RWMutex

	// Set by start, read-only afterwards.
	status        models.NVMLStatus
	devs          []*device
	events        gonvml.EventSet
	startNotices  []string
	eventsSymbol  bool // nvmlDeviceGetCurrentClocksEventReasons exists (drivers ≥ 535)
	xidRegistered bool

	dataMu sync.Mutex // guards the devices' rings and notices, and xids
	xids   *ring[models.XIDEvent]
}

type device struct {
	h              gonvml.Device
	index          int
	name, uuid     string
	bus            string
	smMax, memMax  *float64
	lost           bool
	samples        *ring[models.GPUDevice]
	notices        map[string]string // what → why, from the latest sample
	staticNotices  map[string]string
	lastSampleTime time.Time
}

// initError explains a failed Init. After it no other NVML function may be called.
func initError(ret gonvml.Return) error {
	switch ret {
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Errorf("NVML is unavailable: libnvidia-ml.so.1 could not be loaded (ERROR_LIBRARY_NOT_FOUND): install the NVIDIA driver on the Grafana host, or run Grafana's container with the NVIDIA container toolkit (--gpus all)")
	case gonvml.ERROR_DRIVER_NOT_LOADED:
		return fmt.Errorf("NVML is unavailable: the NVIDIA kernel driver is not loaded (ERROR_DRIVER_NOT_LOADED): check nvidia-smi on the Grafana host")
	case gonvml.ERROR_NO_PERMISSION:
		return fmt.Errorf("NVML is unavailable: no permission to open the GPUs (ERROR_NO_PERMISSION): the Grafana server's user needs access to /dev/nvidiactl and /dev/nvidia*")
	case gonvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return fmt.Errorf("NVML is unavailable: the NVML library and the kernel driver differ in version (ERROR_LIB_RM_VERSION_MISMATCH): reload the driver or reboot the host")
	}
	return fmt.Errorf("NVML is unavailable: Init failed (%s)", retName(ret))
}

func retName(ret gonvml.Return) string { return ret.Error() }

// reason explains a failed call on one GPU.
func reason(ret gonvml.Return) string {
	switch ret {
	case gonvml.ERROR_NOT_SUPPORTED:
		return "not supported on this GPU (ERROR_NOT_SUPPORTED)"
	case gonvml.ERROR_NO_PERMISSION:
		return "no permission (ERROR_NO_PERMISSION)"
	case gonvml.ERROR_GPU_IS_LOST:
		return "the GPU is lost (ERROR_GPU_IS_LOST): it fell off the bus or stopped responding; reset it or reboot the host"
	}
	return retName(ret)
}

// start makes sure NVML is initialised and the sampler runs, or says why not.
func (s *Sampler) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateRunning:
		return nil
	case stateClosed:
		return ErrClosed
	case stateFailed:
		if s.now().Sub(s.failedAt) < retryAfter {
			return s.initErr
		}
	}
	err := safe.Do("NVML start", s.initLocked)
	if err != nil {
		s.state, s.initErr, s.failedAt = stateFailed, err, s.now()
		return err
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	s.state = stateRunning
	go s.run(s.stop, s.done)
	return nil
}

// initLocked calls Init and, only when it succeeded, reads the static facts of each GPU.
func (s *Sampler) initLocked() (err error) {
	if ret := s.lib.Init(); ret != gonvml.SUCCESS {
		return initError(ret)
	}
	defer func() {
		if err != nil {
			s.lib.Shutdown()
		}
	}()
	st := models.NVMLStatus{}
	var ret gonvml.Return
	if st.DriverVersion, ret = s.lib.SystemGetDriverVersion(); ret != gonvml.SUCCESS {
		st.DriverVersion = "unknown (" + retName(ret) + ")"
	}
	if v, ret := s.lib.SystemGetNVMLVersion(); ret == gonvml.SUCCESS {
		st.NVMLVersion = v
	}
	if st.DeviceCount, ret = s.lib.DeviceGetCount(); ret != gonvml.SUCCESS {
		if ret == gonvml.ERROR_NO_PERMISSION {
			return initError(ret)
		}
		return fmt.Errorf("NVML could not count the GPUs (%s)", retName(ret))
	}
	s.status = st
	s.devs, s.startNotices = nil, nil
	s.xids = newRing[models.XIDEvent](s.opts.XIDs)
	if st.DeviceCount == 0 {
		s.startNotices = append(s.startNotices, "NVML found no GPU on this host")
	}
	s.eventsSymbol = s.lib.Extensions().LookupSymbol("nvmlDeviceGetCurrentClocksEventReasons") == nil

	for i := range st.DeviceCount {
		h, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			s.startNotices = append(s.startNotices, fmt.Sprintf("GPU %d is left out: %s", i, reason(ret)))
			continue
		}
		d := &device{h: h, index: i, samples: newRing[models.GPUDevice](s.opts.Capacity), staticNotices: map[string]string{}}
		d.name = s.static(d, "name", func() (string, gonvml.Return) { return h.GetName() })
		d.uuid = s.static(d, "UUID", func() (string, gonvml.Return) { return h.GetUUID() })
		if !d.lost {
			if pci, ret := h.GetPciInfo(); ret == gonvml.SUCCESS {
				d.bus = cString(pci.BusId[:])
			} else {
				d.note(d.staticNotices, "PCI bus", ret)
			}
		}
		if !d.lost {
			d.smMax = s.clockMax(d, gonvml.CLOCK_SM, "max SM clock")
		}
		if !d.lost {
			d.memMax = s.clockMax(d, gonvml.CLOCK_MEM, "max memory clock")
		}
		s.devs = append(s.devs, d)
	}

	s.events, s.xidRegistered = nil, false
	if len(s.devs) > 0 {
		es, ret := s.lib.EventSetCreate()
		if ret != gonvml.SUCCESS {
			s.startNotices = append(s.startNotices, "XID events cannot be watched: EventSetCreate failed ("+reason(ret)+")")
		} else {
			var failed []string
			for _, d := range s.devs {
				if d.lost {
					continue
				}
				if ret := d.h.RegisterEvents(gonvml.EventTypeXidCriticalError, es); ret != gonvml.SUCCESS {
					failed = append(failed, fmt.Sprintf("GPU %d: %s", d.index, reason(ret)))
				} else {
					s.xidRegistered = true
				}
			}
			if len(failed) > 0 {
				s.startNotices = append(s.startNotices, "XID events are not watched on "+strings.Join(failed, "; "))
			}
			if s.xidRegistered {
				s.events = es
			} else {
				es.Free()
			}
		}
	}
	// One sample now, so the first query has data.
	s.sampleAll()
	return nil
}

func (s *Sampler) static(d *device, what string, get func() (string, gonvml.Return)) string {
	if d.lost {
		return ""
	}
	v, ret := get()
	if ret != gonvml.SUCCESS {
		d.note(d.staticNotices, what, ret)
		return ""
	}
	return v
}

func (s *Sampler) clockMax(d *device, c gonvml.ClockType, what string) *float64 {
	v, ret := d.h.GetMaxClockInfo(c)
	if ret != gonvml.SUCCESS {
		d.note(d.staticNotices, what, ret)
		return nil
	}
	return num(float64(v))
}

func (d *device) note(m map[string]string, what string, ret gonvml.Return) {
	if ret == gonvml.ERROR_GPU_IS_LOST {
		d.lost = true
	}
	m[what] = reason(ret)
}

func num(v float64) *float64 { return &v }

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// run samples until stop is closed, waiting on XID events between samples.
func (s *Sampler) run(stop, done chan struct{}) {
	defer close(done)
	last := s.now()
	for {
		_ = safe.Do("NVML sampler", func() error {
			s.waitForEvents(stop)
			return nil
		})
		select {
		case <-stop:
			return
		default:
		}
		if s.now().Sub(last) >= s.opts.Interval {
			last = s.now()
			_ = safe.Do("NVML sampler", func() error { s.sampleAll(); return nil })
		}
	}
}

// waitForEvents blocks for up to min(eventWait, interval), recording any XID event.
func (s *Sampler) waitForEvents(stop chan struct{}) {
	wait := min(eventWait, s.opts.Interval)
	if s.events == nil {
		select {
		case <-stop:
		case <-time.After(wait):
		}
		return
	}
	ev, ret := s.events.Wait(uint32(wait.Milliseconds()))
	switch ret {
	case gonvml.SUCCESS:
		if ev.EventType&gonvml.EventTypeXidCriticalError != 0 {
			s.recordXID(ev)
		}
	case gonvml.ERROR_TIMEOUT:
	default:
		// An error (a GPU lost, an interrupted wait) must not spin: wait like a timeout.
		select {
		case <-stop:
		case <-time.After(wait):
		}
	}
}

func (s *Sampler) recordXID(ev gonvml.EventData) {
	x := models.XIDEvent{Time: s.now(), GPU: -1, XID: ev.EventData}
	for _, d := range s.devs {
		if d.h == ev.Device {
			x.GPU, x.GPUUUID = d.index, d.uuid
			break
		}
	}
	x.Meaning, x.Action = classify.XIDMeaning(x.XID)
	s.dataMu.Lock()
	s.xids.push(x)
	s.dataMu.Unlock()
}

// sampleAll reads every GPU that is not lost into its ring.
func (s *Sampler) sampleAll() {
	for _, d := range s.devs {
		s.dataMu.Lock()
		lost := d.lost
		s.dataMu.Unlock()
		if lost {
			continue
		}
		r, notices, lost := s.read(d)
		s.dataMu.Lock()
		d.samples.push(r)
		d.notices = notices
		d.lost = d.lost || lost
		s.dataMu.Unlock()
	}
}

// read takes one reading of a GPU. It stops at the first ERROR_GPU_IS_LOST: every further call
// on a lost GPU fails too, slowly.
func (s *Sampler) read(d *device) (models.GPUDevice, map[string]string, bool) {
	h := d.h
	r := models.GPUDevice{Time: s.now(), Index: d.index, Name: d.name, UUID: d.uuid, PCIBusID: d.bus,
		SMClockMaxMHz: d.smMax, MemClockMaxMHz: d.memMax}
	notices := map[string]string{}
	lost := false
	ok := func(what string, ret gonvml.Return) bool {
		if ret == gonvml.SUCCESS {
			return true
		}
		if ret == gonvml.ERROR_GPU_IS_LOST {
			lost = true
		}
		notices[what] = reason(ret)
		return false
	}
	steps := []func(){
		func() {
			if m, ret := h.GetMemoryInfo(); ok("memory", ret) {
				r.MemoryTotalBytes, r.MemoryUsedBytes, r.MemoryFreeBytes = num(float64(m.Total)), num(float64(m.Used)), num(float64(m.Free))
			}
		},
		func() {
			if u, ret := h.GetUtilizationRates(); ok("utilisation", ret) {
				r.GPUUtilPercent, r.MemoryUtilPercent = num(float64(u.Gpu)), num(float64(u.Memory))
			}
		},
		func() {
			// KB/s over the last 20 ms, as NVML measures it.
			if v, ret := h.GetPcieThroughput(gonvml.PCIE_UTIL_TX_BYTES); ok("PCIe TX", ret) {
				r.PCIeTxBytesPerSec = num(float64(v) * 1024)
			}
		},
		func() {
			if v, ret := h.GetPcieThroughput(gonvml.PCIE_UTIL_RX_BYTES); ok("PCIe RX", ret) {
				r.PCIeRxBytesPerSec = num(float64(v) * 1024)
			}
		},
		func() {
			if v, ret := h.GetCurrPcieLinkGeneration(); ok("PCIe link generation", ret) {
				r.PCIeLinkGen = num(float64(v))
			}
		},
		func() {
			if v, ret := h.GetCurrPcieLinkWidth(); ok("PCIe link width", ret) {
				r.PCIeLinkWidth = num(float64(v))
			}
		},
		func() {
			if v, ret := h.GetClockInfo(gonvml.CLOCK_SM); ok("SM clock", ret) {
				r.SMClockMHz = num(float64(v))
			}
		},
		func() {
			if v, ret := h.GetClockInfo(gonvml.CLOCK_MEM); ok("memory clock", ret) {
				r.MemClockMHz = num(float64(v))
			}
		},
		func() {
			if v, ret := h.GetTemperature(gonvml.TEMPERATURE_GPU); ok("temperature", ret) {
				r.TemperatureC = num(float64(v))
			}
		},
		func() {
			if v, ret := h.GetPowerUsage(); ok("power", ret) {
				r.PowerW = num(float64(v) / 1000)
			}
		},
		func() {
			if v, ret := h.GetEnforcedPowerLimit(); ok("power limit", ret) {
				r.PowerLimitW = num(float64(v) / 1000)
			}
		},
		func() {
			// The event-reasons symbol is new (drivers ≥ 535); calling a symbol the library
			// lacks would kill the process, so older drivers get the throttle-reasons call.
			var v uint64
			var ret gonvml.Return
			if s.eventsSymbol {
				v, ret = h.GetCurrentClocksEventReasons()
			} else {
				v, ret = h.GetCurrentClocksThrottleReasons()
			}
			if ok("throttle reasons", ret) {
				r.ClockEventReasons = &v
			}
		},
		func() {
			if v, ret := h.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_CORRECTED, gonvml.VOLATILE_ECC); ok("ECC counts", ret) {
				r.ECCCorrected = num(float64(v))
			}
		},
		func() {
			if v, ret := h.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC); ok("ECC counts", ret) {
				r.ECCUncorrected = num(float64(v))
			}
		},
	}
	for _, step := range steps {
		step()
		if lost {
			break
		}
	}
	r.Lost = lost
	return r, notices, lost
}

// Close stops the sampling goroutine, frees the event set and shuts NVML down.
func (s *Sampler) Close() {
	s.mu.Lock()
	prev := s.state
	s.state = stateClosed
	stop, done := s.stop, s.done
	s.mu.Unlock()
	if prev != stateRunning {
		return
	}
	close(stop)
	<-done
	s.callMu.Lock()
	defer s.callMu.Unlock()
	_ = safe.Do("NVML shutdown", func() error {
		if s.events != nil {
			s.events.Free()
		}
		s.lib.Shutdown()
		return nil
	})
}

// Interval is the sampling interval.
func (s *Sampler) Interval() time.Duration { return s.opts.Interval }

// Capacity is how many samples per GPU the series keep at most.
func (s *Sampler) Capacity() int { return s.opts.Capacity }

// models.NVMLStatus is the driver version and GPU count, or why NVML is unavailable.
func (s *Sampler) Status() (models.NVMLStatus, error) {
	if err := s.start(); err != nil {
		return models.NVMLStatus{}, err
	}
	return s.status, nil
}

// notices lists what could not be read, grouped by what and why, GPUs named.
func (s *Sampler) unread(withSamples bool) []string {
	out := append([]string(nil), s.startNotices...)
	type key struct{ what, why string }
	gpus := map[key][]string{}
	var keys []key
	add := func(m map[string]string, idx int) {
		for what, why := range m {
			k := key{what, why}
			if _, seen := gpus[k]; !seen {
				keys = append(keys, k)
			}
			if g := strconv.Itoa(idx); !slices.Contains(gpus[k], g) {
				gpus[k] = append(gpus[k], g)
			}
		}
	}
	s.dataMu.Lock()
	for _, d := range s.devs {
		add(d.staticNotices, d.index)
		if withSamples {
			add(d.notices, d.index)
		}
		if d.lost {
			add(map[string]string{"GPU": reason(gonvml.ERROR_GPU_IS_LOST) + "; it is no longer sampled"}, d.index)
		}
	}
	s.dataMu.Unlock()
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].what != keys[j].what {
			return keys[i].what < keys[j].what
		}
		return keys[i].why < keys[j].why
	})
	for _, k := range keys {
		plural := ""
		if len(gpus[k]) > 1 {
			plural = "s"
		}
		out = append(out, fmt.Sprintf("%s of GPU%s %s: %s; the column is empty", k.what, plural, strings.Join(gpus[k], ", "), k.why))
	}
	return out
}

// Devices is the latest reading of each GPU.
func (s *Sampler) Devices() ([]models.GPUDevice, notices.List, error) {
	if err := s.start(); err != nil {
		return nil, nil, err
	}
	var out []models.GPUDevice
	s.dataMu.Lock()
	for _, d := range s.devs {
		if r, ok := d.samples.last(); ok {
			out = append(out, r)
		} else {
			out = append(out, models.GPUDevice{Index: d.index, Name: d.name, UUID: d.uuid, PCIBusID: d.bus, Lost: d.lost})
		}
	}
	s.dataMu.Unlock()
	return out, notices.Warnings(s.unread(true)...), nil
}

// Series is each GPU's readings in the ring buffer, oldest first.
func (s *Sampler) Series() ([]models.GPUDeviceSeries, notices.List, error) {
	if err := s.start(); err != nil {
		return nil, nil, err
	}
	var out []models.GPUDeviceSeries
	s.dataMu.Lock()
	for _, d := range s.devs {
		out = append(out, models.GPUDeviceSeries{Index: d.index, Name: d.name, UUID: d.uuid, Samples: d.samples.all()})
	}
	s.dataMu.Unlock()
	return out, notices.Warnings(s.unread(true)...), nil
}

// XIDs is the XID events recorded since the sampler started, oldest first.
func (s *Sampler) XIDs() ([]models.XIDEvent, notices.List, error) {
	if err := s.start(); err != nil {
		return nil, nil, err
	}
	s.dataMu.Lock()
	out := s.xids.all()
	s.dataMu.Unlock()
	var found notices.List
	for _, n := range s.startNotices {
		if strings.HasPrefix(n, "XID") || strings.HasPrefix(n, "NVML found no GPU") {
			found.Warn(n)
		}
	}
	if s.xidRegistered {
		found.Info("XID events are recorded from when the sampler started; earlier ones are in the kernel log (dmesg | grep NVRM)")
	}
	return out, found, nil
}

// Processes lists the compute and graphics processes of each GPU, read now, with their name
// and command line from /proc where readable.
func (s *Sampler) Processes() ([]models.GPUProcess, notices.List, error) {
	if err := s.start(); err != nil {
		return nil, nil, err
	}
	s.callMu.RLock()
	defer s.callMu.RUnlock()
	s.mu.Lock()
	closed := s.state == stateClosed
	s.mu.Unlock()
	if closed {
		return nil, nil, ErrClosed
	}
	var out []models.GPUProcess
	failures := map[string][]string{}
	unreadable, noMemory := 0, 0
	for _, d := range s.devs {
		s.dataMu.Lock()
		lost := d.lost
		s.dataMu.Unlock()
		if lost {
			failures[reason(gonvml.ERROR_GPU_IS_LOST)] = append(failures[reason(gonvml.ERROR_GPU_IS_LOST)], strconv.Itoa(d.index))
			continue
		}
		for _, kind := range []struct {
			name string
			get  func() ([]gonvml.ProcessInfo, gonvml.Return)
		}{{"compute", d.h.GetComputeRunningProcesses}, {"graphics", d.h.GetGraphicsRunningProcesses}} {
			infos, ret := kind.get()
			if ret != gonvml.SUCCESS {
				if ret == gonvml.ERROR_GPU_IS_LOST {
					s.dataMu.Lock()
					d.lost = true
					s.dataMu.Unlock()
				}
				why := kind.name + " processes: " + reason(ret)
				failures[why] = append(failures[why], strconv.Itoa(d.index))
				if ret == gonvml.ERROR_GPU_IS_LOST {
					break
				}
				continue
			}
			for _, p := range infos {
				pr := models.GPUProcess{GPU: d.index, GPUUUID: d.uuid, PID: p.Pid, Type: kind.name}
				// VALUE_NOT_AVAILABLE (all ones) where the driver cannot attribute memory.
				if p.UsedGpuMemory != ^uint64(0) {
					pr.UsedBytes = num(float64(p.UsedGpuMemory))
				} else {
					noMemory++
				}
				pr.Name, pr.Cmdline = s.procInfo(p.Pid)
				if pr.Name == "" {
					unreadable++
				}
				out = append(out, pr)
			}
		}
	}
	var found notices.List
	for _, n := range s.startNotices {
		if strings.HasPrefix(n, "NVML found no GPU") || strings.HasPrefix(n, "GPU ") {
			found.Warn(n)
		}
	}
	whys := make([]string, 0, len(failures))
	for why := range failures {
		whys = append(whys, why)
	}
	sort.Strings(whys)
	for _, why := range whys {
		found.Warnf("GPU %s: %s", strings.Join(failures[why], ", "), why)
	}
	if unreadable > 0 {
		found.Warnf("%d process(es) without a name: /proc/PID is not readable (another PID namespace, as in a container, or hidepid)", unreadable)
	}
	if noMemory > 0 {
		found.Warnf("%d process(es) without used memory: the driver does not attribute it (VALUE_NOT_AVAILABLE)", noMemory)
	}
	return out, found, nil
}

// procInfo reads a process's name and command line; "" where unreadable.
func (s *Sampler) procInfo(pid uint32) (name, cmdline string) {
	dir := filepath.Join(s.procRoot, strconv.FormatUint(uint64(pid), 10))
	if b, err := os.ReadFile(filepath.Join(dir, "comm")); err == nil {
		name = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil {
		cmdline = strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return name, cmdline
}
