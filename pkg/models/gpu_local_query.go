package models

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The views of a gpuLocal query.
const (
	GPULocalDevices   = "devices"
	GPULocalProcesses = "processes"
	GPULocalXID       = "xid"
	GPULocalSeries    = "series"
	GPULocalClass     = "class"
)

// GPULocalViews lists the views in the order messages name them.
var GPULocalViews = []string{GPULocalDevices, GPULocalProcesses, GPULocalXID, GPULocalSeries, GPULocalClass}

// GPULocalQuery is {queryType: "gpuLocal", view: "devices"|"processes"|"xid"|"series"|"class"}.
type GPULocalQuery struct {
	View string
}

// ParseGPULocalQuery reads a gpuLocal query; the view defaults to devices.
func ParseGPULocalQuery(raw json.RawMessage) (*GPULocalQuery, error) {
	var q struct {
		View string `json:"view"`
	}
	if err := Decode(raw, &q); err != nil {
		return nil, err
	}
	v := strings.TrimSpace(q.View)
	switch v {
	case "":
		v = GPULocalDevices
	case GPULocalDevices, GPULocalProcesses, GPULocalXID, GPULocalSeries, GPULocalClass:
	default:
		return nil, fmt.Errorf("field \"view\" must be one of %s, got %q", strings.Join(GPULocalViews, ", "), truncate(v, 40))
	}
	return &GPULocalQuery{View: v}, nil
}
