package tempo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/tempofake"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

// The client reads the bed's Tempo fake as it reads Tempo (the same check runs against the bed's
// Tempo, real where HSI_TEMPO_BIN names one: integration_test.go).
func TestClientReadsTheTempoFake(t *testing.T) {
	fake := startFake(t, tempofake.Options{Tenant: "team-a"})
	checkTempo(t, tempoUnderTest{url: fake.URL, tenant: "team-a", send: func(ctx context.Context, start time.Time, spans []testbed.SentSpan) (string, error) {
		return testbed.SendTenantSpans(ctx, fake.OTLPAddr, "team-a", start, spans)
	}})
}

// A trace over the server's size limit comes back partial, with Tempo's reason.
func TestClientSaysATraceIsPartial(t *testing.T) {
	fake := startFake(t, tempofake.Options{MaxBytesPerTrace: 700})
	id, err := testbed.SendSpans(context.Background(), fake.OTLPAddr, time.Now().Add(-time.Second), testbed.FailedAttemptSpans)
	if err != nil {
		t.Fatal(err)
	}
	c := tempoUnderTest{url: fake.URL}.client(t, "")
	tr, err := c.Trace(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tr.Partial, "Trace exceeds maximum size of 700 bytes") || len(tr.Spans) == 0 || len(tr.Spans) >= len(testbed.FailedAttemptSpans) {
		t.Errorf("partial %q with %d spans", tr.Partial, len(tr.Spans))
	}
}

func startFake(t *testing.T, opts tempofake.Options) *tempofake.Server {
	t.Helper()
	opts.HTTPAddr, opts.OTLPAddr = "127.0.0.1:0", "127.0.0.1:0"
	fake, err := tempofake.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	return fake
}
