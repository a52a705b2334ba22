package prometheus

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/api"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// bodyClient is client_golang's api.Client with a cheaper read of each reply: client_golang
// reads a body into a bytes.Buffer that grows from 512 bytes by doubling, so a 70 KB range
// query's reply cost about 140 KB of copies before it was decoded, on every GPU figure of every
// query (Prometheus gzips its replies, so there is no Content-Length to size it from). Here the
// body is read by upstream.ReadAll: pooled pieces, then one slice of its exact size. The rest
// (building requests, the API's errors, decoding) stays client_golang's.
type bodyClient struct {
	api.Client
	hc *http.Client
}

func (c bodyClient) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	if ctx != nil {
		req = req.WithContext(ctx)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := upstream.ReadAll(resp.Body)
	if err != nil && ctx != nil && ctx.Err() != nil {
		// As client_golang answers a request cancelled while its body is read.
		return resp, nil, ctx.Err()
	}
	return resp, body, err
}
