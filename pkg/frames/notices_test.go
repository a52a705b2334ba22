package frames

import (
	"slices"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
)

func TestJoinNoticesKeepTheirSeverity(t *testing.T) {
	got := JoinNotices([]correlate.Notice{{Severity: correlate.Warning, Text: "lacks"}, {Severity: correlate.Info, Text: "how"}})
	want := []data.Notice{{Severity: data.NoticeSeverityWarning, Text: "lacks"}, {Severity: data.NoticeSeverityInfo, Text: "how"}}
	if !slices.Equal(got, want) {
		t.Errorf("notices %+v", got)
	}
	if JoinNotices(nil) != nil {
		t.Error("no notices became an empty list")
	}
}
