package jaeger

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

func client(t *testing.T, h http.Handler) (*Client, *httptest.Server) {
	t.Helper()
	return clientWithTimeout(t, h, 5*time.Second)
}

// clientWithTimeout is client with the upstream's timeout.
func clientWithTimeout(t *testing.T, h http.Handler, timeout time.Duration) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u := models.Upstream{Name: models.Jaeger, URL: srv.URL, Timeout: timeout}
	hc, err := upstream.NewHTTPClient(u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.Close)
	return New(u, hc.Client), srv
}

func TestServicesPrefersV3(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v3/services" {
			t.Errorf("unexpected call %s", r.URL.Path)
		}
		w.Write([]byte(`{"services":["a","b"]}`))
	}))
	services, api, err := c.Services(context.Background())
	if err != nil || api != APIv3 || strings.Join(services, ",") != "a,b" {
		t.Errorf("services %v api %q err %v", services, api, err)
	}
}

func TestServicesFallsBackToV1AndRemembers(t *testing.T) {
	var v3calls int
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v3/services":
			v3calls++
			http.NotFound(w, r)
		case "/api/services":
			w.Write([]byte(`{"data":["nemotron-backend"],"total":1}`))
		}
	}))
	for range 2 {
		services, api, err := c.Services(context.Background())
		if err != nil || api != APIv1 || len(services) != 1 {
			t.Fatalf("services %v api %q err %v", services, api, err)
		}
	}
	if v3calls != 1 {
		t.Errorf("v3 asked %d times; a v1-only server should be detected once", v3calls)
	}
}

func TestServicesErrorsNameJaegerAndSayWhatCameBack(t *testing.T) {
	c, srv := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "storage backend unavailable", http.StatusServiceUnavailable)
	}))
	_, _, err := c.Services(context.Background())
	want := "Jaeger (" + srv.URL + "): HTTP 503: storage backend unavailable"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}

	// An HTML page on v3 may be Jaeger's UI catch-all (no v3 API): v1 is asked next, and its
	// answer is what the user sees.
	c, _ = client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<html>not jaeger</html>`))
	}))
	if _, _, err = c.Services(context.Background()); err == nil || !strings.Contains(err.Error(), "reply to /api/services is an HTML page, not the JSON Jaeger sends: is this URL Jaeger's query service") {
		t.Errorf("HTML reply: err = %v", err)
	}
	c, _ = client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"services": [`))
	}))
	if _, _, err = c.Services(context.Background()); err == nil || !strings.Contains(err.Error(), "reply to /api/v3/services is truncated (the JSON ends early)") {
		t.Errorf("truncated reply: err = %v", err)
	}
	c, _ = client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"services": 42}`))
	}))
	if _, _, err = c.Services(context.Background()); err == nil || !strings.Contains(err.Error(), "reply to /api/v3/services is not the JSON Jaeger sends") {
		t.Errorf("garbage reply: err = %v", err)
	}
}

// Moved from pkg/plugin's unit tests, whose trace store is now in memory: a Jaeger nothing
// answers on is named, with its URL, as unreachable.
func TestFindTracesNamesAnUnreachableJaeger(t *testing.T) {
	c, srv := client(t, http.NotFoundHandler())
	srv.Close()
	_, err := c.FindTraces(context.Background(), models.TraceSearchQuery{Service: "a"})
	if want := "Jaeger (" + srv.URL + "): unreachable"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}
