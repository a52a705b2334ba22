package plugin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/proto"
)

// seriesPyroscope extends fakePyroscope (profile types, flame graphs) with SelectSeries,
// LabelNames and LabelValues, recording each request so tests can check what the plugin asked.
type seriesPyroscope struct {
	*fakePyroscope

	series      []*typesv1.Series
	seriesErr   error // SelectSeries answers this error
	profileErr  error // SelectMergeStacktraces answers this error
	labelNames  []string
	labelValues map[string][]string // by label name
	labelsErr   error
	// profileTypes, when set, answer ProfileTypes in full (fakePyroscope's have IDs only).
	profileTypes []*typesv1.ProfileType

	mu          sync.Mutex
	seriesReqs  []*querierv1.SelectSeriesRequest
	namesReqs   []*typesv1.LabelNamesRequest
	valuesReqs  []*typesv1.LabelValuesRequest
	profileReqs int
}

func newSeriesPyroscope(t *testing.T, f *seriesPyroscope) *httptest.Server {
	t.Helper()
	if f.fakePyroscope == nil {
		f.fakePyroscope = &fakePyroscope{}
	}
	path, h := querierv1connect.NewQuerierServiceHandler(f)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	return serve(t, mux, nil)
}

func (f *seriesPyroscope) SelectSeries(_ context.Context, req *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	f.mu.Lock()
	f.seriesReqs = append(f.seriesReqs, proto.Clone(req.Msg).(*querierv1.SelectSeriesRequest))
	f.mu.Unlock()
	if f.seriesErr != nil {
		return nil, f.seriesErr
	}
	return connect.NewResponse(&querierv1.SelectSeriesResponse{Series: f.series}), nil
}

func (f *seriesPyroscope) SelectMergeStacktraces(ctx context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	f.mu.Lock()
	f.profileReqs++
	f.mu.Unlock()
	if f.profileErr != nil {
		return nil, f.profileErr
	}
	return f.fakePyroscope.SelectMergeStacktraces(ctx, req)
}

func (f *seriesPyroscope) ProfileTypes(ctx context.Context, req *connect.Request[querierv1.ProfileTypesRequest]) (*connect.Response[querierv1.ProfileTypesResponse], error) {
	if f.profileTypes == nil {
		return f.fakePyroscope.ProfileTypes(ctx, req)
	}
	return connect.NewResponse(&querierv1.ProfileTypesResponse{ProfileTypes: f.profileTypes}), nil
}

func (f *seriesPyroscope) LabelNames(_ context.Context, req *connect.Request[typesv1.LabelNamesRequest]) (*connect.Response[typesv1.LabelNamesResponse], error) {
	f.mu.Lock()
	f.namesReqs = append(f.namesReqs, proto.Clone(req.Msg).(*typesv1.LabelNamesRequest))
	f.mu.Unlock()
	if f.labelsErr != nil {
		return nil, f.labelsErr
	}
	return connect.NewResponse(&typesv1.LabelNamesResponse{Names: f.labelNames}), nil
}

func (f *seriesPyroscope) LabelValues(_ context.Context, req *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	f.mu.Lock()
	f.valuesReqs = append(f.valuesReqs, proto.Clone(req.Msg).(*typesv1.LabelValuesRequest))
	f.mu.Unlock()
	if f.labelsErr != nil {
		return nil, f.labelsErr
	}
	return connect.NewResponse(&typesv1.LabelValuesResponse{Names: f.labelValues[req.Msg.Name]}), nil
}

func (f *seriesPyroscope) lastSeriesRequest(t *testing.T) *querierv1.SelectSeriesRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seriesReqs) == 0 {
		t.Fatal("the plugin never called SelectSeries")
	}
	return f.seriesReqs[len(f.seriesReqs)-1]
}

// pyroSeries builds one Pyroscope series with labels given as name, value pairs.
func pyroSeries(points []*typesv1.Point, labels ...string) *typesv1.Series {
	s := &typesv1.Series{Points: points}
	for i := 0; i+1 < len(labels); i += 2 {
		s.Labels = append(s.Labels, &typesv1.LabelPair{Name: labels[i], Value: labels[i+1]})
	}
	return s
}
