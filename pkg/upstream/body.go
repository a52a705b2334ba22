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
// per large query). One holds at most freeBodies buffers of at most maxFreeBody bytes, the
// other at most freeLargeBodies of at most maxLargeBody (a 2,000-span trace's reply is about a
// megabyte, and reading it into a new buffer each time was a tenth of the `trace` query's
// allocations): about 24 MB at worst, kept for the process's life.
const (
	freeBodies      = 32
	maxFreeBody     = 256 << 10
	firstBody       = 16 << 10
	freeLargeBodies = 4
	maxLargeBody    = 4 << 20
)

var (
	freeBodyList  = make(chan *[]byte, freeBodies)
	freeLargeList = make(chan *[]byte, freeLargeBodies)
)

// Body is a reply read whole into a buffer of the free list: Bytes holds it until Release, after
// which the buffer is the next reply's. It is for a decoder that copies what it keeps
// (jsoniter's strings are copies): a query's replies then cost no allocation once the list holds
// buffers of their size.
type Body struct{ buf *[]byte }

// ReadPooled reads r whole. What was read before an error is returned with it; the Body is to be
// released either way.
func ReadPooled(r io.Reader) (Body, error) {
	var buf *[]byte
	select {
	case buf = <-freeBodyList:
	default:
		b := make([]byte, 0, firstBody)
		buf = &b
	}
	b := (*buf)[:0]
	var err error
	for {
		if len(b) == cap(b) {
			b = grow(buf, b)
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
	return Body{buf}, err
}

// grow is b (held in buf) in a larger buffer: a large one of the free list when b has outgrown
// the small ones and the list has one (the small buffer goes back to its list), else twice its
// size (append grows a large slice by a quarter).
func grow(buf *[]byte, b []byte) []byte {
	if cap(b) >= maxFreeBody {
		select {
		case large := <-freeLargeList:
			if cap(*large) > cap(b) {
				grown := append((*large)[:0], b...)
				if cap(b) == maxFreeBody {
					small := b[:0]
					Body{&small}.Release()
				}
				return grown
			}
			Body{large}.Release()
		default:
		}
	}
	grown := make([]byte, len(b), 2*cap(b))
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

// Release gives the buffer back for the next reply (one too large for the lists is dropped).
func (b Body) Release() {
	if b.buf == nil {
		return
	}
	list := freeBodyList
	switch c := cap(*b.buf); {
	case c > maxLargeBody:
		return
	case c > maxFreeBody:
		list = freeLargeList
	}
	*b.buf = (*b.buf)[:0]
	select {
	case list <- b.buf:
	default:
	}
}
