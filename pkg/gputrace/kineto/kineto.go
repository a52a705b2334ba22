// Package kineto reads PyTorch profiler (Kineto) Chrome trace JSON, plain or gzipped, into an
// activity.Sink, streaming event by event.
package kineto

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

// ParseError says where a trace stopped being readable. What was read before it is kept.
type ParseError struct {
	Offset int64 // byte offset in the (decompressed) JSON text
	Event  int   // index in traceEvents of the event being read, -1 outside it
	Msg    string
	Err    error
}

func (e *ParseError) Error() string {
	where := fmt.Sprintf("byte %d", e.Offset)
	if e.Event >= 0 {
		where += fmt.Sprintf(", traceEvents[%d]", e.Event)
	}
	if e.Err != nil {
		return fmt.Sprintf("gputrace: %s: %s: %v", where, e.Msg, e.Err)
	}
	return fmt.Sprintf("gputrace: %s: %s", where, e.Msg)
}

func (e *ParseError) Unwrap() error { return e.Err }

// chromeEvent holds the fields of a Kineto event the analyses use; others are skipped by the
// decoder without being kept. Its fields read their JSON themselves, so that an event costs no
// allocation: a 200 MB trace holds about a million events, and what each left behind made the
// collector run over and over while the trace was read (BenchmarkChrome200MB). Each reads its
// value as encoding/json reads it into the plain type (json.Number, string, float64, RawMessage)
// and keeps a value of the wrong type as encoding/json reports it: the event is still read, and
// counted among those with wrongly typed fields.
type chromeEvent struct {
	Ph   textField `json:"ph"`
	Cat  textField `json:"cat"`
	Name textField `json:"name"`
	Ts   usField   `json:"ts"`
	Dur  usField   `json:"dur"`
	Pid  chromeID  `json:"pid"`
	// Tid is a number in recent traces, a string ("25738") in older ones and a label on
	// Kineto's own rows ("PyTorch Profiler").
	Tid  threadField `json:"tid"`
	Args argsField   `json:"args"`
}

// wrongType names the first field of the event whose value had the wrong type, "" for none.
func (ev *chromeEvent) wrongType() string {
	for _, f := range [...]struct{ name, wrong, want string }{
		{"ph", ev.Ph.wrong, "string"}, {"cat", ev.Cat.wrong, "string"}, {"name", ev.Name.wrong, "string"},
		{"ts", ev.Ts.wrong, "number"}, {"dur", ev.Dur.wrong, "number"},
	} {
		if f.wrong != "" {
			return fmt.Sprintf("%s is %s, not a %s", f.name, f.wrong, f.want)
		}
	}
	return ""
}

// reset empties ev for the next event, keeping its buffers and its reader's name table.
func (ev *chromeEvent) reset() {
	ev.Ph.reset()
	ev.Cat.reset()
	ev.Name.reset()
	ev.Ts, ev.Dur, ev.Pid, ev.Tid = usField{}, usField{}, 0, 0
	ev.Args.raw, ev.Args.set = ev.Args.raw[:0], false
}

