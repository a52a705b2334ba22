package frames

import (
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// GPUMetricFrames builds one frame per series of a gpuMetrics answer, the shape Grafana's
// Prometheus data source returns (timeseries-multi): named after the catalogue metric, a "time"
// field and a float64 value field named after the metric that carries the series' role labels
// (host, gpu, uuid, model, pod, ...), the catalogue's unit and a display name such as
// "GPU utilisation gpu-node-1/0". The PromQL sent is the frames' executed query string, so
// Grafana's query inspector shows it. The result's notices go on the first frame; with no
// series, a single empty frame carries them, so the panel says why it is empty.
func GPUMetricFrames(res *models.GPUMetricResult) []*data.Frame {
	out := make([]*data.Frame, 0, len(res.Series))
	for _, s := range res.Series {
		labels := data.Labels{}
		for k, v := range s.Labels {
			labels[k] = v
		}
		times := append([]time.Time(nil), s.Times...)
		values := append([]float64(nil), s.Values...)
		if times == nil {
			times, values = []time.Time{}, []float64{}
		}
		f := data.NewFrame(res.Metric.Name,
			data.NewField("time", nil, times),
			data.NewField(res.Metric.Name, labels, values).SetConfig(&data.FieldConfig{
				Unit:              res.Metric.Unit,
				DisplayNameFromDS: GPUSeriesDisplayName(res.Metric.Title, res.Aggregation, s.Labels),
			}),
		)
		f.Meta = gpuFrameMeta(res)
		out = append(out, f)
	}
	if len(out) == 0 {
		f := data.NewFrame(res.Metric.Name,
			data.NewField("time", nil, []time.Time{}),
			data.NewField(res.Metric.Name, nil, []float64{}).SetConfig(&data.FieldConfig{Unit: res.Metric.Unit, DisplayNameFromDS: res.Metric.Title}),
		)
		f.Meta = gpuFrameMeta(res)
		out = append(out, f)
	}
	out[0].AppendNotices(Notices(res.Notices)...)
	return out
}

func gpuFrameMeta(res *models.GPUMetricResult) *data.FrameMeta {
	return &data.FrameMeta{
		Type:                   data.FrameTypeTimeSeriesMulti,
		TypeVersion:            data.FrameTypeVersion{0, 1},
		PreferredVisualization: data.VisTypeGraph,
		ExecutedQueryString:    res.Query,
	}
}

// GPUSeriesDisplayName names a series as users say it: the metric's title, then the GPU's short
// name (classify.GPU.Name: host/index, or the UUID when the index is unknown, and the MIG
// instance as "MIG 1g.10gb #3") and the pod as namespace/pod; "all GPUs" for the fleet. Host
// series show the host only.
func GPUSeriesDisplayName(title, aggregation string, labels map[string]string) string {
	var where string
	switch aggregation {
	case models.AggregationFleet:
		return title + ", all GPUs"
	case models.AggregationHost:
		where = labels[models.RoleHost]
	default:
		where = models.GPUOf(labels).Name()
		if pod := labels[models.RolePod]; pod != "" {
			if ns := labels[models.RoleNamespace]; ns != "" {
				pod = ns + "/" + pod
			}
			where += " (" + pod + ")"
		}
	}
	if where = strings.TrimSpace(where); where == "" {
		return title
	}
	return title + " " + where
}
