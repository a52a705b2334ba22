package upstream

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// A reply is read whole whatever its size against the pooled pieces (empty, one byte, a piece
// exactly, a piece and a byte, several pieces), in reads of any size, into a slice of its exact
// size; what was read before an error comes back with the error.
func TestReadAllReadsTheWholeReply(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, bodyPiece - 1, bodyPiece, bodyPiece + 1, 3*bodyPiece + 17, 1 << 20} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(rng.IntN(256))
		}
		for name, r := range map[string]io.Reader{
			"whole":         bytes.NewReader(want),
			"byte a time":   iotest.OneByteReader(bytes.NewReader(want)),
			"half":          iotest.HalfReader(bytes.NewReader(want)),
			"EOF with data": iotest.DataErrReader(bytes.NewReader(want)),
		} {
			if n > bodyPiece+1 && name == "byte a time" {
				continue // a megabyte one byte at a time says nothing more
			}
			got, err := ReadAll(r)
			if err != nil || !bytes.Equal(got, want) || cap(got) != n {
				t.Errorf("%d bytes, %s: read %d (cap %d), %v", n, name, len(got), cap(got), err)
			}
		}
	}
	boom := errors.New("connection reset")
	got, err := ReadAll(io.MultiReader(bytes.NewReader(make([]byte, bodyPiece+5)), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) || len(got) != bodyPiece+5 {
		t.Errorf("read %d bytes, %v; want %d and the error", len(got), err, bodyPiece+5)
	}
}

// A pooled body holds the whole reply until it is released, and a buffer released is read into
// again from its start: the next reply, shorter, is not followed by the last one's bytes.
// Replies of every size go through the lists the same way.
func TestReadPooledHoldsTheReplyUntilReleased(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const k256 = 256 << 10
	for _, n := range []int{3 * firstBody, 0, firstBody + 1, 17, k256 + 1, 5, k256, 3*k256 + 3, k256 + 7, 9, maxBody + 1, 2*k256 - 1, 3 * firstBody} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(rng.IntN(256))
		}
		body, err := ReadPooled(iotest.HalfReader(bytes.NewReader(want)))
		if err != nil || !bytes.Equal(body.Bytes(), want) {
			t.Fatalf("%d bytes: read %d, %v", n, len(body.Bytes()), err)
		}
		body.Release()
	}
}

// A kept body (one several readers share) stays as it was after its Release: its buffer does not
// go back to the free list, so no later reply is read into it; a released body's buffer does.
func TestKeptBodyIsNotTheNextReplysBuffer(t *testing.T) {
	for drained := false; !drained; {
		select {
		case <-freeLists[0]:
		default:
			drained = true
		}
	}
	first := bytes.Repeat([]byte("a"), 100)
	body, err := ReadPooled(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	kept := body.Kept()
	kept.Release()
	if n := len(freeLists[0]); n != 0 {
		t.Fatalf("a kept body's Release gave its buffer back (%d in the list)", n)
	}
	next, _ := ReadPooled(bytes.NewReader(bytes.Repeat([]byte("b"), 100)))
	if !bytes.Equal(kept.Bytes(), first) {
		t.Errorf("a kept body was read over by the next reply: %q", kept.Bytes()[:10])
	}
	next.Release()
	if n := len(freeLists[0]); n != 1 {
		t.Errorf("a released body's buffer is not back in the list (%d in it)", n)
	}
}