// jsonKind names a JSON value's type by its first byte, as encoding/json's type errors do.
func jsonKind(b []byte) string {
	switch b[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

func isNull(b []byte) bool { return string(b) == "null" }

// textField is a string value, interned in its reader's names: a trace repeats a few thousand
// names (kernels, runtime calls, categories) a million times.
type textField struct {
	s     string
	names *names
	wrong string // the JSON type it had instead of a string
}

func (f *textField) reset() { f.s, f.wrong = "", "" }

func (f *textField) UnmarshalJSON(b []byte) error {
	switch {
	case isNull(b): // as encoding/json: null leaves the string as it is
	case b[0] != '"':
		f.wrong = jsonKind(b)
	default:
		f.s = f.names.of(b)
	}
	return nil
}

// names interns the strings of a trace's events, at most maxNames of them.
type names map[string]string

const maxNames = 1 << 16

// of is the string the JSON string literal q stands for.
func (n *names) of(q []byte) string {
	body := q[1 : len(q)-1]
	if s, ok := (*n)[string(body)]; ok { // no allocation: the compiler looks up without a copy
		return s
	}
	var s string
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		s = string(body)
	} else if json.Unmarshal(q, &s) != nil { // escapes, or bytes that are not UTF-8 (U+FFFD)
		return ""
	}
	if *n == nil {
		*n = names{}
	}
	if len(*n) < maxNames {
		(*n)[string(body)] = s
	}
	return s
}

// usField is a ts or dur: microseconds, as a JSON number or a string holding one (as
// encoding/json reads a json.Number), converted to nanoseconds (usToNs).
type usField struct {
	ns    int64
	err   error // set, but not a usable time (out of range, not a decimal)
	set   bool
	wrong string // the JSON type it had instead of a number
}

func (f *usField) UnmarshalJSON(b []byte) error {
	switch {
	case isNull(b):
		return nil
	case b[0] == '"':
		b = b[1 : len(b)-1]
		if !validNumber(b) {
			// As encoding/json, which stops reading the event there (it is still counted).
			return fmt.Errorf("invalid number literal %q", string(b))
		}
	case b[0] != '-' && !isDigit(b[0]):
		f.wrong = jsonKind(b)
		return nil
	}
	f.set = true
	f.ns, f.err = usToNs(b)
	return nil
}

// value is the field's nanoseconds, or why there are none.
func (f usField) value() (int64, error) {
	if !f.set {
		return 0, errors.New("missing or not a number")
	}
	return f.ns, f.err
}

// validNumber says whether b is a JSON number: what encoding/json accepts in a string it reads
// into a json.Number (its own check, isValidNumber, is not exported).
func validNumber(b []byte) bool {
	digits := func(i int) int {
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		return i
	}
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		i = digits(i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(i + 1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j := digits(i); j > i {
			i = j
		} else {
			return false
		}
	}
	return i == len(b)
}

// argsField is an event's args: its text, held in a buffer the events share, read into
// chromeArgs when the event needs them.
type argsField struct {
	raw []byte
	set bool
}

func (f *argsField) UnmarshalJSON(b []byte) error {
	// As a RawMessage, any value, null too (args of the wrong type are read as chromeArgs then
	// reads them: not at all).
	f.raw, f.set = append(f.raw[:0], b...), true
	return nil
}

type chromeArgs struct {
	Device      optNum     `json:"device"`
	Stream      optNum     `json:"stream"`
	Correlation optNum     `json:"correlation"`
	Bytes       optNum     `json:"bytes"`
	Grid        [3]float64 `json:"grid"`
	Block       [3]float64 `json:"block"`
	WaitStream  optNum     `json:"wait_on_stream"`
	WaitCorr    optNum     `json:"wait_on_cuda_event_record_corr_id"`
	// Name is a process_name metadata event's.
	Name string `json:"name"`
}

// optNum is a number that may be absent (as a *float64 field is nil), without an allocation.
type optNum struct {
	v   float64
	set bool
}

func (n *optNum) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		return nil
	}
	// As a *float64 field: any other value sets it, a number out of range or a value of the
	// wrong type to zero.
	n.set = true
	if b[0] == '-' || isDigit(b[0]) {
		if v, err := strconv.ParseFloat(string(b), 64); err == nil {
			n.v = v
		}
	}
	return nil
}

// argsReader reads args texts, one after another, through one json.Decoder: json.Unmarshal
// would allocate its state for every event.
type argsReader struct {
	src bytes.Reader
	dec *json.Decoder
}

