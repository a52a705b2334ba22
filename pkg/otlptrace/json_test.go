package otlptrace

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	jsoniter "github.com/json-iterator/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/jsonedit"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// readJSONBytes runs ReadJSON on b as a reply's reader would be read: in small pieces, so that
// the iterator's buffer refills in the middle of values.
func readJSONBytes(b []byte) ([]models.Span, error) {
	iter := jsoniter.Parse(jsoniter.ConfigDefault, strings.NewReader(string(b)), 64)
	spans, err := ReadJSON(iter)
	if err == nil && iter.Error != nil {
		err = iter.Error
	}
	return spans, err
}

// viaPdata is the reference: pdata's OTLP JSON decoder, then Spans.
func viaPdata(b []byte) ([]models.Span, error) {
	td, err := UnmarshalJSON(b)
	if err != nil {
		return nil, err
	}
	return Spans(td)
}

// checkAgrees fails when ReadJSON and pdata's decoder read b differently: what pdata reads,
// ReadJSON reads the same; what pdata refuses, ReadJSON refuses too unless lenient (pdata also
// checks fields the plugin skips, such as links' IDs, and refuses a reply for them).
func checkAgrees(t *testing.T, name string, b []byte, lenient bool) {
	t.Helper()
	want, wantErr := viaPdata(b)
	got, err := readJSONBytes(b)
	switch {
	case wantErr != nil && err == nil && !lenient:
		t.Errorf("%s: pdata fails (%v), ReadJSON reads %d spans", name, wantErr, len(got))
	case wantErr == nil && err != nil:
		t.Errorf("%s: ReadJSON fails (%v), pdata reads %d spans", name, err, len(want))
	case wantErr == nil && !reflect.DeepEqual(got, want):
		t.Errorf("%s: ReadJSON and pdata differ:\n got %+v\nwant %+v", name, got, want)
	}
	if wantErr == nil {
		checkFailedOnly(t, name, b, want)
	}
}

// checkFailedOnly holds the two reads of a search's failed traces to pdata's spans (want):
// FailedTraceIDs finds the traces with a failed span, and ReadJSONOf reads their spans, the same
// as pdata's, and no other.
func checkFailedOnly(t *testing.T, name string, b []byte, want []models.Span) {
	t.Helper()
	wantIDs := map[string]bool{}
	for _, s := range want {
		if s.Failed() {
			wantIDs[s.TraceID] = true
		}
	}
	var wantSpans []models.Span
	for _, s := range want {
		if wantIDs[s.TraceID] {
			wantSpans = append(wantSpans, s)
		}
	}
	ids, err := FailedTraceIDs(jsoniter.Parse(jsoniter.ConfigDefault, strings.NewReader(string(b)), 64))
	if err != nil || !reflect.DeepEqual(ids, wantIDs) {
		t.Errorf("%s: failed traces %v, %v; want %v", name, ids, err, wantIDs)
		return
	}
	if scanned, ok := ScanFailedTraceIDs(b, ""); ok && !reflect.DeepEqual(scanned, wantIDs) {
		t.Errorf("%s: the scan finds failed traces %v; want %v", name, scanned, wantIDs)
	}
	got, err := ReadJSONOf(jsoniter.Parse(jsoniter.ConfigDefault, strings.NewReader(string(b)), 64), func(id string) bool { return ids[id] })
	if err != nil || !reflect.DeepEqual(got, wantSpans) {
		t.Errorf("%s: the failed traces' spans differ from pdata's (%v):\n got %+v\nwant %+v", name, err, got, wantSpans)
	}
}

// jaegerResult is the OTLP JSON of one of Jaeger's recorded v3 replies (pkg/jaeger's testdata).
func jaegerResult(tb testing.TB, file string) []byte {
	tb.Helper()
	b, err := os.ReadFile("../jaeger/testdata/" + file)
	if err != nil {
		tb.Fatal(err)
	}
	var env struct{ Result json.RawMessage }
	if err := json.Unmarshal(b, &env); err != nil {
		tb.Fatal(err)
	}
	return env.Result
}

