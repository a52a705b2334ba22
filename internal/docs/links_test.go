package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository, seen from this package's folder (go test runs in it).
const repoRoot = "../.."

// checkedPages lists the pages whose links are checked, as slash paths from the repository root:
// README.md, CONTRIBUTING.md and every Markdown file under docs/.
func checkedPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				return err
			}
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing docs/: %v", err)
	}
	return pages
}

// TestRelativeLinksResolve fails on a relative link whose file, or whose #anchor, does not exist.
func TestRelativeLinksResolve(t *testing.T) {
	read := func(page string) (string, error) {
		b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
		return string(b), err
	}
	exists := func(page string) bool {
		_, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(page)))
		return err == nil
	}
	pages := checkedPages(t)
	if len(pages) < 4 {
		t.Fatalf("found only %v: is docs/ missing?", pages)
	}
	checked := 0
	for _, page := range pages {
		problems, n := checkPage(page, read, exists)
		checked += n
		for _, p := range problems {
			t.Error(p)
		}
	}
	if checked == 0 {
		t.Error("no relative link found in any page: the link parser is broken")
	}
	t.Logf("%d relative links in %d pages", checked, len(pages))
}

// TestCheckerFindsBrokenLinks holds the checker itself to what it must catch, on pages in memory.
func TestCheckerFindsBrokenLinks(t *testing.T) {
	files := map[string]string{
		"README.md": "# Title\n\nSee [the guide](docs/guide.md#set-up), [gone](docs/gone.md), " +
			"[bad anchor](docs/guide.md#nowhere), [here](#title), [not here](#nothing),\n" +
			"a link [over two\nlines](docs/guide.md#the-whole-request-traceid), ![shot](img/a.png) and " +
			"[web](https://example.com/x#y).\n\n```sh\n[in code](nowhere.md)\n```\n\n`[in a span](nowhere.md)`\n\n" +
			"[ref]: docs/missing.md\n",
		"docs/guide.md": "# Guide\n\n## Set up\n\n## The whole request (`traceId`)\n\n<a id=\"explicit\"></a>\n\n" +
			"[up](../README.md#title), [explicit](#explicit), [dup](#set-up-1)\n\n## Set up\n",
		"img/a.png": "",
	}
	read := func(p string) (string, error) {
		s, ok := files[p]
		if !ok {
			return "", fs.ErrNotExist
		}
		return s, nil
	}
	exists := func(p string) bool { _, ok := files[p]; return ok }

	var all []string
	for _, page := range []string{"README.md", "docs/guide.md"} {
		problems, _ := checkPage(page, read, exists)
		all = append(all, problems...)
	}
	want := []string{
		`README.md: link "docs/gone.md": docs/gone.md does not exist`,
		`README.md: link "docs/guide.md#nowhere": docs/guide.md has no heading or anchor "nowhere"`,
		`README.md: link "#nothing": README.md has no heading or anchor "nothing"`,
		`README.md: link "docs/missing.md": docs/missing.md does not exist`,
	}
	if !slices.Equal(all, want) {
		t.Errorf("problems found:\n  %s\nwant:\n  %s", strings.Join(all, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestSlugsAreGitHubs pins the heading slugs to what GitHub renders.
func TestSlugsAreGitHubs(t *testing.T) {
	for heading, want := range map[string]string{
		"The whole request (`traceId`)":                                 "the-whole-request-traceid",
		"Grafana's newer Pyroscope fields":                              "grafanas-newer-pyroscope-fields",
		"Profiles to traces from Jaeger (`spanHeatmap`, `spanProfile`)": "profiles-to-traces-from-jaeger-spanheatmap-spanprofile",
		"What `scripts/test.sh` runs":                                   "what-scriptstestsh-runs",
		"Try it: the demo stack":                                        "try-it-the-demo-stack",
		"**Bold** and [a link](x.md) — dash":                            "bold-and-a-link--dash",
		"snake_case stays, Ünïcode too":                                 "snake_case-stays-ünïcode-too",
		"Local GPUs through NVML (`gpuLocal`) ##":                       "local-gpus-through-nvml-gpulocal",
		"GPU workload classification (`gpuClass`)":                      "gpu-workload-classification-gpuclass",
		"The request-level join and the verdict (`trace`)":              "the-request-level-join-and-the-verdict-trace",
		"Runbook 002's lever":                                           "runbook-002s-lever",
		"Settings (`jsonData`) and secrets (`secureJsonData`)":          "settings-jsondata-and-secrets-securejsondata",
		"Profile queries (`profile`, `metrics`, `both`, `diff`)":        "profile-queries-profile-metrics-both-diff",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

var (
	fence      = regexp.MustCompile("^\\s*(```+|~~~+)")
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	refDef     = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	htmlRef    = regexp.MustCompile(`(?i)<(?:a|img)\s[^>]*?\b(?:href|src)\s*=\s*"([^"]*)"`)
	htmlAnchor = regexp.MustCompile(`(?i)<a\s[^>]*?\b(?:id|name)\s*=\s*"([^"]*)"`)
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:\s+(.*?))?\s*$`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// checkPage returns one line per broken relative link of page (a slash path from the repository
// root), and how many relative links it checked.
func checkPage(page string, read func(string) (string, error), exists func(string) bool) ([]string, int) {
	text, err := read(page)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", page, err)}, 0
	}
	prose := stripCode(text)
	var targets []string
	for _, m := range inlineLink.FindAllStringSubmatch(prose, -1) {
		targets = append(targets, m[1])
	}
	for _, re := range []*regexp.Regexp{refDef, htmlRef} {
		for _, m := range re.FindAllStringSubmatch(prose, -1) {
			targets = append(targets, m[1])
		}
	}
	var problems []string
	checked := 0
	for _, target := range targets {
		target = strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
		if target == "" || scheme.MatchString(target) || strings.HasPrefix(target, "//") {
			continue // a web address, or no target at all
		}
		checked++
		file, anchor, _ := strings.Cut(target, "#")
		dest := page
		if file != "" {
			if strings.HasPrefix(file, "/") {
				problems = append(problems, fmt.Sprintf("%s: link %q: absolute paths break on GitHub and in the catalog; make it relative", page, target))
				continue
			}
			dest = path.Clean(path.Join(path.Dir(page), file))
			if dest == ".." || strings.HasPrefix(dest, "../") {
				problems = append(problems, fmt.Sprintf("%s: link %q leaves the repository", page, target))
				continue
			}
			if !exists(dest) {
				problems = append(problems, fmt.Sprintf("%s: link %q: %s does not exist", page, target, dest))
				continue
			}
		}
		if anchor == "" || !strings.HasSuffix(dest, ".md") {
			continue // GitHub's line anchors (#L12) of source files are not checked
		}
		destText, err := read(dest)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: link %q: %v", page, target, err))
			continue
		}
		if !slices.Contains(anchors(destText), strings.ToLower(anchor)) {
			problems = append(problems, fmt.Sprintf("%s: link %q: %s has no heading or anchor %q", page, target, dest, anchor))
		}
	}
	return problems, checked
}

// stripCode blanks fenced code blocks and code spans, where brackets and parentheses are code,
// not links. Line breaks are kept, so a link may still span two lines of a paragraph.
func stripCode(text string) string {
	var b strings.Builder
	inFence := ""
	for _, line := range strings.SplitAfter(text, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			marker := m[1][:3]
			switch {
			case inFence == "":
				inFence = marker
			case inFence == marker:
				inFence = ""
			}
			b.WriteString("\n")
			continue
		}
		if inFence != "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString(line)
	}
	return stripCodeSpans(b.String())
}

// stripCodeSpans replaces each code span (a run of backticks up to the next run of as many, within
// one paragraph) by the word "code". A run without its closing run is text, as in Markdown.
func stripCodeSpans(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '`' {
			b.WriteByte(s[i])
			i++
			continue
		}
		n := 0
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		end := closingRun(s, i+n, n)
		if end < 0 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		b.WriteString("code")
		i = end
	}
	return b.String()
}

// closingRun returns the index just past the first run of exactly n backticks at or after from,
// or -1 when a blank line (the paragraph's end) or the text's end comes first.
func closingRun(s string, from, n int) int {
	for j := from; j < len(s); {
		switch {
		case strings.HasPrefix(s[j:], "\n\n"):
			return -1
		case s[j] == '`':
			k := 0
			for j+k < len(s) && s[j+k] == '`' {
				k++
			}
			if k == n {
				return j + k
			}
			j += k
		default:
			j++
		}
	}
	return -1
}

// anchors lists the fragment names a page answers to: its headings' slugs, numbered as GitHub
// numbers repeated ones (-1, -2, ...), and its explicit <a id> or <a name> anchors.
func anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	inFence := ""
	for _, line := range strings.Split(text, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			marker := m[1][:3]
			switch {
			case inFence == "":
				inFence = marker
			case inFence == marker:
				inFence = ""
			}
			continue
		}
		if inFence != "" {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out = append(out, strings.ToLower(m[1]))
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", s, n))
		} else {
			out = append(out, s)
		}
		seen[s]++
	}
	return out
}

var (
	closingHashes = regexp.MustCompile(`\s+#+\s*$`)
	linkInHeading = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag       = regexp.MustCompile(`<[^>]*>`)
)

// slug is GitHub's anchor for a heading: the heading's text as rendered (no code backticks, link
// targets, emphasis markers or HTML tags), lower-cased, without characters other than letters,
// marks, digits, connector punctuation (_), hyphens and spaces, each space a hyphen.
func slug(heading string) string {
	h := closingHashes.ReplaceAllString(strings.TrimSpace(heading), "")
	h = linkInHeading.ReplaceAllString(h, "$1")
	h = htmlTag.ReplaceAllString(h, "")
	h = strings.NewReplacer("`", "", "*", "").Replace(h)
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}
