package prometheus

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// kube-state-metrics' series the triage reads (docs/metrics/workload/pod-metrics.md): the restart
// counter dates a termination, the last-terminated reason and exit code say what it was, the pod's
// node and the container's memory limit complete the evidence. Labels: namespace, pod, container.
const (
	KubeRestarts    = "kube_pod_container_status_restarts_total"
	KubeLastReason  = "kube_pod_container_status_last_terminated_reason"
	KubeLastExit    = "kube_pod_container_status_last_terminated_exitcode"
	KubePodInfo     = "kube_pod_info"
	KubeMemoryLimit = "kube_pod_container_resource_limits"
)

// maxTerminationSteps bounds the steps of the restart series: the step dates a termination.
const maxTerminationSteps = 720

// ContainerTerminations reads the containers kube-state-metrics saw restart in [start, end] (the
// pods and namespaces of f only), each dated by the step where its restart count rose, with the
// reason and exit code of its last termination then, its pod's node and its memory limit.
func (c *Client) ContainerTerminations(ctx context.Context, f models.GPUFilter, start, end time.Time) (ans models.KubeAnswer, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Prometheus, "ContainerTerminations", attribute.String("hsi.range", end.Sub(start).String()))
	defer func() { err = upstream.EndSpan(span, c.wrap(err)) }()
	var ms []*labels.Matcher
	for _, l := range []struct {
		name   string
		values []string
	}{{"namespace", f.Namespaces}, {"pod", f.Pods}} {
		if len(l.values) == 0 {
			continue
		}
		m, err := exactValuesMatcher(l.name, l.values)
		if err != nil {
			return ans, err
		}
		ms = append(ms, m)
	}
	step := max(15*time.Second, (end.Sub(start)/maxTerminationSteps).Truncate(time.Second)+time.Second)
	ans.Step = step
	from := start.Add(-step) // the count before the range, so a restart in its first step shows
	restarts, err := c.kubeRange(ctx, aggregateBy(aggMax, metricSelector(KubeRestarts, ms), []string{"namespace", "pod", "container"}), from, end, step, &ans.Notices)
	if err != nil {
		return ans, err
	}
	if len(restarts) == 0 {
		present, err := c.hasSeries(ctx, KubeRestarts, start, end)
		if err != nil {
			return ans, err
		}
		ans.Missing = !present
		return ans, nil
	}
	// What the restarts need besides, in two labelled unions asked at once: the reasons and exit
	// codes over the range, the pods' nodes and memory limits at its end.
	var reasons, exits model.Matrix
	var nodes, limits model.Vector
	var rangeNotes, latestNotes notices.List
	limitMs := append(slices.Clone(ms), labels.MustNewMatcher(labels.MatchEqual, "resource", "memory"))
	err = safe.FailFast(ctx, "kube-state-metrics query", 2, 2, func(ctx context.Context, i int) error {
		if i == 0 {
			m, err := c.kubeRanges(ctx, []parser.Expr{
				aggregateBy(aggMax, metricSelector(KubeLastReason, ms), []string{"namespace", "pod", "container", "reason"}),
				aggregateBy(aggMax, metricSelector(KubeLastExit, ms), []string{"namespace", "pod", "container"}),
			}, from, end, step, &rangeNotes)
			if err == nil {
				reasons, exits = m[0], m[1]
			}
			return err
		}
		v, err := c.kubeLatests(ctx, []kubeLatestPart{
			{KubePodInfo, ms, []string{"namespace", "pod", "node"}},
			{KubeMemoryLimit, limitMs, []string{"namespace", "pod", "container"}},
		}, start, end, &latestNotes)
		if err == nil {
			nodes, limits = v[0], v[1]
		}
		return err
	})
	ans.Notices.Merge(rangeNotes)
	ans.Notices.Merge(latestNotes)
	if err != nil {
		return ans, err
	}
	restartsExpr, _ := checked(aggregateBy(aggMax, metricSelector(KubeRestarts, ms), []string{"namespace", "pod", "container"}))
	for _, s := range restarts {
		ns, pod, ctr := string(s.Metric["namespace"]), string(s.Metric["pod"]), string(s.Metric["container"])
		for i := 1; i < len(s.Values); i++ {
			rose := float64(s.Values[i].Value) - float64(s.Values[i-1].Value)
			at := s.Values[i].Timestamp.Time()
			if rose <= 0 || at.Before(start) {
				continue // a fall is a counter reset (the pod was recreated), not a restart
			}
			t := models.ContainerTermination{Namespace: ns, Pod: pod, Container: ctr, At: at.UTC(), Restarts: int(rose), ExitCode: -1, Query: restartsExpr}
			t.Reason = reasonAt(reasons, ns, pod, ctr, at, step)
			if v, ok := valueAt(exits, ns, pod, ctr, at, step); ok {
				t.ExitCode = int(v)
			}
			for _, n := range nodes {
				if string(n.Metric["namespace"]) == ns && string(n.Metric["pod"]) == pod {
					t.Node = string(n.Metric["node"])
				}
			}
			for _, l := range limits {
				if string(l.Metric["namespace"]) == ns && string(l.Metric["pod"]) == pod && string(l.Metric["container"]) == ctr {
					t.MemoryLimit = float64(l.Value)
				}
			}
			ans.Terminations = append(ans.Terminations, t)
		}
	}
	slices.SortFunc(ans.Terminations, func(a, b models.ContainerTermination) int {
		return cmp.Or(b.At.Compare(a.At), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Container, b.Container))
	})
	return ans, nil
}

