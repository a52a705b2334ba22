package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// fakeLocalGPUs is an models.LocalGPUSource with one hot GPU, or an error for every call.
type fakeLocalGPUs struct {
	err    error
	closed int
}

func ptr(v float64) *float64 { return &v }

func (f *fakeLocalGPUs) dev(t time.Time) models.GPUDevice {
	mask := uint64(0x4)
	return models.GPUDevice{Time: t, Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-1", PCIBusID: "00000000:19:00.0",
		MemoryTotalBytes: ptr(80e9), MemoryUsedBytes: ptr(60e9), MemoryFreeBytes: ptr(20e9), GPUUtilPercent: ptr(97), MemoryUtilPercent: ptr(25),
		TemperatureC: ptr(70), PowerW: ptr(690), PowerLimitW: ptr(700), SMClockMHz: ptr(1755), ClockEventReasons: &mask}
}

func (f *fakeLocalGPUs) Status() (models.NVMLStatus, error) {
	return models.NVMLStatus{DriverVersion: "550.54.15", DeviceCount: 1}, f.err
}
func (f *fakeLocalGPUs) Devices() ([]models.GPUDevice, notices.List, error) {
	if f.err != nil {
		return nil, nil, f.err
	}
	return []models.GPUDevice{f.dev(time.Now())}, notices.Warnings("ECC counts of GPU 0: not supported on this GPU (ERROR_NOT_SUPPORTED); the column is empty"), nil
}
func (f *fakeLocalGPUs) Processes() ([]models.GPUProcess, notices.List, error) {
	if f.err != nil {
		return nil, nil, f.err
	}
	return []models.GPUProcess{{GPU: 0, GPUUUID: "GPU-1", PID: 4242, Name: "python3", Cmdline: "python3 serve.py --model llama", Type: "compute", UsedBytes: ptr(50e9)}}, nil, nil
}
func (f *fakeLocalGPUs) XIDs() ([]models.XIDEvent, notices.List, error) {
	if f.err != nil {
		return nil, nil, f.err
	}
	m, a := classify.XIDMeaning(48)
	return []models.XIDEvent{{Time: time.Now(), GPU: 0, GPUUUID: "GPU-1", XID: 48, Meaning: m, Action: a}}, nil, nil
}
func (f *fakeLocalGPUs) Series() ([]models.GPUDeviceSeries, notices.List, error) {
	if f.err != nil {
		return nil, nil, f.err
	}
	s := models.GPUDeviceSeries{Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-1"}
	t0 := time.Now().Add(-10 * time.Second).Truncate(time.Second)
	for i := range 10 {
		s.Samples = append(s.Samples, f.dev(t0.Add(time.Duration(i)*time.Second)))
	}
	return []models.GPUDeviceSeries{s}, nil, nil
}
func (f *fakeLocalGPUs) Interval() time.Duration { return time.Second }
func (f *fakeLocalGPUs) Capacity() int           { return 300 }
func (f *fakeLocalGPUs) Close()                  { f.closed++ }

func localDatasource(t *testing.T, src models.LocalGPUSource) *Datasource {
	ds := newTestDatasource(t, map[string]any{"nvmlEnabled": true}, nil)
	if gpus, err := ds.src.LocalGPUs.Get(); err == nil {
		gpus.Close()
	}
	ds.src.LocalGPUs = correlate.Ready(src)
	return ds
}

func runLocal(t *testing.T, ds *Datasource, view string) backend.DataResponse {
	t.Helper()
	res, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
		query("A", `{"queryType":"gpuLocal","view":"`+view+`"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Responses["A"]
}

func cell(t *testing.T, f *data.Frame, field string, row int) any {
	t.Helper()
	fd, i := f.FieldByName(field)
	if i < 0 {
		t.Fatalf("frame %q has no field %q", f.Name, field)
	}
	v, _ := fd.ConcreteAt(row)
	return v
}

func isNil(f *data.Frame, field string, row int) bool {
	fd, _ := f.FieldByName(field)
	return fd != nil && fd.At(row).(*float64) == nil
}

func TestGPULocalIsOffByDefault(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{}, nil)
	r := runLocal(t, ds, "devices")
	if r.Error == nil || !strings.Contains(r.Error.Error(), "jsonData.nvmlEnabled: true") || r.ErrorSource != backend.ErrorSourceDownstream {
		t.Errorf("off: %v", r.Error)
	}
	if ds.src.LocalGPUs.Ready() {
		t.Error("a sampler exists while NVML is off")
	}
	if res := checkHealth(t, ds); strings.Contains(res.Message, "NVML") {
		t.Errorf("health names NVML while it is off: %q", res.Message)
	}
	bad := newTestDatasource(t, map[string]any{"nvmlEnabled": "yes"}, nil)
	if r := runLocal(t, bad, "devices"); r.Error == nil || !strings.Contains(r.Error.Error(), "nvmlEnabled") {
		t.Errorf("invalid setting: %v", r.Error)
	}
	if r := runLocal(t, ds, "bogus"); r.Error == nil || !strings.Contains(r.Error.Error(), "invalid gpuLocal query") {
		t.Errorf("bad view: %v", r.Error)
	}
}

func TestGPULocalViews(t *testing.T) {
	ds := localDatasource(t, &fakeLocalGPUs{})

	r := runLocal(t, ds, "devices")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	f := r.Frames[0]
	if cell(t, f, "name", 0) != "NVIDIA H100 80GB HBM3" || cell(t, f, "throttle reasons", 0) != "software power cap" ||
		cell(t, f, "power limit", 0) != 700.0 || !isNil(f, "ECC corrected (volatile)", 0) || len(f.Meta.Notices) != 1 {
		t.Errorf("devices frame wrong: notices %v", f.Meta.Notices)
	}

	r = runLocal(t, ds, "processes")
	if r.Error != nil || cell(t, r.Frames[0], "pid", 0) != int64(4242) || cell(t, r.Frames[0], "command line", 0) != "python3 serve.py --model llama" ||
		cell(t, r.Frames[0], "used GPU memory", 0) != 50e9 {
		t.Errorf("processes: %v", r.Error)
	}

	r = runLocal(t, ds, "xid")
	if r.Error != nil || cell(t, r.Frames[0], "xid", 0) != int64(48) || cell(t, r.Frames[0], "meaning", 0) != "double-bit ECC error" {
		t.Errorf("xid: %v", r.Error)
	}

	r = runLocal(t, ds, "series")
	if r.Error != nil || len(r.Frames) != 1 || r.Frames[0].Rows() != 10 || r.Frames[0].Fields[1].Labels["UUID"] != "GPU-1" {
		t.Errorf("series: %v", r.Error)
	}

	r = runLocal(t, ds, "class")
	if r.Error != nil || len(r.Frames) != 2 {
		t.Fatalf("class: %v, %d frames", r.Error, len(r.Frames))
	}
	summary := r.Frames[1]
	if c := cell(t, summary, "dominant class", 0); c != "power-throttled" {
		t.Errorf("dominant class = %v, want power-throttled (bit 0x4)", c)
	}
	if !strings.Contains(r.Frames[0].Meta.Notices[0].Text, "NVML has no profiling metrics") {
		t.Errorf("class notices = %v", r.Frames[0].Meta.Notices)
	}
}

func TestGPULocalUnavailableIsTheQueryErrorAndTheHealthLine(t *testing.T) {
	src := &fakeLocalGPUs{err: errors.New("NVML is unavailable: libnvidia-ml.so.1 could not be loaded (ERROR_LIBRARY_NOT_FOUND): install the NVIDIA driver")}
	ds := localDatasource(t, src)
	for _, v := range []string{"devices", "processes", "xid", "series", "class"} {
		if r := runLocal(t, ds, v); r.Error == nil || !strings.Contains(r.Error.Error(), "libnvidia-ml.so.1") {
			t.Errorf("%s: %v", v, r.Error)
		}
	}
	res := checkHealth(t, ds)
	if res.Status != backend.HealthStatusError || !strings.Contains(res.Message, "NVML: NVML is unavailable: libnvidia-ml.so.1") {
		t.Errorf("health = %v %q", res.Status, res.Message)
	}
	ok := localDatasource(t, &fakeLocalGPUs{})
	if res := checkHealth(t, ok); res.Status != backend.HealthStatusOk || res.Message != "Pyroscope: not configured · Prometheus: not configured · Jaeger: not configured · Tempo: not configured · NVML: OK (driver 550.54.15, 1 GPUs)" {
		t.Errorf("health = %v %q", res.Status, res.Message)
	}
	ok.Dispose()
	gpus, _ := ok.src.LocalGPUs.Get()
	if src := gpus.(*fakeLocalGPUs); src.closed != 1 {
		t.Errorf("Dispose closed the sampler %d times", src.closed)
	}
}
