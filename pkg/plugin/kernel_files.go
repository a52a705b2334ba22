package plugin

import (
	"errors"
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// traceDirsOffMessage answers kernels queries while no trace directory is configured.
const traceDirsOffMessage = "GPU kernel traces: jsonData.traceDirectories is not configured for this data source: add a directory under \"GPU kernel traces\" in its settings (jsonData.traceDirectories, a list of absolute paths such as the seeds' PYTORCH_PROFILE_DIR)"

// newKernelStore is the store of the configured trace directories, nil while they are invalid
// or none is configured (traceDirs says why).
func newKernelStore(ts models.TraceSettings) *gputrace.Store {
	if ts.Err != nil || len(ts.Directories) == 0 {
		return nil
	}
	return gputrace.NewStore(ts.Directories, ts.MaxFiles, ts.MaxFileBytes)
}

// traceDirs explains why the kernels query cannot run, or returns the instance's trace store.
func (d *Datasource) traceDirs() (*gputrace.Store, error) {
	ts := d.settings.Traces
	if ts.Err != nil {
		return nil, backend.DownstreamError(fmt.Errorf("invalid GPU kernel trace settings: %w", ts.Err))
	}
	if len(ts.Directories) == 0 || d.kernels == nil {
		return nil, backend.DownstreamError(errors.New(traceDirsOffMessage))
	}
	return d.kernels, nil
}
