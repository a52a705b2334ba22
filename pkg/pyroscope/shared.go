package pyroscope

import (
	"context"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"golang.org/x/sync/singleflight"
	"google.golang.org/protobuf/proto"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/recent"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// sharedQuerier is Pyroscope's querier client, except that a read asked byte for byte the same
// by several callers at the same time goes to the server once, and every caller gets its reply;
// and a reply is kept a short while for the reads that can only get the same answer.
// A dashboard's panels ask the same things at once: the request-level dashboard's trace panels,
// its flame graph of the request and its memory panels ask the same span profiles of the same
// spans; the overview's panels the same label values. Pyroscope serves four reads at once by
// default (-querier.max-concurrent) and queues the rest, so under load the copies were the queue
// every profile panel waited in.
//
// What is kept, of the reads of queries (a resource call, an editor's or a variable's, keeps
// nothing):
//   - for the refresh that asked it (models.Refresh, keptTTL): the panels of one refresh ask the
//     same reads one after another too (the request's flame graph, then its trace panel and
//     verdict, a panel below the fold), and would see a profiler's upload land between them.
//     Under the load test, where each second's requests are one refresh, a `profile` query's
//     span profiles were asked 546 times, 190 of them while in flight and 302 after; the
//     median of the traceId profile halved. The next refresh asks anew, so it sees samples
//     uploaded since.
//   - for any caller, once the read is settled (settledAfter): every profile in a range that
//     ended long enough ago has arrived, so the answer cannot change any more; the tail's
//     requests and the request-level dashboard of a request minutes old ask only those.
//
// A caller whose shared call was cancelled by the panel that started it asks again on its own
// (safe.Share); a failed call is not kept. Callers only read a shared reply (each client method
// copies what it changes); the client is one data source's, so every caller sends the same
// credentials and tenant.
type sharedQuerier struct {
	querierv1connect.QuerierServiceClient
	flights singleflight.Group
	// kept holds the replies of each refresh's reads (keptKey); settled the replies of settled
	// reads, by the read alone.
	kept    *recent.Store[keptKey, any]
	settled *recent.Store[string, any]
	now     func() time.Time // nil: time.Now
}

// keptKey is a read (its method and message) and the refresh that asked it.
type keptKey struct {
	call     string
	from, to int64
}

// settledAfter is how long after its range ends a read's answer is settled: a profile is stamped
// at the latest when it is uploaded, at most a profiler's upload period (models.MaxUploadPeriod)
// after its samples were taken, and is in Pyroscope moments after; the second period is margin
// for a slow delivery. For a span's profile (asked over the span padded by an upload period)
// that is three minutes after the span ended.
const settledAfter = 2 * models.MaxUploadPeriod

// Bounds of the replies kept. The panels of one refresh ask within seconds of each other; a
// settled reply serves the next refreshes (a dashboard refreshing every 30 s to 5 min). A
// span profile's reply is a few to tens of kilobytes (decoded, two to three times its message:
// 2.3× for a graph of 500 nodes), so a tail's 30 requests fit; a merged profile of many
// services can be a megabyte. Both stores full hold about 25 MB of heap.
const (
	keptTTL     = 10 * time.Second
	settledTTL  = 5 * time.Minute
	maxKept     = 200
	maxKeptSize = 4 << 20 // bytes of the replies' messages, in each store
)

func newSharedQuerier(c querierv1connect.QuerierServiceClient) *sharedQuerier {
	q := &sharedQuerier{QuerierServiceClient: c}
	q.forget()
	return q
}

// judgeFlameGraph: a flame graph is valid when its levels make a tree (FlameGraph.Check, as the
// client reads it), and holds data when it has samples.
func judgeFlameGraph(fg *querierv1.FlameGraph) (valid, hasData bool) {
	return FromProto(fg).Check() == nil, fg.GetTotal() > 0
}

// forget drops every kept reply, as a new data source instance starts.
func (q *sharedQuerier) forget() {
	q.kept = recent.New[keptKey, any](keptTTL, maxKept, maxKeptSize, q.clock)
	q.settled = recent.New[string, any](settledTTL, maxKept, maxKeptSize, q.clock)
}

func (q *sharedQuerier) clock() time.Time {
	if q.now != nil {
		return q.now()
	}
	return time.Now()
}

func (q *sharedQuerier) ProfileTypes(ctx context.Context, req *connect.Request[querierv1.ProfileTypesRequest]) (*connect.Response[querierv1.ProfileTypesResponse], error) {
	return shareCall(q, ctx, "ProfileTypes", req, q.QuerierServiceClient.ProfileTypes,
		func(r *querierv1.ProfileTypesResponse) (bool, bool) { return true, len(r.GetProfileTypes()) > 0 })
}

func (q *sharedQuerier) LabelNames(ctx context.Context, req *connect.Request[typesv1.LabelNamesRequest]) (*connect.Response[typesv1.LabelNamesResponse], error) {
	return shareCall(q, ctx, "LabelNames", req, q.QuerierServiceClient.LabelNames,
		func(r *typesv1.LabelNamesResponse) (bool, bool) { return true, len(r.GetNames()) > 0 })
}

func (q *sharedQuerier) LabelValues(ctx context.Context, req *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	return shareCall(q, ctx, "LabelValues", req, q.QuerierServiceClient.LabelValues,
		func(r *typesv1.LabelValuesResponse) (bool, bool) { return true, len(r.GetNames()) > 0 })
}

func (q *sharedQuerier) SelectMergeStacktraces(ctx context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	return shareCall(q, ctx, "SelectMergeStacktraces", req, q.QuerierServiceClient.SelectMergeStacktraces,
		func(r *querierv1.SelectMergeStacktracesResponse) (bool, bool) {
			return judgeFlameGraph(r.GetFlamegraph())
		})
}

func (q *sharedQuerier) SelectMergeSpanProfile(ctx context.Context, req *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (*connect.Response[querierv1.SelectMergeSpanProfileResponse], error) {
	return shareCall(q, ctx, "SelectMergeSpanProfile", req, q.QuerierServiceClient.SelectMergeSpanProfile,
		func(r *querierv1.SelectMergeSpanProfileResponse) (bool, bool) {
			return judgeFlameGraph(r.GetFlamegraph())
		})
}

func (q *sharedQuerier) SelectSeries(ctx context.Context, req *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	return shareCall(q, ctx, "SelectSeries", req, q.QuerierServiceClient.SelectSeries,
		func(r *querierv1.SelectSeriesResponse) (bool, bool) { return true, len(r.GetSeries()) > 0 })
}

func (q *sharedQuerier) SelectHeatmap(ctx context.Context, req *connect.Request[querierv1.SelectHeatmapRequest]) (*connect.Response[querierv1.SelectHeatmapResponse], error) {
	return shareCall(q, ctx, "SelectHeatmap", req, q.QuerierServiceClient.SelectHeatmap,
		func(r *querierv1.SelectHeatmapResponse) (bool, bool) {
			return badHeatmapSlot(r) == nil, len(r.GetSeries()) > 0
		})
}

// shareCall runs call once for the callers asking method with the same message at the same
// time, and answers a caller from a kept reply where there is one. The key is the message's
// deterministic encoding: the requests carry no headers of their own (the HTTP client adds the
// data source's). judge tells whether the client accepts a reply (valid: the checks its reader
// makes; a reply it refuses is not kept, so the next read asks again) and whether it holds data.
// A settled read's reply is kept for every refresh only when it holds data: an empty answer is
// what a caller waiting for late samples (a backfill, an agent that was cut off) sees until they
// come, so it is kept for its refresh only, as an unsettled read's.
func shareCall[Req, Res any, PReq interface {
	*Req
	proto.Message
	GetEnd() int64 // the range's end, Unix ms: every read asked of Pyroscope has one
}, PRes interface {
	*Res
	proto.Message
}](q *sharedQuerier, ctx context.Context, method string, req *connect.Request[Req],
	call func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error),
	judge func(*Res) (valid, hasData bool),
) (*connect.Response[Res], error) {
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(PReq(req.Msg))
	if err != nil { // not shared: the call reports what is wrong with the message
		return call(ctx, req)
	}
	read := method + "\x00" + string(body)
	var keep func(any, int)
	if refresh, ok := models.RefreshOf(ctx); ok { // a query's read (a resource call keeps nothing)
		settled := q.clock().Sub(time.UnixMilli(PReq(req.Msg).GetEnd())) > settledAfter
		if settled {
			if res, ok := q.settled.Get(read); ok {
				return res.(*connect.Response[Res]), nil
			}
		}
		key := keptKey{call: read, from: refresh.From.UnixNano(), to: refresh.To.UnixNano()}
		if res, ok := q.kept.Get(key); ok {
			return res.(*connect.Response[Res]), nil
		}
		keep = func(res any, size int) {
			valid, hasData := judge(res.(*connect.Response[Res]).Msg)
			switch {
			case !valid:
			case settled && hasData:
				q.settled.Put(read, res, size)
			default:
				q.kept.Put(key, res, size)
			}
		}
	}
	res, _, err := safe.Share(&q.flights, ctx, read, func(ctx context.Context) (*connect.Response[Res], error) {
		return call(ctx, req)
	})
	if err == nil && keep != nil {
		keep(res, proto.Size(PRes(res.Msg)))
	}
	return res, err
}
