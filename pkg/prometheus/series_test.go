package prometheus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/jsonedit"
)

type seriesAnswer struct {
	sets     []model.LabelSet
	warnings promv1.Warnings
	infos    promv1.Infos
	err      error
}

var seriesKeep = []string{"Hostname", "gpu", "UUID", "pod"}

// askSeriesBoth asks client_golang's Series (its sets cut to seriesKeep) and SeriesLabels the same,
// each over its own canned client with the same reply.
func askSeriesBoth(status, postStatus int, body []byte) (golang, ours seriesAnswer, golangAsked, oursAsked []string) {
	ctx := context.Background()
	start := time.Unix(1_700_000_000, 250_000_000)
	matches := []string{`{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_PROF_SM_ACTIVE",Hostname=~"gpu-node-1"}`, `{__name__="x"}`}
	gc := &cannedClient{status: status, postStatus: postStatus, body: body}
	oc := &cannedClient{status: status, postStatus: postStatus, body: body}
	golang.sets, golang.warnings, golang.infos, golang.err = promv1.NewAPI(gc).Series(ctx, matches, start, start.Add(time.Hour), promv1.WithLimit(500))
	if golang.err == nil {
		golang.sets = cutLabels(golang.sets, seriesKeep)
	}
	ours.sets, ours.warnings, ours.infos, ours.err = newQueryAPI(oc).SeriesLabels(ctx, matches, start, start.Add(time.Hour), 500, seriesKeep)
	return golang, ours, gc.asked, oc.asked
}

func sameSeries(g, o seriesAnswer, exactMsg bool) string {
	if (g.err == nil) != (o.err == nil) {
		return fmt.Sprintf("client_golang's error %v, ours %v", g.err, o.err)
	}
	if g.err != nil {
		var ge, oe *promv1.Error
		if errors.As(g.err, &ge) != errors.As(o.err, &oe) || ge != nil && (ge.Type != oe.Type || ge.Detail != oe.Detail || exactMsg && ge.Msg != oe.Msg) ||
			ge == nil && g.err.Error() != o.err.Error() {
			return fmt.Sprintf("client_golang's error %#v, ours %#v", g.err, o.err)
		}
	}
	if !reflect.DeepEqual(g.warnings, o.warnings) || !reflect.DeepEqual(g.infos, o.infos) {
		return fmt.Sprintf("warnings and infos: client_golang %q %q, ours %q %q", g.warnings, g.infos, o.warnings, o.infos)
	}
	if g.err == nil && !reflect.DeepEqual(g.sets, o.sets) {
		return fmt.Sprintf("sets: client_golang %v, ours %v", g.sets, o.sets)
	}
	return ""
}

const seriesReply = `{"status":"success","data":[` +
	`{"__name__":"DCGM_FI_DEV_GPU_UTIL","Hostname":"gpu-node-1","gpu":"0","UUID":"GPU-a","pod":"llm-0","job":"dcgm"},` +
	`{"__name__":"DCGM_FI_DEV_GPU_UTIL","Hostname":"gpu-node-1","gpu":"1","UUID":"GPU-b","job":"dcgm"},` +
	`{"__name__":"DCGM_FI_PROF_SM_ACTIVE","Hostname":"gpu-node-1","gpu":"0","UUID":"GPU-a","pod":"llm-0","job":"dcgm"},` +
	`{}]}`

