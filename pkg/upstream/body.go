package upstream

import (
	"io"
	"sync"
)

// bodyPiece is one pooled piece of a reply being read.
const bodyPiece = 32 << 10

var bodyPieces = sync.Pool{New: func() any { b := make([]byte, bodyPiece); return &b }}

// ReadAll reads a reply's body whole: into pooled 32 KB pieces, then one slice of its exact size
// (io.ReadAll and bytes.Buffer grow theirs by doubling, copying the reply about twice over where
// no Content-Length says its size, as for a gzipped reply). What was read before an error is
// returned with it.
func ReadAll(r io.Reader) ([]byte, error) {
	var pieces []*[]byte
	defer func() {
		for _, p := range pieces {
			bodyPieces.Put(p)
		}
	}()
	total, last := 0, 0 // bytes in all pieces, bytes in the last
	var err error
	for {
		if len(pieces) == 0 || last == bodyPiece {
			pieces = append(pieces, bodyPieces.Get().(*[]byte))
			last = 0
		}
		var n int
		n, err = r.Read((*pieces[len(pieces)-1])[last:])
		last += n
		total += n
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	out := make([]byte, 0, total)
	for i, p := range pieces {
		if i == len(pieces)-1 {
			out = append(out, (*p)[:last]...)
		} else {
			out = append(out, *p...)
		}
	}
	return out, err
}
