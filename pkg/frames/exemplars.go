package frames

import (
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// ExemplarKind is what an exemplar's ID names: an individual profile, or a span (span heatmaps).
type ExemplarKind int

const (
	ProfileExemplars ExemplarKind = iota
	SpanExemplars
)

// ExemplarLinks is where an exemplar's ID links: this data source (UID and name from the
// request's plugin context; no UID, no link) and the query the exemplars answer.
type ExemplarLinks struct {
	DatasourceUID, DatasourceName string
	LabelSelector, ProfileTypeID  string
}

// ProfileSeriesFrames is SeriesFrames with, after each series' frame, the frame of the series'
// exemplars when it has any, in the order Grafana's Pyroscope data source answers them. An
// exemplar's value goes through the series' own conversion (rate, cores), so that its marker sits
// on the series' scale.
func ProfileSeriesFrames(series []models.ProfileSeries, profileTypeID string, step time.Duration, links ExemplarLinks) []*data.Frame {
	seriesFrames := SeriesFrames(series, profileTypeID, step)
	divisor, unit := seriesScale(profileTypeID, step)
	out := make([]*data.Frame, 0, len(seriesFrames))
	for i, f := range seriesFrames {
		out = append(out, f)
		var exemplars []models.ProfileExemplar
		for _, p := range series[i].Points {
			exemplars = append(exemplars, p.Exemplars...)
		}
		if len(exemplars) > 0 {
			out = append(out, ExemplarFrame(series[i].Labels, exemplars, ProfileExemplars, unit, divisor, links))
		}
	}
	return out
}

// seriesScale is what SeriesFrames divides a series' values by, and the unit they are then in
// (see KindOf): cumulative types become a rate over the step, CPU nanoseconds cores.
func seriesScale(profileTypeID string, step time.Duration) (divisor float64, unit string) {
	kind := KindOf(profileTypeID)
	switch {
	case !kind.Cumulative:
		return 1, kind.Unit
	case step <= 0:
		return 1, ProfileUnit(profileTypeID) // no step to divide by: raw values
	case kind.CPU:
		return step.Seconds() * 1e9, kind.Unit
	}
	return step.Seconds(), kind.Unit
}

// ExemplarFrame is Grafana's exemplar frame, as its Pyroscope data source writes it
// (exemplar.CreateExemplarFrame): named "exemplar", meta.dataTopic "annotations"; fields Time,
// Value (carrying the series' labels, shown as "Value", in unit), Id (the profile ID, or the span
// ID for span exemplars) and one string field per label name, sorted: the exemplars' own labels
// (Pyroscope's private "__" ones left out) and the series'; an exemplar's own value of a label
// wins over the series'. Each value is divided by divisor (1: as Pyroscope sent it). Id links to
// the profile (or span) in this data source, as Grafana's AddProfileDataLink does.
func ExemplarFrame(seriesLabels []models.LabelPair, exemplars []models.ProfileExemplar, kind ExemplarKind, unit string, divisor float64, links ExemplarLinks) *data.Frame {
	series := labelsOf(seriesLabels)
	names := make([]string, 0, len(series))
	for name := range series {
		names = append(names, name)
	}
	for _, e := range exemplars {
		for _, l := range e.Labels {
			if !strings.HasPrefix(l.Name, "__") && !slices.Contains(names, l.Name) {
				names = append(names, l.Name)
			}
		}
	}
	slices.Sort(names)

	n := len(exemplars)
	times, values, ids := make([]time.Time, n), make([]float64, n), make([]string, n)
	columns := make([][]string, len(names))
	for c := range columns {
		columns[c] = make([]string, n)
	}
	for i, e := range exemplars {
		times[i] = time.UnixMilli(e.Timestamp).UTC()
		values[i] = float64(e.Value) / divisor
		ids[i] = e.ProfileID
		if kind == SpanExemplars {
			ids[i] = e.SpanID
		}
		for c, name := range names {
			if j := slices.IndexFunc(e.Labels, func(l models.LabelPair) bool { return l.Name == name }); j >= 0 {
				columns[c][i] = e.Labels[j].Value
			} else {
				columns[c][i] = series[name] // "" where the series has none either
			}
		}
	}
	idName := "Profile ID"
	if kind == SpanExemplars {
		idName = "Span ID"
	}
	f := data.NewFrame(ExemplarFrameName,
		data.NewField("Time", nil, times),
		data.NewField("Value", series, values).SetConfig(&data.FieldConfig{DisplayName: "Value", Unit: unit}),
		data.NewField("Id", nil, ids).SetConfig(&data.FieldConfig{DisplayName: idName, Links: exemplarLinks(kind, links)}),
	)
	for c, name := range names {
		f.Fields = append(f.Fields, data.NewField(name, nil, columns[c]))
	}
	f.Meta = &data.FrameMeta{DataTopic: data.DataTopicAnnotations}
	return f
}

// exemplarLinks open the exemplar's profile as a flame graph in this data source: the individual
// profile by profileIdSelector with Grafana's own link query (so the link reads the same in
// both data sources), or the span's profile by spanSelector.
func exemplarLinks(kind ExemplarKind, l ExemplarLinks) []data.DataLink {
	if l.DatasourceUID == "" {
		return nil
	}
	q := map[string]any{
		"queryType":     models.QueryTypeProfile,
		"labelSelector": l.LabelSelector,
		"profileTypeId": l.ProfileTypeID,
		"groupBy":       []string{},
	}
	title := "View profile"
	if kind == SpanExemplars {
		title = "View span profile"
		q["spanSelector"] = []string{"${__value.raw}"}
	} else {
		q["profileIdSelector"] = []string{"${__value.raw}"}
		q["heatmapType"] = models.HeatmapIndividual
		q["includeExemplars"] = false
		q["includeHeatmap"] = false
	}
	return []data.DataLink{{Title: title, Internal: &data.InternalDataLink{DatasourceUID: l.DatasourceUID, DatasourceName: l.DatasourceName, Query: q}}}
}

// labelsOf turns a series' labels into the frame field's labels (never nil).
func labelsOf(pairs []models.LabelPair) data.Labels {
	out := make(data.Labels, len(pairs))
	for _, l := range pairs {
		out[l.Name] = l.Value
	}
	return out
}
