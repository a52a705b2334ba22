package prometheus

import (
	"context"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/api"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// bodyClient is client_golang's api.Client with a cheaper read of each reply: client_golang
// reads a body into a bytes.Buffer that grows from 512 bytes by doubling, so a 70 KB range
// query's reply cost about 140 KB of copies before it was decoded, on every GPU figure of every
// query (Prometheus gzips its replies, so there is no Content-Length to size it from). Here the
// body is read by upstream.ReadAll, or for a query (queryAPI, whose reader copies what it keeps)
// into a pooled buffer by DoPooled. The rest (building requests, the API's errors) stays
// client_golang's.
type bodyClient struct {
	api.Client
	hc *http.Client
}

func (c bodyClient) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	return send(c, ctx, req, upstream.ReadAll)
}

// DoPooled is Do with the body in a pooled buffer, to be released once read.
func (c bodyClient) DoPooled(ctx context.Context, req *http.Request) (*http.Response, upstream.Body, error) {
	return send(c, ctx, req, upstream.ReadPooled)
}

// send sends req and reads its reply's body with read.
func send[B any](c bodyClient, ctx context.Context, req *http.Request, read func(io.Reader) (B, error)) (*http.Response, B, error) {
	if ctx != nil {
		req = req.WithContext(ctx)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var none B
		return nil, none, err
	}
	defer resp.Body.Close()
	body, err := read(resp.Body)
	if err != nil && ctx != nil && ctx.Err() != nil {
		// As client_golang answers a request cancelled while its body is read.
		return resp, body, ctx.Err()
	}
	return resp, body, err
}

// pooledClient is a client that can read a reply into a pooled buffer (bodyClient).
type pooledClient interface {
	DoPooled(ctx context.Context, req *http.Request) (*http.Response, upstream.Body, error)
}
