// Package notices is what an answer tells the user beside its figures: how it was made (info)
// and what is missing from it or may mislead (warning). A producer types each notice where the
// fact is known (a Prometheus client knows a DCGM series is absent, the kernel store knows a
// file could not be read), so one fact keeps one severity whichever panel shows it; the plugin
// turns a List into Grafana's frame notices once (frames.Notices).
//
// Like Prometheus' util/annotations, a List keeps each text once: the same fact reported by
// two parts of an answer is read once.
package notices

import "fmt"

// Severity orders notices: a warning outranks an info of the same text.
type Severity int

const (
	// Info says how an answer was made (the step used, how samples were matched).
	Info Severity = iota
	// Warning says what is missing from an answer or may mislead (a failed upstream, few samples).
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "info"
}

// Notice is one line the user reads beside an answer.
type Notice struct {
	Severity Severity
	Text     string
}

// List is an ordered list of notices, each text once.
type List []Notice

// Add appends each notice whose text the list does not hold yet; one it holds keeps its place
// and takes the higher severity.
func (l *List) Add(ns ...Notice) {
	for _, n := range ns {
		if n.Text == "" {
			continue
		}
		if i := l.index(n.Text); i >= 0 {
			(*l)[i].Severity = max((*l)[i].Severity, n.Severity)
			continue
		}
		*l = append(*l, n)
	}
}

// Info adds an info notice.
func (l *List) Info(text string) { l.Add(Notice{Severity: Info, Text: text}) }

// Warn adds a warning.
func (l *List) Warn(text string) { l.Add(Notice{Severity: Warning, Text: text}) }

// Infof adds an info notice formatted as fmt.Sprintf does.
func (l *List) Infof(format string, args ...any) { l.Info(fmt.Sprintf(format, args...)) }

// Warnf adds a warning formatted as fmt.Sprintf does.
func (l *List) Warnf(format string, args ...any) { l.Warn(fmt.Sprintf(format, args...)) }

// Merge adds every notice of o, in its order.
func (l *List) Merge(o List) { l.Add(o...) }

// Texts are the notices' texts in order, for tests and for answers that are not frames (the
// editors' resource calls).
func (l List) Texts() []string {
	if len(l) == 0 {
		return nil
	}
	out := make([]string, len(l))
	for i, n := range l {
		out[i] = n.Text
	}
	return out
}

// Has says whether the list holds a notice of this text.
func (l List) Has(text string) bool { return l.index(text) >= 0 }

func (l List) index(text string) int {
	for i, n := range l {
		if n.Text == text {
			return i
		}
	}
	return -1
}

// Warnings is a list of warnings with these texts.
func Warnings(texts ...string) List {
	var l List
	for _, t := range texts {
		l.Warn(t)
	}
	return l
}
