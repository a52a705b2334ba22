package tracestore

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// DefaultDiffRecent is how many recent requests a baseline merges when Recent is 0.
const DefaultDiffRecent = 10

// MaxDiffFiles bounds the files one side of a diff reads: requests whose files would pass it
// are left out of the baseline, with a notice.
const MaxDiffFiles = 100

// refPattern is a glob on file references; whole: on the whole reference, else on its name.
type refPattern struct {
	glob  string
	whole bool
}

func (p refPattern) matches(ref string) bool {
	if !p.whole {
		ref = path.Base(ref)
	}
	ok, _ := path.Match(p.glob, ref)
	return ok
}

// DefaultBaselineMatch is the default baseline rule for a target file, as a glob on the whole
// file reference: the file's directory, a part named like a day (YYYY-MM-DD) standing for any
// day, and the file's name up to the trace ID it names. So
// bucket:fleet/infer/2026-11-27/infer_<id>.pt.trace.json.gz (the layout of "Laying out uploads
// for a fleet") gives bucket:fleet/infer/*/infer_*: the same service's traces of every day; a
// file of a folder, its folder's files with the same name before the ID; a file whose name names
// no trace ID, every trace file of its directory.
func DefaultBaselineMatch(ref string) string {
	dir, name := path.Split(ref)
	var b strings.Builder
	if dir != "" {
		parts := strings.Split(strings.TrimSuffix(dir, "/"), "/")
		for i, p := range parts {
			if i > 0 {
				b.WriteByte('/')
			}
			if isDay(p) {
				b.WriteByte('*')
			} else {
				b.WriteString(escapeGlob(p))
			}
		}
		b.WriteByte('/')
	}
	if ids := activity.TraceIDsIn(name); len(ids) > 0 {
		if at := strings.Index(strings.ToLower(name), ids[0]); at > 0 {
			b.WriteString(escapeGlob(name[:at]))
		}
	}
	b.WriteByte('*')
	return b.String()
}

