package plugin

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
)

// EnvLogLevel carries the log_level of Grafana's [plugin.hsi-profiling-datasource] section: Grafana
// hands each key of a plugin's own section to its process as GF_PLUGIN_<KEY>.
const EnvLogLevel = "GF_PLUGIN_LOG_LEVEL"

// NewLogger is the plugin's logger at the level log_level names, info when it names none.
//
// The SDK's logger writes everything from debug up, and its middlewares write two debug lines per
// request ("Plugin Request Started", "Missing tenantID in context") that Grafana, at its default
// level, reads from the pipe and drops: about 3 % of the plugin's CPU under load. At info they are
// not written. warning says why a log_level that names no level was ignored.
func NewLogger(logLevel string) (logger log.Logger, warning string) {
	levels := map[string]log.Level{"trace": log.Trace, "debug": log.Debug, "info": log.Info, "warn": log.Warn, "warning": log.Warn, "error": log.Error}
	name := strings.ToLower(strings.TrimSpace(logLevel))
	level, ok := levels[name]
	switch {
	case name == "":
		level = log.Info
	case !ok:
		level = log.Info
		warning = fmt.Sprintf("%s=%q names no log level (debug, info, warn or error): logging at info", EnvLogLevel, logLevel)
	}
	return log.NewWithLevel(level), warning
}
