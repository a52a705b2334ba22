package frames

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
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

// Notices are the producers' typed notices as Grafana shows them: the one place a
// notices.Severity becomes a frame notice's.
func Notices(l notices.List) []data.Notice {
	if len(l) == 0 {
		return nil
	}
	out := make([]data.Notice, len(l))
	for i, n := range l {
		if n.Severity == notices.Warning {
			out[i] = Warning(n.Text)
		} else {
			out[i] = Info(n.Text)
		}
	}
	return out
}
