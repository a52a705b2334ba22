package pyroscopetest

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
)

// HeatmapBuckets is how many value buckets the fake's heatmap has: linear from 0 to the largest
// value of the answer (the real server's bucketing is its own; what the plugin relies on is the
// slot format: YMin per bucket, counts, the right-edge timestamp).
const HeatmapBuckets = 4

// SelectSeries sums the samples of each step (sum aggregation, the default), one series per
// group_by label set. A point stands for every step holding a selected sample; samples outside
// the call site add nothing to it (1.12 was measured answering such a point with no value).
// The newer server adds the exemplars asked for (one per individual profile, or per span) and
// the annotations of the step's profiles; 1.12 adds neither.
func (s *Server) SelectSeries(_ context.Context, req *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	m := req.Msg
	s.mu.Lock()
	s.seriesCalls = append(s.seriesCalls, m)
	s.mu.Unlock()
	stepMs, err := stepMillis(m.Step)
	if err != nil {
		return nil, err
	}
	samples, err := s.selected(m.ProfileTypeID, m.LabelSelector, m.Start, m.End)
	if err != nil {
		return nil, err
	}
	callSite := callSiteOf(m.StackTraceSelector) // honoured by 1.12 too
	frameFilter := s.frameFilterOf(m.StackTraceSelector, m.Start)
	exemplarsBy := func(Sample) string { return "" }
	if s.Version != V112 {
		switch m.ExemplarType {
		case typesv1.ExemplarType_EXEMPLAR_TYPE_INDIVIDUAL:
			exemplarsBy = func(smp Sample) string { return smp.ProfileID }
		case typesv1.ExemplarType_EXEMPLAR_TYPE_SPAN:
			exemplarsBy = func(smp Sample) string { return smp.SpanID }
		}
	}

	type point struct {
		value       float64
		items       map[string]*item
		annotations []*typesv1.ProfileAnnotation
	}
	type series struct {
		labels []*typesv1.LabelPair
		points map[int64]*point
		total  float64
	}
	bySet := map[string]*series{}
	for _, smp := range samples {
		if !frameFilter.keeps(smp.Stack) {
			continue
		}
		labels, key := groupLabels(smp.Series, m.GroupBy)
		sr := bySet[key]
		if sr == nil {
			sr = &series{labels: labels, points: map[int64]*point{}}
			bySet[key] = sr
		}
		ts := m.Start + (smp.Time.UnixMilli()-m.Start)/stepMs*stepMs
		p := sr.points[ts]
		if p == nil {
			p = &point{items: map[string]*item{}}
			sr.points[ts] = p
		}
		if s.Version != V112 {
			for _, a := range smp.Annotations {
				if !slices.ContainsFunc(p.annotations, func(b *typesv1.ProfileAnnotation) bool { return b.Key == a.Key && b.Value == a.Value }) {
					p.annotations = append(p.annotations, &typesv1.ProfileAnnotation{Key: a.Key, Value: a.Value})
				}
			}
		}
		if !underCallSite(smp.Stack, callSite) {
			continue
		}
		p.value += float64(smp.Value)
		sr.total += float64(smp.Value)
		if id := exemplarsBy(smp); id != "" {
			addItem(p.items, id, smp, m.GroupBy)
		}
	}
	all := make([]*series, 0, len(bySet))
	for _, sr := range bySet {
		all = append(all, sr)
	}
	slices.SortFunc(all, func(a, b *series) int { return strings.Compare(labelsKey(a.labels), labelsKey(b.labels)) })
	if m.Limit != nil && *m.Limit > 0 && int64(len(all)) > *m.Limit {
		slices.SortStableFunc(all, func(a, b *series) int { return cmp.Compare(b.total, a.total) })
		all = all[:*m.Limit]
	}
	res := &querierv1.SelectSeriesResponse{}
	for _, sr := range all {
		out := &typesv1.Series{Labels: sr.labels}
		for _, ts := range slices.Sorted(maps.Keys(sr.points)) {
			p := sr.points[ts]
			pt := &typesv1.Point{Timestamp: ts, Value: p.value, Annotations: p.annotations}
			for _, it := range sortedItems(p.items) {
				pt.Exemplars = append(pt.Exemplars, it.exemplar())
			}
			out.Points = append(out.Points, pt)
		}
		res.Series = append(res.Series, out)
	}
	return connect.NewResponse(res), nil
}

