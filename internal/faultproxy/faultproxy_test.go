package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

const auth = "Bearer s3cr3t-token"

// backend stands for the real upstream: a JSON API reply of a known body.
var backendBody = []byte(`{"status":"success","data":["a","b","c","d","e","f","g","h"]}`)

func start(t *testing.T, opts Options) *Proxy {
	t.Helper()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(backendBody)
	}))
	t.Cleanup(backend.Close)
	p, err := New(backend.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func get(t *testing.T, p *Proxy, header http.Header) (*http.Response, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/api/v1/query", nil)
	req.Header = header
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Authorization", auth)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res, body, err
}

func set(t *testing.T, p *Proxy, f Fault) {
	t.Helper()
	if err := p.Set(f); err != nil {
		t.Fatal(err)
	}
}

func TestNonePassesThroughAndRecordsCredentials(t *testing.T) {
	p := start(t, Options{Authorization: auth})
	res, body, err := get(t, p, nil)
	if err != nil || res.StatusCode != 200 || !bytes.Equal(body, backendBody) {
		t.Fatalf("got %v %v %q", err, res, body)
	}
	req, _ := http.NewRequest(http.MethodGet, p.URL()+"/x", nil)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
	}
	got := p.Requests()
	if len(got) != 2 || !got[0].AuthOK || got[0].Path != "/api/v1/query" || got[0].Fault != None || got[1].AuthOK {
		t.Errorf("requests = %+v, want the first with and the second without the credentials", got)
	}
}

func TestDownRefusesConnectionsThenComesBackOnTheSameURL(t *testing.T) {
	p := start(t, Options{})
	url := p.URL()
	// A pooled keep-alive connection must fail too, not only new ones.
	if _, _, err := get(t, p, nil); err != nil {
		t.Fatal(err)
	}
	set(t, p, Down)
	if _, _, err := get(t, p, nil); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("down: err = %v, want connection refused", err)
	}
	set(t, p, None)
	if _, body, err := get(t, p, nil); err != nil || !bytes.Equal(body, backendBody) || p.URL() != url {
		t.Errorf("back up: %v %q at %s (was %s)", err, body, p.URL(), url)
	}
}

func TestSlowHoldsTheReplyUntilTheClientLeaves(t *testing.T) {
	p := start(t, Options{})
	set(t, p, Slow)
	began := time.Now()
	_, _, err := get(t, p, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the client's deadline", err)
	}
	if took := time.Since(began); took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("took %v", took)
	}
	// Switching the fault lets held requests go at once, with the real reply.
	done := make(chan string)
	go func() {
		res, err := http.Get(p.URL() + "/held")
		if err != nil {
			done <- err.Error()
			return
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		done <- string(body)
	}()
	time.Sleep(100 * time.Millisecond)
	set(t, p, None)
	select {
	case got := <-done:
		if got != string(backendBody) {
			t.Errorf("a held request let go got %q", got)
		}
	case <-time.After(2 * time.Second):
		t.Error("a held request was not let go when the fault changed")
	}
}

func TestErrorReplies(t *testing.T) {
	p := start(t, Options{Authorization: auth, ClientErrorStatus: 400})
	set(t, p, ServerError)
	res, body, err := get(t, p, nil)
	if err != nil || res.StatusCode != 503 || !strings.Contains(string(body), "upstream connect error") {
		t.Errorf("5xx: %v %v %q", err, res, body)
	}
	set(t, p, ClientError)
	res, body, err = get(t, p, nil)
	var reply struct{ Code, Message, Status, ErrorType, Error string }
	if err != nil || res.StatusCode != 400 || json.Unmarshal(body, &reply) != nil {
		t.Fatalf("4xx: %v %v %q", err, res, body)
	}
	if !strings.Contains(reply.Message, auth) || reply.Error != reply.Message || reply.Code != "unauthenticated" || reply.Status != "error" {
		t.Errorf("4xx body %q should echo the Authorization header in Connect's and Prometheus's error fields", body)
	}
}

