package prometheus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// queryAPI is client_golang's API with its two query calls, instant and range, read in one pass.
// client_golang reads a query's reply three times over: encoding/json checks and decodes the
// envelope, then checks and decodes the data inside it again, then jsoniter decodes the samples
// (under load, about a tenth of the plugin's CPU went to the first two). Here jsoniter reads the
// envelope and the samples together, through client_golang's own sample decoders (it registers
// them with jsoniter). The request (POST, then GET when the server refuses POST) and the errors
// are client_golang's, as its Do and DoGetFallback write them (client_golang v1.25);
// TestQueryAPIAnswersAsClientGolang and FuzzQueryAPIAnswersAsClientGolang hold it to them. Two
// departures: a successful reply without data, which client_golang answers with a nil value (and
// its callers would then fail on), is a bad_response error here; and a reply whose envelope has
// a field of the wrong type is refused in other words. Calls with options (a timeout, a limit) go
// to client_golang as they are.
type queryAPI struct {
	promv1.API
	client api.Client
}

func newQueryAPI(c api.Client) queryAPI { return queryAPI{API: promv1.NewAPI(c), client: c} }

func (a queryAPI) Query(ctx context.Context, query string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	if len(opts) > 0 {
		return a.API.Query(ctx, query, ts, opts...)
	}
	args := url.Values{"query": {query}}
	if !ts.IsZero() {
		args.Set("time", formatTime(ts))
	}
	return a.ask(ctx, "/api/v1/query", args)
}

func (a queryAPI) QueryRange(ctx context.Context, query string, r promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	if len(opts) > 0 {
		return a.API.QueryRange(ctx, query, r, opts...)
	}
	args := url.Values{"query": {query}, "start": {formatTime(r.Start)}, "end": {formatTime(r.End)},
		"step": {strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64)}}
	return a.ask(ctx, "/api/v1/query_range", args)
}

// formatTime is client_golang's: seconds with their fraction.
func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64)
}

// ask is client_golang's DoGetFallback: the query as a form POST, again as a GET when the server
// refuses the POST (403, 405, 501).
func (a queryAPI) ask(ctx context.Context, endpoint string, args url.Values) (v model.Value, warnings promv1.Warnings, infos promv1.Infos, err error) {
	err = a.fallback(endpoint, args, func(req *http.Request) (resp *http.Response, err error) {
		resp, v, warnings, infos, err = a.do(ctx, req)
		return resp, err
	})
	return v, warnings, infos, err
}

// fallback sends args to endpoint as client_golang's DoGetFallback does, through send (which
// keeps what it read): as a form POST, again as a GET when the server refuses the POST (403, 405,
// 501). It returns the last send's error.
func (a queryAPI) fallback(endpoint string, args url.Values, send func(*http.Request) (*http.Response, error)) error {
	u := a.client.URL(endpoint, nil)
	form := args.Encode()
	req, err := http.NewRequest(http.MethodPost, u.String(), strings.NewReader(form))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header["Idempotency-Key"] = nil // retried on a network error, as a GET would be
	resp, err := send(req)
	if resp != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented) {
		u.RawQuery = form
		if req, err = http.NewRequest(http.MethodGet, u.String(), nil); err != nil {
			return err
		}
		_, err = send(req)
	}
	return err
}

// do is client_golang's Do for a query: its errors, from the status and the reply's envelope.
func (a queryAPI) do(ctx context.Context, req *http.Request) (*http.Response, model.Value, promv1.Warnings, promv1.Infos, error) {
	resp, body, release, err := a.fetch(ctx, req)
	defer release()
	if err != nil {
		return resp, nil, nil, nil, err
	}
	if code := resp.StatusCode; code/100 != 2 {
		w, i, err := failedReply(code, body)
		return resp, nil, w, i, err
	}
	r, err := readReply(body, true)
	switch {
	case err != nil:
		// The warnings may follow the data that failed: read again without it.
		r, _ = readReply(body, false)
		return resp, nil, r.warnings, r.infos, &promv1.Error{Type: promv1.ErrBadResponse, Msg: err.Error()}
	case r.status == "error":
		return resp, nil, r.warnings, r.infos, &promv1.Error{Type: r.errorType, Msg: r.error}
	case r.value == nil:
		return resp, nil, r.warnings, r.infos, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "the reply has no data"}
	}
	return resp, r.value, r.warnings, r.infos, nil
}

