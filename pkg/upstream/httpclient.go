// Package upstream builds the HTTP client of one upstream (Pyroscope, Prometheus or Jaeger) with
// the SDK's httpclient, so that auth, TLS, timeouts, tracing and trace-context propagation come
// from one well-kept place, and turns transport failures into messages that name the upstream.
package upstream

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// SpanAttribute is the attribute that names the upstream on every span of an upstream call.
const SpanAttribute = "hsi.upstream"

// MaxResponseBytes bounds what one upstream reply may weigh; a bigger one is an error, not an
// out-of-memory plugin.
const MaxResponseBytes = 256 << 20

// HTTPClient is one upstream's HTTP client. Close releases its pooled connections (the
// middleware chain hides the transport from http.Client.CloseIdleConnections).
type HTTPClient struct {
	*http.Client
	transport *http.Transport
}

// Close closes the idle connections; requests still in flight finish normally.
func (c *HTTPClient) Close() {
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
}

// MaxConcurrentRequests bounds the connections, so over HTTP/1.1 the requests, one data source
// has to one upstream at once; more wait for a connection, within their timeout. A dashboard's
// panels at once, each fanning out (a whole request asks Pyroscope once per span), otherwise
// overrun Pyroscope's query scheduler, which refuses more than 100 outstanding requests per
// tenant ("resource_exhausted: too many outstanding requests"), as the load test (test/load)
// showed with 32 panels in flight. Over HTTP/2 the server's stream limit applies instead.
const MaxConcurrentRequests = 16

// NewHTTPClient returns the client for one configured upstream. The SDK's default middlewares
// give each request made inside a recorded span an OpenTelemetry span of its own (labelled with
// the upstream's name), and every request carries the trace context in its headers.
func NewHTTPClient(u models.Upstream) (*HTTPClient, error) {
	out := &HTTPClient{}
	opts := httpclient.Options{
		ConfigureTransport: func(_ httpclient.Options, t *http.Transport) {
			out.transport = t
			t.DisableCompression = true // pooledGzip decompresses instead
		},
		Timeouts: &httpclient.TimeoutOptions{
			Timeout:               u.Timeout,
			DialTimeout:           u.Timeout,
			KeepAlive:             httpclient.DefaultTimeoutOptions.KeepAlive,
			TLSHandshakeTimeout:   u.Timeout,
			ExpectContinueTimeout: httpclient.DefaultTimeoutOptions.ExpectContinueTimeout,
			MaxIdleConns:          100,
			MaxConnsPerHost:       MaxConcurrentRequests,
			MaxIdleConnsPerHost:   MaxConcurrentRequests,
			IdleConnTimeout:       httpclient.DefaultTimeoutOptions.IdleConnTimeout,
		},
		Header: http.Header{},
		Labels: map[string]string{SpanAttribute: u.Name, "hsi.upstream.url": u.URL},
		// The SDK's defaults, with a response limit of our own and the secrets taken out of
		// error replies.
		Middlewares: []httpclient.Middleware{
			tracedRequests(), // the SDK's TracingMiddleware where a span records
			httpclient.DataSourceMetricsMiddleware(),
			httpclient.BasicAuthenticationMiddleware(),
			httpclient.CustomHeadersMiddleware(),
			httpclient.UserAgentMiddleware(),
			httpclient.ContextualMiddleware(),
			httpclient.ErrorSourceMiddleware(),
			redactErrorReplies(Secrets(u)),
			httpclient.ResponseLimitMiddleware(MaxResponseBytes),
			pooledGzip(), // innermost: the limit above counts uncompressed bytes
		},
	}
	switch u.Auth {
	case models.AuthBasic:
		opts.BasicAuth = &httpclient.BasicAuthOptions{User: u.User, Password: u.Password}
	case models.AuthBearer:
		opts.Header.Set("Authorization", "Bearer "+u.BearerToken)
	}
	if u.Tenant != "" {
		opts.Header.Set("X-Scope-OrgID", u.Tenant)
	}
	if u.TLS.SkipVerify || u.TLS.ServerName != "" || u.TLS.CACert != "" || u.TLS.ClientCert != "" {
		opts.TLS = &httpclient.TLSOptions{
			InsecureSkipVerify: u.TLS.SkipVerify,
			ServerName:         u.TLS.ServerName,
			CACertificate:      u.TLS.CACert,
			ClientCertificate:  u.TLS.ClientCert,
			ClientKey:          u.TLS.ClientKey,
		}
	}
	c, err := httpclient.New(opts)
	if err != nil {
		// The SDK's TLS errors name the PEM block, never its content.
		return nil, fmt.Errorf("%s: cannot build HTTP client: %w", u.Name, err)
	}
	c.CheckRedirect = sameOrigin
	out.Client = c
	return out, nil
}

// sameOrigin follows a redirect only within the upstream's own scheme, host and port. The
// plugin calls the configured upstreams and nothing else: a redirect elsewhere (a proxy's login
// page, an http-to-https hop, a hostile server) would take the request, and the credentials the
// middlewares add to every request, to a host nobody configured.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("redirected to %s://%s, another address: set the URL to the address it redirects to", req.URL.Scheme, req.URL.Host)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}
