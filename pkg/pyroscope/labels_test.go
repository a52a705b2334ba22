package pyroscope

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// fakeQuerier records the label and series requests it gets and answers canned replies.
type fakeQuerier struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	names  []string
	values []string
	series []*typesv1.Series
	err    error

	mu       sync.Mutex
	names1   *typesv1.LabelNamesRequest
	values1  *typesv1.LabelValuesRequest
	series1  *querierv1.SelectSeriesRequest
	requests int
}

func (f *fakeQuerier) LabelNames(_ context.Context, r *connect.Request[typesv1.LabelNamesRequest]) (*connect.Response[typesv1.LabelNamesResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names1, f.requests = r.Msg, f.requests+1
	if f.err != nil {
		return nil, f.err
	}
	return connect.NewResponse(&typesv1.LabelNamesResponse{Names: f.names}), nil
}

func (f *fakeQuerier) LabelValues(_ context.Context, r *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.values1, f.requests = r.Msg, f.requests+1
	if f.err != nil {
		return nil, f.err
	}
	return connect.NewResponse(&typesv1.LabelValuesResponse{Names: f.values}), nil
}

func (f *fakeQuerier) SelectSeries(_ context.Context, r *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.series1, f.requests = r.Msg, f.requests+1
	if f.err != nil {
		return nil, f.err
	}
	return connect.NewResponse(&querierv1.SelectSeriesResponse{Series: f.series}), nil
}

func newFakeClient(t *testing.T, f *fakeQuerier) (*Client, string) {
	t.Helper()
	path, h := querierv1connect.NewQuerierServiceHandler(f)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return New(models.Upstream{Name: models.Pyroscope, URL: s.URL}, s.Client()), s.URL
}

var (
	from = time.UnixMilli(1_700_000_000_000)
	to   = from.Add(time.Hour)
)

func TestLabelNamesHidesPyroscopesInternalLabels(t *testing.T) {
	f := &fakeQuerier{names: []string{"__name__", "service_name", "__profile_type__", "span_name", "__period_type__", "host_name", "service_name"}}
	c, _ := newFakeClient(t, f)
	names, err := c.LabelNames(context.Background(), `{service_name="ai-detector"}`, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"host_name", "service_name", "span_name"}; !slices.Equal(names, want) {
		t.Errorf("names = %v, want %v (sorted, unique, no __...__)", names, want)
	}
	if !slices.Equal(f.names1.Matchers, []string{`{service_name="ai-detector"}`}) || f.names1.Start != from.UnixMilli() || f.names1.End != to.UnixMilli() {
		t.Errorf("request = %+v", f.names1)
	}
}

func TestLabelRequestsSendNoMatcherForEverySeries(t *testing.T) {
	f := &fakeQuerier{values: []string{"nemotron-backend", "ai-detector"}}
	c, _ := newFakeClient(t, f)
	for _, sel := range []string{"", "{}", "  {} "} {
		values, err := c.LabelValues(context.Background(), "service_name", sel, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.values1.Matchers) != 0 || f.values1.Name != "service_name" {
			t.Errorf("selector %q sent matchers %v name %q; want none (PromQL rejects {})", sel, f.values1.Matchers, f.values1.Name)
		}
		if !slices.Equal(values, []string{"ai-detector", "nemotron-backend"}) {
			t.Errorf("values = %v, want them sorted", values)
		}
	}
	if _, err := c.LabelNames(context.Background(), "{}", from, to); err != nil || len(f.names1.Matchers) != 0 {
		t.Errorf("label names with {}: err %v matchers %v", err, f.names1.Matchers)
	}
}

func TestLabelCallsAnswerEmptyListsNotNil(t *testing.T) {
	c, _ := newFakeClient(t, &fakeQuerier{})
	names, err := c.LabelNames(context.Background(), "{}", from, to)
	if err != nil || names == nil || len(names) != 0 {
		t.Errorf("names = %#v, err %v", names, err)
	}
	values, err := c.LabelValues(context.Background(), "span_name", "{}", from, to)
	if err != nil || values == nil || len(values) != 0 {
		t.Errorf("values = %#v, err %v", values, err)
	}
}

func TestLabelAndSeriesErrorsNamePyroscopeAndItsURL(t *testing.T) {
	f := &fakeQuerier{err: connect.NewError(connect.CodeInvalidArgument, errorString("parse error at char 5"))}
	c, url := newFakeClient(t, f)
	_, err1 := c.LabelNames(context.Background(), "{}", from, to)
	_, err2 := c.LabelValues(context.Background(), "service_name", "{}", from, to)
	_, err3 := c.Series(context.Background(), models.SeriesQuery{ProfileTypeID: models.DefaultProfileTypeID, Step: 15 * time.Second})
	for _, err := range []error{err1, err2, err3} {
		if err == nil || !strings.Contains(err.Error(), "Pyroscope ("+url+")") || !strings.Contains(err.Error(), "parse error at char 5") {
			t.Errorf("error = %v", err)
		}
	}
}

func TestIsInternalLabel(t *testing.T) {
	for name, want := range map[string]bool{"__name__": true, "__profile_type__": true, "__x": true, "service_name": false, "_private": false, "": false} {
		if got := IsInternalLabel(name); got != want {
			t.Errorf("IsInternalLabel(%q) = %v", name, got)
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
