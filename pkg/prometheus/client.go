// Package prometheus talks to Prometheus (or Mimir, Thanos) through client_golang's API client.
package prometheus

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// Client is one Prometheus-compatible server.
type Client struct {
	url string
	api promv1.API
}

// New returns a client for the upstream's URL using hc (built by upstream.NewHTTPClient).
func New(u models.Upstream, hc *http.Client) (*Client, error) {
	c, err := api.NewClient(api.Config{Address: u.URL, Client: hc})
	if err != nil {
		return nil, upstream.Wrap(models.Prometheus, u.URL, err)
	}
	return &Client{url: u.URL, api: promv1.NewAPI(c)}, nil
}

// Version asks the server for its build information: the cheapest call that proves the API
// answers (Prometheus, Mimir and Thanos all serve it).
func (c *Client) Version(ctx context.Context) (version string, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Prometheus, "Buildinfo")
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Prometheus, c.url, err)) }()
	info, err := c.api.Buildinfo(ctx)
	if err != nil {
		return "", err
	}
	return info.Version, nil
}
