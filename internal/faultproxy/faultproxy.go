// Package faultproxy is a reverse proxy on 127.0.0.1 in front of one real upstream (Pyroscope,
// Prometheus, Jaeger or an S3-compatible object store) whose fault can be switched while it
// runs: the upstream down, slow, answering 5xx or 4xx, sending a cut-short, invalid or
// mislabelled body, or a body far beyond any response limit. A fault may hit every request or
// only some (SetFor: an object store's object reads but not its listings, say). Tests put one in
// front of each upstream of the test bed to see what the plugin makes of each fault. It also
// checks that each request carried the configured credentials and records what it saw, so that
// a test can tell the secrets were in use.
//
// Requests are forwarded with the Host header the client sent (the proxy's own address), so a
// request signed over its Host header (S3's Signature Version 4) stays valid.
package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Fault is what the proxy does to the requests it gets.
type Fault string

// The faults. Each applies to every request while it is set.
const (
	None        Fault = "none"       // pass everything through
	Down        Fault = "down"       // nothing listens: connection refused
	Slow        Fault = "slow"       // no reply until the client gives up
	ServerError Fault = "5xx"        // 503 with a plain-text body, as a load balancer sends
	ClientError Fault = "4xx"        // 4xx (Options.ClientErrorStatus) whose body echoes the Authorization header (JSON; S3's XML for a SigV4-signed request)
	Truncated   Fault = "truncated"  // the real reply cut in the middle, connection dropped
	Invalid     Fault = "invalid"    // bytes that are no valid reply, under the real reply's content type
	WrongType   Fault = "wrong-type" // a 200 HTML page where the API reply belongs
	Huge        Fault = "huge"       // a well-formed-looking reply of Options.HugeBytes, streamed
)

// defaultHuge is far beyond any response limit.
const defaultHuge = 1 << 30

// Faults lists every fault but None, in the order tests and tables show them.
var Faults = []Fault{Down, Slow, ServerError, ClientError, Truncated, Invalid, WrongType, Huge}

// Options configure a proxy.
type Options struct {
	// Authorization is the header value each request must carry ("Basic ...", "Bearer ...");
	// empty means requests must carry none (unless AuthorizationPrefix is set).
	Authorization string
	// AuthorizationPrefix, when set, is what each request's Authorization header must start
	// with instead, for credentials that sign each request: S3's "AWS4-HMAC-SHA256
	// Credential=<access key>/".
	AuthorizationPrefix string
	// ClientErrorStatus is the status of the ClientError fault; 0 means 401.
	ClientErrorStatus int
	// HugeBytes is the size of the Huge fault's body; 0 means 1 GiB.
	HugeBytes int64
}

// Request is one request the proxy saw.
type Request struct {
	Method, Path string
	Fault        Fault
	// AuthOK says the request carried exactly Options.Authorization.
	AuthOK bool
}

// Proxy is one fault-injecting reverse proxy. Its URL stays the same across faults.
type Proxy struct {
	opts    Options
	addr    string
	forward *httputil.ReverseProxy

	mu       sync.Mutex
	fault    Fault
	match    func(*http.Request) bool // the requests fault hits; nil: all
	server   *http.Server             // nil while Down
	release  chan struct{}            // closed to let Slow's held requests go
	requests []Request
	retries  int
}

// New starts a proxy in front of target (a base URL such as http://127.0.0.1:9090).
func New(target string, opts Options) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q is not a URL", target)
	}
	if opts.ClientErrorStatus == 0 {
		opts.ClientErrorStatus = http.StatusUnauthorized
	}
	if opts.HugeBytes == 0 {
		opts.HugeBytes = defaultHuge
	}
	p := &Proxy{opts: opts, fault: None, release: make(chan struct{})}
	p.forward = httputil.NewSingleHostReverseProxy(u)
	p.forward.ErrorLog = quiet
	// Flush every write, so that a Truncated reply's first half reaches the client before the
	// connection drops.
	p.forward.FlushInterval = -1
	p.forward.ModifyResponse = p.modifyResponse
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	return p, nil
}

// URL is the proxy's base URL, to configure in place of the upstream's.
func (p *Proxy) URL() string { return "http://" + p.addr }

// Set switches the fault, for every request; requests already held by Slow are let go.
func (p *Proxy) Set(f Fault) error { return p.SetFor(f, nil) }

