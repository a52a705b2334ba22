package otlptrace

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	jsoniter "github.com/json-iterator/go"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/jsonedit"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// checkScanJSONAgrees fails when ScanJSON answers b and the decoder reads it otherwise, with and
// without a filter of traces; it says whether the scan answered.
func checkScanJSONAgrees(t *testing.T, name string, b []byte) bool {
	t.Helper()
	got, ok := ScanJSON(b, "", nil)
	if !ok {
		return false
	}
	want, err := readJSONBytes(b)
	if err != nil {
		t.Errorf("%s: the scan reads %d spans, the decoder fails: %v", name, len(got), err)
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: the scan and the decoder differ:\n got %+v\nwant %+v", name, got, want)
		return true
	}
	// Every other trace kept, as a search's failed traces are.
	kept := map[string]bool{}
	for i, s := range want {
		if i%2 == 0 {
			kept[s.TraceID] = true
		}
	}
	keep := func(id string) bool { return kept[id] }
	if got, ok := ScanJSON(b, "", keep); ok {
		want, err := ReadJSONOf(jsoniter.Parse(jsoniter.ConfigDefault, strings.NewReader(string(b)), 64), keep)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: kept traces: the scan and the decoder differ (%v):\n got %+v\nwant %+v", name, err, got, want)
		}
	} else {
		t.Errorf("%s: scanned whole, not with a filter of traces", name)
	}
	if whole, ok := ScanJSONSkimming(b, "", nil); !ok || !reflect.DeepEqual(whole, want) {
		t.Errorf("%s: skimming nothing does not read as the decoder (%v)", name, ok)
	}
	checkSkimming(t, name, b, want)
	return true
}

// checkSkimming fails when ScanJSONSkimming, reading one service's spans whole (the first
// span's), does not answer the decoder's spans in their order: that service's exactly, the
// others' exactly or without their attributes and events.
func checkSkimming(t *testing.T, name string, b []byte, want []models.Span) {
	t.Helper()
	if len(want) == 0 {
		return
	}
	service := want[0].Service
	got, ok := ScanJSONSkimming(b, "", func(s string) bool { return s == service })
	if !ok || len(got) != len(want) {
		t.Errorf("%s: skimming answers %d spans (%v), the decoder %d", name, len(got), ok, len(want))
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		if reflect.DeepEqual(g, w) {
			continue
		}
		w.Attributes, w.Events = map[string]string{}, nil
		if g.Service == service || !reflect.DeepEqual(g, w) {
			t.Errorf("%s: span %d skimmed as\n %+v\nwant it as the decoder reads it, or without attributes and events:\n %+v", name, i, got[i], want[i])
		}
	}
}

