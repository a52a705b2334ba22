package prometheus

import (
	"context"
	"io"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/api"
)

// bodyClient is client_golang's api.Client with a cheaper read of each reply: client_golang
// reads a body into a bytes.Buffer that grows from 512 bytes by doubling, so a 70 KB range
// query's reply cost about 140 KB of copies before it was decoded, on every GPU figure of every
// query (Prometheus gzips its replies, so there is no Content-Length to size it from). Here the
// body is read into pooled 32 KB pieces, then copied once into a slice of its exact size. The
// rest (building requests, the API's errors, decoding) stays client_golang's.
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
	body, err := readBody(resp.Body)
	if err != nil && ctx != nil && ctx.Err() != nil {
		// As client_golang answers a request cancelled while its body is read.
		return resp, nil, ctx.Err()
	}
	return resp, body, err
}

// bodyPiece is one pooled piece of a reply being read.
const bodyPiece = 32 << 10

var bodyPieces = sync.Pool{New: func() any { b := make([]byte, bodyPiece); return &b }}

// readBody reads r whole: into pooled pieces, then one slice of the exact size (a reply that fits
// one piece costs one allocation of its size). What was read before an error is returned with it.
func readBody(r io.Reader) ([]byte, error) {
	var pieces []*[]byte
	defer func() {
		for _, p := range pieces {
			bodyPieces.Put(p)
		}
	}()
	total, last := 0, 0 // bytes in all pieces, bytes in the last
	var err error
	for {
		if len(pieces) == 0 || last == bodyPiece {
			pieces = append(pieces, bodyPieces.Get().(*[]byte))
			last = 0
		}
		var n int
		n, err = r.Read((*pieces[len(pieces)-1])[last:])
		last += n
		total += n
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	out := make([]byte, 0, total)
	for i, p := range pieces {
		if i == len(pieces)-1 {
			out = append(out, (*p)[:last]...)
		} else {
			out = append(out, *p...)
		}
	}
	return out, err
}
