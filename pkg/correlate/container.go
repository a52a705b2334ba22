package correlate

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// ContainerAttribute is OpenTelemetry's resource attribute naming a span's Kubernetes container.
const ContainerAttribute = "k8s.container.name"

// MaxContainerQueries bounds the pods whose CPU throttling one trace join reads.
const MaxContainerQueries = 8

// SpanContainer is the container a profiled span ran in, as its resource attributes name it.
type SpanContainer struct {
	Namespace, Pod, Container string
	// FromHost: the span named no k8s.pod.name, so its host name stands for the pod (a pod's
	// hostname is its name in Kubernetes).
	FromHost bool
}

func (c SpanContainer) String() string {
	s := c.Pod
	if c.Namespace != "" {
		s = c.Namespace + "/" + s
	}
	if c.Container != "" {
		s += "/" + c.Container
	}
	return s
}

// spanContainer names the span's container: k8s.pod.name, k8s.namespace.name and
// k8s.container.name from its resource (or its own attributes), else its host as the pod.
func spanContainer(s models.Span, j models.SpanMatch) SpanContainer {
	attr := func(name string) string { return cmp.Or(s.Resource[name], s.Attributes[name]) }
	c := SpanContainer{Namespace: attr(NamespaceAttribute), Pod: attr(PodAttribute), Container: attr(ContainerAttribute)}
	if c.Pod == "" {
		c.Pod, c.FromHost = SpanHost(s, j), true
	}
	return c
}

// ContainerSpan is what cAdvisor said of one pod's container around the trace's profiled spans
// in it.
type ContainerSpan struct {
	Container SpanContainer
	Figures   models.ContainerCPU
	Err       error
}

// containerSpans lists the containers of the trace's profiled spans (the only spans whose
// off-CPU time the breakdown splits), each once, with the window covering its spans; at most
// MaxContainerQueries, the ones with the most span time first.
func containerSpans(t *models.Trace, j models.SpanMatch) (out []ContainerSpan, queries []models.ContainerQuery, more int) {
	type acc struct {
		c   SpanContainer
		q   models.ContainerQuery
		sum int64
	}
	byKey := map[SpanContainer]*acc{}
	var order []SpanContainer
	for _, s := range t.Spans {
		if id, _ := s.ProfileID(); id == "" {
			continue
		}
		c := spanContainer(s, j)
		if c.Pod == "" {
			continue
		}
		a := byKey[c]
		if a == nil {
			a = &acc{c: c, q: models.ContainerQuery{Namespace: c.Namespace, Pod: c.Pod, Container: c.Container, Service: s.Service, Start: s.Start, End: s.Start.Add(s.Duration)}}
			byKey[c] = a
			order = append(order, c)
		}
		if s.Start.Before(a.q.Start) {
			a.q.Start = s.Start
		}
		if end := s.Start.Add(s.Duration); end.After(a.q.End) {
			a.q.End = end
		}
		a.sum += int64(s.Duration)
	}
	slices.SortStableFunc(order, func(x, y SpanContainer) int { return cmp.Compare(byKey[y].sum, byKey[x].sum) })
	if len(order) > MaxContainerQueries {
		more = len(order) - MaxContainerQueries
		order = order[:MaxContainerQueries]
	}
	for _, c := range order {
		out = append(out, ContainerSpan{Container: c})
		queries = append(queries, byKey[c].q)
	}
	return out, queries, more
}

// askContainers reads each container's CPU figures in parallel; each keeps its own error.
func askContainers(ctx context.Context, src Containers, spans []ContainerSpan, queries []models.ContainerQuery) {
	fanOut(len(spans), func(i int) {
		spans[i].Figures, spans[i].Err = src.ContainerCPU(ctx, queries[i])
	})
}

// attachContainers gives every row of a container read its figures (cAdvisor answered with
// series), so the breakdown can split the span's off-CPU time.
func attachContainers(rows []SpanRow, spans []ContainerSpan, j models.SpanMatch) {
	for i := range rows {
		c := spanContainer(*rows[i].Span, j)
		for k := range spans {
			if spans[k].Err == nil && spans[k].Container == c && hasFigures(spans[k].Figures) {
				rows[i].Container = &spans[k].Figures
				break
			}
		}
	}
}

func hasFigures(f models.ContainerCPU) bool { return len(f.Missing) < 5 }

// containerNotices say which containers' throttling could not be read, and why.
func containerNotices(spans []ContainerSpan, more int) notices.List {
	var out notices.List
	var none []string
	for _, s := range spans {
		switch {
		case s.Err != nil:
			out.Warnf("No CPU throttling figures for pod %s: %v", s.Container, s.Err)
		case !hasFigures(s.Figures):
			none = append(none, s.Container.String())
		case len(s.Figures.Missing) > 0:
			out.Infof("cAdvisor's %s are missing for pod %s: its throttling figures are incomplete.", strings.Join(s.Figures.Missing, ", "), s.Container)
		}
	}
	if len(none) > 0 {
		out.Infof("Prometheus holds no cAdvisor CPU series (%s, %s) for %s: whether a CPU limit throttled the spans there is not known (is the kubelet's /metrics/cadvisor scraped? do spans carry k8s.pod.name?).",
			models.CadvisorThrottledSeconds, models.CadvisorUsageSeconds, strings.Join(none, ", "))
	}
	if more > 0 {
		out.Infof("CPU throttling was read for the %d pods with the most span time; %d more were left out.", MaxContainerQueries, more)
	}
	return out
}
