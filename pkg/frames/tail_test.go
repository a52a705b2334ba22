package frames

import (
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

func TestTailFramesEachPanelItsOwnWithLinksAndNotices(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	q := diagnose.Cause{Kind: diagnose.CauseQueue, Service: "vllm", Title: "queued in vllm (llm_request)", Explains: ms(600)}
	d := diagnose.Tail([]diagnose.TailRequest{
		{TraceID: "t1", Duration: ms(900), Causes: []diagnose.Cause{q}},
		{TraceID: "t2", Duration: ms(950), Why: "its trace could not be read"},
	}, []diagnose.TailRequest{{TraceID: "m1", Duration: ms(300)}}, ms(300))
	var l notices.List
	l.Warn("the trace search stopped at its limit")
	links := SlowTraceLinks{RequestDashboardUID: models.DefaultRequestDashboardUID}
	all := Tail(d, TailFigures{Threshold: ms(850), Over: 4}, l, links, nil)
	if len(all) != 3 || all[0].Name != TailSummaryFrameName || all[1].Name != TailCausesFrameName || all[2].Name != TailRequestsFrameName {
		t.Fatalf("frames %v", all)
	}
	var texts []string
	for _, n := range all[0].Meta.Notices {
		texts = append(texts, n.Text)
	}
	if len(texts) < 2 || texts[0] != "the trace search stopped at its limit" || !strings.Contains(strings.Join(texts, " "), "Diagnosed 1 of the 2 tail") {
		t.Errorf("notices %q", texts)
	}
	ex, _ := all[1].FieldByName("exampleTraceID")
	if ex.At(0) != "t1" || len(ex.Config.Links) == 0 || !strings.Contains(ex.Config.Links[0].URL, "/d/"+models.DefaultRequestDashboardUID+"/"+RequestDashboardSlug+"?var-trace_id=${__value.raw}") {
		t.Errorf("example %v, links %+v", ex.At(0), ex.Config.Links)
	}
	share, _ := all[1].FieldByName("share")
	if share.At(0).(float64) != 1 || share.Config.Unit != "percentunit" {
		t.Errorf("share %v %s", share.At(0), share.Config.Unit)
	}
	// A panel asks for its own frame: no picker, and the notices still shown.
	one := Tail(d, TailFigures{}, l, links, []string{models.TailPartCauses})
	if len(one) != 1 || one[0].Name != TailCausesFrameName || len(one[0].Meta.Notices) == 0 {
		t.Errorf("causes alone: %v", one)
	}
}
