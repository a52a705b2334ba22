//go:build !(linux && cgo)

package nvml

import (
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// Available says whether this build can read GPUs through NVML.
const Available = false

// New returns a models.LocalGPUSource that answers NotBuiltMessage: this build has no NVML.
func New(opts Options) models.LocalGPUSource {
	o := opts.withDefaults()
	return stub{interval: o.Interval, capacity: o.Capacity}
}

type stub struct {
	interval time.Duration
	capacity int
}

func (stub) Status() (models.NVMLStatus, error)                      { return models.NVMLStatus{}, ErrNotBuilt }
func (stub) Devices() ([]models.GPUDevice, notices.List, error)      { return nil, nil, ErrNotBuilt }
func (stub) Processes() ([]models.GPUProcess, notices.List, error)   { return nil, nil, ErrNotBuilt }
func (stub) XIDs() ([]models.XIDEvent, notices.List, error)          { return nil, nil, ErrNotBuilt }
func (stub) Series() ([]models.GPUDeviceSeries, notices.List, error) { return nil, nil, ErrNotBuilt }
func (s stub) Interval() time.Duration                               { return s.interval }
func (s stub) Capacity() int                                         { return s.capacity }
func (stub) Close()                                                  {}
