package plugin

import (
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
)

func TestLogLevelFromPluginSection(t *testing.T) {
	for _, c := range []struct {
		value   string
		want    log.Level
		warning string
	}{
		{"", log.Info, ""},
		{"debug", log.Debug, ""},
		{" DEBUG ", log.Debug, ""},
		{"info", log.Info, ""},
		{"warn", log.Warn, ""},
		{"error", log.Error, ""},
		{"verbose", log.Info, `GF_PLUGIN_LOG_LEVEL="verbose" names no log level`},
	} {
		logger, warning := NewLogger(c.value)
		if got := logger.Level(); got != c.want {
			t.Errorf("log_level %q: level %v, want %v", c.value, got, c.want)
		}
		if c.warning == "" && warning != "" || !strings.Contains(warning, c.warning) {
			t.Errorf("log_level %q: warning %q, want one containing %q", c.value, warning, c.warning)
		}
	}
}
