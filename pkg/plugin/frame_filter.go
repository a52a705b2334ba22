package plugin

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

// frameFilterNotices says what the panel must know about frameFilter f on this server (none when
// there is nothing to say): of series, or else of a flame graph.
func frameFilterNotices(pyro *pyroscope.Client, f models.FrameFilter, series bool) []data.Notice {
	switch text, warning := pyro.FrameFilterNotice(f, series); {
	case text == "":
		return nil
	case warning:
		return []data.Notice{frames.Warning(text)}
	default:
		return []data.Notice{frames.Info(text)}
	}
}
