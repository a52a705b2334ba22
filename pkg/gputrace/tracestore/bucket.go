package tracestore

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/thanos-io/objstore"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// BucketRef starts the file reference of a bucket object: bucket:<name>/<key under the prefix>.
// It cannot be a path inside a trace directory, which is relative and never has a colon first.
const BucketRef = "bucket:"

// Bucket defaults: how long one listing or one object's open may take, and how long a listing
// is reused before the bucket is listed again.
const (
	DefaultBucketTimeout  = 30 * time.Second
	DefaultBucketCacheTTL = time.Minute
)

// Bucket is one object-storage bucket of kernel traces (thanos-io/objstore, any provider),
// read under its prefix only. Its listing is cached (at most the store's traceMaxFiles
// objects, listed again after the TTL) so that finding a request's traces by the trace ID in
// their names does not list the whole bucket per query. Objects are read as streams; Nsight
// SQLite exports are spooled to a temporary file first (SQLite needs random access).
type Bucket struct {
	name    string
	prefix  string
	broken  error // why the bucket cannot be used (its settings are invalid)
	secrets []string
	opts    BucketOptions

	// open makes the client on first use: some providers (azure) ask for the bucket as their
	// client is made, and an instance is made without waiting on any upstream.
	open   func(context.Context) (objstore.Bucket, error)
	openMu sync.Mutex
	bkt    objstore.Bucket

	mu       sync.Mutex
	cache    *bucketListing
	inflight *listCall // the listing running now, which every caller meanwhile shares
}

// listCall is one listing of the bucket and its outcome, shared by the callers that come while
// it runs: panels of one dashboard asking at once wait for one listing, not each for the one
// before theirs, so none waits past the bucket's timeout.
type listCall struct {
	done chan struct{} // closed once l or err is set
	at   time.Time
	l    *bucketListing
	err  error // naming the bucket, its cause in words
}

// BucketOptions tune a Bucket; zero fields take the defaults.
type BucketOptions struct {
	Prefix  string        // key prefix, without leading or trailing /
	Secrets []string      // the bucket's credentials: redacted from every message
	Timeout time.Duration // one listing, one object's attributes or open
	TTL     time.Duration // how long a listing is reused
	// MaxObjects bounds the listing (and so the cache); the store's traceMaxFiles when zero.
	MaxObjects int
	Now        func() time.Time
}

type bucketListing struct {
	objects []bucketObject // the most recent, at most the bound
	seen    int            // trace objects under the prefix
	at      time.Time
}

// truncated says whether objects were left out for the bound.
func (l *bucketListing) truncated() bool { return l.seen > len(l.objects) }

type bucketObject struct {
	key      string // under the prefix
	modified time.Time
}

// NewBucket is a bucket of kernel traces through bkt, named name in messages and file
// references.
func NewBucket(name string, bkt objstore.Bucket, o BucketOptions) *Bucket {
	return OpenBucket(name, func(context.Context) (objstore.Bucket, error) { return bkt, nil }, o)
}

// OpenBucket is a bucket whose client open makes on first use (and again after a failure).
func OpenBucket(name string, open func(context.Context) (objstore.Bucket, error), o BucketOptions) *Bucket {
	b := &Bucket{name: name, open: open, secrets: o.Secrets, opts: o, prefix: strings.Trim(o.Prefix, "/")}
	if b.opts.Timeout <= 0 {
		b.opts.Timeout = DefaultBucketTimeout
	}
	if b.opts.TTL <= 0 {
		b.opts.TTL = DefaultBucketCacheTTL
	}
	if b.opts.Now == nil {
		b.opts.Now = time.Now
	}
	return b
}

// BrokenBucket is a configured bucket that cannot be used: every listing says why.
func BrokenBucket(name string, err error) *Bucket {
	return &Bucket{name: name, broken: err}
}

// Name is the bucket's name in the settings.
func (b *Bucket) Name() string { return b.name }

// Close closes the bucket's client.
func (b *Bucket) Close() error {
	b.openMu.Lock()
	defer b.openMu.Unlock()
	if b.bkt == nil {
		return nil
	}
	return b.bkt.Close()
}

// client is the bucket's client, made on first use; an error says why it cannot be used.
func (b *Bucket) client(ctx context.Context) (objstore.Bucket, error) {
	if b.broken != nil {
		return nil, fmt.Errorf("bucket %s: cannot be used: %s", b.name, b.broken.Error())
	}
	b.openMu.Lock()
	defer b.openMu.Unlock()
	if b.bkt != nil {
		return b.bkt, nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	bkt, err := b.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: cannot be used: %s", b.name, b.redact(err.Error()))
	}
	b.bkt = bkt
	return bkt, nil
}

