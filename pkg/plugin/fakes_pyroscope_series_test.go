package plugin

import (
	"context"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
)

// seriesPyroscope extends fakePyroscope (profile types, flame graphs) with SelectSeries (no
// series), LabelNames and LabelValues, for the tests that check the plugin with its real Pyroscope client
// (boundaries_test.go); the other unit tests use memProfiles (fakes_memory_test.go).
type seriesPyroscope struct {
	*fakePyroscope

	labelNames  []string
	labelValues map[string][]string // by label name
}

func (f *seriesPyroscope) SelectSeries(context.Context, *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	return connect.NewResponse(&querierv1.SelectSeriesResponse{}), nil
}

func (f *seriesPyroscope) LabelNames(context.Context, *connect.Request[typesv1.LabelNamesRequest]) (*connect.Response[typesv1.LabelNamesResponse], error) {
	return connect.NewResponse(&typesv1.LabelNamesResponse{Names: f.labelNames}), nil
}

func (f *seriesPyroscope) LabelValues(_ context.Context, req *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	return connect.NewResponse(&typesv1.LabelValuesResponse{Names: f.labelValues[req.Msg.Name]}), nil
}