// isDay says whether a path part is a day, YYYY-MM-DD.
func isDay(p string) bool {
	if len(p) != 10 || p[4] != '-' || p[7] != '-' {
		return false
	}
	for i, c := range p {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// escapeGlob makes s match itself in path.Match.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := range len(s) { // bytes: the metacharacters are ASCII, and other bytes stay as they are
		if strings.IndexByte(`*?[]\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// requestKey is the request a listed file belongs to: the low 16 digits of the first trace ID
// its name names (so a 64-bit and a 128-bit ID of one request are one), else the file alone.
func requestKey(f gputrace.TraceFile) string {
	if len(f.TraceIDs) > 0 {
		id := f.TraceIDs[0]
		return id[len(id)-16:]
	}
	return "file " + f.Rel
}

// namesAny says whether the file's name names one of the trace IDs.
func namesAny(f gputrace.TraceFile, ids []string) bool {
	for _, id := range ids {
		if nameMatches(f, id) {
			return true
		}
	}
	return false
}

// baselineGroup is one request of a recent baseline and its listed files.
type baselineGroup struct {
	key   string
	files []gputrace.TraceFile
}

// recentRequests picks from a listing (most recent first) the most recent requests, at most
// recent, whose files match one of the patterns, leaving out the target's files (own) and any
// file naming one of the target's trace IDs; every listed file of a picked request comes with it.
// recent < 0 picks every matching request.
func recentRequests(listing []gputrace.TraceFile, patterns []refPattern, own map[string]bool, targetIDs []string, recent int) []baselineGroup {
	var groups []baselineGroup
	at := map[string]int{}
	for _, f := range listing {
		if own[f.Rel] || namesAny(f, targetIDs) {
			continue
		}
		match := false
		for _, p := range patterns {
			if p.matches(f.Rel) {
				match = true
				break
			}
		}
		if !match {
			continue
		}
		key := requestKey(f)
		if i, ok := at[key]; ok {
			groups[i].files = append(groups[i].files, f)
			continue
		}
		if recent >= 0 && len(groups) >= recent {
			continue
		}
		at[key] = len(groups)
		groups = append(groups, baselineGroup{key: key, files: []gputrace.TraceFile{f}})
	}
	return groups
}

// defaultPatterns are the default baseline rule of each target file, once each.
func defaultPatterns(targets []gputrace.Found) []refPattern {
	var out []refPattern
	seen := map[string]bool{}
	for _, f := range targets {
		g := DefaultBaselineMatch(f.File.Rel)
		if !seen[g] {
			seen[g] = true
			out = append(out, refPattern{glob: g, whole: true})
		}
	}
	return out
}

// userPattern is baseline.match as the user gave it.
func userPattern(m string) refPattern {
	return refPattern{glob: m, whole: strings.Contains(m, "/")}
}

func globs(ps []refPattern) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.glob
	}
	return strings.Join(out, " or ")
}

// Diff answers a kernels diff: the target's kernel traces (the file, or the request's) against
// the baseline's, each side read file by file into per-kernel-name aggregates (only one file's
// analysis is held at a time) and divided by its number of requests. The baseline never
// includes the target's own files. An error is the user's: a chosen file that cannot be read
// (ErrChosenFile). Files that fail to read, a side with little data and an empty side are
// notices.
func (s *Store) Diff(ctx context.Context, q gputrace.DiffRequest) (*gputrace.KernelDiff, error) {
	listing, missed := s.List(ctx)
	var (
		targets   []gputrace.Found
		describe  string
		targetIDs []string
	)
	if q.File != "" {
		f, err := s.resolve(ctx, q.File)
		if err != nil {
			return nil, gputrace.ChosenFileError(err)
		}
		targets, describe, targetIDs = []gputrace.Found{{File: f}}, "file "+f.Rel, f.TraceIDs
	} else {
		var more notices.List
		targets, more = s.findIn(ctx, listing, q.TraceID)
		missed.Merge(more)
		describe, targetIDs = "trace "+q.TraceID, []string{q.TraceID}
	}
	target := gputrace.NewDiffSide("target", describe)
	own := map[string]bool{}
	for i, f := range targets {
		own[f.File.Rel] = true
		if i == MaxDiffFiles {
			target.Notices.Warnf("target: %d files, of which the first %d were read (a side reads at most %d)", len(targets), MaxDiffFiles, MaxDiffFiles)
			break
		}
		s.addFile(ctx, target, "target", f)
		targets[i].Result = nil // the side holds its aggregates; let the analysis go
	}

	base := s.baselineSide(ctx, listing, q, targets, own, targetIDs)
	d := gputrace.Diff(base, target)
	if len(targets) == 0 {
		d.Notices = append(notices.List{{Severity: notices.Warning,
			Text: fmt.Sprintf("no GPU kernel trace found for trace %s in the trace %s: nothing to compare", q.TraceID, s.where())}}, d.Notices...)
	}
	d.Notices.Merge(missed)
	return d, nil
}

// addFile analyses one file (unless found analysed already) and merges it into the side.
func (s *Store) addFile(ctx context.Context, side *gputrace.DiffSide, request string, f gputrace.Found) {
	if f.Result == nil && f.Err == nil {
		f.Result, f.Err = s.Analyze(ctx, f.File)
	}
	side.Add(request, f.File.Rel, f.Result, f.Err)
}

// baselineSide reads the baseline: another request's files, or the most recent requests'
// matching files, never the target's own.
func (s *Store) baselineSide(ctx context.Context, listing []gputrace.TraceFile, q gputrace.DiffRequest, targets []gputrace.Found, own map[string]bool, targetIDs []string) *gputrace.DiffSide {
	b := q.Baseline
	if b.TraceID != "" {
		side := gputrace.NewDiffSide("baseline", "trace "+b.TraceID)
		found, more := s.findIn(ctx, listing, b.TraceID)
		side.Notices.Merge(more)
		n := 0
		for _, f := range found {
			if own[f.File.Rel] {
				continue
			}
			if n == MaxDiffFiles {
				side.Notices.Warnf("baseline: trace %s has more than %d files: the first %d were read", b.TraceID, MaxDiffFiles, MaxDiffFiles)
				break
			}
			n++
			s.addFile(ctx, side, b.TraceID, f)
		}
		if n == 0 {
			side.Notices.Warnf("baseline: no GPU kernel trace found for trace %s in the trace %s", b.TraceID, s.where())
		}
		return side
	}

	recent := b.Recent
	if recent <= 0 {
		recent = DefaultDiffRecent
	}
	var patterns []refPattern
	rule := ""
	if b.Match != "" {
		patterns = []refPattern{userPattern(b.Match)}
	} else {
		patterns = defaultPatterns(targets)
		rule = " (the target's directory, any day, and its name before the trace ID)"
	}
	side := gputrace.NewDiffSide("baseline", fmt.Sprintf("the %d most recent requests matching %s", recent, globs(patterns)))
	if len(patterns) == 0 {
		// No target file: nothing to take the default rule from (a warning says the target is missing).
		side.Describe = fmt.Sprintf("the %d most recent requests like the target's", recent)
		return side
	}
	groups := recentRequests(listing, patterns, own, targetIDs, recent)
	files := 0
	for i, g := range groups {
		if files+len(g.files) > MaxDiffFiles && i > 0 {
			side.Notices.Warnf("baseline: %d of the %d requests were read: their files reach the bound of %d files a side reads", i, len(groups), MaxDiffFiles)
			groups = groups[:i]
			break
		}
		files += len(g.files)
	}
	switch {
	case len(groups) == 0:
		side.Notices.Warnf("baseline: no other request's kernel traces match %s%s: set baseline.match to a glob on the file references (the file picker lists them), or baseline.traceId", globs(patterns), rule)
	case len(groups) < recent:
		side.Notices.Infof("baseline: %d of the %d most recent requests asked for match %s%s", len(groups), recent, globs(patterns), rule)
	default:
		side.Notices.Infof("baseline: requests matching %s%s", globs(patterns), rule)
	}
	read := 0
	for _, g := range groups {
		for i, f := range g.files {
			if i == MaxDiffFiles {
				side.Notices.Warnf("baseline: request %s has more than %d files: the first %d were read", g.key, MaxDiffFiles, MaxDiffFiles)
				break
			}
			if err := ctx.Err(); err != nil {
				side.Notices.Warnf("baseline: the query ended (%v) after %d of its files: its figures cover those", err, read)
				return side
			}
			s.addFile(ctx, side, g.key, gputrace.Found{File: f})
			read++
		}
	}
	return side
}

// BaselineRequests counts the other requests a kernels diff of the target files would take
// as its default baseline (the default rule of each file, DefaultBaselineMatch), from a listing
// alone: no file is read.
func BaselineRequests(listing []gputrace.TraceFile, targets []gputrace.TraceFile, traceID string) int {
	found := make([]gputrace.Found, len(targets))
	own := map[string]bool{}
	for i, f := range targets {
		found[i].File = f
		own[f.Rel] = true
	}
	var ids []string
	if traceID != "" {
		ids = []string{traceID}
	}
	return len(recentRequests(listing, defaultPatterns(found), own, ids, -1))
}

// KernelTracesWithBaseline is KernelTracesOf, with the number of other requests whose traces a
// kernels diff of this request would take as its default baseline, counted from the same
// listing (no file is read for it): the trace query's verdict links its GPU causes to the
// diff when there is one.
func (s *Store) KernelTracesWithBaseline(ctx context.Context, traceID string) ([]*gputrace.Result, int, notices.List) {
	listing, missed := s.List(ctx)
	files, more := s.findIn(ctx, listing, traceID)
	missed.Merge(more)
	if len(files) == 0 {
		return nil, 0, nil
	}
	targets := make([]gputrace.TraceFile, len(files))
	for i, f := range files {
		targets[i] = f.File
	}
	others := BaselineRequests(listing, targets, traceID)
	results, warnings := s.analyzeFound(ctx, files, missed)
	return results, others, warnings
}
