package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
)

// asker runs one query over the command's time range: its frames, or the answer's error
// (*answerError) or the transport's.
type asker func(ctx context.Context, model map[string]any) ([]*data.Frame, error)

// answerError is the error a query's answer carries (Grafana shows it on the panel).
type answerError struct{ source, message string }

func (e *answerError) Error() string { return fmt.Sprintf("error (%s): %s", e.source, e.message) }

// requestOptions say which request to explain and how long to wait for its profiles.
type requestOptions struct {
	traceID     string
	wait, every time.Duration // how long to wait for missing profiles, how often to ask again
	rows, width int
}

// requestAnswer is what the trace query said about one request.
type requestAnswer struct {
	spans, breakdown, verdict, flame *data.Frame
	notices                          []data.Notice
}

func readRequestAnswer(fs []*data.Frame) requestAnswer {
	var a requestAnswer
	for _, f := range fs {
		switch f.Name {
		case frames.TraceSpansFrameName:
			a.spans = f
		case frames.BreakdownFrameName:
			a.breakdown = f
		case frames.VerdictFrameName:
			a.verdict = f
		case frames.FlameGraphFrameName:
			a.flame = f
		}
		if f.Meta != nil {
			a.notices = append(a.notices, f.Meta.Notices...)
		}
	}
	return a
}

// profiledServices are the services of the request's spans that carry a profile ID (the
// services that push span profiles), and the others (which send spans only).
func (a requestAnswer) profiledServices() (profiled, spansOnly []string) {
	if a.spans == nil {
		return nil, nil
	}
	service, _ := a.spans.FieldByName("service")
	profileID, _ := a.spans.FieldByName("profileID")
	if service == nil {
		return nil, nil
	}
	with, all := map[string]bool{}, map[string]bool{}
	for i := range a.spans.Rows() {
		s := cell(service, i)
		all[s] = true
		if profileID != nil && cell(profileID, i) != "" {
			with[s] = true
		}
	}
	for s := range all {
		if with[s] {
			profiled = append(profiled, s)
		} else {
			spansOnly = append(spansOnly, s)
		}
	}
	slices.Sort(profiled)
	slices.Sort(spansOnly)
	return profiled, spansOnly
}

// missingProfiles are the profiled services with no samples in the request's flame graph, whose
// first level under the root is the request's services.
func (a requestAnswer) missingProfiles() []string {
	profiled, _ := a.profiledServices()
	sampled := a.samplesByService()
	var missing []string
	for _, s := range profiled {
		if sampled[s] == 0 {
			missing = append(missing, s)
		}
	}
	return missing
}

// samplesByService is the request's flame graph's total per service.
func (a requestAnswer) samplesByService() map[string]int64 {
	out := map[string]int64{}
	if a.flame != nil {
		if root, _, _ := readFlameGraph(a.flame); root != nil {
			for _, c := range root.children {
				out[c.name] += c.value
			}
		}
	}
	return out
}

// duration is the request's duration: its root span's, else the breakdown's parts together.
func (a requestAnswer) duration() (ms float64, ok bool) {
	if a.spans != nil {
		depth, _ := a.spans.FieldByName("depth")
		dur, _ := a.spans.FieldByName("duration")
		if depth != nil && dur != nil {
			for i := range a.spans.Rows() {
				d, _, _ := number(depth.At(i))
				v, _ := dur.ConcreteAt(i)
				x, _, isNum := number(v)
				if d == 0 && isNum && x > ms {
					ms, ok = x, true
				}
			}
		}
	}
	if !ok && a.breakdown != nil {
		if dur, _ := a.breakdown.FieldByName("duration"); dur != nil {
			for i := range a.breakdown.Rows() {
				v, _ := dur.ConcreteAt(i)
				x, _, _ := number(v)
				ms += x
			}
			ok = a.breakdown.Rows() > 0
		}
	}
	return ms, ok
}

var traceIDPattern = regexp.MustCompile(`^([0-9a-fA-F]{16}|[0-9a-fA-F]{32})$`)