// key is an object's full key.
func (b *Bucket) key(rel string) string {
	if b.prefix == "" {
		return rel
	}
	return b.prefix + "/" + rel
}

// ref is an object's file reference.
func (b *Bucket) ref(rel string) string { return BucketRef + b.name + "/" + rel }

// cause says what went wrong with a call to the bucket, in words, without credentials: the
// provider's own error where none of these fits.
func (b *Bucket) cause(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return fmt.Sprintf("no answer within %s", b.opts.Timeout)
	case b.bkt != nil && b.bkt.IsAccessDeniedErr(err):
		return "access denied (403): the credentials may not read this bucket"
	case b.bkt != nil && b.bkt.IsObjNotFoundErr(err):
		return "not found (deleted since it was listed?)"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "reply cut short: the connection ended before the whole reply arrived (unexpected EOF)"
	}
	if op, ok := errors.AsType[*net.OpError](err); ok {
		if op.Op == "dial" {
			return "unreachable (" + b.redact(op.Error()) + ")"
		}
		return "the connection failed (" + b.redact(op.Error()) + ")"
	}
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		return "unreachable (" + b.redact(dns.Error()) + ")"
	}
	if xe, ok := errors.AsType[*xml.SyntaxError](err); ok {
		return "invalid reply, not the XML the store sends (" + b.redact(xe.Error()) + ")"
	}
	// The provider's error, less the request URL its HTTP client puts first (Get "http://…":),
	// which repeats the endpoint and the query string.
	if ue, ok := errors.AsType[*url.Error](err); ok {
		inner := strings.TrimSpace(ue.Err.Error())
		if strings.HasPrefix(inner, "Connection closed by foreign host") {
			// minio-go's words (with the URL again) for a connection closed before any reply.
			return "the connection closed before any reply arrived (EOF)"
		}
		return b.redact(inner)
	}
	return b.redact(err.Error())
}

func (b *Bucket) redact(text string) string {
	for _, s := range b.secrets {
		if len(s) >= 4 {
			text = strings.ReplaceAll(text, s, "[redacted]")
		}
	}
	return text
}

// listing lists the bucket's trace objects under its prefix (recursively), or reuses the last
// listing younger than the TTL; fresh says which. A caller that comes while a listing runs
// waits for that one (at most its own context allows). A failed listing falls back on an older
// one, with a warning; force (the health check) asks for a fresh listing, and its failure.
func (b *Bucket) listing(ctx context.Context, maxObjects int, force bool) (l *bucketListing, fresh bool, warn notices.List, err error) {
	bkt, err := b.client(ctx)
	if err != nil {
		return nil, false, nil, err
	}
	b.mu.Lock()
	now := b.opts.Now()
	if !force && b.cache != nil && now.Sub(b.cache.at) < b.opts.TTL {
		defer b.mu.Unlock()
		return b.cache, false, nil, nil
	}
	if b.opts.MaxObjects > 0 {
		maxObjects = b.opts.MaxObjects
	}
	call := b.inflight
	if call == nil {
		call = &listCall{done: make(chan struct{}), at: now}
		b.inflight = call
		// Bounded by the bucket's timeout, not by this caller's context: a query that gives
		// up does not fail the others waiting on the same listing.
		go b.runListing(context.WithoutCancel(ctx), bkt, maxObjects, call)
	}
	b.mu.Unlock()

	select {
	case <-call.done:
	case <-ctx.Done():
		return nil, false, nil, fmt.Errorf("bucket %s: cannot list it: %s", b.name, b.cause(ctx, ctx.Err()))
	}
	if call.err == nil {
		return call.l, true, nil, nil
	}
	if force || ctx.Err() != nil {
		return nil, false, nil, call.err
	}
	b.mu.Lock()
	older := b.cache
	b.mu.Unlock()
	if older == nil {
		return nil, false, nil, call.err
	}
	warn.Warnf("%v; using its list from %s ago", call.err, age(now.Sub(older.at)))
	return older, false, warn, nil
}

