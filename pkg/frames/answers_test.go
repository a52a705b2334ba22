package frames

import (
	"errors"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

const cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

func TestBothGivesWhatCouldBeLoadedAndSaysWhatCouldNot(t *testing.T) {
	flame := data.Frames{FlameGraph(nil, cpu)}
	series := data.Frames{data.NewFrame(SeriesFrameName)}
	down := backend.DownstreamError(errors.New("Pyroscope (http://p): 503"))

	out, err := Both(flame, nil, series, nil, cpu)
	if err != nil || len(out) != 2 {
		t.Fatalf("both halves: %d frames, %v", len(out), err)
	}
	// The flame graph failed: an empty flame graph says why, the series follow.
	out, err = Both(nil, down, series, nil, cpu)
	if err != nil || len(out) != 2 || out[0].Name != FlameGraphFrameName || !strings.Contains(out[0].Meta.Notices[0].Text, "flame graph unavailable, series shown: Pyroscope (http://p): 503") {
		t.Errorf("no flame graph: %v %v", out, err)
	}
	// The series failed: the flame graph says so.
	out, err = Both(data.Frames{FlameGraph(nil, cpu)}, nil, nil, down, cpu)
	if err != nil || len(out) != 1 || out[0].Meta.Notices[0].Severity != data.NoticeSeverityWarning {
		t.Errorf("no series: %v %v", out, err)
	}
	// Both failed: the query's error, the upstream's when both were.
	if _, err = Both(nil, down, nil, down, cpu); err == nil || !backend.IsDownstreamError(err) || !strings.Contains(err.Error(), "flame graph failed") {
		t.Errorf("both failed upstream: %v", err)
	}
	if _, err = Both(nil, down, nil, errors.New("internal"), cpu); err == nil || backend.IsDownstreamError(err) {
		t.Errorf("one failed inside the plugin: %v", err)
	}
}

func TestGPUClassesWithNoGPUStillGiveAFrameForTheNotices(t *testing.T) {
	var l notices.List
	l.Warn("no DCGM series match the filter")
	for _, format := range []string{models.GPUClassFormatShares, models.GPUClassFormatSummary, models.GPUClassFormatAll} {
		out := GPUClasses(&correlate.GPUClassAnswer{Notices: l}, format, nil)
		if len(out) == 0 || len(out[0].Meta.Notices) != 1 || out[0].Meta.Notices[0].Text != "no DCGM series match the filter" {
			t.Errorf("%s: %d frames, notices on the first: %v", format, len(out), out)
		}
	}
}

func TestKernelTracesOfNoFileKeepTheirColumnsAndNotices(t *testing.T) {
	var l notices.List
	l.Warn("no GPU kernel trace found for trace 4bf9… in the trace directories")
	out := KernelTraces(nil, l)
	if len(out) == 0 || len(out[0].Fields) == 0 || len(out[0].Meta.Notices) != 1 {
		t.Errorf("%v", out)
	}
}

// A panel that asks for the flame graph alone of a request that has none gets one empty flame
// graph frame whose notices say why, the join's first; a part asked with others comes in the
// answer's order whatever order the parts were asked in.
func TestRequestPartsOfARequestWithoutAFlameGraph(t *testing.T) {
	ans := &correlate.TraceAnswer{}
	ans.Notices.Warn("Pyroscope (http://p): 503: no profile of the request")
	out, err := Request("4bf92f3577b34da6a3ce929d0e0e4736", ans, diagnose.Diagnosis{}, cpu, cpu, TraceLinks{}, []string{models.TracePartFlameGraph})
	if err != nil || len(out) != 1 || out[0].Name != FlameGraphFrameName || len(out[0].Meta.Notices) != 2 ||
		out[0].Meta.Notices[0].Text != "Pyroscope (http://p): 503: no profile of the request" ||
		!strings.Contains(out[0].Meta.Notices[1].Text, "no flame graph") {
		t.Fatalf("flame graph alone: %v %v", out, err)
	}
	out, err = Request("4bf92f3577b34da6a3ce929d0e0e4736", ans, diagnose.Diagnosis{}, cpu, cpu, TraceLinks{}, []string{models.TracePartVerdict, models.TracePartSpans})
	if err != nil || len(out) != 2 || out[0].Name != TraceSpansFrameName || out[1].Name != VerdictFrameName {
		t.Fatalf("verdict and spans: %v %v", out, err)
	}
	if len(out[0].Meta.Notices) != 1 || out[1].Meta != nil && len(out[1].Meta.Notices) != 0 {
		t.Errorf("the join's notices go on the first frame only: %v / %v", out[0].Meta.Notices, out[1].Meta)
	}
}
