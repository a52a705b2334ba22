package prometheus

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jsonscan"
)

// SeriesLabels is client_golang's Series (limit as WithLimit sends it; 0 for none) for a caller
// that reads a few labels of each series: each series keeps only the labels named in keep, and
// series keeping the same labels share one read-only label set (a GPU's series of each metric).
// client_golang decodes the envelope and every label of every series through encoding/json; a
// `trace` query's GPU count (countGPUs) spent a twentieth of its allocations there. Here the
// reply is scanned (jsonscan) and a label's text is made once; where the scan is not sure to read
// as client_golang does (an escape, a label name Prometheus' model refuses, a value that is not
// a string, a status other than success) the reply is read as client_golang reads it, then cut
// to keep. The request and the errors are client_golang's (TestSeriesLabelsAnswersAsClientGolang).
func (a queryAPI) SeriesLabels(ctx context.Context, matches []string, start, end time.Time, limit uint64, keep []string) ([]model.LabelSet, promv1.Warnings, promv1.Infos, error) {
	args := url.Values{}
	if limit > 0 {
		args.Set("limit", strconv.FormatUint(limit, 10))
	}
	for _, m := range matches {
		args.Add("match[]", m)
	}
	if !start.IsZero() {
		args.Set("start", formatTime(start))
	}
	if !end.IsZero() {
		args.Set("end", formatTime(end))
	}
	var sets []model.LabelSet
	var warnings promv1.Warnings
	var infos promv1.Infos
	err := a.fallback("/api/v1/series", args, func(req *http.Request) (resp *http.Response, err error) {
		resp, sets, warnings, infos, err = a.series(ctx, req, keep)
		return resp, err
	})
	return sets, warnings, infos, err
}

func (a queryAPI) series(ctx context.Context, req *http.Request, keep []string) (*http.Response, []model.LabelSet, promv1.Warnings, promv1.Infos, error) {
	resp, body, release, err := a.fetch(ctx, req)
	defer release()
	if err != nil {
		return resp, nil, nil, nil, err
	}
	if code := resp.StatusCode; code/100 != 2 {
		w, i, err := failedReply(code, body)
		return resp, nil, w, i, err
	}
	sc := seriesScan{Scanner: jsonscan.Scanner{B: body}, keep: keep}
	if sc.reply() {
		return resp, sc.sets, sc.warnings, sc.infos, nil
	}
	// client_golang's Do, decoding into []model.LabelSet.
	var sets []model.LabelSet
	result := apiResponse{Data: &sets}
	if err := json.Unmarshal(body, &result); err != nil {
		result = apiResponse{Data: &json.RawMessage{}}
		_ = json.Unmarshal(body, &result)
		return resp, nil, result.Warnings, result.Infos, &promv1.Error{Type: promv1.ErrBadResponse, Msg: err.Error()}
	}
	if result.Status == "error" {
		return resp, nil, result.Warnings, result.Infos, &promv1.Error{Type: result.ErrorType, Msg: result.Error}
	}
	return resp, cutLabels(sets, keep), result.Warnings, result.Infos, nil
}

// apiResponse is client_golang's envelope, as it decodes it.
type apiResponse struct {
	Status    string           `json:"status"`
	Data      any              `json:"data"`
	ErrorType promv1.ErrorType `json:"errorType"`
	Error     string           `json:"error"`
	Warnings  []string         `json:"warnings,omitempty"`
	Infos     []string         `json:"infos,omitempty"`
}

// cutLabels keeps of each set the labels named in keep.
func cutLabels(sets []model.LabelSet, keep []string) []model.LabelSet {
	for i, ls := range sets {
		if ls == nil {
			continue
		}
		cut := model.LabelSet{}
		for _, name := range keep {
			if v, ok := ls[model.LabelName(name)]; ok {
				cut[model.LabelName(name)] = v
			}
		}
		sets[i] = cut
	}
	return sets
}

// seriesScan reads a series reply as client_golang does where it is sure to: a success whose
// data is null or an array of objects of string labels, valid names, values without escapes.
type seriesScan struct {
	jsonscan.Scanner
	keep     []string
	sets     []model.LabelSet
	warnings promv1.Warnings
	infos    promv1.Infos

	strs   map[string]string         // label names and values, each made once
	shared map[string]model.LabelSet // the kept labels, by their text
	pairs  []byte                    // a series' kept labels as text, the key of shared
	kept   [][2]string
}

var seriesFields = []string{"status", "data", "errorType", "error", "warnings", "infos"}

func (s *seriesScan) reply() bool {
	s.strs, s.shared = map[string]string{}, map[string]model.LabelSet{}
	success, data := false, false
	ok := s.Peek() == '{' && s.Object(func(key []byte) bool {
		switch k := string(key); {
		case k == "status":
			raw, ok := s.plain()
			success = ok && string(raw) == "success"
			return success
		case k == "data":
			if data {
				return false // twice: encoding/json keeps the last, this would add both
			}
			data = true
			if s.Peek() == '[' {
				s.sets = []model.LabelSet{} // as encoding/json reads [], not null
			}
			return s.Array(s.series)
		case k == "warnings":
			var ok bool
			s.warnings, ok = s.texts()
			return ok
		case k == "infos":
			var ok bool
			s.infos, ok = s.texts()
			return ok
		case fieldOf(k, seriesFields) != "":
			return false // an error's fields, or a field in other case: client_golang's to read
		}
		return s.Skip()
	})
	return ok && success && s.End()
}

// plain reads a string without escapes.
func (s *seriesScan) plain() ([]byte, bool) {
	if s.Peek() != '"' {
		return nil, false
	}
	raw, escaped, ok := s.Str()
	return raw, ok && !escaped && utf8.Valid(raw)
}

// text is a string read once: the same name or value in every series is one string.
func (s *seriesScan) text(raw []byte) string {
	if t, ok := s.strs[string(raw)]; ok {
		return t
	}
	t := string(raw)
	s.strs[t] = t
	return t
}

// texts reads an array of strings (warnings, infos); null is none.
func (s *seriesScan) texts() ([]string, bool) {
	if s.Peek() == 'n' {
		return nil, s.Null()
	}
	out := []string{}
	return out, s.Array(func() bool {
		raw, ok := s.plain()
		out = append(out, string(raw))
		return ok
	})
}

// series reads one series' labels, keeping those named in keep.
func (s *seriesScan) series() bool {
	if s.Peek() != '{' {
		return false // null, or not an object: client_golang's to read
	}
	s.kept = s.kept[:0]
	if !s.Object(func(key []byte) bool {
		name := s.text(key)
		if !model.LabelName(name).IsValid() {
			return false
		}
		raw, ok := s.plain()
		if !ok {
			return false
		}
		for _, k := range s.keep {
			if k == name {
				s.kept = append(s.kept, [2]string{name, s.text(raw)})
			}
		}
		return true
	}) {
		return false
	}
	s.pairs = s.pairs[:0]
	for _, p := range s.kept {
		s.pairs = append(append(append(append(s.pairs, p[0]...), 0), p[1]...), 0)
	}
	ls, ok := s.shared[string(s.pairs)]
	if !ok {
		ls = make(model.LabelSet, len(s.kept))
		for _, p := range s.kept { // a name given twice: its last value, as encoding/json keeps
			ls[model.LabelName(p[0])] = model.LabelValue(p[1])
		}
		s.shared[string(s.pairs)] = ls
	}
	s.sets = append(s.sets, ls)
	return true
}
