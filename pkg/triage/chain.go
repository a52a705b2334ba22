package triage

import (
	"strings"
)

// Chain is runbook 002's mapping, request → model/version → pod → container → GPU UUID/MIG
// device → node → driver, as far as the signals hold it; Missing says, per absent link, which
// signal would add it.
type Chain struct {
	Request, Model, Pod, Container, GPU, Node, Driver string
	Missing                                           []string
}

// Span attributes that name the model a span served, in order of preference: OpenTelemetry's
// GenAI convention, then the usual spellings of servers and the demo.
var modelAttributes = []string{"gen_ai.request.model", "gen_ai.response.model", "model.name", "model_name", "model"}

// and the model's version.
var versionAttributes = []string{"model.version", "model_version"}

// The resource attributes of OpenTelemetry's Kubernetes convention (the k8sattributes processor
// sets them).
const (
	attrPod       = "k8s.pod.name"
	attrNamespace = "k8s.namespace.name"
	attrContainer = "k8s.container.name"
)

// String is the chain in the runbook's order, missing links left out.
func (c Chain) String() string {
	var parts []string
	for _, p := range []struct{ what, v string }{{"request", c.Request}, {"model", c.Model}, {"pod", c.Pod},
		{"container", c.Container}, {"GPU", c.GPU}, {"node", c.Node}, {"driver", c.Driver}} {
		if p.v != "" {
			parts = append(parts, p.what+" "+p.v)
		}
	}
	s := strings.Join(parts, " → ")
	if len(c.Missing) > 0 {
		s += " (missing: " + strings.Join(c.Missing, "; ") + ")"
	}
	return s
}

// chain completes c with the GPU's links (GPU, node, driver, and pod and container when the
// GPU's series name one pod), then says which links are still missing. Links from a request
// (request, model) are only asked for when the chain starts at one.
func (g *gpu) chain(c Chain) Chain {
	if g != nil {
		if c.GPU == "" {
			c.GPU = g.deviceName()
		}
		if c.Node == "" {
			c.Node = g.host
		}
		if c.Driver == "" {
			c.Driver = g.driver
		}
		if len(g.pods) == 1 {
			if c.Pod == "" {
				c.Pod = qualified(g.pods[0].namespace, g.pods[0].pod)
			}
			if c.Container == "" {
				c.Container = g.pods[0].container
			}
		}
	}
	return c.missing(g != nil)
}

// deviceName is the GPU as the chain names it: its UUID (or MIG device), with its index.
func (g *gpu) deviceName() string {
	id := g.uuid
	if id == "" {
		id = "index " + g.index
	} else if g.index != "" {
		id += " (" + g.index + ")"
	}
	if g.mig != "" {
		id += " MIG " + g.mig
	}
	return id
}

// missing says which signal would add each absent link.
func (c Chain) missing(sawGPU bool) Chain {
	c.Missing = nil
	if c.Request != "" && c.Model == "" {
		c.Missing = append(c.Missing, "model: no model attribute on the failed spans (set gen_ai.request.model, or model.name and model.version)")
	}
	if c.Pod == "" {
		c.Missing = append(c.Missing, "pod: neither a k8s.pod.name span resource attribute nor a pod label on the GPU's DCGM series (dcgm-exporter's Kubernetes mapping, OpenTelemetry's k8sattributes processor)")
	}
	if c.Container == "" && c.Pod != "" {
		c.Missing = append(c.Missing, "container: no k8s.container.name resource attribute or container label")
	}
	if c.GPU == "" {
		if sawGPU {
			c.Missing = append(c.Missing, "GPU: the DCGM series carry no gpu or UUID label")
		} else {
			c.Missing = append(c.Missing, "GPU: no DCGM series of this pod or host in the range (dcgm-exporter with its Kubernetes mapping names the pod on each GPU; a span's gpu.index or UUID attribute names its GPU)")
		}
	}
	if c.Node == "" {
		c.Missing = append(c.Missing, "node: no host.name resource attribute, kube_pod_info node or DCGM host label")
	}
	if c.Driver == "" && c.GPU != "" {
		c.Missing = append(c.Missing, "driver: no DCGM_FI_DRIVER_VERSION label on the DCGM series (a label row of dcgm-exporter's counters file)")
	}
	return c
}
