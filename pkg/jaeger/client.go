// Package jaeger talks to Jaeger's query API: v3 (OTLP JSON) where the server speaks it, v1 JSON
// otherwise.
package jaeger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// API versions of Jaeger's query service.
const (
	APIv3 = "v3"
	APIv1 = "v1"
)

// Client is one Jaeger query service.
type Client struct {
	url  string
	http *http.Client

	mu  sync.Mutex
	api string // detected API version, "" until known
}

// New returns a client for the upstream's URL using hc (built by upstream.NewHTTPClient).
func New(u models.Upstream, hc *http.Client) *Client {
	return &Client{url: u.URL, http: hc}
}

// Services lists the services that reported spans, and says which API answered.
func (c *Client) Services(ctx context.Context) (services []string, api string, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Jaeger, "Services")
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Jaeger, c.url, err)) }()

	if c.apiVersion() != APIv1 {
		var v3 struct {
			Services []string `json:"services"`
		}
		err = c.getJSON(ctx, "/api/v3/services", &v3)
		if err == nil {
			c.setAPIVersion(APIv3)
			return v3.Services, APIv3, nil
		}
		if st, ok := errors.AsType[*upstream.HTTPStatusError](err); !ok || st.Status != http.StatusNotFound {
			return nil, "", err
		}
	}
	// Older Jaeger (v1 binaries) only has the v1 JSON API.
	var v1 struct {
		Data []string `json:"data"`
	}
	if err = c.getJSON(ctx, "/api/services", &v1); err != nil {
		return nil, "", err
	}
	c.setAPIVersion(APIv1)
	return v1.Data, APIv1, nil
}

func (c *Client) apiVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.api
}

func (c *Client) setAPIVersion(v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.api = v
}

// getJSON fetches path and decodes a JSON reply into dst; non-2xx replies become
// *upstream.HTTPStatusError with the start of the body, which is where Jaeger explains itself.
func (c *Client) getJSON(ctx context.Context, path string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return &upstream.HTTPStatusError{Status: res.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	if err := json.NewDecoder(res.Body).Decode(dst); err != nil {
		return fmt.Errorf("reply to %s is not the JSON Jaeger sends: %w", path, err)
	}
	return nil
}