// Jaeger's own replies and this package's spans are read by the scan, as the decoder reads them;
// what the scan leaves to the decoder is each thing it is not sure to read the same.
func TestScanJSONReadsAsTheDecoder(t *testing.T) {
	for _, file := range []string{"v3_trace.json", "v3_search.json"} {
		if !checkScanJSONAgrees(t, file, jaegerResult(t, file)) {
			t.Errorf("%s: Jaeger's own reply left to the decoder", file)
		}
	}
	if !checkScanJSONAgrees(t, "oneSpan", []byte(oneSpan)) {
		t.Error("oneSpan left to the decoder")
	}
	if !checkScanJSONAgrees(t, "every value type", everyValueType(t)) {
		t.Error("pdata's JSON of every attribute type left to the decoder")
	}
	const ids = `"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736","spanId":"00F067AA0BA902B7"`
	span := func(fields string) string {
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + ids + fields + `}]}]}]}`
	}
	for name, in := range map[string]struct {
		json    string
		scanned bool
	}{
		"upper-case IDs":      {span(``), true},
		"snake case":          {`{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7","start_time_unix_nano":5,"end_time_unix_nano":"9"}]}]}]}`, true},
		"kinds and statuses":  {span(`,"kind":"SPAN_KIND_SERVER","status":{"code":"STATUS_CODE_ERROR","message":"m"}`), true},
		"numeric kind":        {span(`,"kind":3,"status":{"code":1}`), true},
		"unknown kind number": {span(`,"kind":9`), true},
		"scalar values":       {span(`,"attributes":[{"key":"i","value":{"intValue":"-007"}},{"key":"n","value":{"intValue":42}},{"key":"b","value":{"boolValue":true}},{"key":"d","value":{"doubleValue":0.1}},{"key":"ds","value":{"doubleValue":"1e3"}},{"key":"e","value":{}}]`), true},
		"escaped value":       {span(`,"name":"a\"b\u00e9","attributes":[{"key":"k\n","value":{"stringValue":"\ud83d\ude00"}}]`), true},
		"repeated key":        {span(`,"attributes":[{"key":"k","value":{"stringValue":"1"}},{"key":"k","value":{"stringValue":"2"}}],"attributes":[{"key":"j","value":{"stringValue":"3"}}]`), true},
		// The second span's first attributes are the first span's: its second attributes field
		// must not change the first span's map.
		"shared, then added to": {`{"resourceSpans":[{"scopeSpans":[{"spans":[{` + ids + `,"attributes":[{"key":"k","value":{"stringValue":"1"}}]},` +
			`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b8","attributes":[{"key":"k","value":{"stringValue":"1"}}],"attributes":[{"key":"j","value":{"stringValue":"2"}}]},` +
			`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b9"},{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902ba"}]}]}]}`, true},
		"events":         {span(`,"events":[{"timeUnixNano":"9","name":"b"},{"timeUnixNano":"5","name":"a","attributes":[{"key":"exception.type","value":{"stringValue":"E"}}]}]`), true},
		"nulls":          {`{"resourceSpans":[null,{"resource":null,"scopeSpans":null},{"scopeSpans":[null,{"spans":null}]}]}`, true},
		"no spans":       {`{"resourceSpans":[]}`, true},
		"null span":      {`{"resourceSpans":[{"scopeSpans":[{"spans":[null]}]}]}`, false},
		"null event":     {span(`,"events":[null]`), false},
		"null attribute": {span(`,"attributes":[null]`), false},
		"null name":      {span(`,"name":null`), false},
		// Jaeger's own warnings on a span are an array of strings.
		"array value":                {span(`,"attributes":[{"key":"@jaeger@warnings","value":{"arrayValue":{"values":[{"stringValue":"parent span ID=6d2efdf2c22e667a is not in the trace"},{"intValue":"3"}]}}},{"key":"e","value":{"arrayValue":{"values":[]}}}]`), true},
		"map value":                  {span(`,"attributes":[{"key":"m","value":{"kvlistValue":{"values":[{"key":"k","value":{"boolValue":false}}]}}}]`), true},
		"bytes value":                {span(`,"attributes":[{"key":"a","value":{"bytesValue":"AQ=="}}]`), true},
		"bad bytes":                  {span(`,"attributes":[{"key":"a","value":{"bytesValue":"%%"}}]`), false},
		"unknown and indexed values": {span(`,"attributes":[{"key":"a","value":{"stringValue":"x","futureValue":1}},{"key":"b","value":{"stringValueStrindex":3}}]`), true},
		"deprecated scopes":          {`{"resourceSpans":[{"deprecatedScopeSpans":[{"spans":[{` + ids + `}]}]}]}`, false},
		"no span ID":                 {`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}]}]}]}`, false},
		"ends before it starts":      {span(`,"startTimeUnixNano":"9","endTimeUnixNano":"5"`), false},
		"negative time":              {span(`,"startTimeUnixNano":-1`), false},
		"fractional time":            {span(`,"startTimeUnixNano":1.5`), false},
		"unknown kind name":          {span(`,"kind":"SPAN_KIND_BAD"`), false},
		"bad ID":                     {`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"00f067aa0ba902b7"}]}]}]}`, false},
		"escaped key":                {span(`,"n\u0061me":"x"`), false},
		"null reply":                 {`null`, false},
		"trailing data":              {`{} {}`, false},
	} {
		_, ok := ScanJSON([]byte(in.json), "", nil)
		if ok != in.scanned {
			t.Errorf("%s: scanned %v, want %v", name, ok, in.scanned)
		}
		if ok {
			checkScanJSONAgrees(t, name, []byte(in.json))
		}
	}
	// Jaeger's envelope: the result alone; an error beside it, or no result, is the decoder's.
	result := jaegerResult(t, "v3_trace.json")
	want, _ := ScanJSON(result, "", nil)
	if got, ok := ScanJSON([]byte(`{"result":`+string(result)+`}`), "result", nil); !ok || !reflect.DeepEqual(got, want) || len(want) == 0 {
		t.Errorf("in its envelope: %d spans, %v; want %d", len(got), ok, len(want))
	}
	for _, in := range []string{`{"result":{},"error":{"httpCode":500}}`, `{"error":{"httpCode":500}}`, `{"result":null}`, `{"result":{},"result":{}}`, `{}`} {
		if _, ok := ScanJSON([]byte(in), "result", nil); ok {
			t.Errorf("%s: scanned", in)
		}
	}
}