// kubeRange runs a range query of e; Prometheus' warnings become notices.
func (c *Client) kubeRange(ctx context.Context, e parser.Expr, start, end time.Time, step time.Duration, notes *notices.List) (model.Matrix, error) {
	m, err := c.kubeRanges(ctx, []parser.Expr{e}, start, end, step, notes)
	if err != nil {
		return nil, err
	}
	return m[0], nil
}

// kubeRanges runs the range queries of es as one (a labelled union when there are several),
// each part's series apart; Prometheus' warnings become notices.
func (c *Client) kubeRanges(ctx context.Context, es []parser.Expr, start, end time.Time, step time.Duration, notes *notices.List) ([]model.Matrix, error) {
	e := es[0]
	if len(es) > 1 {
		e = labelledUnion(es)
	}
	q, err := checked(e)
	if err != nil {
		return nil, err
	}
	v, warnings, _, err := c.api.QueryRange(ctx, q, promv1.Range{Start: start, End: end, Step: step})
	for _, w := range warnings {
		notes.Warnf("Prometheus: %s", w)
	}
	if err != nil {
		return nil, err
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("query %s answered a %s, not a range of series", q, v.Type())
	}
	if len(es) == 1 {
		return []model.Matrix{m}, nil
	}
	parts, err := splitParts(m, func(s *model.SampleStream) model.Metric { return s.Metric }, len(es), q)
	if err != nil {
		return nil, err
	}
	out := make([]model.Matrix, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

// kubeLatestPart is one metric of kubeLatests: its matchers and the labels its groups keep.
type kubeLatestPart struct {
	metric   string
	ms       []*labels.Matcher
	grouping []string
}

// kubeLatests is each part's groups' latest value over [start, end], in one instant query (a
// labelled union).
func (c *Client) kubeLatests(ctx context.Context, parts []kubeLatestPart, start, end time.Time, notes *notices.List) ([]model.Vector, error) {
	rng := max(end.Sub(start), time.Minute).Truncate(time.Second)
	es := make([]parser.Expr, len(parts))
	for i, p := range parts {
		es[i] = aggregateBy(aggMax, promCall("last_over_time", rangeSelector(metricSelector(p.metric, p.ms), rng)), p.grouping)
	}
	q, err := checked(labelledUnion(es))
	if err != nil {
		return nil, err
	}
	vec, warnings, err := c.instantVector(ctx, q, end)
	for _, w := range warnings {
		notes.Warnf("Prometheus: %s", w)
	}
	if err != nil {
		return nil, err
	}
	return byPart(vec, len(parts), q)
}

// hasSeries reports whether Prometheus holds any series of metric in [start, end].
func (c *Client) hasSeries(ctx context.Context, metric string, start, end time.Time) (bool, error) {
	found, _, _, err := c.api.Series(ctx, []string{metric}, start, end, promv1.WithLimit(1))
	return len(found) > 0, err
}

// reasonAt is the reason whose last-terminated series is set at the restart's step or the next
// two (kube-state-metrics sets both from one pod status, but the scrapes may straddle a step).
func reasonAt(reasons model.Matrix, ns, pod, ctr string, at time.Time, step time.Duration) string {
	best, bestAt := "", time.Time{}
	for _, s := range reasons {
		if string(s.Metric["namespace"]) != ns || string(s.Metric["pod"]) != pod || string(s.Metric["container"]) != ctr {
			continue
		}
		for _, p := range s.Values {
			t := p.Timestamp.Time()
			if p.Value > 0 && !t.Before(at) && !t.After(at.Add(2*step)) && (bestAt.IsZero() || t.Before(bestAt)) {
				best, bestAt = string(s.Metric["reason"]), t
			}
		}
	}
	return best
}

// valueAt is a container's series value at the restart's step or the next two.
func valueAt(m model.Matrix, ns, pod, ctr string, at time.Time, step time.Duration) (float64, bool) {
	for _, s := range m {
		if string(s.Metric["namespace"]) != ns || string(s.Metric["pod"]) != pod || string(s.Metric["container"]) != ctr {
			continue
		}
		for _, p := range s.Values {
			t := p.Timestamp.Time()
			if !t.Before(at) && !t.After(at.Add(2*step)) && !math.IsNaN(float64(p.Value)) {
				return float64(p.Value), true
			}
		}
	}
	return 0, false
}