// SetFor switches the fault for the requests match says yes to (every request when match is
// nil); the others pass through as with None. Down cannot be limited: nothing listens.
func (p *Proxy) SetFor(f Fault, match func(*http.Request) bool) error {
	if f == Down && match != nil {
		return errors.New("faultproxy: Down refuses every connection; it cannot be limited to some requests")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.release)
	p.release = make(chan struct{})
	p.fault, p.match = f, match
	switch {
	case f == Down && p.server != nil:
		// Close drops open connections too, so pooled keep-alive connections fail as well.
		err := p.server.Close()
		p.server = nil
		return err
	case f != Down && p.server == nil:
		// Listening again on the same port keeps the URL the plugin was configured with.
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("faultproxy: cannot listen on %s again: %w", p.addr, err)
		}
		p.serve(ln)
	}
	return nil
}

// Requests returns the requests seen so far.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// Close stops the proxy and lets held requests go.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.release)
	p.release = make(chan struct{})
	if p.server != nil {
		_ = p.server.Close()
		p.server = nil
	}
}

func (p *Proxy) serve(ln net.Listener) {
	p.server = &http.Server{Handler: http.HandlerFunc(p.handle), ReadHeaderTimeout: 10 * time.Second, ErrorLog: quiet}
	go func(s *http.Server) { _ = s.Serve(ln) }(p.server)
}

func (p *Proxy) handle(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	fault, release := p.fault, p.release
	if p.match != nil && !p.match(r) {
		fault = None
	}
	p.requests = append(p.requests, Request{Method: r.Method, Path: r.URL.Path, Fault: fault, AuthOK: p.authOK(r)})
	p.mu.Unlock()

	switch fault {
	case Slow:
		select {
		case <-r.Context().Done():
			return
		case <-release:
			// The fault changed while the client still waits: it gets the real reply.
		}
	case ServerError:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "upstream connect error or disconnect/reset before headers. reset reason: overflow\n")
		return
	case ClientError:
		p.clientError(w, r)
		return
	case WrongType:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, loginPage)
		return
	case Huge:
		huge(w, r, p.opts.HugeBytes)
		return
	}
	if fault == Truncated {
		// Kept so that modifyResponse can ask again when the real server fails on its own.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	// None, Truncated and Invalid start from the real reply (modifyResponse).
	p.forward.ServeHTTP(w, r.WithContext(withFault(r.Context(), fault)))
}

// authOK says whether r carried the configured credentials.
func (p *Proxy) authOK(r *http.Request) bool {
	got := r.Header.Get("Authorization")
	if p.opts.AuthorizationPrefix != "" {
		return strings.HasPrefix(got, p.opts.AuthorizationPrefix)
	}
	return got == p.opts.Authorization
}

// sigV4 is how a request signed with S3's Signature Version 4 starts its Authorization header.
const sigV4 = "AWS4-HMAC-SHA256 "

