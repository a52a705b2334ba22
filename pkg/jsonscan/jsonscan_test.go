package jsonscan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/jsonedit"
)

// Whatever the bytes, a walk that takes a whole value says the bytes are valid JSON, and
// encoding/json agrees; where it refuses valid JSON, the value holds one of the things the
// scanner leaves to a decoder (an escaped or empty key, nesting past its bound, a number jsoniter
// refuses).
func TestSkipTakesOnlyValidJSON(t *testing.T) {
	seeds := []string{
		`{"a":[1,-2.5e3,0,true,false,null,"x\"y\u00e9"],"b":{"c":{}},"d":[]}`,
		`[{"k":"v"},{"k":"\\"},null]`,
		` { "spaced" : [ 1 , 2 ] } `,
		`"plain"`, `12`, `null`,
	}
	tokens := []string{"{", "}", "[", "]", ",", ":", `"`, `\`, `\u12`, "null", "0", "-", ".", "e", " ", "tru", "\x00", "\n", `"k"`}
	rng := rand.New(rand.NewPCG(3, 5))
	taken := 0
	for n := range 20000 {
		b := []byte(seeds[n%len(seeds)])
		if n%4 != 0 { // a quarter as they are
			b = jsonedit.Edit(rng, b, tokens, 4)
		}
		s := &Scanner{B: b}
		if s.Skip() && s.End() {
			taken++
			if !json.Valid(b) {
				t.Errorf("edit %d: %q taken, not valid JSON", n, b)
			}
		}
	}
	if taken < 2000 {
		t.Errorf("only %d edits taken", taken)
	}
}

// Strings come back raw, with whether they hold escapes; keys with escapes, and empty keys, are
// refused.
func TestStrAndObject(t *testing.T) {
	for _, c := range []struct {
		in      string
		raw     string
		escaped bool
	}{{`"abc"`, "abc", false}, {`"a\"b"`, `a\"b`, true}, {`"\u00e9"`, `\u00e9`, true}, {`""`, "", false}} {
		s := &Scanner{B: []byte(c.in)}
		raw, escaped, ok := s.Str()
		if !ok || string(raw) != c.raw || escaped != c.escaped || !s.End() {
			t.Errorf("%s: %q %v %v", c.in, raw, escaped, ok)
		}
	}
	for _, in := range []string{`"\q"`, "\"a\tb\"", `"open`} {
		if _, _, ok := (&Scanner{B: []byte(in)}).Str(); ok {
			t.Errorf("%q taken as a string", in)
		}
	}
	var keys []string
	s := &Scanner{B: []byte(`{"a":1,"b":{"c":2}}`)}
	if !s.Object(func(k []byte) bool { keys = append(keys, string(k)); return s.Skip() }) || fmt.Sprint(keys) != "[a b]" {
		t.Errorf("keys %v", keys)
	}
	for _, in := range []string{`{"\u0061":1}`, `{"":1}`, `{"a" 1}`} {
		s := &Scanner{B: []byte(in)}
		if s.Object(func([]byte) bool { return s.Skip() }) {
			t.Errorf("%s taken", in)
		}
	}
}
