package upstream

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
)

// gzipReaders are decompressors kept between replies, each with its read buffer. Go's
// transport makes new ones for each gzipped reply (a 32 KB window, a 4 KB buffer); under load
// that was a few percent of all the plugin allocated, and the collector's work with it.
var gzipReaders sync.Pool

type gzipReader struct {
	zr *gzip.Reader
	br *bufio.Reader // gzip reads through it (it takes a ByteReader as it is, else wraps a new one)
}

// pooledGzip asks for gzipped replies and decompresses them with pooled readers, as Go's
// transport does with new ones: it must be the innermost middleware, over a transport with
// DisableCompression set, so that the middlewares above it (the response limit) see the
// uncompressed body. A request that names its own Accept-Encoding (Connect, for Pyroscope, does
// and decompresses itself) or a Range is left alone, as the transport leaves it.
func pooledGzip() httpclient.Middleware {
	return httpclient.NamedMiddlewareFunc("HSIPooledGzip", func(_ httpclient.Options, next http.RoundTripper) http.RoundTripper {
		return httpclient.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Header.Get("Accept-Encoding") != "" || req.Header.Get("Range") != "" || req.Method == http.MethodHead {
				return next.RoundTrip(req)
			}
			req = req.Clone(req.Context()) // a RoundTripper does not change its caller's request
			req.Header.Set("Accept-Encoding", "gzip")
			res, err := next.RoundTrip(req)
			if err != nil || res == nil || !strings.EqualFold(res.Header.Get("Content-Encoding"), "gzip") {
				return res, err
			}
			res.Body = &gzipBody{body: res.Body}
			res.Header.Del("Content-Encoding")
			res.Header.Del("Content-Length")
			res.ContentLength = -1
			res.Uncompressed = true
			return res, nil
		})
	})
}

// gzipBody decompresses a reply with a pooled reader, taken at the first Read (the gzip header
// is read then, as the transport's own reader does) and given back at Close.
type gzipBody struct {
	body   io.ReadCloser
	mu     sync.Mutex // a Close may come while a Read waits on the network
	r      *gzipReader
	err    error // the error opening the stream
	closed bool
}

func (g *gzipBody) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if g.r == nil {
		if g.err != nil {
			return 0, g.err
		}
		r, _ := gzipReaders.Get().(*gzipReader)
		if r == nil {
			r = &gzipReader{br: bufio.NewReader(g.body)}
		} else {
			r.br.Reset(g.body)
		}
		var err error
		if r.zr == nil {
			r.zr, err = gzip.NewReader(r.br)
		} else {
			err = r.zr.Reset(r.br)
		}
		if err != nil {
			g.err = err
			r.br.Reset(nil)
			gzipReaders.Put(r)
			return 0, err
		}
		g.r = r
	}
	return g.r.zr.Read(p)
}

// Close closes the reply first, which ends a Read waiting on the network, then gives the
// reader back.
func (g *gzipBody) Close() error {
	err := g.body.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		if g.r != nil {
			g.r.br.Reset(nil) // keeps no reply alive in the pool
			gzipReaders.Put(g.r)
			g.r = nil
		}
	}
	return err
}