// read decodes raw, one JSON value, into a, as json.Unmarshal would (a type error leaves its
// field at zero and is returned once the rest is read).
func (r *argsReader) read(raw []byte, a *chromeArgs) error {
	*a = chromeArgs{}
	if r.dec == nil {
		r.dec = json.NewDecoder(&r.src)
	}
	r.src.Reset(raw)
	err := r.dec.Decode(a)
	if _, typeErr := errors.AsType[*json.UnmarshalTypeError](err); err != nil && !typeErr {
		// Not a type error: the decoder is stuck (it keeps a syntax error); start a new one.
		// The outer decoder has already checked the text, so this is not expected.
		r.dec = nil
	}
	return err
}

// chromeID is a pid or tid: Kineto writes numbers, older traces strings of digits ("25738"),
// and its own rows names ("Spans"); what is not an integer reads as 0 and is no error.
type chromeID int64

func (id *chromeID) UnmarshalJSON(b []byte) error {
	// By hand: it runs twice per event, and strconv would want a string (an allocation).
	*id = 0
	if len(b) >= 2 && b[0] == '"' {
		b = b[1 : len(b)-1]
	}
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return nil
	}
	var n int64
	for _, c := range b {
		if !isDigit(c) {
			return nil
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	*id = chromeID(n)
	return nil
}

// Read reads a PyTorch profiler (Kineto) Chrome trace, plain or gzipped, into c,
// streaming: one event is held at a time. On malformed input it returns a *ParseError and c
// keeps everything read before it. Unknown categories and odd timestamps become notices.
func Read(r io.Reader, c activity.Sink) error {
	br := readBuffer(r)
	defer releaseBuffer(br)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return &ParseError{Event: -1, Msg: "bad gzip header", Err: err}
		}
		defer zr.Close()
		br = readBuffer(zr)
		defer releaseBuffer(br)
	}
	p := chromeReader{dec: json.NewDecoder(br), c: c, unknown: map[string]int64{}}
	err := p.read()
	p.finish()
	return err
}

// readBuffers are Read's 256 KB read buffers, kept between reads: a dashboard's kernel panels
// read the same few traces at every refresh, and new buffers were most of what a small trace's
// read allocated.
var readBuffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 256<<10) }}

// readBuffer is a pooled buffer reading r.
func readBuffer(r io.Reader) *bufio.Reader {
	br := readBuffers.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

// releaseBuffer puts br back, holding nothing it read.
func releaseBuffer(br *bufio.Reader) {
	br.Reset(nil)
	readBuffers.Put(br)
}

type chromeReader struct {
	dec      *json.Decoder
	c        activity.Sink
	names    names
	args     argsReader
	events   int
	unknown  map[string]int64
	typeErrs int64
	badTime  int64
	// firstBadTime names the first event skipped for its ts or dur, and what was wrong.
	firstBadTime string
	firstType    string
	sawEvents    bool
}

func (p *chromeReader) fail(event int, msg string, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return &ParseError{Offset: p.dec.InputOffset(), Event: event, Msg: msg, Err: err}
}

func (p *chromeReader) read() error {
	tok, err := p.dec.Token()
	if err != nil {
		return p.fail(-1, "not JSON", err)
	}
	switch tok {
	case json.Delim('{'):
	case json.Delim('['):
		// The bare-array form of the Chrome trace format: just the events.
		return p.events_()
	default:
		return p.fail(-1, fmt.Sprintf("expected a JSON object, found %v", tok), nil)
	}
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return p.fail(-1, "reading a top-level key", err)
		}
		key, _ := tok.(string)
		switch key {
		case "traceEvents":
			tok, err := p.dec.Token()
			if err != nil {
				return p.fail(-1, "reading traceEvents", err)
			}
			if tok != json.Delim('[') {
				return p.fail(-1, fmt.Sprintf("traceEvents is %v, not an array", tok), nil)
			}
			if err := p.events_(); err != nil {
				return err
			}
		case "traceName":
			if err := p.strings(activity.SourceTraceName, 0); err != nil {
				return err
			}
		default:
			// distributedInfo, deviceProperties, baseTimeNanoseconds, custom keys: only the
			// strings in them matter (trace IDs), and they are walked, not kept.
			if err := p.strings(activity.SourceMetadata, 0); err != nil {
				return err
			}
		}
	}
	if _, err := p.dec.Token(); err != nil {
		return p.fail(-1, "reading the end of the trace", err)
	}
	if !p.sawEvents {
		p.c.Notice("the trace has no traceEvents")
	}
	return nil
}

