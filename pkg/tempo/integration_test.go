//go:build integration

package tempo

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

var bed testbed.Endpoints

func TestMain(m *testing.M) { os.Exit(testbed.MainForTests(m, &bed)) }

// The bed's Tempo (the fake, or the real one HSI_TEMPO_BIN names) holds what Jaeger takes: the
// spans go to Jaeger's OTLP receiver, as the demo's do, and reach Tempo through Jaeger's
// exporter.
func TestBedTempoHoldsWhatJaegerTakes(t *testing.T) {
	t.Logf("the bed's Tempo: %s (%s)", bed.TempoURL, bed.TempoVersion)
	checkTempo(t, tempoUnderTest{url: bed.TempoURL, tenant: bed.TempoTenant, send: func(ctx context.Context, start time.Time, spans []testbed.SentSpan) (string, error) {
		return testbed.SendSpans(ctx, bed.JaegerOTLP, start, spans)
	}})
}

// The real-server tier: a real Tempo single binary of its own, spans sent straight to it. It runs
// where HSI_TEMPO_BIN names a Tempo binary (a snapshot of grafana/tempo builds offline with
// go build -mod=vendor ./cmd/tempo; see the developer guide).
func TestRealTempo(t *testing.T) {
	bin := os.Getenv(testbed.TempoBinEnv)
	if bin == "" {
		t.Skipf("%s is not set: the real-Tempo tier did not run (the Tempo fake was checked instead). Build Tempo and set %s to run it: docs/sources/developer-guide.md", testbed.TempoBinEnv, testbed.TempoBinEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ports, err := testbed.FreePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := testbed.StartRealTempo(ctx, bin, t.TempDir(), ports[0], ports[1], ports[2], ports[3])
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	c := tempoUnderTest{url: rt.URL, tenant: "team-a"}
	v, err := c.client(t, "team-a").Version(ctx)
	t.Logf("real Tempo %s at %s (version %q, %v)", bin, rt.URL, v, err)
	c.send = func(ctx context.Context, start time.Time, spans []testbed.SentSpan) (string, error) {
		return testbed.SendTenantSpans(ctx, rt.OTLPAddr, "team-a", start, spans)
	}
	checkTempo(t, c)
}