func TestGarbage(t *testing.T) {
	p := start(t, Options{})

	set(t, p, Truncated)
	_, body, err := get(t, p, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(body) >= len(backendBody) {
		t.Errorf("truncated: err %v, %d of %d bytes", err, len(body), len(backendBody))
	}

	set(t, p, Invalid)
	res, body, err := get(t, p, nil)
	if err != nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" || json.Valid(body) {
		t.Errorf("invalid: %v %v %q", err, res, body)
	}
	if parsesAsProtobuf(body) {
		t.Errorf("invalid: body parses as a protobuf message")
	}

	set(t, p, WrongType)
	res, body, err = get(t, p, nil)
	if err != nil || res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !bytes.Contains(body, []byte("<html>")) {
		t.Errorf("wrong type: %v %v %q", err, res, body)
	}
}

func TestHugeIsWellFormedAndAsLongAsAsked(t *testing.T) {
	const size = 1 << 20
	p := start(t, Options{HugeBytes: size})
	set(t, p, Huge)

	res, body, err := get(t, p, nil)
	var reply struct{ Data []map[string]any }
	if err != nil || res.StatusCode != 200 || json.Unmarshal(body, &reply) != nil || len(reply.Data) < 1000 {
		t.Fatalf("JSON: %v, %d bytes, %d items", err, len(body), len(reply.Data))
	}
	if len(body) > size || len(body) < size-200 {
		t.Errorf("JSON: %d bytes, want about %d", len(body), size)
	}

	res, body, err = get(t, p, http.Header{"Content-Type": {"application/proto"}})
	if err != nil || res.Header.Get("Content-Type") != "application/proto" {
		t.Fatalf("proto: %v %v", err, res)
	}
	num, typ, n := protowire.ConsumeTag(body)
	inner, m := protowire.ConsumeBytes(body[n:])
	if num != 1 || typ != protowire.BytesType || m < 0 || n+m != len(body) || len(body) < size-200 {
		t.Fatalf("proto: not one length-delimited field 1 of about %d bytes (%d bytes)", size, len(body))
	}
	names := 0
	for len(inner) > 0 {
		_, _, n := protowire.ConsumeField(inner)
		if n < 0 {
			t.Fatalf("proto: inner field does not parse after %d names", names)
		}
		inner = inner[n:]
		names++
	}
	if names < 1000 {
		t.Errorf("proto: %d names", names)
	}
}

func TestHugeStopsWhenTheClientLeaves(t *testing.T) {
	p := start(t, Options{}) // 1 GiB
	set(t, p, Huge)
	res, err := http.Get(p.URL() + "/big")
	if err != nil {
		t.Fatal(err)
	}
	if res.ContentLength > defaultHuge || res.ContentLength < defaultHuge-1000 {
		t.Errorf("Content-Length %d, want about 1 GiB", res.ContentLength)
	}
	if _, err := io.CopyN(io.Discard, res.Body, 4<<20); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// The proxy must be free for the next request at once, not busy writing the rest.
	set(t, p, None)
	if _, body, err := get(t, p, nil); err != nil || !bytes.Equal(body, backendBody) {
		t.Errorf("after a huge reply: %v", err)
	}
}

