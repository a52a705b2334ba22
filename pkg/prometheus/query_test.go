package prometheus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// cannedClient is an api.Client answering every request with one status and body, and POSTs
// with postStatus when it is set (a server that refuses POST); it records the requests.
type cannedClient struct {
	status, postStatus int
	body               []byte
	asked              []string // method and URL of each request, form body after a space
}

func (c *cannedClient) URL(ep string, _ map[string]string) *url.URL {
	u, _ := url.Parse("http://prometheus.example:9090/prefix" + ep)
	return u
}

func (c *cannedClient) Do(_ context.Context, req *http.Request) (*http.Response, []byte, error) {
	asked := req.Method + " " + req.URL.String()
	if req.Body != nil {
		form, _ := io.ReadAll(req.Body)
		asked += " " + string(form) + " " + req.Header.Get("Content-Type")
	}
	c.asked = append(c.asked, asked)
	status := c.status
	if req.Method == http.MethodPost && c.postStatus != 0 {
		status = c.postStatus
	}
	return &http.Response{StatusCode: status, Header: http.Header{}}, c.body, nil
}

// answer is what one query call gave.
type answer struct {
	value    model.Value
	warnings promv1.Warnings
	infos    promv1.Infos
	err      error
}

// askBoth runs the same range and instant query through client_golang's API and queryAPI, each
// over its own canned client with the same reply.
func askBoth(status, postStatus int, body []byte) (golang, ours [2]answer, golangAsked, oursAsked []string) {
	start := time.Unix(1_700_000_000, 250_000_000)
	r := promv1.Range{Start: start, End: start.Add(time.Hour), Step: 15 * time.Second}
	run := func(api promv1.API) (out [2]answer) {
		ctx := context.Background()
		out[0].value, out[0].warnings, out[0].infos, out[0].err = api.QueryRange(ctx, `up{job="dcgm"}`, r)
		out[1].value, out[1].warnings, out[1].infos, out[1].err = api.Query(ctx, `sum(up)`, start)
		return out
	}
	gc := &cannedClient{status: status, postStatus: postStatus, body: body}
	oc := &cannedClient{status: status, postStatus: postStatus, body: body}
	return run(promv1.NewAPI(gc)), run(newQueryAPI(oc)), gc.asked, oc.asked
}

// sameAnswer says how ours departs from client_golang's answer, "" for none. exactMsg: the
// reply is well-formed JSON, so error messages must match too (jsoniter words a syntax error
// otherwise).
func sameAnswer(g, o answer, exactMsg bool) string {
	if g.err == nil && g.value == nil {
		// client_golang answers a success without data with no value: ours says so.
		var pe *promv1.Error
		if errors.As(o.err, &pe) && pe.Type == promv1.ErrBadResponse && o.value == nil {
			return ""
		}
		return fmt.Sprintf("a reply without data: client_golang no value, ours %v, %v", o.value, o.err)
	}
	if g.err == nil && o.err != nil && refusedDeparture(g.value, o.err) {
		return ""
	}
	if (g.err == nil) != (o.err == nil) {
		return fmt.Sprintf("client_golang's error %v, ours %v", g.err, o.err)
	}
	if g.err != nil {
		var ge, oe *promv1.Error
		gt, ot := errors.As(g.err, &ge), errors.As(o.err, &oe)
		switch {
		case gt != ot:
			return fmt.Sprintf("client_golang's error %#v, ours %#v", g.err, o.err)
		case !gt:
			if g.err.Error() != o.err.Error() {
				return fmt.Sprintf("client_golang's error %v, ours %v", g.err, o.err)
			}
		case ge.Type != oe.Type || ge.Detail != oe.Detail:
			return fmt.Sprintf("client_golang's error %#v, ours %#v", ge, oe)
		case exactMsg && ge.Msg != oe.Msg && ge.Type != promv1.ErrBadResponse:
			return fmt.Sprintf("client_golang's error %q, ours %q", ge.Msg, oe.Msg)
		}
	}
	if !reflect.DeepEqual(g.warnings, o.warnings) && (g.err == nil || len(g.warnings) > 0) {
		return fmt.Sprintf("warnings: client_golang %q, ours %q", g.warnings, o.warnings)
	}
	if !reflect.DeepEqual(g.infos, o.infos) && (g.err == nil || len(g.infos) > 0) {
		return fmt.Sprintf("infos: client_golang %q, ours %q", g.infos, o.infos)
	}
	if g.err == nil && !sameValue(g.value, o.value) {
		return fmt.Sprintf("value: client_golang %v, ours %v", g.value, o.value)
	}
	return ""
}