// Jaeger's own replies (testdata of pkg/jaeger, written by Jaeger 2), the spans this package's
// tests use, and OTLP JSON written by pdata's own encoder for every attribute type read the same.
func TestReadJSONAgreesWithPdata(t *testing.T) {
	for _, file := range []string{"v3_trace.json", "v3_search.json", "v3_search_empty.json"} {
		result := jaegerResult(t, file)
		checkAgrees(t, file, result, false)
		if file == "v3_trace.json" {
			if spans, _ := readJSONBytes(result); len(spans) < 3 {
				t.Fatalf("%s: %d spans", file, len(spans))
			}
		}
	}
	checkAgrees(t, "oneSpan", []byte(oneSpan), false)
	checkAgrees(t, "every value type", everyValueType(t), false)
	// More spans than one of the reader's blocks holds, a resource's spans across two blocks.
	b := manySpans(t, []int{spanBlock - 3, 2*spanBlock + 7, 1, spanBlock})
	checkAgrees(t, "spans over several blocks", b, false)
	if spans, _ := readJSONBytes(b); len(spans) != 4*spanBlock+5 || spans[spanBlock].Service != "svc-1" {
		t.Fatalf("spans over several blocks: %d spans", len(spans))
	}
}

// manySpans is a trace in pdata's JSON with a resource (service svc-<i>) of n[i] spans for each i.
func manySpans(t *testing.T, n []int) []byte {
	td := ptrace.NewTraces()
	for i, count := range n {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", i))
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for j := range count {
			sp := spans.AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{0xAB, 1})
			sp.SetSpanID(pcommon.SpanID{byte(i + 1), byte(j >> 8), byte(j)})
			sp.SetName(fmt.Sprintf("op-%d", j%7))
			sp.SetStartTimestamp(pcommon.Timestamp(1796450000123456789 + j*1000))
			sp.SetEndTimestamp(pcommon.Timestamp(1796450000123456789 + j*1000 + 500))
			sp.Attributes().PutInt("j", int64(j))
		}
	}
	b, err := new(ptrace.JSONMarshaler).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// everyValueType is a trace in pdata's own JSON with each attribute type, nested arrays and
