package frames

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Frames of the gpuClass query. Names say what each frame is, so panels and transformations
// ("Filter data by query refId / frame name") can pick one.
const (
	GPUClassTimelineFrameName = "GPU class timeline"
	GPUClassSummaryFrameName  = "GPU class summary"
	GPUClassShareFrameName    = "GPU class share"
)

// ClassColors are the state colours, Grafana's named palette: compute-bound is the healthy
// "busy" state (green), throttling is red/yellow, waiting on memory or the link orange/purple,
// idle blue; gaps are grey.
var ClassColors = map[classify.Class]string{
	classify.ComputeBound:     "green",
	classify.MemoryBound:      "orange",
	classify.PCIeBound:        "purple",
	classify.ThermalThrottled: "red",
	classify.PowerThrottled:   "yellow",
	classify.Idle:             "blue",
	classify.Balanced:         "dark-green",
	classify.NoData:           "#8e8e8e",
}

// classMappings gives each class its colour and display order, for the state timeline and the
// summary's class columns.
func classMappings() data.ValueMappings {
	m := data.ValueMapper{}
	for i, c := range classify.Classes {
		m[string(c)] = data.ValueMappingResult{Color: ClassColors[c], Index: i}
	}
	return data.ValueMappings{m}
}

// gpuDisplayName is the GPU's short name: "host/index", plus the MIG instance.
func gpuDisplayName(g classify.GPU) string {
	if name := g.Name(); name != "" {
		return name
	}
	return "GPU"
}

// gpuLabels are the GPU's role labels (host, gpu, uuid, model, mig, mig_profile), as every GPU
// query of the plugin names them.
func gpuLabels(g classify.GPU) data.Labels {
	return data.Labels(models.GPURoleLabels(g))
}

// GPUClassTimeline is the state-timeline frame: a "time" field over every step of any GPU and
// one string field per GPU whose values are class names (steps a GPU lacks read "no data").
// Each GPU field carries the GPU's labels, a display name ("fixture-node-a/0") and value
// mappings that colour each class, which Grafana's state timeline panel reads directly: one row
// per field, one colour per value.
func GPUClassTimeline(results []classify.GPUResult) *data.Frame {
	// GPUs share the step grid, so the union is usually one GPU's times; nanoseconds sort fast.
	var nanos []int64
	for _, r := range results {
		for _, t := range r.Times {
			nanos = append(nanos, t.UnixNano())
		}
	}
	slices.Sort(nanos)
	nanos = slices.Compact(nanos)
	times := make([]time.Time, len(nanos))
	index := make(map[int64]int, len(nanos))
	for i, n := range nanos {
		times[i] = time.Unix(0, n).UTC()
		index[n] = i
	}
	f := data.NewFrame(GPUClassTimelineFrameName, data.NewField("time", nil, times))
	for _, r := range results {
		vals := make([]string, len(times))
		for i := range vals {
			vals[i] = string(classify.NoData)
		}
		for i, t := range r.Times {
			vals[index[t.UnixNano()]] = string(r.Classes[i])
		}
		f.Fields = append(f.Fields, data.NewField(gpuDisplayName(r.GPU), gpuLabels(r.GPU), vals).SetConfig(&data.FieldConfig{
			DisplayNameFromDS: gpuDisplayName(r.GPU),
			Mappings:          classMappings(),
		}))
	}
	f.Meta = &data.FrameMeta{PreferredVisualizationPluginID: "state-timeline"}
	return f
}