func parsesAsProtobuf(b []byte) bool {
	for len(b) > 0 {
		_, _, n := protowire.ConsumeField(b)
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// The real server failing on its own (as the bed's Pyroscope does now and then under load) must
// not turn the Truncated fault into that server's error: the proxy asks again, with the same
// body, and cuts the real successful reply.
func TestTruncatedCutsARealSuccessEvenWhenTheServerFailedFirst(t *testing.T) {
	calls := 0
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		body, _ := io.ReadAll(r.Body)
		if calls <= 2 {
			http.Error(w, "canceled: stream error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/proto")
		_, _ = w.Write(bytes.Repeat(body, 4))
	}))
	t.Cleanup(backend.Close)
	p, err := New(backend.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	set(t, p, Truncated)
	res, err := http.Post(p.URL()+"/querier.v1.QuerierService/SelectMergeStacktraces", "application/proto", strings.NewReader("0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !errors.Is(err, io.ErrUnexpectedEOF) || string(body) != "01234567890123456789" {
		t.Errorf("truncated after two real failures: %s, err %v, body %q; want 200 with the first half of the third reply, cut short", res.Status, err, body)
	}
	if p.RealRetries() != 2 || calls != 3 {
		t.Errorf("retries %d, real calls %d; want 2 and 3", p.RealRetries(), calls)
	}
}

// An S3 request is signed over its Host header (SigV4): the real server must see the Host the
// client signed, the proxy's address, or it would reject every request the proxy forwards.
func TestForwardingKeepsTheHostTheClientSigned(t *testing.T) {
	var hosts []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts = append(hosts, r.Host)
		_, _ = w.Write(backendBody)
	}))
	t.Cleanup(backend.Close)
	p, err := New(backend.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	for _, f := range []Fault{None, Truncated, Invalid} {
		set(t, p, f)
		res, err := http.Get(p.URL() + "/bucket/key.json")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	want := strings.TrimPrefix(p.URL(), "http://")
	if len(hosts) != 3 || hosts[0] != want || hosts[1] != want || hosts[2] != want {
		t.Errorf("the backend saw Host %q, want %q each time", hosts, want)
	}
}

// SetFor limits a fault to some requests (an object store's object reads, not its listings);
// the others get the real reply.
func TestSetForHitsOnlyTheMatchingRequests(t *testing.T) {
	p := start(t, Options{})
	objects := func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/bucket/") }
	if err := p.SetFor(Invalid, objects); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{{"/bucket/key.json", false}, {"/bucket", true}, {"/api/v1/query", true}} {
		path, want := c.path, c.want
		res, err := http.Get(p.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if got := bytes.Equal(body, backendBody); got != want {
			t.Errorf("%s: real reply %v, want %v (%q)", path, got, want, body)
		}
	}
	var faults []Fault
	for _, r := range p.Requests() {
		faults = append(faults, r.Fault)
	}
	if !slices.Equal(faults, []Fault{Invalid, None, None}) {
		t.Errorf("recorded faults %q, want invalid for the object only", faults)
	}
	if err := p.SetFor(Down, objects); err == nil {
		t.Error("Down limited to some requests: want an error, nothing can listen for some only")
	}
	// Set lifts the limit.
	set(t, p, Invalid)
	if _, body, err := get(t, p, nil); err != nil || bytes.Equal(body, backendBody) {
		t.Errorf("Set after SetFor: %v %q, want every request invalid", err, body)
	}
}

// A request signed for S3 (SigV4) is checked by the prefix of its Authorization header, and the
// 4xx fault answers it as S3 does: XML, AccessDenied for 403, quoting the header.
func TestS3ClientErrorAndSignedCredentials(t *testing.T) {
	const sig = "AWS4-HMAC-SHA256 Credential=AKIAFAULTPROXY0001/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=abc"
	p := start(t, Options{AuthorizationPrefix: "AWS4-HMAC-SHA256 Credential=AKIAFAULTPROXY0001/", ClientErrorStatus: http.StatusForbidden})
	set(t, p, ClientError)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, p.URL()+"/bucket/key.json", nil)
		req.Header.Set("Authorization", sig)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var reply struct{ Code, Message, Resource string }
		switch {
		case res.StatusCode != http.StatusForbidden || res.Header.Get("Content-Type") != "application/xml":
			t.Errorf("%s: %s %q, want 403 application/xml", method, res.Status, res.Header.Get("Content-Type"))
		case method == http.MethodHead && len(body) != 0:
			t.Errorf("HEAD: a body %q", body)
		case method == http.MethodGet && (xml.Unmarshal(body, &reply) != nil || reply.Code != "AccessDenied" || !strings.Contains(reply.Message, sig) || reply.Resource != "/bucket/key.json"):
			t.Errorf("GET: %q, want S3's <Error> with AccessDenied quoting the Authorization header", body)
		}
	}
	if _, _, err := get(t, p, nil); err != nil { // Bearer: not signed for S3
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 3 || !reqs[0].AuthOK || !reqs[1].AuthOK || reqs[2].AuthOK {
		t.Errorf("requests %+v: want the two signed ones with their credentials, the bearer one without", reqs)
	}
}