// maps, events, links and a span in a deprecated-style second resource.
func everyValueType(t *testing.T) []byte {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	rs.Resource().Attributes().PutInt("pid", 42)
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{0xAB, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	sp.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	sp.SetParentSpanID(pcommon.SpanID{9, 9, 9, 9, 9, 9, 9, 9})
	sp.SetName("step <1> & \"two\"")
	sp.SetKind(ptrace.SpanKindConsumer)
	sp.SetStartTimestamp(1796450000123456789)
	sp.SetEndTimestamp(1796450000223456789)
	sp.Status().SetCode(ptrace.StatusCodeOk)
	a := sp.Attributes()
	a.PutStr("s", "text with \u00e9 and \\ and \"quotes\"")
	a.PutBool("b", true)
	a.PutInt("i", -9007199254740993)
	a.PutDouble("d", 0.000001234)
	a.PutDouble("big", 1e22)
	a.PutDouble("whole", 3)
	a.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 2, 250})
	arr := a.PutEmptySlice("arr")
	arr.AppendEmpty().SetStr("x")
	arr.AppendEmpty().SetInt(2)
	arr.AppendEmpty().SetEmptySlice().AppendEmpty().SetBool(false)
	m := a.PutEmptyMap("map")
	m.PutStr("k", "<v>")
	m.PutEmptyMap("inner").PutDouble("pi", 3.14159)
	a.PutEmpty("empty")
	ev := sp.Events().AppendEmpty()
	ev.SetName("second")
	ev.SetTimestamp(1796450000200000000)
	ev.Attributes().PutInt("n", 1)
	ev = sp.Events().AppendEmpty()
	ev.SetName("first")
	ev.SetTimestamp(1796450000150000000)
	sp.Links().AppendEmpty().SetTraceID(pcommon.TraceID{1})
	rs2 := td.ResourceSpans().AppendEmpty()
	sp2 := rs2.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp2.SetTraceID(pcommon.TraceID{0xAB, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	sp2.SetSpanID(pcommon.SpanID{2})
	sp2.Status().SetCode(ptrace.StatusCodeError)
	sp2.Status().SetMessage("boom")
	b, err := new(ptrace.JSONMarshaler).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Forms pdata accepts besides its own: snake_case names, enums by name, numbers as numbers,
// upper-case IDs, the resource after its spans, deprecated scope spans, and what it refuses.
func TestReadJSONReadsWhatPdataReads(t *testing.T) {
	const id = `"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736","spanId":"00f067aa0ba902b7"`
	for name, in := range map[string]string{
		"snake case":              `{"resource_spans":[{"resource":{"attributes":[{"key":"service.name","value":{"string_value":"a"}}]},"scope_spans":[{"spans":[{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7","parent_span_id":"0000000000000000","start_time_unix_nano":5,"end_time_unix_nano":"9","attributes":[{"key":"n","value":{"int_value":7}},{"key":"d","value":{"double_value":"2.5"}}]}]}]}]}`,
		"enum names":              `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"kind":"SPAN_KIND_CLIENT","status":{"code":"STATUS_CODE_ERROR","message":"m"}}]}]}]}`,
		"resource after spans":    `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `}]}],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"late"}}]}}]}`,
		"deprecated scopes":       `{"resourceSpans":[{"deprecatedScopeSpans":[{"spans":[{` + id + `,"name":"old"}]}]}]}`,
		"both scope forms":        `{"resourceSpans":[{"deprecatedScopeSpans":[{"spans":[{` + id + `,"name":"old"}]}],"scopeSpans":[{"spans":[{` + id + `,"name":"new"}]}]}]}`,
		"unknown fields":          `{"x":[1,{"y":2}],"resourceSpans":[{"z":null,"scopeSpans":[{"scope":{"name":"s","version":"1"},"spans":[{` + id + `,"links":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}],"droppedEventsCount":3,"flags":1}]}]}]}`,
		"repeated keys":           `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"attributes":[{"key":"k","value":{"stringValue":"1"}},{"key":"k","value":{"intValue":"2"}}],"attributes":[{"key":"j","value":{}}]}]}]}]}`,
		"a value of two types":    `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"attributes":[{"key":"k","value":{"stringValue":"1","boolValue":true}}]}]}]}]}`,
		"one trace of two failed": `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeSpans":[{"spans":[{` + id + `,"status":{"code":2},"attributes":[{"key":"k","value":{"stringValue":"v"}}]},{"traceId":"00000000000000000000000000000001","spanId":"00f067aa0ba902b8","status":{"code":1},"attributes":[{"key":"k","value":{"stringValue":"w"}}],"events":[{"name":"e"}]},{"spanId":"00f067aa0ba902b9","status":{"code":2,"message":"m"},"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}]}]}]}`,
		"empty":                   `{}`,
		"no spans":                `{"resourceSpans":[]}`,
		"zero trace ID":           `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00000000000000000000000000000000","spanId":"00f067aa0ba902b7"}]}]}]}`,
		"bad ID":                  `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"00f067aa0ba902b7"}]}]}]}`,
		"short ID":                `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f","spanId":"00f067aa0ba902b7"}]}]}]}`,
		"unknown kind":            `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"kind":"SPAN_KIND_WEIRD"}]}]}]}`,
		"bad time":                `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"startTimeUnixNano":"soon"}]}]}]}`,
		"ends before start":       `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"startTimeUnixNano":"20","endTimeUnixNano":"10"}]}]}]}`,
		"bad bytes":               `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"attributes":[{"key":"b","value":{"bytesValue":"!!"}}]}]}]}]}`,
		"not an object":           `[]`,
		"cut short":               `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id,
	} {
		checkAgrees(t, name, []byte(in), false)
	}
	// What a failure says.
	for in, want := range map[string]string{
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"x"}]}]}]}`:                                                 `a span ("x") without traceId or spanId`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"startTimeUnixNano":"20","endTimeUnixNano":"10"}]}]}]}`: `a span (00f067aa0ba902b7) that ends before it starts`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}`:                                            `an ID "xyz" that is not 32 hex digits`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"kind":"SPAN_KIND_WEIRD"}]}]}]}`:                        `a span kind "SPAN_KIND_WEIRD" that OTLP does not know`,
	} {
		if _, err := readJSONBytes([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// Whatever the bytes, ReadJSON never panics and reads what pdata reads.
func FuzzReadJSONAgreesWithPdata(f *testing.F) {
	for _, file := range []string{"v3_trace.json", "v3_search.json"} {
		f.Add(jaegerResult(f, file))
	}
	f.Add([]byte(oneSpan))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAgrees(t, "fuzzed", b, true)
	})
}

// checkScanAgrees fails when ScanFailedTraceIDs answers b (ok) and FailedTraceIDs reads it
// differently: an error, or other trace IDs. Where the scan is unsure (not ok) the decoder reads
// the reply, so that is always allowed.
func checkScanAgrees(t *testing.T, name string, b []byte) (scanned bool) {
	t.Helper()
	ids, ok := ScanFailedTraceIDs(b, "")
	if !ok {
		return false
	}
	iter := jsoniter.Parse(jsoniter.ConfigDefault, strings.NewReader(string(b)), 64)
	want, err := FailedTraceIDs(iter)
	if err == nil && iter.Error != nil {
		err = iter.Error
	}
	if err == nil && iter.WhatIsNext() != jsoniter.InvalidValue {
		err = errors.New("trailing data") // the scan refuses it
	}
	if err != nil || !reflect.DeepEqual(ids, want) {
		t.Errorf("%s: the scan finds failed traces %v; FailedTraceIDs %v, %v", name, ids, want, err)
		return true
	}
	// The reply cut to the failed traces' resourceSpans reads as the whole does: the same spans
	// where the whole reads (the cut may read where the whole fails on a trace it leaves out).
	again, cut, ok := ScanFailedTraces(b, "")
	if !ok || !reflect.DeepEqual(again, ids) {
		t.Errorf("%s: scanned, but the cutting scan answers %v, %v", name, again, ok)
		return true
	}
	keep := func(id string) bool { return ids[id] }
	whole, wholeErr := ReadJSONOf(jsoniter.Parse(jsoniter.ConfigDefault, strings.NewReader(string(b)), 64), keep)
	part, partErr := ReadJSONOf(jsoniter.ParseBytes(jsoniter.ConfigDefault, cut), keep)
	if wholeErr == nil && (partErr != nil || !reflect.DeepEqual(part, whole)) {
		t.Errorf("%s: the cut reads %d spans (%v), the whole %d", name, len(part), partErr, len(whole))
	}
	return true
}

// The scan answers Jaeger's real replies and the forms pdata accepts itself (so the fast path is
// the one taken), each as FailedTraceIDs does; what it is unsure of goes to the decoder.
func TestScanFailedTraceIDsAnswersAsTheDecoder(t *testing.T) {
	for _, file := range []string{"v3_trace.json", "v3_search.json"} {
		if !checkScanAgrees(t, file, jaegerResult(t, file)) {
			t.Errorf("%s: Jaeger's own reply left to the decoder", file)
		}
	}
	for name, b := range map[string][]byte{"every value type": everyValueType(t), "oneSpan": []byte(oneSpan)} {
		if !checkScanAgrees(t, name, b) {
			t.Errorf("%s: pdata's own JSON left to the decoder", name)
		}
	}
	const id = `"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736"`
	for name, in := range map[string]struct {
		json    string
		scanned bool
		failed  []string
	}{
		"by name":           {`{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"status":{"code":"STATUS_CODE_ERROR"}}]}]}]}`, true, []string{"4bf92f3577b34da6a3ce929d0e0e4736"}},
		"snake case":        {`{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","status":{"code":2}}]}]}]}`, true, []string{"4bf92f3577b34da6a3ce929d0e0e4736"}},
		"deprecated scopes": {`{"resourceSpans":[{"deprecatedScopeSpans":[{"spans":[{` + id + `,"status":{"code":2}}]}]}]}`, true, []string{"4bf92f3577b34da6a3ce929d0e0e4736"}},
		"ok and unset":      {`{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"status":{"code":1}},{` + id + `,"status":{}}]}]}]}`, true, nil},
		"status first":      {`{"resourceSpans":[{"scopeSpans":[{"spans":[{"status":{"message":"m","code":2},` + id + `}]}]}]}`, true, []string{"4bf92f3577b34da6a3ce929d0e0e4736"}},
		"zero ID":           {`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00000000000000000000000000000000","status":{"code":2}}]}]}]}`, true, nil},
		"zero ID beside":    {`{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"spanId":"00f067aa0ba902b7","status":{"code":2}}]}]},{"scopeSpans":[{"spans":[{"traceId":"00000000000000000000000000000000","spanId":"00f067aa0ba902b8"}]}]},{"scopeSpans":[{"spans":[{"traceId":"00000000000000000000000000000001","spanId":"00f067aa0ba902b9"}]}]}]}`, true, []string{"4bf92f3577b34da6a3ce929d0e0e4736"}},
		"nulls":             {`{"resourceSpans":[null,{"scopeSpans":null},{"scopeSpans":[{"spans":null},{"spans":[null]}]}]}`, true, nil},
		"bad ID":            {`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","status":{"code":2}}]}]}]}`, false, nil},
		"unknown status":    {`{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"status":{"code":"STATUS_CODE_BAD"}}]}]}]}`, false, nil},
		"fractional code":   {`{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id + `,"status":{"code":2.5}}]}]}]}`, false, nil},
		"escaped key":       {`{"resourceSpans":[{"scopeSpans":[{"spans":[{"\u0074raceId":"4bf92f3577b34da6a3ce929d0e0e4736","status":{"code":2}}]}]}]}`, false, nil},
		"empty key":         {`{"":1,"resourceSpans":[]}`, false, nil},
		"cut short":         {`{"resourceSpans":[{"scopeSpans":[{"spans":[{` + id, false, nil},
		"trailing data":     {`{} {}`, false, nil},
		"bad escape":        {`{"x":"\q","resourceSpans":[]}`, false, nil},
		"control character": {"{\"x\":\"\t\"}", false, nil},
	} {
		ids, ok := ScanFailedTraceIDs([]byte(in.json), "")
		if ok != in.scanned {
			t.Errorf("%s: scanned %v, want %v", name, ok, in.scanned)
		}
		if ok {
			checkScanAgrees(t, name, []byte(in.json))
			if got := slices.Sorted(maps.Keys(ids)); !slices.Equal(got, in.failed) {
				t.Errorf("%s: failed %v, want %v", name, got, in.failed)
			}
		}
	}
	// Jaeger's envelope: the result alone; an error beside it, or no result, is the decoder's.
	result := jaegerResult(t, "v3_search.json")
	want, _ := ScanFailedTraceIDs(result, "")
	enveloped := []byte(`{"result":` + string(result) + `}`)
	if got, ok := ScanFailedTraceIDs(enveloped, "result"); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("in its envelope: %v, %v; want %v", got, ok, want)
	}
	// The recorded search has no failed trace: with its first marked failed, the cut reads that
	// trace's spans, from fewer bytes, in or out of the envelope.
	all, err := readJSONBytes(result)
	if err != nil || len(all) == 0 {
		t.Fatalf("the recorded search: %d spans, %v", len(all), err)
	}
	one := map[string]bool{all[0].TraceID: true}
	// Its first trace marked failed, as Jaeger writes a span's ERROR status.
	marked := []byte(strings.Replace(string(result), `"traceId":"`+all[0].TraceID+`"`, `"traceId":"`+all[0].TraceID+`","status":{"code":2}`, 1))
	failedIDs, inside, ok := ScanFailedTraces(marked, "")
	if !ok || !reflect.DeepEqual(failedIDs, one) {
		t.Fatalf("the marked search: %v, %v", failedIDs, ok)
	}
	if _, cut, ok := ScanFailedTraces([]byte(`{"result":`+string(marked)+`}`), "result"); !ok || string(cut) != string(inside) {
		t.Errorf("cut in its envelope: %v, %s", ok, cut)
	}
	spans, err := ReadJSONOf(jsoniter.ParseBytes(jsoniter.ConfigDefault, inside), func(id string) bool { return one[id] })
	var wantSpans []models.Span
	marks, _ := readJSONBytes(marked)
	for _, s := range marks {
		if one[s.TraceID] {
			wantSpans = append(wantSpans, s)
		}
	}
	if err != nil || !reflect.DeepEqual(spans, wantSpans) || len(wantSpans) == 0 || len(inside) >= len(result) {
		t.Errorf("cut to trace %s: %d spans of %d (%v), %d of the reply's %d bytes", all[0].TraceID, len(spans), len(wantSpans), err, len(inside), len(result))
	}
	for _, in := range []string{`{"result":{},"error":{"httpCode":500}}`, `{"error":{"httpCode":500}}`, `{"result":null}`, `{"result":{},"result":{}}`, `{}`} {
		if _, ok := ScanFailedTraceIDs([]byte(in), "result"); ok {
			t.Errorf("%s: scanned", in)
		}
	}
}

// Real replies with random edits (a byte or a token put in, taken out or replaced, as a broken
// proxy or another writer might): wherever the scan answers, it answers as FailedTraceIDs does.
// Go's fuzzer stalls on this package at times, so this runs a fixed, seeded share of its work.
func TestScanFailedTraceIDsAgreesOnEditedReplies(t *testing.T) {
	seeds := [][]byte{jaegerResult(t, "v3_search.json"), jaegerResult(t, "v3_trace.json"), everyValueType(t), []byte(oneSpan)}
	tokens := []string{"{", "}", "[", "]", ",", ":", `"`, `\`, "null", "0", "2", "-", ".", "e", " ", `"code"`, `"status"`, `"traceId"`,
		`"spans"`, `"STATUS_CODE_ERROR"`, `"4BF92F3577B34DA6A3CE929D0E0E4736"`, "\x00", "\n", "tru", `{"code":2}`}
	rng := rand.New(rand.NewPCG(7, 11))
	scanned := 0
	const edits = 20000
	for n := range edits {
		b := jsonedit.Edit(rng, seeds[n%len(seeds)], tokens, 8)
		if checkScanAgrees(t, fmt.Sprintf("edit %d", n), b) {
			scanned++
		}
	}
	// Most edits break the JSON; enough stay valid that the comparison means something.
	if scanned < edits/20 {
		t.Errorf("only %d of %d edited replies scanned", scanned, edits)
	}
	t.Logf("%d of %d edited replies scanned", scanned, edits)
}

// Whatever the bytes, the scan never panics and never answers what FailedTraceIDs would not.
func FuzzScanFailedTraceIDs(f *testing.F) {
	for _, file := range []string{"v3_trace.json", "v3_search.json"} {
		f.Add(jaegerResult(f, file))
	}
	f.Add([]byte(oneSpan))
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736","status":{"code":"STATUS_CODE_ERROR"}}]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkScanAgrees(t, "fuzzed", b)
	})
}