// verdictRow is one row of the verdict frame, in the cells the CLI prints.
type verdictRow struct {
	cause, explains, share, evidence, action, caveat, kind, service, hotFunction string
}

func (a requestAnswer) verdictRows() []verdictRow {
	if a.verdict == nil {
		return nil
	}
	get := func(name string, i int) string {
		if f, _ := a.verdict.FieldByName(name); f != nil {
			return cell(f, i)
		}
		return ""
	}
	rows := make([]verdictRow, a.verdict.Rows())
	for i := range rows {
		rows[i] = verdictRow{cause: get("cause", i), explains: get("explains", i), share: get("share", i),
			evidence: get("evidence", i), action: get("action", i), caveat: get("caveat", i),
			kind: get("kind", i), service: get("service", i), hotFunction: get("hotFunction", i)}
	}
	return rows
}

// headline is the answer in one line: how long the request took and its main cause.
func headline(traceID string, a requestAnswer) string {
	who := "Request " + shortID(traceID)
	if ms, ok := a.duration(); ok {
		who += " took " + formatValue(ms, "ms", nil)
	}
	for _, r := range a.verdictRows() {
		if r.kind == frames.LeverKind {
			continue
		}
		line := fmt.Sprintf("%s: %s, %s (%s)", who, r.cause, r.explains, r.share)
		if r.hotFunction != "" {
			line += " — hot function " + r.hotFunction
		}
		return line
	}
	return who + ": the verdict names no cause (see the notes below)"
}

// shortID is a trace ID as people quote it: its first 8 characters.
func shortID(id string) string {
	if len(id) > 10 {
		return id[:8] + "…"
	}
	return id
}

// runRequest explains one request: it asks the trace query, waiting (up to o.wait) until every
// service that pushes span profiles has samples and two answers o.every apart hold the same
// samples, because until the profilers' next upload a service's CPU is missing, or part of it (an
// upload in the middle of the request), and the verdict blames the others; then it prints the
// answer first (duration and main cause, the lever), the causes, the breakdown, the spans and one
// flame graph per service.
func runRequest(ctx context.Context, w, progress io.Writer, ask asker, o requestOptions) error {
	if !traceIDPattern.MatchString(o.traceID) {
		return fmt.Errorf("%q is not a trace ID (16 or 32 hex digits)", o.traceID)
	}
	traceQuery := map[string]any{"queryType": "trace", "traceId": o.traceID}
	deadline := time.Now().Add(o.wait)
	var a requestAnswer
	var missing []string
	var previous map[string]int64
	said, settled := false, false
	for {
		fs, err := ask(ctx, traceQuery)
		var ae *answerError
		switch {
		case err == nil:
			a = readRequestAnswer(fs)
			missing = a.missingProfiles()
			samples := a.samplesByService()
			settled = len(missing) == 0 && previous != nil && maps.Equal(samples, previous)
			previous = samples
			if len(missing) > 0 && !said {
				fmt.Fprintf(progress, "waiting up to %s for the span profiles of %s (profilers upload every 10–15 s)\n",
					seconds(o.wait), strings.Join(missing, ", "))
				said = true
			}
		case errors.As(err, &ae) && strings.Contains(ae.message, "not found"):
			// Jaeger may not hold the trace yet (its exporters flush every few seconds). The answer
			// carries no status for that (every downstream error is a 400), only its words.
			if !time.Now().Before(deadline) {
				return err
			}
			if !said {
				fmt.Fprintf(progress, "waiting up to %s for the trace: %s\n", seconds(o.wait), ae.message)
				said = true
			}
		default:
			return err
		}
		if settled || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.every):
		}
	}
	printRequest(w, o, a, missing)

	fs, err := ask(ctx, map[string]any{"queryType": "profile", "traceId": o.traceID, "perService": true})
	if err != nil {
		return fmt.Errorf("per-service flame graphs: %w", err)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, wrap("", "Flame graphs per service (CPU of the request's spans):", o.width, ""))
	for _, f := range fs {
		if f.Name == frames.FlameGraphFrameName { // the whole request, shown per service below
			continue
		}
		fmt.Fprintln(w)
		printFlameGraph(w, f, o.rows, o.width)
	}
	return nil
}

