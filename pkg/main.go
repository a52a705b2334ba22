// Command gpx_hsi_profiling is the HSI Profiling data source backend that Grafana launches.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/build/buildinfo"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/plugin"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/selfprofile"
)

func main() {
	version := ""
	if info, err := buildinfo.GetBuildInfo(); err == nil {
		version = info.Version
	}
	// Before Manage, which gives the SDK's middlewares backend.Logger.
	logger, warning := plugin.NewLogger(os.Getenv(plugin.EnvLogLevel))
	log.DefaultLogger, backend.Logger = logger, logger
	backend.NewLoggerWith = logger.With
	if warning != "" {
		logger.Warn(warning)
	}
	selfprofile.FromEnv(version)
	if err := datasource.Manage(plugin.PluginID, plugin.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error(err.Error())
		os.Exit(1)
	}
}
