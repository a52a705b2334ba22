//go:build !(linux && cgo)

package nvml

import (
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// Available says whether this build can read GPUs through NVML.
const Available = false

// New returns a Source that answers NotBuiltMessage: this build has no NVML.
func New(opts Options) Source { return stub{interval: opts.withDefaults().Interval} }

type stub struct{ interval time.Duration }

func (stub) Status() (Status, error)                       { return Status{}, ErrNotBuilt }
func (stub) Devices() ([]Device, notices.List, error)      { return nil, nil, ErrNotBuilt }
func (stub) Processes() ([]Process, notices.List, error)   { return nil, nil, ErrNotBuilt }
func (stub) XIDs() ([]XIDEvent, notices.List, error)       { return nil, nil, ErrNotBuilt }
func (stub) Series() ([]DeviceSeries, notices.List, error) { return nil, nil, ErrNotBuilt }
func (s stub) Interval() time.Duration                     { return s.interval }
func (stub) Close()                                        {}
