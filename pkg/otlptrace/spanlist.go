package otlptrace

import "github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"

// spanList holds the spans while a reply is read, whose count is known only at its end. They go
// into blocks of spanBlock spans that are never copied, and into one slice of their exact size at
// the end. A slice grown by append copied itself each time it filled, by a quarter at these sizes:
// a 2,000-span trace cost five times its spans' size in copies. A buffer pooled for the next
// reply did not help, because the garbage collector empties sync.Pools, and it runs several times
// during a query.
type spanList struct {
	blocks [][]models.Span
	n      int
}

const spanBlock = 256

func (l *spanList) push(s models.Span) {
	if l.n == len(l.blocks)*spanBlock {
		l.blocks = append(l.blocks, make([]models.Span, spanBlock))
	}
	l.blocks[l.n/spanBlock][l.n%spanBlock] = s
	l.n++
}

func (l *spanList) len() int { return l.n }

// at is the i-th span, in place.
func (l *spanList) at(i int) *models.Span { return &l.blocks[i/spanBlock][i%spanBlock] }

// spans are the spans in one slice of their size; nil for none.
func (l *spanList) spans() []models.Span {
	if l.n == 0 {
		return nil
	}
	out := make([]models.Span, 0, l.n)
	for _, b := range l.blocks {
		out = append(out, b[:min(spanBlock, l.n-len(out))]...)
	}
	return out
}
