package tempo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// tempoUnderTest is a Tempo to check the client against: the bed's fake or a real server.
type tempoUnderTest struct {
	url, tenant string
	// send exports one request's spans to it (OTLP), starting at start, and returns the trace ID.
	send func(ctx context.Context, start time.Time, spans []testbed.SentSpan) (string, error)
}

func (tt tempoUnderTest) client(t *testing.T, tenant string) *Client {
	t.Helper()
	u := models.Upstream{Name: models.Tempo, Key: "tempo", URL: tt.url, Tenant: tenant, Timeout: 30 * time.Second, Auth: models.AuthNone}
	hc, err := upstream.NewHTTPClient(u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.Close)
	return New(u, hc.Client)
}

// checkTempo sends the bed's failed-attempt request (two services, an OOM exception event, error
// statuses) under a service name of its own and reads it back every way the plugin does: by ID,
// searched, its spans, as a failed request, the services and operations, the build; then
// without a tenant. Each search waits, within a bound, for the very request it looks for: a
// real Tempo makes spans searchable a moment after it takes them.
func checkTempo(t *testing.T, tt tempoUnderTest) {
	ctx := context.Background()
	suffix := strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	gateway, embedder := "tempo-gateway-"+suffix, "tempo-embedder-"+suffix
	spans := slices.Clone(testbed.FailedAttemptSpans)
	for i := range spans {
		spans[i].Service = strings.NewReplacer("hsi-gateway", gateway, "hsi-embedder", embedder).Replace(spans[i].Service)
	}
	start := time.Now().Add(-2 * time.Second)
	id, err := tt.send(ctx, start, spans)
	if err != nil {
		t.Fatalf("sending spans: %v", err)
	}
	c := tt.client(t, tt.tenant)
	window := models.TraceSearchQuery{Start: start.Add(-time.Minute), End: time.Now().Add(time.Minute), Limit: 20}

	var tr *models.Trace
	eventually(t, "the trace by ID, all 5 spans", func() bool {
		tr, err = c.Trace(ctx, id)
		return err == nil && len(tr.Spans) == len(spans)
	}, func() string { return errText(err) })
	if tr.TraceID != id || tr.Partial != "" || tr.API != APIv2 {
		t.Errorf("trace %s: API %q partial %q", tr.TraceID, tr.API, tr.Partial)
	}
	var failed, withEvent int
	for _, s := range tr.Spans {
		if s.Status == models.StatusError {
			failed++
		}
		if len(s.Events) > 0 && s.Events[0].Attributes["exception.type"] == testbed.OOMExceptionType {
			withEvent++
		}
	}
	if failed != 2 || withEvent != 1 {
		t.Errorf("trace read back with %d failed spans and %d OOM events, want 2 and 1", failed, withEvent)
	}

	q := window
	q.Service, q.Operation, q.MinDuration = gateway, "POST /v1/embed", 800*time.Millisecond
	var found []models.TraceSummary
	eventually(t, "the trace searched by service, operation and least duration", func() bool {
		found, err = c.FindTraces(ctx, q)
		return err == nil && len(found) == 1 && found[0].RootService != ""
	}, func() string { return errText(err) })
	if f := found[0]; f.TraceID != id || f.RootService != gateway || f.RootOperation != "POST /v1/embed" ||
		f.Duration != 900*time.Millisecond || f.Spans != 5 || !slices.Equal(f.Services, []string{embedder, gateway}) {
		t.Errorf("search hit %+v", f)
	}
	q.MinDuration = 901 * time.Millisecond
	if found, err := c.FindTraces(ctx, q); err != nil || len(found) != 0 {
		t.Errorf("a least duration above the root's found %v, %v", found, err)
	}

	sq := window
	sq.Service, sq.Operation = embedder, "embed_batch"
	var got []models.Span
	eventually(t, "both embed_batch spans", func() bool {
		got, err = c.SearchSpans(ctx, sq)
		return err == nil && len(got) == 2
	}, func() string { return errText(err) })
	if got[0].Duration != 390*time.Millisecond || got[1].Duration != 450*time.Millisecond || got[0].TraceID != id || got[0].Service != embedder {
		t.Errorf("spans %+v", got)
	}

	fq := window
	fq.Service = embedder
	var failedTraces []*models.Trace
	eventually(t, "the failed request", func() bool {
		failedTraces, err = c.FailedTraces(ctx, fq)
		return err == nil && len(failedTraces) == 1
	}, func() string { return errText(err) })
	if len(failedTraces[0].Spans) != 5 {
		t.Errorf("the failed request read with %d spans", len(failedTraces[0].Spans))
	}

	var services []string
	eventually(t, "both services listed", func() bool {
		services, _, err = c.Services(ctx)
		return err == nil && slices.Contains(services, gateway) && slices.Contains(services, embedder)
	}, func() string { return errText(err) })
	var ops []string
	eventually(t, "the gateway's operations", func() bool {
		ops, err = c.Operations(ctx, gateway)
		return err == nil && len(ops) == 2
	}, func() string { return errText(err) })
	if !slices.Equal(ops, []string{"POST", "POST /v1/embed"}) {
		t.Errorf("operations %v", ops)
	}
	// The latency table from TraceQL metrics: the embedder's two server spans, 390 and 450 ms.
	lq := models.TraceLatencyQuery{Service: embedder, Start: window.Start, End: window.End, Quantiles: []float64{0.5, 0.99}}
	var lat models.TraceLatencyResult
	eventually(t, "the embedder's latency from TraceQL metrics", func() bool {
		lat, err = c.EndpointLatencies(ctx, lq)
		return err == nil && len(lat.Rows) == 1 && lat.Rows[0].Requests == 2
	}, func() string { return fmt.Sprintf("%+v %s", lat, errText(err)) })
	// Tempo's quantiles are estimates from power-of-two buckets: within a factor of two.
	if r := lat.Rows[0]; r.Service != embedder || r.Endpoint != "embed_batch" || r.Quantiles[0] < 0.39/2 || r.Quantiles[0] > 0.45*2 || r.Quantiles[1] < r.Quantiles[0] {
		t.Errorf("latency row %+v", r)
	}

	if v, err := c.Version(ctx); err != nil || v == "" {
		t.Errorf("version %q %v", v, err)
	}

	// A trace nobody sent: not found, as the plugin's callers test it.
	if _, err := c.Trace(ctx, "0af7651916cd43dd8448eb211c80319c"); !errors.Is(err, models.ErrTraceNotFound) {
		t.Errorf("unknown trace: %v", err)
	}
	if tt.tenant != "" {
		_, err := tt.client(t, "").Trace(ctx, id)
		if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "no org id") || !strings.Contains(err.Error(), "jsonData.tempoTenant") {
			t.Errorf("without a tenant: %v", err)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// eventually polls cond every 200 ms until it holds, failing after a minute with what last came.
func eventually(t *testing.T, what string, cond func() bool, last func() string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not there after a minute (last: %s)", what, last())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