// strings walks one JSON value token by token, scanning its strings (keys included) for
// trace IDs. Depth is bounded by the decoder's own limits.
func (p *chromeReader) strings(src activity.Source, _ int) error {
	depth := 0
	for {
		tok, err := p.dec.Token()
		if err != nil {
			return p.fail(-1, "reading trace metadata", err)
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			p.c.ScanTraceIDs(v, src)
		}
		if depth == 0 {
			return nil
		}
	}
}

// events_ reads the elements of traceEvents, the '[' already read.
func (p *chromeReader) events_() error {
	p.sawEvents = true
	ev := chromeEvent{Ph: textField{names: &p.names}, Cat: textField{names: &p.names}, Name: textField{names: &p.names}}
	var args chromeArgs
	for p.dec.More() {
		ev.reset()
		before := p.dec.InputOffset()
		err := p.dec.Decode(&ev)
		switch {
		case err == nil:
			if wrong := ev.wrongType(); wrong != "" {
				p.typeErr(wrong)
			}
		case isSyntaxError(err), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
			p.dec.InputOffset() == before: // a read error (corrupt gzip): the decoder is stuck
			return p.fail(p.events, "malformed event", err)
		default:
			// The value was well-formed JSON but not an object: the decoder has consumed it,
			// so the next one can still be read.
			p.typeErr(err.Error())
		}
		p.event(&ev, &args)
		p.events++
	}
	if _, err := p.dec.Token(); err != nil {
		return p.fail(p.events, "reading the end of traceEvents", err)
	}
	return nil
}

func isSyntaxError(err error) bool {
	_, ok := errors.AsType[*json.SyntaxError](err)
	return ok
}

// typeErr counts an event with a field of the wrong type; the first is named in the notice.
func (p *chromeReader) typeErr(what string) {
	p.typeErrs++
	if p.firstType == "" {
		p.firstType = fmt.Sprintf("traceEvents[%d]: %s", p.events, what)
	}
}

func (p *chromeReader) event(ev *chromeEvent, args *chromeArgs) {
	ph, cat, name := ev.Ph.s, ev.Cat.s, ev.Name.s
	if ph != "X" {
		// Flows (s, f: ac2g), metadata (M), instants (i), counters (C): not intervals.
		if ph == "M" || ph == "i" || ph == "I" {
			if containsFold(cat, "annotation") {
				p.c.ScanTraceIDs(name, activity.SourceAnnotation)
			}
		}
		if ph == "M" && name == "process_name" && p.c.KeepsTimeline() && ev.Args.set && p.args.read(ev.Args.raw, args) == nil {
			p.c.NameProcess(int64(ev.Pid), args.Name)
		}
		return
	}
	kind, known := chromeCategories[cat]
	if !known {
		p.unknown[cat]++
		return
	}
	if kind == activity.KindOther {
		return
	}
	ts, err := ev.Ts.value()
	field := "ts"
	var d int64
	if err == nil {
		field = "dur"
		d, err = ev.Dur.value()
	}
	if err != nil {
		p.badTime++
		if p.firstBadTime == "" {
			p.firstBadTime = fmt.Sprintf("traceEvents[%d] %q: %s %v", p.events, name, field, err)
		}
		return
	}
	a := activity.Activity{Kind: kind, Name: name, Start: ts, End: ts + d}
	*args = chromeArgs{}
	if ev.Args.set {
		// A wrongly typed arg is left at zero; the event is still counted.
		_ = p.args.read(ev.Args.raw, args)
		if kind == activity.KindAnnotation || kind == activity.KindGPUAnnotation {
			if ids := activity.TraceIDsIn(string(ev.Args.raw)); len(ids) > 0 {
				a.TraceID = ids[0]
			}
		}
	}
	a.Device = int32(num(args.Device))
	a.Stream = int32(num(args.Stream))
	a.Correlation = int64(num(args.Correlation))
	a.Bytes = int64(num(args.Bytes))
	a.WaitStream = -1
	if args.WaitStream.set {
		a.WaitStream = int32(num(args.WaitStream))
	}
	a.WaitCorrelation = int64(num(args.WaitCorr))
	switch {
	case activity.OnHost(kind) || kind == activity.KindSync:
		// A cuda_sync record sits on the host thread that synchronised.
		a.Process, a.Thread = int64(ev.Pid), int64(ev.Tid)
	default:
		// Kineto puts GPU events on the device's row (pid) and the stream's (tid); its
		// gpu_user_annotation events say so there only.
		if !args.Device.set {
			a.Device = int32(ev.Pid)
		}
		if !args.Stream.set {
			a.Stream = int32(ev.Tid)
		}
	}
	if kind == activity.KindKernel {
		a.Grid, a.Block = dim3(args.Grid), dim3(args.Block)
	}
	p.c.Add(a)
}

