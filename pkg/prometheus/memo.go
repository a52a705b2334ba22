package prometheus

import "sync"

// textMemo keeps texts worked out from other texts by a function of them alone (so nothing in it
// goes stale), at most max of them: when full, it starts over.
type textMemo struct {
	mu    sync.Mutex
	max   int
	texts map[string]string
}

func newTextMemo(max int) *textMemo { return &textMemo{max: max, texts: map[string]string{}} }

func (m *textMemo) get(key string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.texts[key]
	return v, ok
}

func (m *textMemo) put(key, value string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.texts) >= m.max {
		clear(m.texts)
	}
	m.texts[key] = value
}
