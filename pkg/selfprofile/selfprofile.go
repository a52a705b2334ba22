// Package selfprofile pushes the plugin's own CPU and memory profiles to a Pyroscope, off by
// default. Samples are labelled with the query type being answered, so the plugin's own hot
// paths can be read with this very plugin:
//
//	{service_name="hsi-profiling-datasource", query_type="profile"}
package selfprofile

import (
	"context"
	"os"
	"sync"
	"sync/atomic"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/pyroscope-go"
)

// EnvURL names the Pyroscope to push to. Grafana 12.4+ forwards host variables to a plugin only
// when [plugins] forward_host_env_vars lists it; the jsonData setting selfProfilingUrl works
// everywhere.
const EnvURL = "HSI_SELF_PROFILING_URL"

// ApplicationName is the service_name the plugin's own profiles carry.
const ApplicationName = "hsi-profiling-datasource"

var (
	once    sync.Once
	running atomic.Bool
)

// FromEnv starts self-profiling when EnvURL is set.
func FromEnv(version string) {
	if url := os.Getenv(EnvURL); url != "" {
		start(url, version)
	}
}

// Start starts self-profiling towards url. Profiling is process-wide: the first data source
// that asks for it decides where profiles go; later calls do nothing.
func Start(url string) { start(url, "") }

func start(url, version string) {
	once.Do(func() {
		tags := map[string]string{}
		if version != "" {
			tags["plugin_version"] = version
		}
		_, err := pyroscope.Start(pyroscope.Config{
			ApplicationName: ApplicationName,
			ServerAddress:   url,
			Tags:            tags,
			ProfileTypes: []pyroscope.ProfileType{
				pyroscope.ProfileCPU, pyroscope.ProfileAllocObjects, pyroscope.ProfileAllocSpace,
				pyroscope.ProfileInuseObjects, pyroscope.ProfileInuseSpace, pyroscope.ProfileGoroutines,
			},
		})
		if err != nil {
			backend.Logger.Warn("self-profiling not started", "error", err)
			return
		}
		running.Store(true)
		backend.Logger.Info("self-profiling started", "service_name", ApplicationName)
	})
}

// Do runs fn with its samples labelled query_type=queryType when self-profiling runs.
func Do(ctx context.Context, queryType string, fn func(context.Context)) {
	if !running.Load() || queryType == "" {
		fn(ctx)
		return
	}
	pyroscope.TagWrapper(ctx, pyroscope.Labels("query_type", queryType), fn)
}
