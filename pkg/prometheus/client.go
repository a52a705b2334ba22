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

	// dcgm names the GPU metrics and labels (WithDCGM); the zero value uses the built-in names.
	dcgm models.DCGMSettings
	// cat is dcgm applied to the catalogue, built once per WithDCGM.
	cat *Catalogue
	// containers names cAdvisor's series (WithContainers); the zero value uses cAdvisor's own.
	containers models.ContainerSettings
	// cache holds label detections (inventory.go), shared by every copy of the client.
	cache *inventoryCache
	// meta holds metric metadata (units.go), shared the same way.
	meta *metadataCache
}

// New returns a client for the upstream's URL using hc (built by upstream.NewHTTPClient).
func New(u models.Upstream, hc *http.Client) (*Client, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	c, err := api.NewClient(api.Config{Address: u.URL, Client: hc})
	if err != nil {
		return nil, upstream.Wrap(models.Prometheus, u.URL, err)
	}
	return newClient(u.URL, newQueryAPI(newBodyClient(c, hc))), nil
}

func newClient(url string, api promv1.API) *Client {
	return &Client{url: url, api: api, cat: NewCatalogue(models.DCGMSettings{}), cache: newInventoryCache(), meta: newMetadataCache()}
}

// WithContainers returns a copy of the client that reads cAdvisor's CPU series under the names
// the data source settings give (jsonData.cadvisorMetricNames, cadvisorLabelNames).
func (c *Client) WithContainers(s models.ContainerSettings) *Client {
	cp := *c
	cp.containers = s
	return &cp
}

// WithDCGM returns a copy of the client that names DCGM metrics and labels as the data source
// settings say (jsonData.dcgmMetricNames, dcgmLabelNames, gpuMaxSeries). The copy shares the
// client's connections and label-detection cache, so it is cheap to make per query.
func (c *Client) WithDCGM(s models.DCGMSettings) *Client {
	cp := *c
	cp.dcgm = s
	cp.cat = NewCatalogue(s)
	return &cp
}

// Catalogue is the GPU metric catalogue with the client's overrides applied.
func (c *Client) Catalogue() *Catalogue { return c.catalogue() }

func (c *Client) catalogue() *Catalogue {
	if c.cat == nil {
		return NewCatalogue(c.dcgm)
	}
	return c.cat
}

// URL is the server's base URL, as messages name it.
func (c *Client) URL() string { return c.url }

// wrap names Prometheus and its URL in an error of a call to it.
func (c *Client) wrap(err error) error { return upstream.Wrap(models.Prometheus, c.url, err) }

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