// SelectHeatmap counts the individual profiles (or spans) of each value bucket in each time
// slot, one series per group_by label set; a slot's timestamp is its right edge, the slot covering
// (timestamp-step, timestamp]. With exemplars asked, each non-empty cell carries its largest
// profile (or span). Only the newer server has the call (1.12's router answers 404, see Serve).
func (s *Server) SelectHeatmap(_ context.Context, req *connect.Request[querierv1.SelectHeatmapRequest]) (*connect.Response[querierv1.SelectHeatmapResponse], error) {
	if s.Version == V112 {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("querier.v1.QuerierService.SelectHeatmap is not implemented"))
	}
	m := req.Msg
	if s.dualModeV1(m.Start) {
		// The v1 part of the range goes to the legacy frontend, whose stub refuses the call
		// (grafana/pyroscope pkg/frontend/frontend_stubs.go: errNotAvailableInV1Frontend).
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("This endpoint is not available in v1 frontend"))
	}
	s.mu.Lock()
	s.heatmapCalls = append(s.heatmapCalls, m)
	s.mu.Unlock()
	stepMs, err := stepMillis(m.Step)
	if err != nil {
		return nil, err
	}
	itemOf := func(smp Sample) string { return smp.ProfileID }
	exemplarType := typesv1.ExemplarType_EXEMPLAR_TYPE_INDIVIDUAL
	if m.QueryType == querierv1.HeatmapQueryType_HEATMAP_QUERY_TYPE_SPAN {
		itemOf, exemplarType = func(smp Sample) string { return smp.SpanID }, typesv1.ExemplarType_EXEMPLAR_TYPE_SPAN
	}
	withExemplars := false
	switch m.ExemplarType {
	case typesv1.ExemplarType_EXEMPLAR_TYPE_UNSPECIFIED, typesv1.ExemplarType_EXEMPLAR_TYPE_NONE:
	case exemplarType:
		withExemplars = true
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("exemplar_type must match query_type or be NONE"))
	}
	samples, err := s.selected(m.ProfileTypeID, m.LabelSelector, m.Start, m.End)
	if err != nil {
		return nil, err
	}
	type series struct {
		labels []*typesv1.LabelPair
		items  map[string]*item
		total  int64
	}
	bySet := map[string]*series{}
	for _, smp := range samples {
		id := itemOf(smp)
		if id == "" {
			continue // a sample of no span is in no span heatmap
		}
		labels, key := groupLabels(smp.Series, m.GroupBy)
		sr := bySet[key]
		if sr == nil {
			sr = &series{labels: labels, items: map[string]*item{}}
			bySet[key] = sr
		}
		addItem(sr.items, id, smp, m.GroupBy)
		sr.total += smp.Value
	}
	all := make([]*series, 0, len(bySet))
	var largest int64
	for _, sr := range bySet {
		all = append(all, sr)
		for _, it := range sr.items {
			largest = max(largest, it.value)
		}
	}
	slices.SortFunc(all, func(a, b *series) int { return strings.Compare(labelsKey(a.labels), labelsKey(b.labels)) })
	if m.Limit != nil && *m.Limit > 0 && int64(len(all)) > *m.Limit {
		slices.SortStableFunc(all, func(a, b *series) int { return cmp.Compare(b.total, a.total) })
		all = all[:*m.Limit]
	}
	width := max(1, (largest+HeatmapBuckets-1)/HeatmapBuckets)
	yMin := make([]float64, HeatmapBuckets)
	for i := range yMin {
		yMin[i] = float64(int64(i) * width)
	}
	res := &querierv1.SelectHeatmapResponse{}
	for _, sr := range all {
		type slot struct {
			counts []int32
			best   []*item // the largest item of each bucket
		}
		slots := map[int64]*slot{}
		for _, it := range sortedItems(sr.items) {
			// The right edge of the slot holding it: (edge-step, edge].
			edge := m.Start + int64(math.Ceil(float64(it.time-m.Start)/float64(stepMs)))*stepMs
			sl := slots[edge]
			if sl == nil {
				sl = &slot{counts: make([]int32, HeatmapBuckets), best: make([]*item, HeatmapBuckets)}
				slots[edge] = sl
			}
			b := min(int(it.value/width), HeatmapBuckets-1)
			sl.counts[b]++
			if sl.best[b] == nil || it.value > sl.best[b].value {
				sl.best[b] = it
			}
		}
		out := &typesv1.HeatmapSeries{Labels: sr.labels}
		for _, edge := range slices.Sorted(maps.Keys(slots)) {
			sl := slots[edge]
			hs := &typesv1.HeatmapSlot{Timestamp: edge, YMin: slices.Clone(yMin), Counts: sl.counts}
			if withExemplars {
				for _, it := range sl.best {
					if it != nil {
						hs.Exemplars = append(hs.Exemplars, it.exemplar())
					}
				}
			}
			out.Slots = append(out.Slots, hs)
		}
		res.Series = append(res.Series, out)
	}
	return connect.NewResponse(res), nil
}

