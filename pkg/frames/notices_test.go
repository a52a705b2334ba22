package frames

import (
	"slices"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

func TestNoticesKeepTheirSeverity(t *testing.T) {
	got := Notices(notices.List{{Severity: notices.Warning, Text: "lacks"}, {Severity: notices.Info, Text: "how"}})
	want := []data.Notice{{Severity: data.NoticeSeverityWarning, Text: "lacks"}, {Severity: data.NoticeSeverityInfo, Text: "how"}}
	if !slices.Equal(got, want) {
		t.Errorf("notices %+v", got)
	}
	if Notices(nil) != nil {
		t.Error("no notices became an empty list")
	}
}
