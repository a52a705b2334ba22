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

// Replies read by ReadPooled go into buffers from free lists that the garbage collector does
// not empty (a sync.Pool is emptied by every other collection, and the collector runs about once
// per large query). There is a list per size, from firstBody doubling to maxBody: a reply that
// outgrows its buffer moves into one of the next size from its list, so that once the lists hold
// buffers of a query's reply sizes its replies cost no allocation (a 2,000-span trace's reply is
// about a megabyte, and reading it into a new buffer each time was a tenth of the `trace` query's
// allocations). Each list holds at most about listBytes (and at least one buffer): about 20 MB
// at worst, kept for the process's life.
const (
	firstBody = 16 << 10
	maxBody   = 4 << 20
	listBytes = 2 << 20
	maxListed = 32
)

// freeLists[k] holds buffers of firstBody<<k bytes.
var freeLists = func() (lists []chan *[]byte) {
	for size := firstBody; size <= maxBody; size *= 2 {
		lists = append(lists, make(chan *[]byte, min(maxListed, max(1, listBytes/size))))
	}
	return lists
}()

// listOf is the list of buffers of size c; -1 when c is no list's size.
func listOf(c int) int {
	for k, size := 0, firstBody; size <= maxBody; k, size = k+1, size*2 {
		if c == size {
			return k
		}
	}
	return -1
}

// Body is a reply read whole into a buffer of the free list: Bytes holds it until Release, after
// which the buffer is the next reply's. It is for a decoder that copies what it keeps
// (jsoniter's strings are copies): a query's replies then cost no allocation once the list holds
// buffers of their size.
type Body struct {
	buf  *[]byte
	kept bool // Release leaves the buffer alone (Kept)
}

// ReadPooled reads r whole. What was read before an error is returned with it; the Body is to be
// released either way.
func ReadPooled(r io.Reader) (Body, error) {
	var buf *[]byte
	select {
	case buf = <-freeLists[0]:
	default:
		b := make([]byte, 0, firstBody)
		buf = &b
	}
	b := (*buf)[:0]
	var err error
	for {
		if len(b) == cap(b) {
			b = grow(b)
		}
		var n int
		n, err = r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	*buf = b
	return Body{buf: buf}, err
}

// grow is b's bytes in a buffer of twice its size, from that size's list when it has one (b's
// buffer then goes back to its own list).
func grow(b []byte) []byte {
	if k := listOf(2 * cap(b)); k >= 0 {
		select {
		case next := <-freeLists[k]:
			grown := append((*next)[:0], b...)
			*next = b[:0] // the list's holder carries b's buffer back
			Body{buf: next}.Release()
			return grown
		default:
		}
	}
	grown := make([]byte, len(b), 2*cap(b)) // doubling: append grows a large slice by a quarter
	copy(grown, b)
	return grown
}

// Bytes is the body; valid until Release. The zero Body is empty.
func (b Body) Bytes() []byte {
	if b.buf == nil {
		return nil
	}
	return *b.buf
}

// Kept is the body with a Release that does nothing: for a body that several readers share,
// which no reader can give back, since none knows when the others are done.
func (b Body) Kept() Body {
	b.kept = true
	return b
}

// Release gives the buffer back for the next reply (one of no list's size, or whose list is
// full, is dropped).
func (b Body) Release() {
	if b.buf == nil || b.kept {
		return
	}
	k := listOf(cap(*b.buf))
	if k < 0 {
		return
	}
	*b.buf = (*b.buf)[:0]
	select {
	case freeLists[k] <- b.buf:
	default:
	}
}
