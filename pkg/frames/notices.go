package frames

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
)

// Info is a notice that says how an answer was made (how samples were matched, which step was
// used): Grafana shows it in the panel's header without alarm.
func Info(text string) data.Notice {
	return data.Notice{Severity: data.NoticeSeverityInfo, Text: text}
}

// Warning is a notice that says what is missing from an answer or may mislead (an upstream that
// failed, a side without samples): Grafana marks the panel with it.
func Warning(text string) data.Notice {
	return data.Notice{Severity: data.NoticeSeverityWarning, Text: text}
}

// JoinNotices are the joins' typed notices (correlate.Notice) as Grafana shows them.
func JoinNotices(ns []correlate.Notice) []data.Notice {
	if len(ns) == 0 {
		return nil
	}
	out := make([]data.Notice, len(ns))
	for i, n := range ns {
		if n.Severity == correlate.Warning {
			out[i] = Warning(n.Text)
		} else {
			out[i] = Info(n.Text)
		}
	}
	return out
}