// item is one individual profile (or span): its samples summed.
type item struct {
	profileID, spanID, traceID string
	time, value                int64
	labels                     []*typesv1.LabelPair
}

func (it *item) exemplar() *typesv1.Exemplar {
	return &typesv1.Exemplar{Timestamp: it.time, ProfileId: it.profileID, SpanId: it.spanID, TraceId: it.traceID, Value: it.value, Labels: it.labels}
}

// addItem adds smp to the item id of items. An exemplar's labels are the sample's series labels
// beyond the grouped ones (types.proto: a label the series has is not repeated).
func addItem(items map[string]*item, id string, smp Sample, groupBy []string) {
	it := items[id]
	if it == nil {
		it = &item{profileID: smp.ProfileID, spanID: smp.SpanID, traceID: smp.TraceID, time: smp.Time.UnixMilli()}
		for _, name := range slices.Sorted(maps.Keys(smp.Series)) {
			if !slices.Contains(groupBy, name) {
				it.labels = append(it.labels, &typesv1.LabelPair{Name: name, Value: smp.Series[name]})
			}
		}
		items[id] = it
	}
	it.value += smp.Value
	it.time = min(it.time, smp.Time.UnixMilli())
}

// sortedItems lists items largest first (ties by ID), as exemplars are listed.
func sortedItems(items map[string]*item) []*item {
	out := make([]*item, 0, len(items))
	for _, it := range items {
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b *item) int {
		return cmp.Or(cmp.Compare(b.value, a.value), strings.Compare(a.profileID+a.spanID, b.profileID+b.spanID))
	})
	return out
}

// groupLabels are the group_by labels the series has, in group_by order, and a key for them.
func groupLabels(series map[string]string, groupBy []string) ([]*typesv1.LabelPair, string) {
	var labels []*typesv1.LabelPair
	for _, name := range groupBy {
		if v, ok := series[name]; ok {
			labels = append(labels, &typesv1.LabelPair{Name: name, Value: v})
		}
	}
	return labels, labelsKey(labels)
}

func labelsKey(labels []*typesv1.LabelPair) string {
	var b strings.Builder
	for _, l := range labels {
		b.WriteString(l.Name + "=" + l.Value + "\x00")
	}
	return b.String()
}

// stepMillis reads a step in seconds; Pyroscope refuses one under a millisecond.
func stepMillis(step float64) (int64, error) {
	if !(step >= 0.001) || math.IsInf(step, 0) {
		return 0, connect.NewError(connect.CodeInvalidArgument, errors.New("step must be >= 1ms and finite"))
	}
	return int64(step * 1000), nil
}
