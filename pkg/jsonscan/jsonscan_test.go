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

// Str reads eight bytes at a time and jumps to the first byte that stops it; it answers as a
// byte-by-byte reading does, on strings of every length whose bytes mix text, UTF-8, quotes,
// escapes and control characters anywhere in a word.
func TestStrAnswersAsAByteByByteRead(t *testing.T) {
	pieces := []string{"a", "Z", "0", " ", "é", "\xff", "\x80", "\x7f", `"`, `\"`, `\\`, `\n`, `\u00e9`, `\u12`, `\q`, `\`, "\x00", "\x1f", "\t"}
	rng := rand.New(rand.NewPCG(7, 11))
	ended := 0
	for n := range 50000 {
		b := []byte{'"'}
		for range rng.IntN(40) {
			if rng.IntN(6) == 0 {
				b = append(b, pieces[rng.IntN(len(pieces))]...)
			} else {
				b = append(b, pieces[rng.IntN(5)]...) // mostly plain text, as replies are
			}
		}
		if n%2 == 0 {
			b = append(b, `"`...)
		}
		b = append(b, pieces[rng.IntN(len(pieces))]...) // what follows the string
		s := &Scanner{B: b}
		raw, escaped, ok := s.Str()
		wantRaw, wantEscaped, wantOK, wantEnd := strByteByByte(b)
		if ok != wantOK || ok && (string(raw) != string(wantRaw) || escaped != wantEscaped || s.I != wantEnd) {
			t.Fatalf("%q: got %q %v %v at %d, want %q %v %v at %d", b, raw, escaped, ok, s.I, wantRaw, wantEscaped, wantOK, wantEnd)
		}
		if ok {
			ended++
			if !json.Valid(b[:s.I]) {
				t.Fatalf("%q taken, not a valid JSON string", b[:s.I])
			}
		}
	}
	if ended < 10000 {
		t.Errorf("only %d strings ended", ended)
	}
}

// strByteByByte is Str's answer read one byte at a time, as JSON's grammar says.
func strByteByByte(b []byte) (raw []byte, escaped, ok bool, end int) {
	for j := 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[1:j], escaped, true, j + 1
		case c < ' ':
			return nil, false, false, 0
		case c == '\\':
			escaped = true
			if j+1 >= len(b) {
				return nil, false, false, 0
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(b) || !isHex4(b[j+2:j+6]) {
					return nil, false, false, 0
				}
				j += 5
			default:
				return nil, false, false, 0
			}
		}
	}
	return nil, false, false, 0
}