// runListing makes one listing and hands its outcome to every caller waiting on it.
func (b *Bucket) runListing(ctx context.Context, bkt objstore.BucketReader, maxObjects int, call *listCall) {
	var l *bucketListing
	err := safe.Do("kernel trace bucket listing", func() (err error) {
		l, err = b.list(ctx, bkt, maxObjects)
		return err
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		call.err = fmt.Errorf("bucket %s: cannot list it: %s", b.name, b.cause(ctx, err))
	} else {
		l.at = call.at
		b.cache, call.l = l, l
	}
	b.inflight = nil
	close(call.done)
}

func (b *Bucket) list(ctx context.Context, bkt objstore.BucketReader, maxObjects int) (*bucketListing, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	dir := ""
	if b.prefix != "" {
		dir = b.prefix + "/"
	}
	out := &bucketListing{}
	opts := []objstore.IterOption{objstore.WithRecursiveIter()}
	withTimes := false
	for _, o := range bkt.SupportedIterOptions() {
		withTimes = withTimes || o == objstore.UpdatedAt
	}
	if withTimes {
		opts = append(opts, objstore.WithUpdatedAt())
	}
	err := bkt.IterWithAttributes(ctx, dir, func(a objstore.IterObjectAttributes) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, ok := strings.CutPrefix(a.Name, dir)
		if !ok || strings.HasSuffix(rel, "/") || !IsTraceFile(rel) || !safeKey(rel) {
			return nil
		}
		modified, _ := a.LastModified()
		out.seen++
		out.objects = append(out.objects, bucketObject{key: rel, modified: modified.UTC()})
		if len(out.objects) >= 2*maxObjects {
			out.objects = newest(out.objects, maxObjects)
		}
		return nil
	}, opts...)
	if err != nil {
		return nil, err
	}
	out.objects = newest(out.objects, maxObjects)
	return out, nil
}

// newest keeps the n most recent objects: a bucket lists in key order, and the bound must
// leave out old days, not new ones. Memory stays within twice the bound while listing.
func newest(objects []bucketObject, n int) []bucketObject {
	sort.SliceStable(objects, func(i, j int) bool { return objects[i].modified.After(objects[j].modified) })
	if len(objects) > n {
		objects = objects[:n:n]
	}
	return objects
}

// safeKey says whether a key under the prefix can be named and read without leaving it: no
// empty, "." or ".." part, not absolute, no NUL (the filesystem provider resolves paths).
func safeKey(rel string) bool {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) || strings.Contains(rel, "\\") {
		return false
	}
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// age is a duration as a notice says it, to the second.
func age(d time.Duration) string { return d.Round(time.Second).String() }