// Real replies with random edits: wherever the scan answers, it answers as the decoder does.
// A fixed, seeded share of a fuzzer's work, as TestScanFailedTraceIDsAgreesOnEditedReplies.
func TestScanJSONAgreesOnEditedReplies(t *testing.T) {
	seeds := [][]byte{jaegerResult(t, "v3_search.json"), jaegerResult(t, "v3_trace.json"), everyValueType(t), []byte(oneSpan)}
	tokens := []string{"{", "}", "[", "]", ",", ":", `"`, `\`, `\"`, `\u0041`, "null", "0", "2", "-", ".", "e", " ", `"kind"`, `"status"`, `"traceId"`,
		`"spanId"`, `"name"`, `"key"`, `"value"`, `"intValue"`, `"stringValue"`, `"attributes"`, `"events"`, `"spans"`, `"STATUS_CODE_ERROR"`,
		`"SPAN_KIND_CLIENT"`, `"4BF92F3577B34DA6A3CE929D0E0E4736"`, `"00f067aa0ba902b7"`, "\x00", "\n", "tru", `{"code":2}`, `"007"`}
	rng := rand.New(rand.NewPCG(13, 17))
	scanned := 0
	const edits = 10000
	for n := range edits {
		b := jsonedit.Edit(rng, seeds[n%len(seeds)], tokens, 8)
		if checkScanJSONAgrees(t, fmt.Sprintf("edit %d", n), b) {
			scanned++
		}
	}
	if scanned < edits/20 {
		t.Errorf("only %d of %d edited replies scanned", scanned, edits)
	}
	t.Logf("%d of %d edited replies scanned", scanned, edits)
}

// Whatever the bytes, the scan never panics and never answers what the decoder would not.
func FuzzScanJSON(f *testing.F) {
	for _, file := range []string{"v3_trace.json", "v3_search.json"} {
		f.Add(jaegerResult(f, file))
	}
	f.Add([]byte(oneSpan))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkScanJSONAgrees(t, "fuzzed", b)
	})
}

// On Jaeger's own search reply, whose resources come before their spans, skimming reads the
// asked service's spans whole and the others' without attributes or events; where a resource
// comes after its spans, they are read whole.
func TestScanJSONSkimmingSkimsTheOtherServices(t *testing.T) {
	b := jaegerResult(t, "v3_search.json")
	all, ok := ScanJSON(b, "", nil)
	if !ok || len(all) == 0 {
		t.Fatal("Jaeger's reply not scanned")
	}
	service := all[0].Service
	got, _ := ScanJSONSkimming(b, "", func(s string) bool { return s == service })
	skimmed, whole := 0, 0
	for i, s := range got {
		switch {
		case s.Service == service:
			whole++
			if !reflect.DeepEqual(s, all[i]) {
				t.Errorf("span %d of %s not read whole", i, service)
			}
		case len(s.Attributes) != 0 || s.Events != nil:
			t.Errorf("span %d of %s not skimmed: %+v", i, s.Service, s)
		case len(all[i].Attributes) > 0:
			skimmed++
		}
	}
	if skimmed == 0 || whole == 0 {
		t.Fatalf("%d spans skimmed, %d whole: the reply needs both services", skimmed, whole)
	}
	// A resource written after its spans: they are read whole.
	after := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7",` +
		`"name":"op","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"k","value":{"stringValue":"v"}}]}]}],` +
		`"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"other"}}]}}]}`
	spans, ok := ScanJSONSkimming([]byte(after), "", func(string) bool { return false })
	if !ok || len(spans) != 1 || spans[0].Attributes["k"] != "v" || spans[0].Service != "other" {
		t.Errorf("spans before their resource: %+v (%v), want them read whole", spans, ok)
	}
}