// printRequest writes the trace query's answer, the verdict first.
func printRequest(w io.Writer, o requestOptions, a requestAnswer, missing []string) {
	profiled, spansOnly := a.profiledServices()
	switch {
	case len(missing) > 0:
		fmt.Fprintln(w, wrap("", fmt.Sprintf("Not complete: no span-profile samples yet for %s after %s. Profilers upload every 10–15 s: "+
			"ask again in a minute. Until then the CPU of %s is missing and the causes below overstate the others.",
			strings.Join(missing, ", "), seconds(o.wait), strings.Join(missing, ", ")), o.width, "  "))
	case len(profiled) > 0:
		line := fmt.Sprintf("Profiles: every profiled service of the request has samples (%s)", strings.Join(profiled, ", "))
		if len(spansOnly) > 0 {
			line += fmt.Sprintf("; %s sends spans without profiles", strings.Join(spansOnly, ", "))
		}
		fmt.Fprintln(w, wrap("", line+".", o.width, "  "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, wrap("", headline(o.traceID, a), o.width, "  "))
	rows := a.verdictRows()
	detail := func(label, text string) {
		if text != "" {
			prefix := fmt.Sprintf("  %-12s", label+":")
			fmt.Fprintln(w, wrap(prefix, text, o.width, strings.Repeat(" ", len(prefix))))
		}
	}
	for _, r := range rows {
		if r.kind != frames.LeverKind {
			detail("evidence", r.evidence)
			detail("what to do", r.action)
			detail("how sure", r.caveat)
			break
		}
	}
	for _, r := range rows {
		if r.kind == frames.LeverKind {
			fmt.Fprintln(w)
			fmt.Fprintln(w, wrap("", r.cause, o.width, "  "))
			detail("what to do", r.action)
			detail("evidence", r.evidence)
			detail("how sure", r.caveat)
		}
	}
	for _, n := range a.notices {
		if n.Severity == data.NoticeSeverityWarning || n.Severity == data.NoticeSeverityError {
			fmt.Fprintln(w, wrap("note: ", n.Text, o.width, "  "))
		}
	}

	if a.verdict != nil && len(rows) > 0 {
		kind, _ := a.verdict.FieldByName("kind")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Causes, by the time each explains:")
		frameTable(a.verdict, o.rows, []string{"rank", "cause", "explains", "share"}, func(i int) bool {
			return kind == nil || cell(kind, i) != frames.LeverKind
		}).write(w, o.width)
	}
	if a.breakdown != nil && a.breakdown.Rows() > 0 {
		fmt.Fprintln(w)
		title := "Where the time went"
		if ms, ok := a.duration(); ok {
			title = "Where the " + formatValue(ms, "ms", nil) + " went"
		}
		fmt.Fprintln(w, wrap("", title+" (the parts add up to the request):", o.width, ""))
		frameTable(a.breakdown, o.rows, []string{"part", "duration", "share", "source"}, nil).write(w, o.width)
	}
	if a.spans != nil && a.spans.Rows() > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, wrap("", "Spans (CPU and hot function from each span's profile; the GPU class of its host's GPUs during it):", o.width, ""))
		fields := []string{"service", "operation", "duration", "self"}
		for _, f := range a.spans.Fields { // the CPU column is named by the profile type's sample type
			if f.Config != nil && f.Config.Unit == "ns" && f.Name != "gpuKernelTime" {
				fields = append(fields, f.Name)
				break
			}
		}
		fields = append(fields, "hotFunction", "gpuClass")
		frameTable(a.spans, o.rows, fields, nil).write(w, o.width)
	}
}

// seconds says a wait as people do: "60 s".
func seconds(d time.Duration) string { return fmt.Sprintf("%.0f s", d.Seconds()) }
