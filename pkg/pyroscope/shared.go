package pyroscope

import (
	"context"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"golang.org/x/sync/singleflight"
	"google.golang.org/protobuf/proto"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// sharedQuerier is Pyroscope's querier client, except that a read asked byte for byte the same
// by several callers at the same time goes to the server once, and every caller gets its reply.
// A dashboard's panels ask the same things at once: the request-level dashboard's trace panels,
// its flame graph of the request and its memory panels ask the same span profiles of the same
// spans; the overview's panels the same label values. Pyroscope spends a tenth of a second of
// CPU on each of these (its query path: frontend, scheduler, querier, ingester and store
// gateway), so under load the copies were the queue every profile panel waited in.
//
// Only calls in flight are shared: nothing is kept after the reply, so a later refresh sees
// samples uploaded since. A caller whose shared call was cancelled by the panel that started it
// asks again on its own (safe.Share). Callers only read a shared reply (each client method
// copies what it changes); the client is one data source's, so every caller sends the same
// credentials and tenant.
type sharedQuerier struct {
	querierv1connect.QuerierServiceClient
	flights singleflight.Group
}

func (q *sharedQuerier) ProfileTypes(ctx context.Context, req *connect.Request[querierv1.ProfileTypesRequest]) (*connect.Response[querierv1.ProfileTypesResponse], error) {
	return shareCall(q, ctx, "ProfileTypes", req, q.QuerierServiceClient.ProfileTypes)
}

func (q *sharedQuerier) LabelNames(ctx context.Context, req *connect.Request[typesv1.LabelNamesRequest]) (*connect.Response[typesv1.LabelNamesResponse], error) {
	return shareCall(q, ctx, "LabelNames", req, q.QuerierServiceClient.LabelNames)
}

func (q *sharedQuerier) LabelValues(ctx context.Context, req *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	return shareCall(q, ctx, "LabelValues", req, q.QuerierServiceClient.LabelValues)
}

func (q *sharedQuerier) SelectMergeStacktraces(ctx context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	return shareCall(q, ctx, "SelectMergeStacktraces", req, q.QuerierServiceClient.SelectMergeStacktraces)
}

func (q *sharedQuerier) SelectMergeSpanProfile(ctx context.Context, req *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (*connect.Response[querierv1.SelectMergeSpanProfileResponse], error) {
	return shareCall(q, ctx, "SelectMergeSpanProfile", req, q.QuerierServiceClient.SelectMergeSpanProfile)
}

func (q *sharedQuerier) SelectSeries(ctx context.Context, req *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	return shareCall(q, ctx, "SelectSeries", req, q.QuerierServiceClient.SelectSeries)
}

func (q *sharedQuerier) SelectHeatmap(ctx context.Context, req *connect.Request[querierv1.SelectHeatmapRequest]) (*connect.Response[querierv1.SelectHeatmapResponse], error) {
	return shareCall(q, ctx, "SelectHeatmap", req, q.QuerierServiceClient.SelectHeatmap)
}

// shareCall runs call once for the callers asking method with the same message at the same
// time. The key is the message's deterministic encoding: the requests carry no headers of
// their own (the HTTP client adds the data source's).
func shareCall[Req, Res any, PReq interface {
	*Req
	proto.Message
}](q *sharedQuerier, ctx context.Context, method string, req *connect.Request[Req],
	call func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error),
) (*connect.Response[Res], error) {
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(PReq(req.Msg))
	if err != nil { // not shared: the call reports what is wrong with the message
		return call(ctx, req)
	}
	res, _, err := safe.Share(&q.flights, ctx, method+"\x00"+string(body), func(ctx context.Context) (*connect.Response[Res], error) {
		return call(ctx, req)
	})
	return res, err
}