// fetch sends req and reads the reply whole: into a pooled buffer where the client pools (what
// is read from it is copied), to be released after.
func (a queryAPI) fetch(ctx context.Context, req *http.Request) (resp *http.Response, body []byte, release func(), err error) {
	if pc, ok := a.client.(pooledClient); ok {
		var b upstream.Body
		resp, b, err = pc.DoPooled(ctx, req)
		return resp, b.Bytes(), b.Release, err
	}
	resp, body, err = a.client.Do(ctx, req)
	return resp, body, func() {}, err
}

// failedReply is client_golang's answer to a status that is not 2xx: Prometheus answers a bad
// query with 400 or 422 and says why in the envelope; any other status is the HTTP error itself.
func failedReply(code int, body []byte) (promv1.Warnings, promv1.Infos, error) {
	if code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
		return nil, nil, statusError(code, body)
	}
	r, err := readReply(body, false)
	switch {
	case err != nil:
		return nil, nil, statusError(code, body)
	case r.status == "success":
		return r.warnings, r.infos, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "inconsistent body for response code"}
	}
	if r.errorType == "" {
		r.errorType = promv1.ErrClient
	}
	if r.error == "" {
		r.error = fmt.Sprintf("client error: %d", code)
	}
	return r.warnings, r.infos, &promv1.Error{Type: r.errorType, Msg: r.error}
}

// statusError is client_golang's error for an HTTP status that is not an API answer.
func statusError(code int, body []byte) *promv1.Error {
	e := &promv1.Error{Type: promv1.ErrBadResponse, Msg: fmt.Sprintf("bad response code %d", code), Detail: string(body)}
	switch code / 100 {
	case 4:
		e.Type, e.Msg = promv1.ErrClient, fmt.Sprintf("client error: %d", code)
	case 5:
		e.Type, e.Msg = promv1.ErrServer, fmt.Sprintf("server error: %d", code)
	}
	return e
}

// reply is a query's envelope.
type reply struct {
	status    string
	errorType promv1.ErrorType
	error     string
	warnings  promv1.Warnings
	infos     promv1.Infos
	value     model.Value
}

// readReply reads a query's reply in one pass; withData decodes its data (else it is skipped).
func readReply(body []byte, withData bool) (r reply, err error) {
	// jsoniter's decoders take some broken JSON for a value (an array closed by "}" reads as
	// empty): the reply is checked whole first, as encoding/json does, by jsoniter's strict skip.
	if !jsoniter.ConfigDefault.Valid(body) {
		// encoding/json says what is wrong and where, in client_golang's words.
		if err := json.Unmarshal(body, new(json.RawMessage)); err != nil {
			return r, err
		}
		return r, errors.New("the reply is not valid JSON")
	}
	it := jsoniter.ConfigDefault.BorrowIterator(body)
	defer jsoniter.ConfigDefault.ReturnIterator(it)
	if it.WhatIsNext() != jsoniter.ObjectValue {
		return r, errors.New("the reply is not a JSON object")
	}
	// As encoding/json, a field of the wrong type is skipped and the rest still read (client_golang
	// keeps the warnings of a reply it refuses); the reply is then refused for it.
	var wrongType error
	str := func(it *jsoniter.Iterator, key string) string {
		switch it.WhatIsNext() {
		case jsoniter.StringValue:
			return readString(it)
		case jsoniter.NilValue:
		default:
			if wrongType == nil {
				wrongType = fmt.Errorf("the reply's %s is not a string", key)
			}
		}
		it.Skip()
		return ""
	}
	strs := func(it *jsoniter.Iterator, key string) []string {
		if it.WhatIsNext() != jsoniter.ArrayValue {
			str(it, key) // null, or the wrong type
			return nil
		}
		out := []string{}
		it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
			out = append(out, str(it, key))
			return it.Error == nil
		})
		return out
	}
	it.ReadObjectCB(func(it *jsoniter.Iterator, key string) bool {
		switch fieldOf(key, envelopeFields) {
		case "status":
			r.status = str(it, key)
		case "errorType":
			r.errorType = promv1.ErrorType(str(it, key))
		case "error":
			r.error = str(it, key)
		case "warnings":
			r.warnings = strs(it, key)
		case "infos":
			r.infos = strs(it, key)
		case "data":
			if !withData || it.WhatIsNext() == jsoniter.NilValue {
				it.Skip()
				break
			}
			r.value = readData(it)
		default:
			it.Skip()
		}
		return it.Error == nil
	})
	if it.Error != nil {
		return r, it.Error
	}
	if wrongType != nil {
		return r, wrongType
	}
	// Only the end may follow: reading on at the end sets io.EOF.
	if it.WhatIsNext(); it.Error != io.EOF {
		return r, errors.New("the reply has more after its JSON object")
	}
	return r, nil
}