// SeriesLabels asks what client_golang's Series asks and answers what it answers, cut to the
// labels kept: on Prometheus' replies (its API documentation's shape, warnings and infos, errors
// with 400, 422, 503, a refused POST) and on broken and odd ones.
func TestSeriesLabelsAnswersAsClientGolang(t *testing.T) {
	cases := []struct {
		name         string
		status, post int
		body         string
	}{
		{"series", 200, 0, seriesReply},
		{"warnings and infos", 200, 0, `{"status":"success","data":[{"gpu":"0"}],"warnings":["w"],"infos":[]}`},
		{"no series", 200, 0, `{"status":"success","data":[]}`},
		{"data null", 200, 0, `{"status":"success","data":null}`},
		{"no data", 200, 0, `{"status":"success"}`},
		{"data twice", 200, 0, `{"status":"success","data":[{"gpu":"0"}],"data":[{"gpu":"1"}]}`},
		{"label twice", 200, 0, `{"status":"success","data":[{"gpu":"0","gpu":"1"}]}`},
		{"escaped value", 200, 0, `{"status":"success","data":[{"gpu":"\u0030","pod":"a\"b"}]}`},
		{"escaped name", 200, 0, `{"status":"success","data":[{"\u0067pu":"0"}]}`},
		{"invalid name", 200, 0, `{"status":"success","data":[{"":"0"}]}`},
		{"name with a dot", 200, 0, `{"status":"success","data":[{"k8s.pod":"0","gpu":"1"}]}`},
		{"value not a string", 200, 0, `{"status":"success","data":[{"gpu":0}]}`},
		{"series null", 200, 0, `{"status":"success","data":[null,{"gpu":"1"}]}`},
		{"field in other case", 200, 0, `{"status":"success","Data":[{"gpu":"1"}]}`},
		{"status not success", 200, 0, `{"status":"weird","data":[{"gpu":"1"}]}`},
		{"error with 200", 200, 0, `{"status":"error","errorType":"timeout","error":"timed out"}`},
		{"bad query, 400", 400, 0, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"match[]\""}`},
		{"422", 422, 0, `{"status":"error","errorType":"execution","error":"too many series","warnings":["w"]}`},
		{"unavailable, 503", 503, 0, `{"status":"error","errorType":"unavailable","error":"shutting down"}`},
		{"not found, 404", 404, 0, `404 page not found`},
		{"POST refused, GET answers", 200, 405, seriesReply},
		{"not JSON", 200, 0, `<html>proxy login</html>`},
		{"truncated", 200, 0, seriesReply[:len(seriesReply)/2]},
		{"data after the object", 200, 0, seriesReply + ` x`},
		{"unknown fields", 200, 0, `{"status":"success","stats":{"a":[1,null]},"data":[{"gpu":"1"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, o, gAsked, oAsked := askSeriesBoth(c.status, c.post, []byte(c.body))
			if !reflect.DeepEqual(gAsked, oAsked) {
				t.Errorf("requests:\nclient_golang %q\nours          %q", gAsked, oAsked)
			}
			if d := sameSeries(g, o, true); d != "" {
				t.Error(d)
			}
		})
	}
	// The answer itself, read by the scan: GPU 0's two series share one set.
	_, o, _, _ := askSeriesBoth(200, 0, []byte(seriesReply))
	if o.err != nil || len(o.sets) != 4 || o.sets[0]["pod"] != "llm-0" || o.sets[1]["UUID"] != "GPU-b" || len(o.sets[3]) != 0 ||
		reflect.ValueOf(o.sets[0]).UnsafePointer() != reflect.ValueOf(o.sets[2]).UnsafePointer() {
		t.Errorf("series read as %v, %v", o.sets, o.err)
	}
}

// A real reply with random edits, under each status Prometheus answers with: SeriesLabels answers
// what client_golang answers (a syntax error's words may differ).
func TestSeriesLabelsAgreesOnEditedReplies(t *testing.T) {
	tokens := []string{"{", "}", "[", "]", ",", ":", `"`, `\`, `\u0041`, "null", "0", " ", `"gpu"`, `"data"`, `"status"`, `"error"`, `"success"`, "\xff", "."}
	rng := rand.New(rand.NewPCG(21, 22))
	for n := range 5000 {
		b := jsonedit.Edit(rng, []byte(seriesReply), tokens, 6)
		status := []int{200, 200, 200, 400, 422, 503}[n%6]
		g, o, _, _ := askSeriesBoth(status, 0, b)
		if d := sameSeries(g, o, false); d != "" {
			t.Errorf("edit %d, HTTP %d, %q: %s", n, status, b, d)
		}
	}
}