// refusedDeparture says whether ours refused, as readMatrix says it does, a matrix that
// client_golang took: one with a null series, or a series whose "metric" is a string.
func refusedDeparture(golang model.Value, ours error) bool {
	var pe *promv1.Error
	if !errors.As(ours, &pe) || pe.Type != promv1.ErrBadResponse {
		return false
	}
	m, ok := golang.(model.Matrix)
	switch {
	case !ok:
		return false
	case slices.Contains(m, nil):
		return strings.Contains(pe.Msg, "is null")
	}
	return strings.Contains(pe.Msg, "the series' metric is not an object")
}

// sameValue compares values as their text, where NaN equals NaN.
func sameValue(a, b model.Value) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Type() == b.Type() && a.String() == b.String()
}

// TestQueryAPIAnswersAsClientGolang holds queryAPI to client_golang's API on the replies
// Prometheus gives (its HTTP API documentation's shapes: matrix, vector, scalar, string; NaN and
// ±Inf samples; native histograms; warnings and infos; errors with 400, 422, 503) and on broken
// ones: the same values, warnings and errors, and the same requests (a form POST, then a GET
// when the server refuses POST).
func TestQueryAPIAnswersAsClientGolang(t *testing.T) {
	matrix := `{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","Hostname":"gpu-node-1","gpu":"0"},"values":[[1700000000,"40"],[1700000015.5,"NaN"],[1700000030,"+Inf"],[1700000045,"-Inf"],[1700000060,"1e-7"]]},` +
		`{"metric":{},"values":[[1700000000.123,"0.25"]]},` +
		`{"metric":{"le":"x"},"histograms":[[1700000000,{"count":"3","sum":"1.5","buckets":[[0,"0.5","1","3"]]}]]}]}}`
	cases := []struct {
		name         string
		status, post int
		body         string
	}{
		{"matrix", 200, 0, matrix},
		{"matrix, warnings and infos", 200, 0, strings.TrimSuffix(matrix, "}") + `,"warnings":["PromQL warning: x"],"infos":["PromQL info: y"]}`},
		{"empty matrix", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[]}}`},
		{"vector", 200, 0, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1700000000.5,"2"]},{"metric":{},"value":[1700000000,"NaN"]}]}}`},
		{"scalar", 200, 0, `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"7"]}}`},
		{"string", 200, 0, `{"status":"success","data":{"resultType":"string","result":[1700000000,"text"]}}`},
		{"result before its type", 200, 0, `{"status":"success","data":{"result":[{"metric":{"a":"b"},"value":[1,"2"]}],"resultType":"vector"}}`},
		{"unknown type", 200, 0, `{"status":"success","data":{"resultType":"streams","result":[]}}`},
		{"no result type", 200, 0, `{"status":"success","data":{"result":[]}}`},
		{"unknown fields", 200, 0, `{"status":"success","stats":{"a":[1,{"b":null}]},"data":{"resultType":"vector","result":[],"stats":{}}}`},
		{"bad query, 400", 400, 0, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:1: parse error"}`},
		{"too many samples, 422", 422, 0, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory","warnings":["w"]}`},
		{"400 without error text", 400, 0, `{"status":"error"}`},
		{"400 that says success", 400, 0, `{"status":"success","data":{"resultType":"vector","result":[]},"warnings":["w"]}`},
		{"400 not JSON", 400, 0, `Bad Request`},
		{"unavailable, 503", 503, 0, `{"status":"error","errorType":"unavailable","error":"shutting down"}`},
		{"not found, 404", 404, 0, `404 page not found`},
		{"redirect, 302", 302, 0, ``},
		{"error with 200", 200, 0, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`},
		{"POST refused, GET answers", 200, 405, matrix},
		{"POST forbidden, GET answers", 200, 403, matrix},
		{"not JSON", 200, 0, `<html>proxy login</html>`},
		{"truncated", 200, 0, matrix[:len(matrix)/2]},
		{"empty body", 200, 0, ``},
		{"a JSON array", 200, 0, `[1,2]`},
		{"data after the object", 200, 0, `{"status":"success","data":{"resultType":"vector","result":[]}} x`},
		{"bad sample value", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"forty"]]}]}}`},
		{"sample without value", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1]]}]}}`},
		{"value with escapes", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a\u00e9":"\u00e9"},"values":[[1,"\u0031.5"],[2,"2"]]}]}}`},
		{"value not a string", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,2]]}]}}`},
		{"value null", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,null]]}]}}`},
		{"sample with three members", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2",3]]}]}}`},
		{"sample not an array", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[{"t":1}]}]}}`},
		{"negative fractional time", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[-0.5,"1"],[1700000000.123456,"2"]]}]}}`},
		{"series twice over", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"2"]],"metric":{"c":"d","a":"e"},"values":[[3,"4"]]}]}}`},
		{"series without samples", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[]},{"metric":{"a":"c"},"values":null}]}}`},
		{"unknown series key", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"Values":[[1,"2"]]}]}}`},
		{"label value not a string", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":1},"values":[[1,"2"]]}]}}`},
		{"metric null", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":null,"values":[[1,"2"]]}]}}`},
		{"matrix null", 200, 0, `{"status":"success","data":{"resultType":"matrix","result":null}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, o, gAsked, oAsked := askBoth(c.status, c.post, []byte(c.body))
			if !reflect.DeepEqual(gAsked, oAsked) {
				t.Errorf("requests:\nclient_golang %q\nours          %q", gAsked, oAsked)
			}
			for i, call := range []string{"QueryRange", "Query"} {
				if d := sameAnswer(g[i], o[i], true); d != "" {
					t.Errorf("%s: %s", call, d)
				}
			}
		})
	}
	// The answers themselves, so that a case that both fail alike cannot pass for a read.
	_, o, _, _ := askBoth(200, 0, []byte(matrix))
	m, ok := o[0].value.(model.Matrix)
	if !ok || len(m) != 3 || len(m[0].Values) != 5 || !math.IsNaN(float64(m[0].Values[1].Value)) || m[0].Values[1].Timestamp != 1_700_000_015_500 ||
		len(m[2].Histograms) != 1 || m[0].Metric["Hostname"] != "gpu-node-1" {
		t.Fatalf("matrix read as %v", o[0].value)
	}
}

// FuzzQueryAPIAnswersAsClientGolang feeds both readers the same reply under the statuses
// Prometheus answers with: whatever the bytes, queryAPI answers what client_golang answers (a
// value where it has one, an error of the same type where it fails; a syntax error's words may
// differ).
func FuzzQueryAPIAnswersAsClientGolang(f *testing.F) {
	f.Add(uint8(0), []byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1700000000.5,"1"]]}]}}`))
	f.Add(uint8(0), []byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]},"warnings":["w"]}`))
	f.Add(uint8(1), []byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
	f.Add(uint8(2), []byte(`{"status":"error","errorType":"execution","error":"too many samples"}`))
	f.Add(uint8(3), []byte(`{"status":"error","errorType":"unavailable"}`))
	f.Add(uint8(0), []byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		status := []int{200, 400, 422, 503, 404}[int(which)%5]
		g, o, _, _ := askBoth(status, 0, body)
		for i, call := range []string{"QueryRange", "Query"} {
			if d := sameAnswer(g[i], o[i], false); d != "" {
				t.Errorf("HTTP %d, %q: %s: %s", status, body, call, d)
			}
		}
	})
}

// TestBrokenReplySaysWhatIsWrong: a reply that is not JSON is refused in encoding/json's words,
// which say what is wrong and where (client_golang's own message for it).
func TestBrokenReplySaysWhatIsWrong(t *testing.T) {
	for body, want := range map[string]string{
		`{"status":"success","data":{"resultType":"matrix","result":[`: "unexpected end of JSON input",
		`<html>proxy login</html>`:                                     "invalid character '<' looking for beginning of value",
	} {
		g, o, _, _ := askBoth(200, 0, []byte(body))
		for i, a := range []answer{g[0], o[0]} {
			var pe *promv1.Error
			if !errors.As(a.err, &pe) || pe.Type != promv1.ErrBadResponse || pe.Msg != want {
				t.Errorf("%q: %s answered %v, want bad_response: %s", body, []string{"client_golang", "queryAPI"}[i], a.err, want)
			}
		}
	}
}

// TestMatrixRefusesWhatClientGolangKeepsBroken: a null series (client_golang keeps a nil series,
// on which its own String method fails) and a "metric" that is a string holding JSON (which it
// decodes) are bad responses here, said as such.
func TestMatrixRefusesWhatClientGolangKeepsBroken(t *testing.T) {
	for body, want := range map[string]string{
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"]]},null]}}`:         "series 1 is null",
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":"{\"a\":\"b\"}","values":[[1,"2"]]}]}}`: "the series' metric is not an object",
	} {
		g, o, _, _ := askBoth(200, 0, []byte(body))
		if g[0].err != nil {
			t.Fatalf("client_golang refused %s: %v", body, g[0].err)
		}
		var pe *promv1.Error
		if !errors.As(o[0].err, &pe) || pe.Type != promv1.ErrBadResponse || !strings.Contains(pe.Msg, want) || o[0].value != nil {
			t.Errorf("%s: answered %v, %v; want bad_response saying %q", body, o[0].value, o[0].err, want)
		}
	}
}

// TestAnswersOutliveTheReplyBuffer: a query's reply is read into a pooled buffer that the next
// reply is read into; what the first answer holds (labels, values, warnings, an error's text) is
// its own and stays as it was.
func TestAnswersOutliveTheReplyBuffer(t *testing.T) {
	replies := []string{
		`{"status":"success","warnings":["first warning"],"data":{"resultType":"matrix","result":[{"metric":{"gpu":"first-gpu","Hostname":"first-host"},"values":[[1700000000,"1.5"],[1700000015,"2.5"]]}]}}`,
		`{"status":"error","errorType":"bad_data","error":"first error"}`,
	}
	overwrite := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"gpu":"XXXXXXXXX","Hostname":"XXXXXXXXXX"},"values":[[1800000000,"9.5"],[1800000015,"9.5"]]}]},"warnings":["XXXXXXXXXXXXX"]}` + strings.Repeat(" ", 200)
	for _, first := range replies {
		var reply string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			code := http.StatusOK
			if strings.Contains(reply, `"error"`) {
				code = http.StatusBadRequest
			}
			w.WriteHeader(code)
			_, _ = io.WriteString(w, reply)
		}))
		c, err := api.NewClient(api.Config{Address: srv.URL, Client: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		q := newQueryAPI(newBodyClient(c, srv.Client()))
		ask := func(body string) (model.Value, promv1.Warnings, error) {
			reply = body
			v, warnings, _, err := q.QueryRange(t.Context(), "up", promv1.Range{Start: time.Unix(1700000000, 0), End: time.Unix(1700000015, 0), Step: 15 * time.Second})
			return v, warnings, err
		}
		// The answer is kept as it came, and printed before and after the next replies.
		v, warnings, err := ask(first)
		show := func() string {
			s := fmt.Sprint(warnings, err)
			if v != nil {
				s += v.String()
			}
			return s
		}
		before := show()
		for range 3 {
			_, _, _ = ask(overwrite)
		}
		if after := show(); after != before || strings.Contains(after, "XXX") || !strings.Contains(after, "first") {
			t.Errorf("the first answer was %s, is now %s", before, after)
		}
		srv.Close()
	}
}
