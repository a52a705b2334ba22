package prometheus

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// The union's text built from its parts' texts is the parser's print of the union: the same
// query, whatever the parts hold (sets, aggregations, matching, strings with quotes).
func TestLabelledUnionTextIsTheParsersPrint(t *testing.T) {
	for _, parts := range [][]string{
		{`a`},
		{`a`, `b{x="y"}`},
		{`a`, `b`, `c`, `d`},
		{`max by (gpu, Hostname) (DCGM_FI_DEV_GPU_TEMP{gpu="0"} or DCGM_FI_DEV_GPU_TEMP{gpu="1"}) and on (gpu) topk(5, group by (gpu) (last_over_time(x[1h] @ end())))`,
			`sum(rate(y{l="a\"b"}[5m]))`, `label_replace(z, "a", "$1", "b", "(.*)")`},
	} {
		exprs := make([]parser.Expr, len(parts))
		texts := make([]string, len(parts))
		for i, p := range parts {
			e, err := promqlParser.ParseExpr(p)
			if err != nil {
				t.Fatal(err)
			}
			exprs[i], texts[i] = e, e.String()
		}
		if got, want := labelledUnionText(texts), labelledUnion(exprs).String(); got != want {
			t.Errorf("labelledUnionText:\n%s\nthe parser prints:\n%s", got, want)
		}
	}
}

// A labelled union parses, names each part once, and its answer splits back by part without the
// label; a series the union's labelling cannot have made is an error that names the label.
func TestLabelledUnionSplitsBackByPart(t *testing.T) {
	parts := []parser.Expr{metricSelector("a", nil), metricSelector("b", nil), metricSelector("c", nil)}
	expr, err := checked(labelledUnion(parts))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`label_replace(a, "hsi_query_part", "0", "", "")`, `label_replace(c, "hsi_query_part", "2", "", "")`} {
		if !strings.Contains(expr, want) {
			t.Errorf("%s lacks %s", expr, want)
		}
	}
	vec := model.Vector{
		{Metric: model.Metric{"job": "x", partLabel: "2"}, Value: 3},
		{Metric: model.Metric{"job": "y", partLabel: "0"}, Value: 1},
		{Metric: model.Metric{"job": "z", partLabel: "2"}, Value: 4},
	}
	got, err := byPart(vec, 3, expr)
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != 1 || len(got[1]) != 0 || len(got[2]) != 2 || got[2][1].Value != 4 {
		t.Fatalf("parts %v", got)
	}
	if _, ok := got[0][0].Metric[partLabel]; ok || got[0][0].Metric["job"] != "y" {
		t.Errorf("part 0's series %v keeps the part label", got[0][0].Metric)
	}
	for _, bad := range []model.Metric{{"job": "x"}, {partLabel: "3"}, {partLabel: "-1"}, {partLabel: "x"}} {
		if _, err := byPart(model.Vector{{Metric: bad}}, 3, expr); err == nil || !strings.Contains(err.Error(), partLabel) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// unionAnswer answers an instant query as Prometheus does for a labelled union: "or" keeps the
// left side's series and those of the right side with other labels, label_replace sets the label
// its call names; leaf answers anything else.
func unionAnswer(e parser.Expr, leaf func(parser.Expr) []sample) []sample {
	switch e := e.(type) {
	case *parser.ParenExpr:
		return unionAnswer(e.Expr, leaf)
	case *parser.BinaryExpr:
		if e.Op == parser.LOR {
			out := unionAnswer(e.LHS, leaf)
			for _, r := range unionAnswer(e.RHS, leaf) {
				if !slices.ContainsFunc(out, func(l sample) bool { return maps.Equal(l.labels, r.labels) }) {
					out = append(out, r)
				}
			}
			return out
		}
	case *parser.Call:
		if e.Func.Name == "label_replace" {
			name, value := e.Args[1].(*parser.StringLiteral).Val, e.Args[2].(*parser.StringLiteral).Val
			var out []sample
			for _, s := range unionAnswer(e.Args[0], leaf) {
				lbls := maps.Clone(s.labels)
				lbls[name] = value
				out = append(out, sample{labels: lbls, value: s.value})
			}
			return out
		}
	}
	return leaf(e)
}
