package pyroscopetest

import (
	"regexp"
	"slices"
	"strings"

	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// frameFilter is a frame_filter as a server with the field reads it: StackTraceSelector field 3,
// a StackFrameFilter of include_function_names (1), exclude_function_names (2),
// include_function_name_regexes (3) and exclude_function_name_regexes (4) (grafana/pyroscope
// api/types/v1/types.proto on its main branch). The API module this fake is built with predates
// the field, so it is read from the selector's unknown fields, as the newer server's own
// generated code would read it.
type frameFilter struct {
	names   [4][]string
	regexes [2][]*regexp.Regexp // include, exclude
}

// FrameFilterOf decodes the frame_filter a selector carries (nil: none), for tests that check
// what the client sent.
func FrameFilterOf(sel *typesv1.StackTraceSelector) (names [4][]string, ok bool) {
	f := decodeFrameFilter(sel)
	if f == nil {
		return names, false
	}
	return f.names, true
}

func decodeFrameFilter(sel *typesv1.StackTraceSelector) *frameFilter {
	if sel == nil {
		return nil
	}
	var f *frameFilter
	b := sel.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return f
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return f
		}
		if num == 3 && typ == protowire.BytesType {
			inner, _ := protowire.ConsumeBytes(b[:n])
			if f == nil {
				f = &frameFilter{}
			}
			for len(inner) > 0 {
				fnum, ftyp, m := protowire.ConsumeTag(inner)
				if m < 0 || ftyp != protowire.BytesType {
					break
				}
				s, k := protowire.ConsumeString(inner[m:])
				if k < 0 {
					break
				}
				inner = inner[m+k:]
				if fnum >= 1 && fnum <= 4 {
					f.names[fnum-1] = append(f.names[fnum-1], s)
				}
			}
		}
		b = b[n:]
	}
	if f != nil {
		for i, list := range [][]string{f.names[2], f.names[3]} {
			for _, p := range list {
				re, err := regexp.Compile(p)
				if err != nil {
					re = regexp.MustCompile(`[^\s\S]`)
				}
				f.regexes[i] = append(f.regexes[i], re)
			}
		}
	}
	return f
}

// frameFilterOf is the filter the server applies to a call starting at start (ms): none on 1.12,
// on a 2.x without the field, or where the range reaches a dual-mode server's v1 storage.
func (s *Server) frameFilterOf(sel *typesv1.StackTraceSelector, start int64) *frameFilter {
	if s.Version != V2 || !s.FrameFilter || s.dualModeV1(start) {
		return nil
	}
	return decodeFrameFilter(sel)
}

// keeps says whether a stack ("a;b;c") has a frame for every include and none excluded, as
// Pyroscope's FrameMatcher judges it (pkg/phlaredb/symdb/frame_filter.go).
func (f *frameFilter) keeps(stack string) bool {
	if f == nil {
		return true
	}
	frames := strings.Split(stack, ";")
	for _, fr := range frames {
		if slices.Contains(f.names[1], fr) || slices.ContainsFunc(f.regexes[1], func(re *regexp.Regexp) bool { return re.MatchString(fr) }) {
			return false
		}
	}
	for _, name := range f.names[0] {
		if !slices.Contains(frames, name) {
			return false
		}
	}
	for _, re := range f.regexes[0] {
		if !slices.ContainsFunc(frames, re.MatchString) {
			return false
		}
	}
	return true
}
