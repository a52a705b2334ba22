//go:build integration

package jaeger

import (
	"context"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// A real Jaeger v2 query server closes the connection after every reply unless its HTTP
// keep-alive is set on (keep_alives_enabled, as the bed and docker-compose.yaml set it): the
// client sees which, for the health check to say so.
func TestRealJaegerClosesConnectionsUnlessKeepAlivesAreOn(t *testing.T) {
	for _, keep := range []bool{false, true} {
		url, stop, err := testbed.StartJaegerQuery(context.Background(), keep)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		u := models.Upstream{Name: models.Jaeger, URL: url, Timeout: 30 * time.Second}
		hc, err := upstream.NewHTTPClient(u)
		if err != nil {
			t.Fatal(err)
		}
		c := New(u, hc.Client)
		for range 2 {
			if _, api, err := c.Services(t.Context()); err != nil || api != APIv3 {
				t.Fatalf("keep-alive %v: services: API %q, %v", keep, api, err)
			}
			if c.ClosesConnections() == keep {
				t.Errorf("keep_alives_enabled %v, yet ClosesConnections says %v", keep, c.ClosesConnections())
			}
		}
		hc.Close()
	}
	// The bed's own Jaeger keeps its connections, as the load test's figures assume.
	u := models.Upstream{Name: models.Jaeger, URL: bed.JaegerURL, Timeout: 30 * time.Second}
	hc, err := upstream.NewHTTPClient(u)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	c := New(u, hc.Client)
	if _, _, err := c.Services(t.Context()); err != nil || c.ClosesConnections() {
		t.Errorf("the bed's Jaeger: %v, closes its connections: %v", err, c.ClosesConnections())
	}
}