var (
	envelopeFields = []string{"status", "errorType", "error", "warnings", "infos", "data"}
	dataFields     = []string{"resultType", "result"}
)

// fieldOf is the field a key names, "" for none: as encoding/json (and so client_golang) reads
// keys, without regard to case.
func fieldOf(key string, fields []string) string {
	for _, f := range fields {
		if key == f {
			return f
		}
	}
	for _, f := range fields {
		if strings.EqualFold(key, f) {
			return f
		}
	}
	return ""
}

// readString reads a string as encoding/json does: each byte that is not UTF-8 becomes U+FFFD
// (jsoniter keeps it, and Grafana's gRPC refuses a message that is not UTF-8).
func readString(it *jsoniter.Iterator) string { return validUTF8(it.ReadString()) }

// validUTF8 is s with each byte that is not UTF-8 replaced by U+FFFD, as encoding/json reads it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // RuneError for a byte that starts no rune
		i += n
	}
	return b.String()
}

// readData reads {"resultType": ..., "result": ...}; a result before its type is held until the
// type is known.
func readData(it *jsoniter.Iterator) model.Value {
	var typ string
	var early []byte
	var v model.Value
	it.ReadObjectCB(func(it *jsoniter.Iterator, key string) bool {
		switch fieldOf(key, dataFields) {
		case "resultType":
			typ = it.ReadString()
		case "result":
			if typ == "" {
				early = it.SkipAndReturnBytes()
				break
			}
			v = readResult(it, typ)
		default:
			it.Skip()
		}
		return it.Error == nil
	})
	if it.Error != nil || early == nil {
		if v == nil && it.Error == nil {
			it.ReportError("data", fmt.Sprintf("unexpected value type %q", typ))
		}
		return v
	}
	inner := jsoniter.ConfigDefault.BorrowIterator(early)
	defer jsoniter.ConfigDefault.ReturnIterator(inner)
	v = readResult(inner, typ)
	if inner.Error != nil {
		it.ReportError("data", inner.Error.Error())
	}
	return v
}

// readResult decodes a result of the type: a matrix by readMatrix, the others with
// client_golang's decoders (the types it accepts).
func readResult(it *jsoniter.Iterator, typ string) model.Value {
	switch typ {
	case model.ValMatrix.String():
		return readMatrix(it)
	case model.ValVector.String():
		var v model.Vector
		it.ReadVal(&v)
		return v
	case model.ValScalar.String():
		var s model.Scalar
		it.ReadVal(&s)
		return &s
	}
	it.ReportError("data", fmt.Sprintf("unexpected value type %q", typ))
	return nil
}

// readMatrix reads a matrix as client_golang's decoders do (unmarshalSampleStreamJSON and
// unmarshalSamplePairJSON, client_golang v1.25), with fewer allocations: every GPU figure and
// range query is a matrix, and client_golang's reader made one about every 16 bytes of it (the
// labels read twice, through a string and a second decoder; a string for each sample's value;
// the samples grown by doubling). Here the labels are read once, a value is parsed where it lies
// in the reply, and a series' samples are gathered in one scratch slice and kept in a slice of
// their exact size. TestQueryAPIAnswersAsClientGolang and FuzzQueryAPIAnswersAsClientGolang
// hold it to client_golang's answers. Two departures: a series that is null, which
// client_golang keeps as a nil series (its own String method, and any reader of the series,
// fails on it), and a "metric" that is a string holding JSON, which client_golang decodes, are
// refused.
func readMatrix(it *jsoniter.Iterator) model.Matrix {
	var m model.Matrix
	var scratch []model.SamplePair
	for i := 0; it.ReadArray(); i++ {
		if it.WhatIsNext() == jsoniter.NilValue {
			it.ReportError("unmarshal model.SampleStream", fmt.Sprintf("series %d is null", i))
			return m
		}
		ss := &model.SampleStream{}
		scratch = readSampleStream(it, ss, scratch[:0])
		if it.Error != nil {
			return m
		}
		m = append(m, ss)
	}
	return m
}

