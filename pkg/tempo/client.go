// Package tempo talks to Grafana Tempo's HTTP API (its pkg/api/http.go): traces by ID (the v2
// path, the v1 path for older servers) in OTLP protobuf, tag values for services and operations.
package tempo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// Tempo's paths (pkg/api/http.go).
const (
	pathTraceV2          = "/api/v2/traces/"
	pathTraceV1          = "/api/traces/"
	pathTagValuesV2      = "/api/v2/search/tag/%s/values"
	pathBuildInfo        = "/api/status/buildinfo"
	pathEcho             = "/api/echo"
	headerAccept         = "Accept"
	mediaTypeProtobuf    = "application/protobuf"
	mediaTypeJSON        = "application/json"
	maxErrorBodyQuoted   = 512
	serviceNameTag       = "resource.service.name"
	spanNameTag          = "name"
	defaultTagValueLimit = 1000
	// noOrgID is what a multi-tenant Tempo answers (401) to a request without X-Scope-OrgID.
	noOrgID = "no org id"
)

// Client is one Tempo (its query frontend, or the single binary).
type Client struct {
	url  string
	http *http.Client
}

// New returns a client for the upstream's URL using hc (built by upstream.NewHTTPClient, which
// adds the auth, TLS and X-Scope-OrgID the settings give).
func New(u models.Upstream, hc *http.Client) *Client {
	return &Client{url: strings.TrimSuffix(u.URL, "/"), http: hc}
}

// get fetches path with the query and the accepted media type and returns the body of a 2xx
// reply; any other status is an *upstream.HTTPStatusError with the start of the body, which is
// where Tempo explains itself.
func (c *Client) get(ctx context.Context, path string, query url.Values, accept string) ([]byte, error) {
	u := c.url + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(headerAccept, accept)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBodyQuoted))
		text := strings.TrimSpace(string(body))
		if res.StatusCode == http.StatusUnauthorized && strings.Contains(text, noOrgID) {
			text += ": this Tempo is multi-tenant and the data source names no tenant; set Tempo's tenant (jsonData.tempoTenant, sent as X-Scope-OrgID) in the data source settings"
		}
		return nil, &upstream.HTTPStatusError{Status: res.StatusCode, Body: text}
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		return nil, fmt.Errorf("reply to %s is an HTML page, not Tempo's API: is this URL Tempo's query frontend (default port 3200)?", path)
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(max(res.ContentLength, 0), 64<<20)+bytes.MinRead))
	if _, err := buf.ReadFrom(res.Body); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("reply to %s is %w: %w", path, upstream.ErrReplyTruncated, err)
		}
		return nil, fmt.Errorf("reading the reply to %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

// getJSON fetches path and decodes its JSON reply into dst.
func (c *Client) getJSON(ctx context.Context, path string, query url.Values, dst any) error {
	body, err := c.get(ctx, path, query, mediaTypeJSON)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return fmt.Errorf("reply to %s is not the JSON Tempo sends: %w", path, err)
	}
	return nil
}

// BuildInfo is Tempo's /api/status/buildinfo: the health check's version.
type BuildInfo struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"goVersion"`
}

// Version asks Tempo for its build. A Tempo without the build endpoint (before 2.3) is asked
// for its echo, so that the health check still tells Tempo from another server.
func (c *Client) Version(ctx context.Context) (v string, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Tempo, "Version")
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Tempo, c.url, err)) }()
	var info BuildInfo
	if err := c.getJSON(ctx, pathBuildInfo, nil, &info); err != nil {
		if st, ok := errors.AsType[*upstream.HTTPStatusError](err); !ok || st.Status != http.StatusNotFound {
			return "", err
		}
		body, echoErr := c.get(ctx, pathEcho, nil, "text/plain")
		if echoErr != nil {
			return "", fmt.Errorf("%s is not found and %s fails (%v): is this URL Tempo's query frontend (default port 3200)?", pathBuildInfo, pathEcho, echoErr)
		}
		if strings.TrimSpace(string(body)) != "echo" {
			return "", fmt.Errorf("%s is not found and %s does not answer \"echo\": is this URL Tempo's query frontend (default port 3200)?", pathBuildInfo, pathEcho)
		}
		return "unknown (older than 2.3: no " + pathBuildInfo + ")", nil
	}
	if info.Version == "" {
		return "", fmt.Errorf("reply to %s names no version: is this URL Tempo?", pathBuildInfo)
	}
	return info.Version, nil
}
