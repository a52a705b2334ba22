// Package jsonscan walks JSON held whole in memory without decoding it: a reader built on it
// takes the fields it wants as bytes (no string made of a key it passes, none of a value it
// does not keep) and validates what it walks, so that a reply it reads to the end is valid JSON.
// Its readers (otlptrace's trace replies, prometheus' series) answer as their decoders do where
// they answer, and leave the reply to the decoder wherever they are not sure (an escaped key, a
// value of an unexpected type): the decoder then reads it, or says what is wrong.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	jsoniter "github.com/json-iterator/go"
)

// Scanner walks the JSON in B from I. Its methods return false on what they do not take (the
// caller then leaves the reply to its decoder).
type Scanner struct {
	B     []byte
	I     int
	depth int
}

// End says whether only white space is left.
func (s *Scanner) End() bool {
	s.Space()
	return s.I == len(s.B)
}

// maxScanDepth bounds nesting; deeper replies go to the decoder (jsoniter's own bound is 10,000).
const maxScanDepth = 500

// Space skips white space.
func (s *Scanner) Space() {
	if s.I < len(s.B) && s.B[s.I] > ' ' { // compact JSON: no white space at all
		return
	}
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Peek is the next byte after white space, 0 at the end.
func (s *Scanner) Peek() byte {
	s.Space()
	if s.I < len(s.B) {
		return s.B[s.I]
	}
	return 0
}

// Null consumes a null.
func (s *Scanner) Null() bool {
	if bytes.HasPrefix(s.B[s.I:], []byte("null")) {
		s.I += 4
		return true
	}
	return false
}

// Object walks an object (or null, which has no fields), calling field for each key with the
// scanner at its value; field must consume the value.
func (s *Scanner) Object(field func(key []byte) bool) bool {
	return s.members('{', '}', func() bool {
		if s.Peek() != '"' {
			return false
		}
		key, escaped, ok := s.Str()
		// An escaped key is read decoded by a decoder, and an empty one ends its object there
		// in jsoniter: leave both to the decoder.
		if !ok || escaped || len(key) == 0 || s.Peek() != ':' {
			return false
		}
		s.I++
		return field(key)
	})
}

// Array walks an array (or null), calling elem with the scanner at each element.
func (s *Scanner) Array(elem func() bool) bool { return s.members('[', ']', elem) }

// members walks the members of the container between open and end (or null, which has none),
// calling member at each; member must consume it.
func (s *Scanner) members(open, end byte, member func() bool) bool {
	switch s.Peek() {
	case 'n':
		return s.Null()
	case open:
	default:
		return false
	}
	if s.depth++; s.depth > maxScanDepth {
		return false
	}
	defer func() { s.depth-- }()
	s.I++
	if s.Peek() == end {
		s.I++
		return true
	}
	for {
		if !member() {
			return false
		}
		switch s.Peek() {
		case ',':
			s.I++
		case end:
			s.I++
			return true
		default:
			return false
		}
	}
}

// Str consumes a string at s.I (its opening quote) and returns its raw content; escaped says it
// holds escapes (then the raw content is not its text).
func (s *Scanner) Str() (raw []byte, escaped, ok bool) {
	start := s.I + 1
	for j := start; j < len(s.B); j++ {
		// Eight bytes at a time: most of a reply's bytes are in strings, and this walk was most
		// of the time a triage's trace search took to read. A word holding a byte that stops the
		// scan goes straight to the first such byte (a string's end is mostly a few bytes on).
		for j+8 <= len(s.B) {
			if m := stops(binary.LittleEndian.Uint64(s.B[j:])); m != 0 {
				j += bits.TrailingZeros64(m) / 8
				break
			}
			j += 8
		}
		if j == len(s.B) {
			break
		}
		c := s.B[j]
		if !strStops[c] { // the last few bytes of the reply, one at a time
			continue
		}
		switch {
		case c == '"':
			s.I = j + 1
			return s.B[start:j], escaped, true
		case c == '\\':
			escaped = true
			if j+1 >= len(s.B) {
				return nil, false, false
			}
			switch s.B[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(s.B) || !isHex4(s.B[j+2:j+6]) {
					return nil, false, false
				}
				j += 5
			default:
				return nil, false, false
			}
		default: // a control character, which JSON strings may not hold
			return nil, false, false
		}
	}
	return nil, false, false
}

// stops marks (with its high bit) each of the eight bytes of x that stops a string's scan: a
// quote, a backslash, a control character (the bit tricks of "Bit Twiddling Hacks", haszero and
// hasless). A borrow only runs upwards, so the lowest mark is exact: the first such byte.
func stops(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := x^(ones*'"'), x^(ones*'\\') // zero where a byte is a quote, a backslash
	return ((q-ones)&^q | (b-ones)&^b | (x-ones*' ')&^x) & highs
}

// strStops are the bytes a string's scan stops at: its end, an escape, a control character.
var strStops = func() (t [256]bool) {
	for c := range ' ' {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// Number consumes a JSON number and returns its text.
func (s *Scanner) Number() ([]byte, bool) {
	start := s.I
	j := s.I
	if j < len(s.B) && s.B[j] == '-' {
		j++
	}
	digits := func() int {
		n := 0
		for j < len(s.B) && s.B[j] >= '0' && s.B[j] <= '9' {
			j++
			n++
		}
		return n
	}
	if j < len(s.B) && s.B[j] == '0' {
		j++
	} else if digits() == 0 {
		return nil, false
	}
	if j < len(s.B) && s.B[j] == '.' {
		j++
		if digits() == 0 {
			return nil, false
		}
	}
	if j < len(s.B) && (s.B[j] == 'e' || s.B[j] == 'E') {
		j++
		if j < len(s.B) && (s.B[j] == '+' || s.B[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	s.I = j
	text := s.B[start:j]
	if j-start > 15 || bytes.ContainsAny(text, "eE") {
		// Valid JSON that jsoniter may still refuse (an exponent out of its range): judged as
		// it judges a number it skips.
		return text, decoderTakes(text)
	}
	return text, true
}

// decoderTakes says whether jsoniter skips the number, in an array as in a reply, without an
// error.
func decoderTakes(number []byte) bool {
	in := append(append(append(make([]byte, 0, len(number)+2), '['), number...), ']')
	it := jsoniter.ParseBytes(jsoniter.ConfigDefault, in)
	it.Skip()
	return it.Error == nil
}

// Skip consumes any one value, checking that it is valid JSON.
func (s *Scanner) Skip() bool {
	switch c := s.Peek(); {
	case c == '{':
		return s.skipContainer('}')
	case c == '[':
		return s.skipContainer(']')
	case c == '"':
		_, _, ok := s.Str()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		_, ok := s.Number()
		return ok
	case c == 't':
		return s.Literal("true")
	case c == 'f':
		return s.Literal("false")
	case c == 'n':
		return s.Null()
	}
	return false
}

// skipContainer is Skip for the object or array at s.I (end its closing byte): Object and Array
// walking it with Skip, without their calls through closures (most of a reply a reader skips).
func (s *Scanner) skipContainer(end byte) bool {
	if s.depth++; s.depth > maxScanDepth {
		s.depth--
		return false
	}
	ok := s.skipMembers(end)
	s.depth--
	return ok
}

func (s *Scanner) skipMembers(end byte) bool {
	s.I++
	if s.Peek() == end {
		s.I++
		return true
	}
	for {
		if end == '}' { // a key, as Object takes it
			if s.Peek() != '"' {
				return false
			}
			key, escaped, ok := s.Str()
			if !ok || escaped || len(key) == 0 || s.Peek() != ':' {
				return false
			}
			s.I++
		}
		if !s.Skip() {
			return false
		}
		switch s.Peek() {
		case ',':
			s.I++
		case end:
			s.I++
			return true
		default:
			return false
		}
	}
}

// Literal consumes word (true, false) where it comes next.
func (s *Scanner) Literal(word string) bool {
	if bytes.HasPrefix(s.B[s.I:], []byte(word)) {
		s.I += len(word)
		return true
	}
	return false
}
