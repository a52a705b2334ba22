package prometheus

import (
	"context"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/api"
	"golang.org/x/sync/singleflight"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
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
	// flights shares the replies of requests asked byte for byte the same at the same time.
	flights *singleflight.Group
}

func newBodyClient(c api.Client, hc *http.Client) bodyClient {
	return bodyClient{Client: c, hc: hc, flights: new(singleflight.Group)}
}

func (c bodyClient) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	return shareSend(c, ctx, req, upstream.ReadAll, func(b []byte) []byte { return b })
}

// DoPooled is Do with the body in a pooled buffer, to be released once read.
func (c bodyClient) DoPooled(ctx context.Context, req *http.Request) (*http.Response, upstream.Body, error) {
	// A buffer that several callers read goes to the collector, not back to the list: no caller
	// knows when the others are done with it.
	return shareSend(c, ctx, req, upstream.ReadPooled, upstream.Body.Kept)
}

// shareSend is send, once for the callers that ask the very same request (method, URL and
// body) at the same time: a dashboard's panels and a query's joins ask Prometheus the same
// series at once (under the load test, one query in four was already in flight), and each
// copy cost Prometheus its evaluation and the plugin an HTTP exchange. Only requests in flight
// are shared: nothing is kept after the reply (Pyroscope's replies are kept for the refresh that
// asked them, pyroscope.sharedQuerier; most Prometheus reads end at the panel's now). Each caller
// decodes the reply itself (callers change what they decode: splitParts deletes its label), so
// a shared reply is only read; kept makes a shared body safe to read by every caller. The
// requests carry nothing of their own (the HTTP client adds the data source's credentials).
func shareSend[B any](c bodyClient, ctx context.Context, req *http.Request, read func(io.Reader) (B, error), kept func(B) B) (*http.Response, B, error) {
	key, ok := requestKey(req)
	if !ok {
		return send(c, ctx, req, read)
	}
	type reply struct {
		resp *http.Response
		body B
	}
	r, shared, err := safe.Share(c.flights, ctx, key, func(ctx context.Context) (reply, error) {
		resp, body, err := send(c, ctx, req, read)
		return reply{resp, body}, err
	})
	if shared {
		r.body = kept(r.body)
	}
	return r.resp, r.body, err
}

// requestKey is the request's method, URL and body; false when its body cannot be read again
// (http.NewRequest sets GetBody for the bodies the clients send).
func requestKey(req *http.Request) (string, bool) {
	key := req.Method + " " + req.URL.String()
	if req.Body == nil || req.Body == http.NoBody {
		return key, true
	}
	if req.GetBody == nil {
		return "", false
	}
	body, err := req.GetBody()
	if err != nil {
		return "", false
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		return "", false
	}
	return key + "\x00" + string(b), true
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
