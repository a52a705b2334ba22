// Package pluginhost launches the plugin binary exactly as Grafana does: hashicorp go-plugin's
// handshake with the SDK's magic cookie, protocol version 2, gRPC only, and the SDK's pluginv2
// Diagnostics, Data and Resource services. The protocol test and cmd/hsi-query use it; it proves
// the binary, not just the packages.
package pluginhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
)

// PluginID is the id Grafana would send in each request's plugin context.
const PluginID = "hsi-profiling-datasource"

// Host is one running plugin process.
type Host struct {
	client      *goplugin.Client
	diagnostics grpcplugin.DiagnosticsClient
	data        grpcplugin.DataClient
	resource    grpcplugin.ResourceClient

	// Settings are sent with every request, as Grafana sends the data source's settings.
	Settings DataSource
}

// DataSource is what Grafana stores for one data source: jsonData and the decrypted
// secureJsonData.
type DataSource struct {
	UID            string
	Name           string
	JSONData       map[string]any
	SecureJSONData map[string]string
	Updated        time.Time
	// GrafanaConfig is what Grafana sends of its own configuration with each request
	// (GF_RESPONSE_LIMIT, ...); nil sends none.
	GrafanaConfig map[string]string
}

// Start runs the binary and completes the handshake. logOut receives the plugin's own log lines
// (nil discards them).
func Start(binary string, settings DataSource, logOut io.Writer, env ...string) (*Host, error) {
	if logOut == nil {
		logOut = io.Discard
	}
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), env...)
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion:  grpcplugin.ProtocolVersion,
			MagicCookieKey:   grpcplugin.MagicCookieKey,
			MagicCookieValue: grpcplugin.MagicCookieValue,
		},
		VersionedPlugins: map[int]goplugin.PluginSet{
			grpcplugin.ProtocolVersion: {
				"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{},
				"resource":    &grpcplugin.ResourceGRPCPlugin{},
				"data":        &grpcplugin.DataGRPCPlugin{},
			},
		},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: logOut, Level: hclog.Debug}),
		StartTimeout:     30 * time.Second,
	})
	h := &Host{client: client, Settings: settings}
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("plugin handshake failed: %w", err)
	}
	for name, dst := range map[string]any{"diagnostics": &h.diagnostics, "data": &h.data, "resource": &h.resource} {
		raw, err := rpc.Dispense(name)
		if err != nil {
			client.Kill()
			return nil, fmt.Errorf("plugin does not serve %s: %w", name, err)
		}
		if err := assign(dst, raw); err != nil {
			client.Kill()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return h, nil
}

func assign(dst, raw any) error {
	switch d := dst.(type) {
	case *grpcplugin.DiagnosticsClient:
		c, ok := raw.(grpcplugin.DiagnosticsClient)
		*d = c
		return okOr(ok)
	case *grpcplugin.DataClient:
		c, ok := raw.(grpcplugin.DataClient)
		*d = c
		return okOr(ok)
	case *grpcplugin.ResourceClient:
		c, ok := raw.(grpcplugin.ResourceClient)
		*d = c
		return okOr(ok)
	}
	return errors.New("unknown service")
}

func okOr(ok bool) error {
	if !ok {
		return errors.New("unexpected client type")
	}
	return nil
}

// Exited reports whether the plugin process has ended.
func (h *Host) Exited() bool { return h.client.Exited() }

// Stop ends the plugin process the way Grafana does.
func (h *Host) Stop() { h.client.Kill() }

func (h *Host) pluginContext() (*pluginv2.PluginContext, error) {
	jsonData, err := json.Marshal(h.Settings.JSONData)
	if err != nil {
		return nil, err
	}
	updated := h.Settings.Updated
	if updated.IsZero() {
		updated = time.Unix(1700000000, 0)
	}
	return &pluginv2.PluginContext{
		OrgId:         1,
		PluginId:      PluginID,
		GrafanaConfig: h.Settings.GrafanaConfig,
		DataSourceInstanceSettings: &pluginv2.DataSourceInstanceSettings{
			Id:                      1,
			Uid:                     h.Settings.UID,
			Name:                    h.Settings.Name,
			JsonData:                jsonData,
			DecryptedSecureJsonData: h.Settings.SecureJSONData,
			LastUpdatedMS:           updated.UnixMilli(),
		},
	}, nil
}

// CheckHealth is the "Save & test" button.
func (h *Host) CheckHealth(ctx context.Context) (*pluginv2.CheckHealthResponse, error) {
	pc, err := h.pluginContext()
	if err != nil {
		return nil, err
	}
	return h.diagnostics.CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: pc})
}

