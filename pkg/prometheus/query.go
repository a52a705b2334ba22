package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
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
func (a queryAPI) ask(ctx context.Context, endpoint string, args url.Values) (model.Value, promv1.Warnings, promv1.Infos, error) {
	u := a.client.URL(endpoint, nil)
	form := args.Encode()
	req, err := http.NewRequest(http.MethodPost, u.String(), strings.NewReader(form))
	if err != nil {
		return nil, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header["Idempotency-Key"] = nil // retried on a network error, as a GET would be
	resp, v, warnings, infos, err := a.do(ctx, req)
	if resp != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented) {
		u.RawQuery = form
		if req, err = http.NewRequest(http.MethodGet, u.String(), nil); err != nil {
			return nil, warnings, infos, err
		}
		_, v, warnings, infos, err = a.do(ctx, req)
	}
	return v, warnings, infos, err
}

// do is client_golang's Do for a query: its errors, from the status and the reply's envelope.
func (a queryAPI) do(ctx context.Context, req *http.Request) (*http.Response, model.Value, promv1.Warnings, promv1.Infos, error) {
	resp, body, err := a.client.Do(ctx, req)
	if err != nil {
		return resp, nil, nil, nil, err
	}
	code := resp.StatusCode
	if code/100 != 2 {
		// Prometheus answers a bad query with 400 or 422 and says why in the envelope; any
		// other status is the HTTP error itself.
		if code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
			return resp, nil, nil, nil, statusError(code, body)
		}
		r, err := readReply(body, false)
		switch {
		case err != nil:
			return resp, nil, nil, nil, statusError(code, body)
		case r.status == "success":
			return resp, nil, r.warnings, r.infos, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "inconsistent body for response code"}
		}
		if r.errorType == "" {
			r.errorType = promv1.ErrClient
		}
		if r.error == "" {
			r.error = fmt.Sprintf("client error: %d", code)
		}
		return resp, nil, r.warnings, r.infos, &promv1.Error{Type: r.errorType, Msg: r.error}
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
func readString(it *jsoniter.Iterator) string {
	s := it.ReadString()
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

// readResult decodes a result of the type with client_golang's decoders (the types it accepts).
func readResult(it *jsoniter.Iterator, typ string) model.Value {
	switch typ {
	case model.ValMatrix.String():
		var m model.Matrix
		it.ReadVal(&m)
		return m
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
