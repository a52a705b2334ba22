package classify

import "testing"

func TestXIDMeanings(t *testing.T) {
	for _, x := range []uint64{13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 119, 120} {
		if m, a := XIDMeaning(x); m == "" || a == "" || m == "unlisted XID" {
			t.Errorf("XID %d has no meaning", x)
		}
	}
	if m, _ := XIDMeaning(79); m != "GPU has fallen off the bus" {
		t.Errorf("XID 79 = %q", m)
	}
	if m, a := XIDMeaning(9999); m != "unlisted XID" || a == "" {
		t.Errorf("XID 9999 = %q %q", m, a)
	}
}
