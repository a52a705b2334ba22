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
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
	"golang.org/x/sync/singleflight"
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

	// reads shares one trace read or search among the callers asking the very same at once
	// (see shared).
	reads singleflight.Group

	// scans are the spans of the last v3 replies read, for the same reply asked again.
	scans replyScans

	// closes: the last reply asked to close its connection (ClosesConnections).
	closes atomic.Bool
}

// New returns a client for the upstream's URL using hc (built by upstream.NewHTTPClient).
func New(u models.Upstream, hc *http.Client) *Client {
	return &Client{url: u.URL, http: hc, scans: newReplyScans()}
}

// Services lists the services that reported spans, and says which API answered.
func (c *Client) Services(ctx context.Context) (services []string, api string, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Jaeger, "Services")
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Jaeger, c.url, err)) }()

	switch api = c.apiVersion(); api {
	case APIv3:
		services, err = c.servicesV3(ctx)
	case APIv1:
		services, err = c.servicesV1(ctx)
	default:
		// Detection asks for the services anyway: no second request.
		services, api, err = c.probe(ctx)
	}
	if err != nil {
		return nil, "", err
	}
	return services, api, nil
}

// ClosesConnections says whether the server's last reply closed its connection ("Connection:
// close"). Jaeger v2's query server does so after every reply unless its HTTP keep-alive is on
// (extensions.jaeger_query.http.keep_alives_enabled, false by default up to at least 2.13):
// then each request opens a new TCP connection, which costs both sides under a dashboard's load.
func (c *Client) ClosesConnections() bool { return c.closes.Load() }

// UseAPI forces the API version (APIv3 or APIv1) instead of detecting it, so that tests can ask
// one server through both APIs; "" goes back to detecting on the next call.
func (c *Client) UseAPI(api string) error {
	switch api {
	case APIv3, APIv1, "":
		c.setAPIVersion(api)
		return nil
	}
	return fmt.Errorf("unknown Jaeger API %q: use %q or %q", api, APIv3, APIv1)
}

// detectAPI says which API the server speaks, asking it once per client: the answer is cached.
func (c *Client) detectAPI(ctx context.Context) (string, error) {
	if api := c.apiVersion(); api != "" {
		return api, nil
	}
	_, api, err := c.probe(ctx)
	return api, err
}

// probe asks /api/v3/services and, only when that route does not exist (404), /api/services; the
// API that answered is remembered. Listing services is the cheapest call both APIs have, and the
// only v3 route whose 404 cannot mean "no such trace".
func (c *Client) probe(ctx context.Context) ([]string, string, error) {
	services, err := c.servicesV3(ctx)
	if err == nil {
		c.setAPIVersion(APIv3)
		return services, APIv3, nil
	}
	// No v3 route: a 404, or the UI page that a server with a UI serves for unknown paths.
	_, html := errors.AsType[*htmlReplyError](err)
	if st, ok := errors.AsType[*upstream.HTTPStatusError](err); !html && (!ok || st.Status != http.StatusNotFound) {
		return nil, "", err
	}
	// Older Jaeger (v1 binaries) only has the v1 JSON API.
	if services, err = c.servicesV1(ctx); err != nil {
		return nil, "", err
	}
	c.setAPIVersion(APIv1)
	return services, APIv1, nil
}

func (c *Client) servicesV3(ctx context.Context) ([]string, error) {
	var v3 struct {
		Services []string `json:"services"`
	}
	err := c.getJSON(ctx, "/api/v3/services", nil, &v3)
	return v3.Services, err
}

func (c *Client) servicesV1(ctx context.Context) ([]string, error) {
	var v1 struct {
		Data []string `json:"data"`
	}
	err := c.getJSON(ctx, "/api/services", nil, &v1)
	return v1.Data, err
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

// getJSON fetches path (with the query parameters, if any) and decodes a JSON reply into dst;
// non-2xx replies become *upstream.HTTPStatusError with the start of the body, which is where
// Jaeger explains itself.
func (c *Client) getJSON(ctx context.Context, path string, query url.Values, dst any) error {
	return c.get(ctx, path, query, func(body io.Reader) error {
		if err := json.NewDecoder(body).Decode(dst); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return truncatedError(path, err)
			}
			return fmt.Errorf("reply to %s is not the JSON Jaeger sends: %w", path, err)
		}
		return nil
	})
}

// getV3Spans fetches a v3 reply ({"result": OTLP JSON} or {"error": …}) and reads its spans
// (decodeV3): a trace of a thousand spans is about a megabyte, read in a pooled buffer.
func (c *Client) getV3Spans(ctx context.Context, path string, query url.Values) (spans []models.Span, err error) {
	return c.getV3SpansSkimming(ctx, path, query, "")
}

// getV3SpansSkimming is getV3Spans reading attributes and events only of the spans of service
// (decodeV3Read; every span's when service is empty). A reply read the same way moments
// before is not read again (replyScans).
func (c *Client) getV3SpansSkimming(ctx context.Context, path string, query url.Values, service string) (spans []models.Span, err error) {
	var full func(string) bool
	reading := readWhole
	if service != "" {
		full = func(s string) bool { return s == service }
		reading = service
	}
	err = c.get(ctx, path, query, func(body io.Reader) error {
		b, err := upstream.ReadPooled(body)
		defer b.Release()
		if err != nil {
			spans, err = decodeV3Read(b.Bytes(), err, path, full)
			return err
		}
		key := keyOf(b.Bytes(), reading)
		if seen, ok := c.scans.get(key); ok {
			spans = seen
			return nil
		}
		if spans, err = decodeV3Read(b.Bytes(), nil, path, full); err == nil {
			c.scans.put(key, spans)
		}
		return err
	})
	return spans, err
}

// get fetches path (with the query parameters, if any) and hands a 2xx JSON reply's body to
// decode; non-2xx replies become *upstream.HTTPStatusError with the start of the body, which is
// where Jaeger explains itself.
func (c *Client) get(ctx context.Context, path string, query url.Values, decode func(io.Reader) error) error {
	u := c.url + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	c.closes.Store(res.Close)
	if res.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return &upstream.HTTPStatusError{Status: res.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		return &htmlReplyError{path: path}
	}
	return decode(res.Body)
}

// truncatedError says a reply was cut short: a proxy's timeout or a size limit, or the connection
// ending before Content-Length.
func truncatedError(path string, err error) error {
	return fmt.Errorf("reply to %s is %w (the JSON ends early): %w", path, upstream.ErrReplyTruncated, err)
}

// htmlReplyError is a 2xx HTML page where JSON was expected. Jaeger v2 answers any unknown path,
// /api/v3/... included, with its UI page and HTTP 200; elsewhere it is a UI or a login page.
type htmlReplyError struct{ path string }

func (e *htmlReplyError) Error() string {
	return fmt.Sprintf("reply to %s is an HTML page, not the JSON Jaeger sends: is this URL Jaeger's query service (default port 16686)?", e.path)
}

// shared runs read once for the callers that ask the same request (key: its path and
// parameters) at the same time: a dashboard's panels read the same trace, and a triage's panels
// search the same services, at once (safe.Share: a caller whose read another panel's closing
// cancelled reads again on its own). Each caller of a shared read gets its own copy of the slice
// (a trace's callers sort it; a read not shared is not copied); the spans themselves are only read.
func (c *Client) shared(ctx context.Context, key string, read func(context.Context) ([]models.Span, error)) ([]models.Span, error) {
	spans, shared, err := safe.Share(&c.reads, ctx, key, read)
	if !shared {
		return spans, err // the only caller: no copy needed
	}
	return slices.Clone(spans), err
}