// List is the bucket's trace objects as trace files, most recent first, with the listing's
// notices: its age when it came from the cache, a cap reached, a failure naming the bucket.
func (b *Bucket) List(ctx context.Context, maxObjects int) ([]gputrace.TraceFile, notices.List) {
	l, fresh, missed, err := b.listing(ctx, maxObjects, false)
	if err != nil {
		missed.Warn(err.Error())
		return nil, missed
	}
	if a := b.opts.Now().Sub(l.at); !fresh && a >= time.Second {
		missed.Infof("bucket %s: object list from %s ago (listed again after %s)", b.name, age(a), b.opts.TTL)
	}
	if l.truncated() {
		missed.Warnf("bucket %s: %d trace objects under its prefix: only the %d most recent were looked at (jsonData.traceMaxFiles)", b.name, l.seen, len(l.objects))
	}
	out := make([]gputrace.TraceFile, 0, len(l.objects))
	for _, o := range l.objects {
		out = append(out, b.file(o.key, o.modified, 0))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	return out, missed
}

func (b *Bucket) file(rel string, modified time.Time, size int64) gputrace.TraceFile {
	return gputrace.TraceFile{Rel: b.ref(rel), Key: rel, Size: size, Modified: modified, TraceIDs: activity.TraceIDsInFileName(rel), BucketName: b.name}
}

// Check lists the bucket afresh (the health check): how many trace objects it holds under its
// prefix, up to maxObjects, or why it could not be listed.
func (b *Bucket) Check(ctx context.Context, maxObjects int) (int, bool, error) {
	l, _, _, err := b.listing(ctx, maxObjects, true)
	if err != nil {
		return 0, false, err
	}
	return l.seen, l.truncated(), nil
}

// resolve finds one object named by its key under the prefix.
func (b *Bucket) resolve(ctx context.Context, rel string, maxBytes int64) (gputrace.TraceFile, error) {
	if !safeKey(rel) || path.Clean(rel) != rel {
		return gputrace.TraceFile{}, outsideError(b.ref(rel) + " is outside the bucket's prefix")
	}
	if !IsTraceFile(rel) {
		return gputrace.TraceFile{}, fmt.Errorf("%s is not a trace file (.json, .json.gz, .pt.trace.json, .sqlite)", b.ref(rel))
	}
	bkt, err := b.client(ctx)
	if err != nil {
		return gputrace.TraceFile{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	attrs, err := bkt.Attributes(callCtx, b.key(rel))
	if err != nil {
		if bkt.IsObjNotFoundErr(err) {
			return gputrace.TraceFile{}, fmt.Errorf("trace file %s not found in bucket %s", b.ref(rel), b.name)
		}
		return gputrace.TraceFile{}, fmt.Errorf("trace file %s: %s", b.ref(rel), b.cause(ctx, err))
	}
	if attrs.Size > maxBytes {
		return gputrace.TraceFile{}, fmt.Errorf("trace file %s: %d bytes, over jsonData.traceMaxFileBytes (%d)", b.ref(rel), attrs.Size, maxBytes)
	}
	return b.file(rel, attrs.LastModified.UTC(), attrs.Size), nil
}

// analyze reads one object as it arrives: a Chrome trace (gzip or not) through the streaming
// reader, an Nsight export spooled to a temporary file first, removed after.
func (b *Bucket) analyze(ctx context.Context, f gputrace.TraceFile, maxBytes int64, l gputrace.Limits) (*gputrace.Result, error) {
	bkt, err := b.client(ctx)
	if err != nil {
		return nil, err
	}
	// The open alone is bounded by the timeout; the read by the query's own deadline.
	openCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := time.AfterFunc(b.opts.Timeout, cancel)
	rc, err := bkt.Get(openCtx, b.key(f.Key))
	stopped := timer.Stop()
	if err != nil {
		if !stopped && ctx.Err() == nil {
			return nil, fmt.Errorf("no answer within %s", b.opts.Timeout)
		}
		return nil, errors.New(b.cause(ctx, err))
	}
	defer rc.Close()
	r := &cappedReader{r: rc, max: maxBytes}
	if isNsys(f.Key) {
		return b.analyzeSpooled(ctx, r, f, l)
	}
	c := gputrace.NewCollector(l)
	c.AddFileName(f.Key)
	err = kineto.Read(r, c)
	if err != nil {
		err = b.readError(ctx, err)
	}
	return c.Result(gputrace.AnalysisOptions{}), err
}

// readError says a failed transfer, and content that is no trace, in words.
func (b *Bucket) readError(ctx context.Context, err error) error {
	if errors.Is(err, errOverMax) {
		return errOverMax
	}
	if te, ok := errors.AsType[*transferError](err); ok {
		if errors.Is(te.error, io.ErrUnexpectedEOF) {
			return fmt.Errorf("cut short after %d bytes: the connection ended before the whole object arrived (unexpected EOF)", te.at)
		}
		return fmt.Errorf("the transfer failed after %d bytes: %s", te.at, b.cause(ctx, te.error))
	}
	if pe, ok := errors.AsType[*kineto.ParseError](err); ok {
		// What the store sent whole is not a trace: another file under a trace's name, or
		// something in front of the store answering in its place.
		return fmt.Errorf("not a readable PyTorch profiler trace (%s)", b.redact(strings.TrimPrefix(pe.Error(), "gputrace: ")))
	}
	return errors.New(b.redact(err.Error()))
}

// analyzeSpooled copies an Nsight export to a temporary file (at most traceMaxFileBytes) and
// reads it there; the file is removed whatever happens.
func (b *Bucket) analyzeSpooled(ctx context.Context, r io.Reader, f gputrace.TraceFile, l gputrace.Limits) (*gputrace.Result, error) {
	tmp, err := os.CreateTemp("", "hsi-nsys-*.sqlite")
	if err != nil {
		return nil, fmt.Errorf("cannot spool it to a temporary file: %v", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if _, err := io.Copy(tmp, r); err != nil {
		return nil, b.readError(ctx, err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return AnalyzeOpened(ctx, tmp, f.Key, l, gputrace.AnalysisOptions{})
}

// errOverMax is an object that turned out larger than the settings allow.
var errOverMax = errors.New("more bytes than jsonData.traceMaxFileBytes allows")

// transferError is a failed read of the object's body (not of its content), at byte at.
type transferError struct {
	error
	at int64
}

func (e *transferError) Unwrap() error { return e.error }

// cappedReader fails once more than max bytes came, and marks the body's own read errors.
type cappedReader struct {
	r         io.Reader
	read, max int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.read > c.max {
		return n, errOverMax
	}
	if err != nil && err != io.EOF {
		err = &transferError{err, c.read}
	}
	return n, err
}