// readSampleStream reads one series of a matrix into ss; scratch is room for its samples,
// returned for the next series.
func readSampleStream(it *jsoniter.Iterator, ss *model.SampleStream, scratch []model.SamplePair) []model.SamplePair {
	// As client_golang's loop: an empty key ends the object for it too.
	for key := it.ReadObject(); key != ""; key = it.ReadObject() {
		switch key {
		case "metric":
			if it.WhatIsNext() != jsoniter.ObjectValue {
				it.ReportError("unmarshal model.SampleStream", "the series' metric is not an object")
				return scratch
			}
			if ss.Metric == nil {
				ss.Metric = model.Metric{}
			}
			it.ReadMapCB(func(it *jsoniter.Iterator, name string) bool {
				// A label name is read by model.LabelName's UnmarshalJSON (encoding/json), its
				// value by jsoniter.
				if name = validUTF8(name); !model.LabelName(name).IsValid() {
					it.ReportError("unmarshal model.SampleStream", fmt.Sprintf("%q is not a valid label name", name))
					return false
				}
				if it.WhatIsNext() != jsoniter.StringValue {
					it.ReportError("unmarshal model.SampleStream", fmt.Sprintf("the value of label %q is not a string", name))
					return false
				}
				ss.Metric[model.LabelName(name)] = model.LabelValue(it.ReadString())
				return true
			})
		case "values":
			scratch = scratch[:0]
			number := make([]byte, 0, 32) // not nil: jsoniter's capture takes nil for "none"
			for it.ReadArray() {
				var p model.SamplePair
				readSamplePair(it, &p, &number)
				if it.Error != nil {
					return scratch
				}
				scratch = append(scratch, p)
			}
			if len(scratch) > 0 {
				// A second "values" adds to the first, as client_golang's append does.
				ss.Values = append(slices.Clip(ss.Values), scratch...)
			}
		case "histograms":
			for it.ReadArray() {
				var h model.SampleHistogramPair
				it.ReadVal(&h) // client_golang's decoder, registered with jsoniter
				if it.Error != nil {
					return scratch
				}
				ss.Histograms = append(ss.Histograms, h)
			}
		default:
			it.ReportError("unmarshal model.SampleStream", fmt.Sprint("unexpected key:", key))
			return scratch
		}
		if it.Error != nil {
			return scratch
		}
	}
	return scratch
}

// readSamplePair reads [timestamp, "value"] as client_golang's unmarshalSamplePairJSON does; the
// value is parsed from the reply's bytes (a value with escapes is read as a string first).
func readSamplePair(it *jsoniter.Iterator, p *model.SamplePair, number *[]byte) {
	if !it.ReadArray() {
		it.ReportError("unmarshal model.SamplePair", "SamplePair must be [timestamp, value]")
		return
	}
	// The timestamp's bytes are gathered in number, reused from sample to sample: ReadNumber
	// made a string of each (a third of what reading a GPU series allocated).
	*number = it.SkipAndAppendBytes((*number)[:0])
	if it.Error != nil {
		return
	}
	if raw := *number; len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		it.ReportError("unmarshal model.SamplePair", "the timestamp is not a number")
		return
	}
	if err := p.Timestamp.UnmarshalJSON(*number); err != nil {
		it.ReportError("unmarshal model.SamplePair", err.Error())
		return
	}
	if !it.ReadArray() {
		it.ReportError("unmarshal model.SamplePair", "SamplePair missing value")
		return
	}
	var f float64
	var err error
	if it.WhatIsNext() != jsoniter.StringValue {
		f, err = strconv.ParseFloat(it.ReadString(), 64) // null reads as "", and fails here
	} else if raw := it.ReadStringAsSlice(); bytes.IndexByte(raw, '\\') < 0 {
		f, err = strconv.ParseFloat(string(raw), 64)
	} else {
		var v string
		err = jsoniter.ConfigDefault.Unmarshal(slices.Concat([]byte{'"'}, raw, []byte{'"'}), &v)
		if err == nil {
			f, err = strconv.ParseFloat(v, 64)
		}
	}
	if it.Error != nil {
		return
	}
	if err != nil {
		it.ReportError("unmarshal model.SamplePair", err.Error())
		return
	}
	p.Value = model.SampleValue(f)
	if it.ReadArray() {
		it.ReportError("unmarshal model.SamplePair", "SamplePair has too many values, must be [timestamp, value]")
	}
}
