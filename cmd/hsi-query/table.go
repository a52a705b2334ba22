package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// columnGap separates the columns of a table.
const columnGap = "  "

// minColumn is the narrowest a column of text is cut to.
const minColumn = 10

// table is a frame as text: a header and cells, numbers right-aligned, identifiers and times
// whole.
type table struct {
	headers []string
	right   []bool
	whole   []bool
	rows    [][]string
}

// frameTable reads a frame as Grafana's table panel shows it: display names, values in their
// units, hidden fields left out. fields, when given, picks and orders the fields by name; keep,
// when given, picks the rows.
func frameTable(f *data.Frame, rows int, fields []string, keep func(i int) bool) table {
	var shown []*data.Field
	if fields != nil {
		for _, name := range fields {
			if field, _ := f.FieldByName(name); field != nil {
				shown = append(shown, field)
			}
		}
	} else {
		for _, field := range f.Fields {
			if !hidden(field) {
				shown = append(shown, field)
			}
		}
	}
	t := table{}
	for _, field := range shown {
		t.headers = append(t.headers, displayName(field))
		t.right = append(t.right, field.Type().Numeric())
		t.whole = append(t.whole, field.Type().Time() || strings.HasSuffix(field.Name, "ID") || strings.HasSuffix(displayName(field), " ID"))
	}
	for i := range f.Rows() {
		if len(t.rows) == rows {
			break
		}
		if keep != nil && !keep(i) {
			continue
		}
		row := make([]string, len(shown))
		for j, field := range shown {
			row[j] = cell(field, i)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// hidden says whether Grafana's table hides the field (custom.hidden, as the frames mark the
// fields that only feed links).
func hidden(f *data.Field) bool {
	if f.Config == nil || f.Config.Custom == nil {
		return false
	}
	h, _ := f.Config.Custom["hidden"].(bool)
	return h
}

// displayName is the column title Grafana shows: the data source's display name, else the
// field's name with its labels.
func displayName(f *data.Field) string {
	if f.Config != nil && f.Config.DisplayNameFromDS != "" {
		return f.Config.DisplayNameFromDS
	}
	if len(f.Labels) > 0 {
		return f.Name + " " + f.Labels.String()
	}
	return f.Name
}

// printFrameTable writes a frame as a table, with a title line saying how many rows it has.
func printFrameTable(w io.Writer, f *data.Frame, rows, width int, fields []string) {
	n := f.Rows()
	switch {
	case n == 0:
		fmt.Fprintf(w, "%s: no rows\n", frameTitle(f))
		return
	case n > rows:
		fmt.Fprintf(w, "%s: first %d of %d rows (--rows shows more)\n", frameTitle(f), rows, n)
	default:
		fmt.Fprintf(w, "%s: %s\n", frameTitle(f), plural(n, "row"))
	}
	frameTable(f, rows, fields, nil).write(w, width)
}

func frameTitle(f *data.Frame) string {
	if f.Name == "" {
		return "frame"
	}
	return f.Name
}

// write prints the table within width columns. The widest columns are cut first (their cells
// end in …), never below their title or minColumn, and never identifiers or times (a person
// copies them); when the table does not fit even so, each row is printed as a record instead, a
// line per field, so that nothing is left out.
func (t table) write(w io.Writer, width int) {
	n := len(t.headers)
	if n == 0 {
		return
	}
	widths := make([]int, n)
	for j, h := range t.headers {
		widths[j] = utf8.RuneCountInString(h)
	}
	for _, row := range t.rows {
		for j, c := range row {
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	floors := make([]int, n)
	for j := range n {
		floors[j] = widths[j]
		if !t.whole[j] {
			floors[j] = min(widths[j], max(minColumn, utf8.RuneCountInString(t.headers[j])))
		}
	}
	if sum(floors)+len(columnGap)*(n-1) > width {
		t.writeRecords(w, width)
		return
	}
	for sum(widths)+len(columnGap)*(n-1) > width {
		widest := -1
		for j := range widths {
			if widths[j] > floors[j] && (widest < 0 || widths[j] > widths[widest]) {
				widest = j
			}
		}
		widths[widest]--
	}
	line := func(cells []string, underline bool) {
		var b strings.Builder
		for j := range n {
			if j > 0 {
				b.WriteString(columnGap)
			}
			c := cells[j]
			if underline {
				c = strings.Repeat("-", widths[j])
			}
			c = cut(c, widths[j])
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c))
			if t.right[j] && !underline {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.headers, false)
	line(t.headers, true)
	for _, row := range t.rows {
		line(row, false)
	}
}

// writeRecords prints each row as a record: a line per non-empty field, long values wrapped.
func (t table) writeRecords(w io.Writer, width int) {
	label := 0
	for _, h := range t.headers {
		label = max(label, utf8.RuneCountInString(h))
	}
	label = min(label, 24)
	for i, row := range t.rows {
		fmt.Fprintf(w, "-- row %d\n", i+1)
		for j, c := range row {
			if c == "" {
				continue
			}
			h := cut(t.headers[j], label)
			prefix := "  " + h + ":" + strings.Repeat(" ", label-utf8.RuneCountInString(h)+1)
			fmt.Fprintln(w, wrap(prefix, c, width, strings.Repeat(" ", utf8.RuneCountInString(prefix))))
		}
	}
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// cut shortens s to width runes, ending in … when it was longer.
func cut(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	if width <= 1 {
		return string([]rune(s)[:width])
	}
	return string([]rune(s)[:width-1]) + "…"
}

// wrap breaks prose into lines of at most width runes (a word longer than that keeps its own
// line): the first line starts with prefix, the others with indent.
func wrap(prefix, text string, width int, indent string) string {
	var b strings.Builder
	b.WriteString(prefix)
	line, empty := utf8.RuneCountInString(prefix), true
	for _, word := range strings.Fields(text) {
		n := utf8.RuneCountInString(word)
		if !empty && line+1+n > width {
			b.WriteString("\n" + indent)
			line, empty = utf8.RuneCountInString(indent), true
		}
		if !empty {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += n
		empty = false
	}
	return b.String()
}

// plural says "1 row", "2 rows".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
