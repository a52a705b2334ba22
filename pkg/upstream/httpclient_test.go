package upstream

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func get(t *testing.T, u models.Upstream) error {
	t.Helper()
	c, err := NewHTTPClient(u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, u.URL+"/ready", nil)
	res, err := c.Do(req)
	if err == nil {
		res.Body.Close()
	}
	return err
}

func TestTimeoutIsEnforcedAndDescribed(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	err := get(t, models.Upstream{Name: models.Jaeger, URL: srv.URL, Timeout: time.Second})
	if err == nil {
		t.Fatal("a reply slower than the timeout must fail")
	}
	if d := Describe(err); !strings.HasPrefix(d, "timed out (") {
		t.Errorf("Describe = %q", d)
	}
	werr := Wrap(models.Jaeger, srv.URL, err)
	if !strings.HasPrefix(werr.Error(), "Jaeger ("+srv.URL+"): timed out") || !backend.IsDownstreamError(werr) {
		t.Errorf("Wrap = %v (downstream %v)", werr, backend.IsDownstreamError(werr))
	}
}

func TestTLSOptions(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))

	if err := get(t, models.Upstream{Name: models.Prometheus, URL: srv.URL, Timeout: 5 * time.Second}); err == nil ||
		!strings.Contains(Describe(err), "certificate") {
		t.Errorf("unknown CA: err = %v", err)
	}
	if err := get(t, models.Upstream{Name: models.Prometheus, URL: srv.URL, Timeout: 5 * time.Second, TLS: models.TLS{SkipVerify: true}}); err != nil {
		t.Errorf("skip verify: %v", err)
	}
	if err := get(t, models.Upstream{Name: models.Prometheus, URL: srv.URL, Timeout: 5 * time.Second, TLS: models.TLS{CACert: caPEM, ServerName: "example.com"}}); err != nil {
		t.Errorf("CA certificate: %v", err)
	}
}

func TestBadClientCertificateIsAClearError(t *testing.T) {
	_, err := NewHTTPClient(models.Upstream{Name: models.Pyroscope, URL: "https://p", Timeout: time.Second,
		TLS: models.TLS{ClientCert: "not a pem", ClientKey: "secret-key-material"}})
	if err == nil || !strings.HasPrefix(err.Error(), "Pyroscope: cannot build HTTP client") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "secret-key-material") {
		t.Errorf("error leaks the key: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&HTTPStatusError{Status: 503, Body: "overloaded"}, "HTTP 503: overloaded"},
		{connect.NewError(connect.CodeUnauthenticated, errors.New("bad token")), "authentication failed (bad token)"},
		{connect.NewError(connect.CodeUnimplemented, errors.New("404 page not found")), "does not support this call (404 page not found): is this URL a Pyroscope server?"},
		{connect.NewError(connect.CodeInvalidArgument, errors.New("parse error")), "invalid_argument: parse error"},
		{context.Canceled, "cancelled"},
	}
	for _, c := range cases {
		if got := Describe(c.err); got != c.want {
			t.Errorf("Describe(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestConcurrentRequestsAreBoundedAndTheRestWait(t *testing.T) {
	var now, peak atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := now.Add(1)
		defer now.Add(-1)
		for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
		}
		<-release
	}))
	defer srv.Close()
	c, err := NewHTTPClient(models.Upstream{Name: models.Pyroscope, URL: srv.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const sent = MaxConcurrentRequests + 8
	errs := make(chan error, sent)
	var wg sync.WaitGroup
	for range sent {
		wg.Go(func() {
			res, err := c.Get(srv.URL)
			if err == nil {
				res.Body.Close()
			}
			errs <- err
		})
	}
	for deadline := time.Now().Add(5 * time.Second); now.Load() < MaxConcurrentRequests && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // time for any request beyond the bound to arrive
	if p := peak.Load(); p != MaxConcurrentRequests {
		t.Errorf("%d requests reached the server at once, want %d", p, MaxConcurrentRequests)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a request that waited for a connection failed: %v", err)
		}
	}
}