// Metrics returns the plugin process's own Prometheus metrics (Go runtime and process
// collectors included: go_goroutines, go_memstats_heap_inuse_bytes, ...) in the text exposition
// format, as Grafana scrapes them.
func (h *Host) Metrics(ctx context.Context) ([]byte, error) {
	pc, err := h.pluginContext()
	if err != nil {
		return nil, err
	}
	res, err := h.diagnostics.CollectMetrics(ctx, &pluginv2.CollectMetricsRequest{PluginContext: pc})
	if err != nil {
		return nil, err
	}
	return res.GetMetrics().GetPrometheus(), nil
}

// Query is one panel query: its JSON model (queryType included) and time range.
type Query struct {
	RefID    string
	JSON     map[string]any
	From, To time.Time
	Interval time.Duration
	// Alert sends the query as Grafana's alerting sends a rule written by file provisioning, the
	// HTTP API or Terraform: the rule's top-level queryType (empty there) in DataQuery.QueryType,
	// not the model's; the model as the rule stores it.
	Alert bool
}

// QueryData sends queries the way Grafana does: queryType copied out of the JSON model by
// dashboards and Explore, left empty by the alerting of such rules (Query.Alert).
func (h *Host) QueryData(ctx context.Context, queries ...Query) (*pluginv2.QueryDataResponse, error) {
	pc, err := h.pluginContext()
	if err != nil {
		return nil, err
	}
	req := &pluginv2.QueryDataRequest{PluginContext: pc}
	for _, q := range queries {
		model, err := json.Marshal(q.JSON)
		if err != nil {
			return nil, err
		}
		queryType, _ := q.JSON["queryType"].(string)
		if q.Alert {
			queryType = ""
		}
		interval := q.Interval
		if interval == 0 {
			interval = 15 * time.Second
		}
		req.Queries = append(req.Queries, &pluginv2.DataQuery{
			RefId:         q.RefID,
			QueryType:     queryType,
			Json:          model,
			MaxDataPoints: 1000,
			IntervalMS:    interval.Milliseconds(),
			TimeRange:     &pluginv2.TimeRange{FromEpochMS: q.From.UnixMilli(), ToEpochMS: q.To.UnixMilli()},
		})
	}
	return h.data.QueryData(ctx, req)
}

// ResourceResponse is a resource call's reply.
type ResourceResponse struct {
	Status int
	Body   []byte
}

// CallResource makes a GET on one of the plugin's resource routes (path without leading slash,
// with its query string if any). As Grafana does, Path is the route alone and URL carries the
// query string.
func (h *Host) CallResource(ctx context.Context, path string) (*ResourceResponse, error) {
	return h.CallResourceWith(ctx, "GET", path, nil)
}

// CallResourceWith is CallResource with any method and a request body.
func (h *Host) CallResourceWith(ctx context.Context, method, path string, body []byte) (*ResourceResponse, error) {
	pc, err := h.pluginContext()
	if err != nil {
		return nil, err
	}
	route, _, _ := strings.Cut(path, "?")
	stream, err := h.resource.CallResource(ctx, &pluginv2.CallResourceRequest{
		PluginContext: pc, Path: route, Method: method, Url: "/" + path, Body: body,
	})
	if err != nil {
		return nil, err
	}
	out := &ResourceResponse{}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if msg.Code != 0 {
			out.Status = int(msg.Code)
		}
		out.Body = append(out.Body, msg.Body...)
	}
}