// GPUClassSummary is the table: one row per GPU (each MIG instance its own row) with its share of steps in each class (no data
// included, so a row sums to 1), the dominant class (the most frequent one other than no data)
// and its share, the number of steps, the evidence of the latest dominant-class step, and the
// seeds' recommended action for the dominant class.
func GPUClassSummary(results []classify.GPUResult) *data.Frame {
	n := len(results)
	gpu, host, index, mig, model := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	dominant, evidence, action, pods := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	podCount := make([]int64, n)
	domShare := make([]float64, n)
	steps := make([]int64, n)
	evidenceAt := make([]*time.Time, n)
	shares := map[classify.Class][]float64{}
	for _, c := range classify.Classes {
		shares[c] = make([]float64, n)
	}
	for i, r := range results {
		gpu[i], host[i], index[i], mig[i], model[i] = gpuDisplayName(r.GPU), r.GPU.Host, r.GPU.Index, r.GPU.MIG, r.GPU.Model
		res := make([]classify.Result, len(r.Classes))
		for j, c := range r.Classes {
			res[j] = classify.Result{Class: c}
			shares[c][i]++
		}
		for _, c := range classify.Classes {
			if len(r.Classes) > 0 {
				shares[c][i] /= float64(len(r.Classes))
			}
		}
		dom, share := classify.Dominant(res)
		dominant[i], domShare[i], steps[i] = string(dom), share, int64(len(r.Classes))
		evidence[i] = strings.Join(r.Evidence, "; ")
		if !r.EvidenceTime.IsZero() {
			t := r.EvidenceTime
			evidenceAt[i] = &t
		}
		action[i] = classify.Action(dom)
		names := make([]string, len(r.Pods))
		for j, p := range r.Pods {
			names[j] = p.String()
		}
		pods[i], podCount[i] = strings.Join(names, ", "), int64(len(r.Pods))
	}
	pct := &data.FieldConfig{Unit: "percentunit", Min: ptr(data.ConfFloat64(0)), Max: ptr(data.ConfFloat64(1)), Decimals: ptr(uint16(1))}
	f := data.NewFrame(GPUClassSummaryFrameName,
		data.NewField("GPU", nil, gpu),
		data.NewField("host", nil, host),
		data.NewField("gpu", nil, index),
		data.NewField("mig", nil, mig).SetConfig(&data.FieldConfig{DisplayNameFromDS: "MIG instance",
			Description: "The MIG GPU instance (GPU_I_ID; its profile is in the GPU column); empty for a whole GPU."}),
		data.NewField("model", nil, model),
		data.NewField("dominant class", nil, dominant).SetConfig(&data.FieldConfig{Mappings: classMappings()}),
		data.NewField("dominant share", nil, domShare).SetConfig(pct),
	)
	for _, c := range classify.Classes {
		f.Fields = append(f.Fields, data.NewField(string(c), nil, shares[c]).SetConfig(pct))
	}
	f.Fields = append(f.Fields,
		data.NewField("steps", nil, steps),
		data.NewField("evidence", nil, evidence),
		data.NewField("evidence at", nil, evidenceAt),
		data.NewField("action", nil, action),
		data.NewField("pods", nil, pods).SetConfig(&data.FieldConfig{
			Description: "The pods dcgm-exporter mapped the GPU to over the range (its Kubernetes mapping); empty when it maps none."}),
		data.NewField("pod count", nil, podCount).SetConfig(&data.FieldConfig{
			Description: "More than one: the GPU served several workloads over the range (time-sliced, MPS, or handed over), so its figures are all of theirs."}),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// GPUClassShareFrames are the numeric series for alerting and graphs, the dataplane's
// timeseries-multi: one frame per GPU and class (no data excluded), a "time" field and a
// nullable float64 "share" field (0..1, percentunit) labelled with the GPU's roles and
// class=<class>, so a Grafana alert rule can reduce each to its last value and compare it, like
// the recording rule hsi:gpu_class_share:ratio1h. A step whose trailing window holds no
// classified step is null. With classes, only those classes' frames.
func GPUClassShareFrames(results []classify.GPUResult, window time.Duration, classes []classify.Class) []*data.Frame {
	var out []*data.Frame
	for _, r := range results {
		for _, c := range classify.Classes {
			if c == classify.NoData || len(classes) > 0 && !slices.Contains(classes, c) {
				continue
			}
			// One backing array per frame: a pointer per value would allocate millions.
			vals := make([]*float64, len(r.Times))
			backing := append([]float64(nil), r.Shares[c]...)
			for i := range backing {
				if i < len(vals) && !math.IsNaN(backing[i]) {
					vals[i] = &backing[i]
				}
			}
			labels := gpuLabels(r.GPU)
			labels["class"] = string(c)
			f := data.NewFrame(GPUClassShareFrameName,
				data.NewField("time", nil, append([]time.Time{}, r.Times...)),
				data.NewField("share", labels, vals).SetConfig(&data.FieldConfig{
					DisplayNameFromDS: gpuDisplayName(r.GPU) + " " + string(c) + " share (" + classify.PromDuration(window) + ")",
					Unit:              "percentunit", Min: ptr(data.ConfFloat64(0)), Max: ptr(data.ConfFloat64(1)),
				}),
			)
			f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
			out = append(out, f)
		}
	}
	return out
}
