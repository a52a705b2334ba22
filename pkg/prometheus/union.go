package prometheus

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// partLabel marks which part of a labelled union a series answers; no exporter writes it.
const partLabel = "hsi_query_part"

// labelledUnion is one query of several queries that share a time or a range: each part wrapped
// in label_replace, which sets partLabel to the part's index, and the parts joined by "or".
// As the label differs between parts, "or" keeps every series of every part, and byPart splits
// the answer back. The server does the same work as for the queries one by one; the plugin
// and the server make one HTTP exchange, not one per part.
func labelledUnion(parts []parser.Expr) parser.Expr {
	labelled := make([]parser.Expr, len(parts))
	for i, e := range parts {
		labelled[i] = promCall("label_replace", e, &parser.StringLiteral{Val: partLabel},
			&parser.StringLiteral{Val: strconv.Itoa(i)}, &parser.StringLiteral{Val: ""}, &parser.StringLiteral{Val: ""})
	}
	return unionExprs(labelled)
}

// labelledUnionText is labelledUnion's text from its parts' texts, as the parser prints it:
// the GPU metrics print each part for its own result already, and printing them all again
// inside the union was what building the query cost most.
func labelledUnionText(parts []string) string {
	var b strings.Builder
	// unionExprs nests to the left, and binaryExpr puts a nested union in parentheses:
	// ((p0 or p1) or p2) or p3.
	b.WriteString(strings.Repeat("(", max(len(parts)-2, 0)))
	for i, p := range parts {
		if i > 0 {
			b.WriteString(" or ")
		}
		fmt.Fprintf(&b, "label_replace(%s, %q, \"%d\", \"\", \"\")", p, partLabel, i)
		if i > 0 && i < len(parts)-1 {
			b.WriteByte(')')
		}
	}
	return b.String()
}

// byPart splits the answer of labelledUnion's query (expr, of n parts) by part, each series
// without partLabel, as its part's query alone answers it.
func byPart(vec model.Vector, n int, expr string) ([]model.Vector, error) {
	parts, err := splitParts(vec, func(s *model.Sample) model.Metric { return s.Metric }, n, expr)
	out := make([]model.Vector, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, err
}

// splitParts splits the series (instant samples or range streams) of a labelled union's answer
// by part, deleting partLabel from each.
func splitParts[S any](series []S, metric func(S) model.Metric, n int, expr string) ([][]S, error) {
	out := make([][]S, n)
	for _, s := range series {
		m := metric(s)
		i, err := strconv.Atoi(string(m[partLabel]))
		if err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("query %s answered a series without the %s label it sets: %s", expr, partLabel, m)
		}
		delete(m, partLabel)
		out[i] = append(out[i], s)
	}
	return out, nil
}