// clientError answers with a JSON error body in the shapes of Connect ({code, message}) and of
// Prometheus ({status, errorType, error}), quoting the Authorization header as some servers do
// when they reject it: the realistic way a secret ends up in an error message. A request signed
// for S3 gets S3's XML error instead (AccessDenied for 403), quoting the header the same way.
func (p *Proxy) clientError(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("credentials rejected: Authorization %q is not valid for %s", r.Header.Get("Authorization"), r.URL.Path)
	if strings.HasPrefix(r.Header.Get("Authorization"), sigV4) {
		s3Error(w, r, p.opts.ClientErrorStatus, msg)
		return
	}
	body, _ := json.Marshal(map[string]string{
		"code": "unauthenticated", "message": msg,
		"status": "error", "errorType": "unauthorized", "error": msg,
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(p.opts.ClientErrorStatus)
	_, _ = w.Write(body)
}

// s3Error answers as an S3 store does: <Error> with the code of the status, the message, the
// resource and a request ID. A HEAD reply has no body.
func s3Error(w http.ResponseWriter, r *http.Request, status int, msg string) {
	code := map[int]string{
		http.StatusBadRequest: "InvalidRequest", http.StatusUnauthorized: "Unauthorized",
		http.StatusForbidden: "AccessDenied", http.StatusNotFound: "NoSuchKey",
	}[status]
	if code == "" {
		code = http.StatusText(status)
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	_ = xml.NewEncoder(&buf).Encode(struct {
		XMLName   xml.Name `xml:"Error"`
		Code      string
		Message   string
		Resource  string
		RequestID string `xml:"RequestId"`
	}{Code: code, Message: msg, Resource: r.URL.Path, RequestID: "faultproxy-1"})
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// modifyResponse damages the real reply for Truncated and Invalid.
func (p *Proxy) modifyResponse(res *http.Response) error {
	switch faultOf(res.Request.Context()) {
	case Truncated:
		// A cut-short reply is a successful one cut: an error the real server gives on its own
		// (the bed's Pyroscope answers 500 "canceled: stream error" now and then under load)
		// would reach the client as that error instead, whichever fault was asked for.
		if err := p.realSuccess(res); err != nil {
			return err
		}
		full, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		// Half the body, then a read error: ReverseProxy aborts the connection, so the client
		// sees the reply end early whether it was sent with a length or chunked.
		res.Body = io.NopCloser(io.MultiReader(bytes.NewReader(full[:len(full)/2]), errReader{}))
	case Invalid:
		res.Body.Close()
		res.StatusCode, res.Status = http.StatusOK, "200 OK"
		res.Body = io.NopCloser(bytes.NewReader(invalidBody))
		res.ContentLength = int64(len(invalidBody))
		res.Header.Set("Content-Length", strconv.Itoa(len(invalidBody)))
		res.Header.Del("Content-Encoding")
	}
	return nil
}

// realRetries is how often Truncated asks the real server again after it failed on its own.
const realRetries = 3

// realSuccess replaces a real 5xx or 429 reply with the real server's answer to the same request
// asked again, up to realRetries times; each retry is counted in RealRetries.
func (p *Proxy) realSuccess(res *http.Response) error {
	for try := 0; try < realRetries && (res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests); try++ {
		req := res.Request.Clone(res.Request.Context())
		if res.Request.GetBody != nil {
			body, err := res.Request.GetBody()
			if err != nil {
				return err
			}
			req.Body = body
		}
		again, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.retries++
		p.mu.Unlock()
		res.Body.Close()
		*res = *again
	}
	return nil
}

// RealRetries is how many times the real server failed on its own and was asked again.
func (p *Proxy) RealRetries() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retries
}

// quiet drops the proxy's own logging: its errors are the faults it was asked for.
var quiet = log.New(io.Discard, "", 0)

type faultKey struct{}

func withFault(ctx context.Context, f Fault) context.Context {
	return context.WithValue(ctx, faultKey{}, f)
}

func faultOf(ctx context.Context) Fault {
	f, _ := ctx.Value(faultKey{}).(Fault)
	return f
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("faultproxy: reply cut short") }

// invalidBody is neither JSON nor protobuf: it starts like a JSON object and a protobuf field,
// then holds bytes no decoder accepts.
var invalidBody = []byte("{\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00garbage")

const loginPage = `<!DOCTYPE html>
<html><head><title>Sign in</title></head>
<body><h1>Sign in to continue</h1><form method="post" action="/login"><input name="user"><input name="password" type="password"></form></body></html>
`

// huge streams a body of size bytes that looks like a real reply: protobuf for a Connect request
// sent as protobuf (a message whose first field holds endless names), JSON otherwise (an API
// reply whose data array never seems to end). Nothing is held in memory.
func huge(w http.ResponseWriter, r *http.Request, size int64) {
	proto := strings.HasPrefix(r.Header.Get("Content-Type"), "application/proto")
	var head, item, tail []byte
	if proto {
		w.Header().Set("Content-Type", "application/proto")
		item = protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "github.com/example/service.(*Handler).ServeHTTP")
		// Field 1, length-delimited, holding every item: the outer length must be known first.
		n := (size - 16) / int64(len(item))
		head = protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.BytesType), uint64(n)*uint64(len(item)))
		size = int64(len(head)) + n*int64(len(item))
	} else {
		w.Header().Set("Content-Type", "application/json")
		head = []byte(`{"status":"success","data":[`)
		item = []byte(`{"traceID":"4bf92f3577b34da6a3ce929d0e0e4736","metric":{"__name__":"up"},"values":[[1700000000,"1"]]},`)
		tail = []byte(`{}]}`)
		n := (size - int64(len(head)) - int64(len(tail))) / int64(len(item))
		size = int64(len(head)) + n*int64(len(item)) + int64(len(tail))
	}
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head); err != nil {
		return
	}
	// Items in 64 KiB batches; a write fails as soon as the client stops reading and leaves.
	batch := bytes.Repeat(item, max(1, 64<<10/len(item)))
	left := size - int64(len(head)) - int64(len(tail))
	for left > 0 {
		chunk := batch[:min(int64(len(batch)), left)]
		if _, err := w.Write(chunk); err != nil {
			return
		}
		left -= int64(len(chunk))
	}
	_, _ = w.Write(tail)
}
