package upstream

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// gzipServer answers each path's reply gzipped when the request accepts gzip (as Prometheus and
// Jaeger do), and records the Accept-Encoding it was sent.
func gzipServer(t *testing.T, replies map[string][]byte) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var accepted []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		accepted = append(accepted, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		body := replies[r.URL.Path]
		if r.URL.Path == "/truncated" {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gzipped(t, body)[:20])
			return
		}
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			_, _ = w.Write(body)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(gzipped(t, body))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return copied(accepted) }
}

func copied(s []string) []string { return append([]string(nil), s...) }

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func fetch(t *testing.T, c *HTTPClient, url string, header http.Header) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

// Replies come gzipped and are read uncompressed, many in a row and at once (the pooled readers
// taken and given back), each its own; the caller sees no Content-Encoding, as with Go's own
// transparent decompression.
func TestGzippedRepliesAreReadUncompressed(t *testing.T) {
	replies := map[string][]byte{}
	for i, word := range []string{"alpha", "beta", "gamma", "delta"} {
		replies["/"+word] = bytes.Repeat([]byte(word), 1000*(i+1))
	}
	srv, accepted := gzipServer(t, replies)
	c, err := NewHTTPClient(models.Upstream{Name: models.Prometheus, URL: srv.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for path, want := range replies {
				res, got, err := fetch(t, c, srv.URL+path, nil)
				if err != nil {
					t.Errorf("%s: %v", path, err)
					return
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s: read %d bytes %.20q..., want %d bytes %.20q...", path, len(got), got, len(want), want)
				}
				if ce := res.Header.Get("Content-Encoding"); ce != "" || !res.Uncompressed {
					t.Errorf("%s: Content-Encoding %q, Uncompressed %v: the caller must see the reply as uncompressed", path, ce, res.Uncompressed)
				}
			}
		})
	}
	wg.Wait()
	for _, a := range accepted() {
		if a != "gzip" {
			t.Fatalf("a request asked Accept-Encoding %q, want gzip", a)
		}
	}
}

// A request that names its own encoding (Connect does, and decompresses itself) gets the reply
// as the server sent it; a reply not gzipped is read as it is.
func TestOwnAcceptEncodingIsLeftAlone(t *testing.T) {
	want := []byte(strings.Repeat("profile", 100))
	srv, _ := gzipServer(t, map[string][]byte{"/p": want})
	c, err := NewHTTPClient(models.Upstream{Name: models.Pyroscope, URL: srv.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, got, err := fetch(t, c, srv.URL+"/p", http.Header{"Accept-Encoding": {"gzip"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(got, gzipped(t, want)) {
		t.Errorf("own Accept-Encoding: Content-Encoding %q, %d bytes: the reply must come as sent", res.Header.Get("Content-Encoding"), len(got))
	}
	_, got, err = fetch(t, c, srv.URL+"/p", http.Header{"Accept-Encoding": {"identity"}})
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("identity: %d bytes, %v", len(got), err)
	}
}

// A gzipped reply cut short is a read error, not a short reply taken for whole; the pooled
// reader that saw it serves the next reply correctly.
func TestTruncatedGzipIsAnError(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789"), 500)
	srv, _ := gzipServer(t, map[string][]byte{"/truncated": want, "/whole": want})
	c, err := NewHTTPClient(models.Upstream{Name: models.Jaeger, URL: srv.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, got, err := fetch(t, c, srv.URL+"/truncated", nil); err == nil {
		t.Errorf("a truncated gzip stream read %d bytes without error", len(got))
	}
	for range 3 {
		if _, got, err := fetch(t, c, srv.URL+"/whole", nil); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after a truncated reply: %d bytes, %v", len(got), err)
		}
	}
}

// A read after Close fails, and Close twice is harmless.
func TestGzipBodyClosed(t *testing.T) {
	b := &gzipBody{body: io.NopCloser(bytes.NewReader(gzipped(t, []byte("x"))))}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(make([]byte, 1)); err == nil {
		t.Error("a read after Close succeeded")
	}
}
