package testbed

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
)

// Bounds of SlowRequest: a request's span profiles reach Pyroscope at the demo's next upload
// (2 s), but on a busy 2-core machine a short service call can miss the 100 Hz sampler, so
// another request goes out every slowRequestEvery while none is profiled in every service.
const (
	slowRequestEvery   = 10 * time.Second
	slowRequestTimeout = 60 * time.Second
)

// WholeRequestNotice asks the plugin for the CPU profile of trace traceID's whole request and
// returns the first notice of its flame graph (how its samples were matched), or the query's
// error as an error.
type WholeRequestNotice func(ctx context.Context, traceID string) (string, error)

// SlowRequest sends the demo requests slow in their database step (GET /api/detect?slow=db) and
// returns the trace ID of the first one whose whole-request profile the plugin answers from span
// profiles of every service of the request, as a user picks a slow request from a dashboard.
// notice asks the plugin (through its binary, HostNotice, or in process).
func SlowRequest(ctx context.Context, e Endpoints, notice WholeRequestNotice) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, slowRequestTimeout)
	defer cancel()
	var ids []string
	last := "no answer yet"
	for start := time.Now(); ; {
		if len(ids) < 1+int(time.Since(start)/slowRequestEvery) {
			id, err := sendSlowRequest(ctx, e)
			if err != nil {
				return "", err
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			text, err := notice(ctx, id)
			switch {
			case err != nil:
				last = err.Error()
			case ProfiledInEveryService(text):
				return id, nil
			default:
				last = text
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("none of the demo's slow requests %v got span profiles in all its services within %s; last answer: %s", ids, slowRequestTimeout, last)
		case <-time.After(time.Second):
		}
	}
}

func sendSlowRequest(ctx context.Context, e Endpoints) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.DemoURL+"/api/detect?slow=db", nil)
	if err != nil {
		return "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("the demo's slow request: %w", err)
	}
	res.Body.Close()
	id := res.Header.Get("X-Trace-Id")
	if len(id) != 32 {
		return "", fmt.Errorf("the demo answered %s with trace ID %q", res.Status, id)
	}
	return id, nil
}

// everyService matches the whole-request notice's count of services with samples and their names.
var everyService = regexp.MustCompile(`matched by span ID: .* in (\d+) of (\d+) service\(s\) \(([^)]*)\)`)

// ProfiledDemoServices are the demo's services that send span profiles (the engine, like vLLM,
// sends none): a request to the backend passes through all three.
var ProfiledDemoServices = []string{"ai-detector", "ai-enrichment", "nemotron-backend"}

// ProfiledInEveryService says whether a whole-request notice reports span-profile samples in
// every service of the request ("... matched by span ID: ... in 3 of 3 service(s) (a, b, c)."),
// and names every profiled demo service: Jaeger can answer with a trace whose last spans (the
// backend's, which end last) are not stored yet, and "2 of 2" of such a trace is not the request.
func ProfiledInEveryService(notice string) bool {
	m := everyService.FindStringSubmatch(notice)
	if m == nil || m[1] != m[2] {
		return false
	}
	names := strings.Split(m[3], ", ")
	for _, s := range ProfiledDemoServices {
		if !slices.Contains(names, s) {
			return false
		}
	}
	return true
}

// HostNotice asks the plugin binary h, as Grafana does, for the whole-request CPU profile over
// the last hour.
func HostNotice(h *pluginhost.Host) WholeRequestNotice {
	return func(ctx context.Context, traceID string) (string, error) {
		now := time.Now()
		res, err := h.QueryData(ctx, pluginhost.Query{RefID: "A", From: now.Add(-time.Hour), To: now,
			JSON: map[string]any{"queryType": "profile", "traceId": traceID}})
		if err != nil {
			return "", err
		}
		a := res.Responses["A"]
		if a.Error != "" {
			return "", fmt.Errorf("%s", a.Error)
		}
		frames, err := data.UnmarshalArrowFrames(a.Frames)
		if err != nil {
			return "", err
		}
		if len(frames) == 0 || frames[0].Meta == nil || len(frames[0].Meta.Notices) == 0 {
			return "", fmt.Errorf("a whole-request profile without notices (%d frames)", len(frames))
		}
		return frames[0].Meta.Notices[0].Text, nil
	}
}