// threadField is an event's tid, read where the decoder holds it, without a copy: every event
// has one.
type threadField int64

func (f *threadField) UnmarshalJSON(b []byte) error {
	*f = threadField(threadID(b))
	return nil
}

// threadID reads a tid: a whole number, or one written as a string ("25738"), is the thread's
// id; any other value (a label, "PyTorch Profiler") stands for a thread by a hash of its text,
// positive and never 0; a missing or null tid is 0, unknown.
func threadID(b []byte) int64 {
	b = bytes.TrimSpace(b)
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = bytes.TrimSpace(b[1 : len(b)-1])
	}
	if len(b) == 0 || string(b) == "null" {
		return 0
	}
	if v, ok := wholeNumber(b); ok {
		return v
	}
	h := uint64(14695981039346656037) // FNV-1a
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return int64(h&^(1<<63) | 1<<62)
}

// wholeNumber reads an optionally signed run of digits, with an optional ".0…" fraction
// ("7.0" as some writers put integers), of at most 18 digits.
func wholeNumber(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if i := bytes.IndexByte(b, '.'); i >= 0 {
		if strings.Trim(string(b[i+1:]), "0") != "" || i+1 == len(b) {
			return 0, false
		}
		b = b[:i]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (p *chromeReader) finish() {
	if len(p.unknown) > 0 {
		cats := make([]string, 0, len(p.unknown))
		for k, n := range p.unknown {
			cats = append(cats, fmt.Sprintf("%q×%d", k, n))
		}
		sort.Strings(cats)
		if len(cats) > 10 {
			cats = append(cats[:10], "...")
		}
		p.c.Notice("events of unknown categories ignored: %s", strings.Join(cats, ", "))
	}
	if p.badTime > 0 {
		p.c.Notice("%d complete events had no usable ts/dur and were skipped (first: %s)", p.badTime, p.firstBadTime)
	}
	if p.typeErrs > 0 {
		p.c.Notice("%d events had fields of the wrong type (first: %s)", p.typeErrs, p.firstType)
	}
}

// usToNs converts Kineto's microseconds ("1623143089861234.567") to nanoseconds exactly, from
// the number's decimal text: a 16-digit epoch timestamp is beyond float64's 15.9 significant
// digits, and through it each one moves by up to ±128 ns. Any digit count and an exponent are
// read; digits past the nanosecond round half away from zero. The error says what is wrong
// with the text, for the caller to name the field and event.
func usToNs(s []byte) (int64, error) {
	if len(s) == 0 {
		return 0, errors.New("missing or not a number")
	}
	i, neg := 0, false
	if s[0] == '-' {
		neg, i = true, 1
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(s) && s[i] == '.' {
		i++
		fracStart = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		fracEnd = i
		if fracEnd == fracStart {
			return 0, fmt.Errorf("%q is not a decimal number", string(s))
		}
	}
	if intEnd == intStart {
		return 0, fmt.Errorf("%q is not a decimal number", string(s))
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		if i == len(s) {
			return 0, fmt.Errorf("%q is not a decimal number", string(s))
		}
		for ; i < len(s) && isDigit(s[i]); i++ {
			if exp < 10_000 { // beyond it the value is 0 or out of range whatever the digits
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return 0, fmt.Errorf("%q is not a decimal number", string(s))
	}
	// The digits, integer then fraction, as one string D; the first p of them (µs → ns: three
	// places more than the integer part, moved by the exponent) make the integer nanoseconds.
	nInt, nFrac := intEnd-intStart, fracEnd-fracStart
	digit := func(k int) byte {
		if k < nInt {
			return s[intStart+k]
		}
		return s[fracStart+k-nInt]
	}
	p := nInt + 3 + exp
	var ns int64
	for k := 0; k < min(p, nInt+nFrac); k++ {
		ns = ns*10 + int64(digit(k)-'0')
		if ns > activity.MaxTimeNs {
			return 0, outOfRange(s)
		}
	}
	for k := nInt + nFrac; k < p && ns != 0; k++ {
		if ns *= 10; ns > activity.MaxTimeNs {
			return 0, outOfRange(s)
		}
	}
	if p >= 0 && p < nInt+nFrac && digit(p) >= '5' {
		if ns++; ns > activity.MaxTimeNs {
			return 0, outOfRange(s)
		}
	}
	if neg {
		ns = -ns
	}
	return ns, nil
}

func outOfRange(s []byte) error {
	return fmt.Errorf("%s µs is out of range (beyond ±%d ns)", s, int64(activity.MaxTimeNs))
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// dim3 is a launch geometry from its args; a value out of range reads as 0.
func dim3(v [3]float64) [3]int32 {
	var d [3]int32
	for i, f := range v {
		if finite(f) && f >= 0 && f <= math.MaxInt32 {
			d[i] = int32(f)
		}
	}
	return d
}

func num(n optNum) float64 {
	if !n.set || !finite(n.v) {
		return 0
	}
	return n.v
}

// chromeCategories maps Kineto's `cat` values, old and new spellings, to kinds. Categories
// absent here are counted in a notice; the ones mapped to KindOther are known and ignored.
var chromeCategories = map[string]activity.Kind{
	"kernel":              activity.KindKernel,
	"Kernel":              activity.KindKernel,
	"gpu_memcpy":          activity.KindMemcpy,
	"Memcpy":              activity.KindMemcpy,
	"gpu_memset":          activity.KindMemset,
	"Memset":              activity.KindMemset,
	"cuda_runtime":        activity.KindRuntime,
	"Runtime":             activity.KindRuntime,
	"cuda_driver":         activity.KindDriver,
	"cpu_op":              activity.KindCPUOp,
	"Operator":            activity.KindCPUOp,
	"user_annotation":     activity.KindAnnotation,
	"gpu_user_annotation": activity.KindGPUAnnotation,
	"cuda_sync":           activity.KindSync,
	"python_function":     activity.KindOther,
	"ac2g":                activity.KindOther, // flow arrows between a launch and its kernel
	"fwdbwd":              activity.KindOther,
	"Trace":               activity.KindOther,
	"overhead":            activity.KindOther,
	"cuda_profiler_range": activity.KindOther,
	"gpu_op":              activity.KindOther,
	"kineto":              activity.KindOther,
	"cpu_instant_event":   activity.KindOther,
	"python_function_ev":  activity.KindOther,
	"Ev":                  activity.KindOther,
}

// ReadFile reads a Chrome trace file, noting the trace IDs in its name.
func ReadFile(path string, c activity.Sink) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c.AddFileName(path)
	return Read(f, c)
}

// containsFold reports whether s contains sub, ignoring case.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
