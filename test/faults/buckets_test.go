//go:build integration

package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/minio/minio-go/v7"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/faultproxy"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/tracestore"
)

const (
	// bucketTimeout is how long one listing or one object's open may take (the buckets'
	// timeoutSeconds): short, so that the slow fault is cheap, long enough for the real store to
	// answer on a busy machine.
	bucketTimeout = 8 * time.Second
	// bucketMargin is what an answer may take beyond the faulty bucket's wait on a busy
	// machine: the directory, the healthy bucket's listing and reads, the analysis, and the
	// S3 client's retries of a refused connection.
	bucketMargin = 10 * time.Second
)

// bucketTrace is one kernel trace of the request, where it lies, and how many kernels it holds.
type bucketTrace struct {
	ref     string // the file reference the plugin names it by (its frames, its notices)
	key     string // the object key in the bed's bucket ("" for the directory's file)
	body    []byte
	kernels int64
}

// bucketRig is one plugin process reading a trace directory and two buckets of the bed's S3
// store under a random prefix: "faulty" through a fault proxy, "healthy" direct.
type bucketRig struct {
	host    *pluginhost.Host
	log     *syncBuffer
	proxy   *faultproxy.Proxy
	secrets secrets
	traceID string
	// faulty, healthy and dir are the request's trace in each place.
	faulty, healthy, dir bucketTrace
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// kinetoTrace is a PyTorch profiler trace of the request's GPU work (kinetogen: 16-digit
// epoch-µs timestamps, as Kineto writes them).
func kinetoTrace(t *testing.T, traceID string, m kinetogen.Mechanism, seed uint64) ([]byte, int64) {
	t.Helper()
	var buf bytes.Buffer
	truth, err := kinetogen.Write(&buf, kinetogen.Scenario{Mechanism: m, TraceID: traceID, Seed: seed, Start: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), truth.Kernels
}

func newBucketRig(t *testing.T) *bucketRig {
	t.Helper()
	client, err := bed.S3Client()
	if err != nil {
		t.Fatal(err)
	}
	// The bed's bucket is shared: everything of this test lies under its own prefix, removed
	// when it ends.
	root := "hsi-faults-" + randomHex(6)
	r := &bucketRig{log: &syncBuffer{}, traceID: "f" + randomHex(16)[1:]}
	r.secrets = newSecrets()
	r.secrets.s3AccessKey, r.secrets.s3SecretKey = bed.S3AccessKey, bed.S3SecretKey

	day := time.Now().UTC().Format("2006-01-02")
	place := func(bucket, worker string, m kinetogen.Mechanism, seed uint64) bucketTrace {
		rel := "infer/" + day + "/" + worker + "_" + r.traceID + ".pt.trace.json"
		body, kernels := kinetoTrace(t, r.traceID, m, seed)
		return bucketTrace{ref: tracestore.BucketRef + bucket + "/" + rel, key: root + "/" + bucket + "/" + rel, body: body, kernels: kernels}
	}
	r.faulty = place("faulty", "worker0", kinetogen.MechSync, 1)
	r.healthy = place("healthy", "worker1", kinetogen.MechLaunch, 2)
	for _, o := range []bucketTrace{r.faulty, r.healthy} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := client.PutObject(ctx, bed.S3Bucket, o.key, bytes.NewReader(o.body), int64(len(o.body)), minio.PutObjectOptions{ContentType: "application/json"})
		cancel()
		if err != nil {
			t.Fatalf("uploading %s to the bed's bucket: %v", o.key, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := client.RemoveObject(ctx, bed.S3Bucket, o.key, minio.RemoveObjectOptions{}); err != nil {
				t.Errorf("removing %s from the bed's bucket: %v", o.key, err)
			}
		})
	}
	traceDir := t.TempDir()
	body, kernels := kinetoTrace(t, r.traceID, kinetogen.MechHostWork, 3)
	r.dir = bucketTrace{ref: "worker2_" + r.traceID + ".pt.trace.json", body: body, kernels: kernels}
	if err := os.WriteFile(filepath.Join(traceDir, r.dir.ref), body, 0o644); err != nil {
		t.Fatal(err)
	}

	// Each request signs with the bed's access key: the proxy checks it was sent.
	r.proxy, err = faultproxy.New("http://"+bed.S3Endpoint, faultproxy.Options{
		AuthorizationPrefix: "AWS4-HMAC-SHA256 Credential=" + bed.S3AccessKey + "/",
		ClientErrorStatus:   http.StatusForbidden,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.proxy.Close)
	bucket := func(name, endpoint string) map[string]any {
		return map[string]any{"name": name, "provider": "s3", "bucket": bed.S3Bucket, "prefix": root + "/" + name,
			"endpoint": endpoint, "insecure": true, "region": testbed.S3Region, "timeoutSeconds": int(bucketTimeout.Seconds())}
	}
	settings := pluginhost.DataSource{
		UID: "hsi-bucket-faults", Name: "HSI Profiling",
		JSONData: map[string]any{
			"traceDirectories": []string{traceDir},
			"kernelBuckets":    []map[string]any{bucket("faulty", strings.TrimPrefix(r.proxy.URL(), "http://")), bucket("healthy", bed.S3Endpoint)},
		},
		SecureJSONData: map[string]string{
			"kernelBucket.faulty.accessKey": bed.S3AccessKey, "kernelBucket.faulty.secretKey": bed.S3SecretKey,
			"kernelBucket.healthy.accessKey": bed.S3AccessKey, "kernelBucket.healthy.secretKey": bed.S3SecretKey,
		},
		Updated: time.Now(),
	}
	r.host, err = pluginhost.Start(binary, settings, r.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.host.Stop)
	return r
}

// freshInstance makes Grafana's instance of the data source anew, as saving its settings does:
// a new store, whose buckets have listed nothing yet.
func (r *bucketRig) freshInstance() {
	r.host.Settings.Updated = r.host.Settings.Updated.Add(time.Second)
}

// kernels runs the kernels query of the request and says how long it took.
func (r *bucketRig) kernels(t *testing.T) (answer, time.Duration) {
	now := time.Now()
	res, err := r.host.QueryData(ctxFor(t, 2*bucketTimeout+time.Minute), pluginhost.Query{RefID: "A", From: now.Add(-time.Hour), To: now,
		JSON: map[string]any{"queryType": "kernels", "traceId": r.traceID}})
	took := time.Since(now)
	if err != nil {
		return answer{err: "QueryData failed: " + err.Error()}, took
	}
	return decode(res.Responses["A"]), took
}

// kernelCount is the kernels the answer's summary of one trace file counts (-1: no summary).
func kernelCount(a answer, ref string) int64 {
	for _, f := range a.frames {
		if f.Name != ref+": kernel summary" {
			continue
		}
		field, _ := f.FieldByName("instances")
		var n int64
		for i := 0; field != nil && i < field.Len(); i++ {
			v, _ := field.ConcreteAt(i)
			n += v.(int64)
		}
		return n
	}
	return -1
}

// warnings are the answer's warning notices.
func warnings(a answer) []string {
	var out []string
	for _, f := range a.frames {
		if f.Meta == nil {
			continue
		}
		for _, n := range f.Meta.Notices {
			if n.Severity == data.NoticeSeverityWarning {
				out = append(out, n.Text)
			}
		}
	}
	return out
}

// bucketFault is one fault of the faulty bucket and what users must read about it.
type bucketFault struct {
	fault faultproxy.Fault
	// object says the fault hits the object reads, not the listing: the object was listed just
	// before (the listing is cached), and the notice names it. Otherwise every request of a
	// data source that has listed nothing yet is hit, the listing first.
	object bool
	// cause is what the notice says beyond the bucket's or the object's name.
	cause []string
}

// bound is what an answer may take under the fault: the bucket's timeout where the store does
// not answer, else the margin alone (no fault may cost a wait the timeout does not bound).
func (f bucketFault) bound() time.Duration {
	if f.fault == faultproxy.Slow {
		return bucketTimeout + bucketMargin
	}
	return bucketMargin
}

func (f bucketFault) String() string {
	if f.object {
		return fmt.Sprintf("%s object", f.fault)
	}
	return fmt.Sprintf("%s listing", f.fault)
}

// s3ObjectRead says whether an S3 request (path-style) reads an object's body (GetObject); the
// others list the bucket or ask for an object's attributes (HEAD).
func s3ObjectRead(r *http.Request) bool {
	key, ok := strings.CutPrefix(r.URL.Path, "/"+bed.S3Bucket+"/")
	return r.Method == http.MethodGet && ok && key != ""
}

func TestKernelBucketFaults(t *testing.T) {
	began := time.Now()
	r := newBucketRig(t)
	listing := "bucket faulty: cannot list it: "
	denied := "access denied (403): the credentials may not read this bucket"
	timedOut := fmt.Sprintf("no answer within %s", bucketTimeout)
	cutShort := "reply cut short: the connection ended before the whole reply arrived (unexpected EOF)"
	faults := []bucketFault{
		{fault: faultproxy.Down, cause: []string{"unreachable ("}},
		{fault: faultproxy.Down, object: true, cause: []string{"unreachable ("}},
		{fault: faultproxy.Slow, cause: []string{timedOut}},
		{fault: faultproxy.Slow, object: true, cause: []string{timedOut}},
		{fault: faultproxy.ClientError, cause: []string{denied}},
		{fault: faultproxy.ClientError, object: true, cause: []string{denied}},
		{fault: faultproxy.Invalid, cause: []string{"invalid reply, not the XML"}},
		{fault: faultproxy.Invalid, object: true, cause: []string{"not a readable PyTorch profiler trace (byte "}},
		{fault: faultproxy.Truncated, cause: []string{cutShort}},
		{fault: faultproxy.Truncated, object: true, cause: []string{"cut short after ", "the connection ended before the whole object arrived (unexpected EOF)"}},
	}

	// With no fault, every trace is read whole: the proxy forwards S3's signed requests intact.
	r.full(t, "no fault", bucketFault{fault: faultproxy.None})

	for _, f := range faults {
		where := f.String()
		r.freshInstance()
		var only func(*http.Request) bool
		if f.object {
			// Listed just now (and cached), the bucket is not listed again: the fault hits
			// the object. Down cannot spare the listing, and need not.
			r.full(t, where+", before", bucketFault{fault: faultproxy.None})
			if f.fault != faultproxy.Down {
				only = s3ObjectRead
			}
		}
		if err := r.proxy.SetFor(f.fault, only); err != nil {
			t.Fatal(err)
		}

		// A dashboard's panels, the editor's file picker and "Save & test" at once: each
		// answers within the bucket's timeout, whoever started the listing they wait on.
		var wg sync.WaitGroup
		wg.Go(func() {
			a, took := r.kernels(t)
			r.checkAnswer(t, where, a, took, f.bound())
			want := listing
			if f.object {
				want = r.faulty.ref + ": "
			}
			text := strings.Join(warnings(a), "\n")
			for _, c := range append([]string{want}, f.cause...) {
				if !strings.Contains(text, c) {
					t.Errorf("%s: no notice says %q:\n%s", where, c, text)
				}
			}
			if !f.object && kernelCount(a, r.faulty.ref) >= 0 {
				t.Errorf("%s: the faulty bucket's object was read although its listing failed", where)
			}
			t.Logf("%s: %s (%v)", where, text, took.Round(100*time.Millisecond))
		})
		wg.Go(func() { r.checkFiles(t, where, f) })
		if f.object {
			wg.Go(func() { r.checkChosen(t, where, f) })
		}
		wg.Go(func() { r.checkHealth(t, where, f) })
		wg.Wait()
		if r.host.Exited() {
			t.Fatalf("%s: the plugin process is gone", where)
		}
		if err := r.proxy.Set(faultproxy.None); err != nil {
			t.Fatal(err)
		}
	}

	// Every request to the faulty bucket was signed with the bed's keys; none of them, nor
	// anything else secret, is in the plugin's log.
	seen := r.proxy.Requests()
	if len(seen) == 0 {
		t.Error("the faulty bucket's proxy saw no request")
	}
	for _, req := range seen {
		if !req.AuthOK {
			t.Errorf("%s %s reached the faulty bucket without the configured access key", req.Method, req.Path)
			break
		}
	}
	log := r.log.Bytes()
	if s := r.secrets.leaked(log); s != "" {
		i := strings.Index(string(log), s)
		t.Errorf("the plugin's log carries the secret %q: ...%s...", s, log[max(0, i-300):min(len(log), i+100)])
	}
	if r.host.Exited() {
		t.Error("the plugin process is gone")
	}
	t.Logf("%d requests through the proxy, plugin log %d bytes; took %v", len(seen), len(log), time.Since(began).Round(time.Second))
}

// full checks the answer with no fault: each trace read whole, no warning.
func (r *bucketRig) full(t *testing.T, where string, f bucketFault) {
	t.Helper()
	a, took := r.kernels(t)
	r.checkAnswer(t, where, a, took, f.bound())
	if n := kernelCount(a, r.faulty.ref); n != r.faulty.kernels {
		t.Errorf("%s: %d kernels from %s, want %d: %s\n%s", where, n, r.faulty.ref, r.faulty.kernels, a.shape(), a.text)
	}
	if w := warnings(a); len(w) > 0 {
		t.Errorf("%s: warnings %q", where, w)
	}
}

// checkAnswer checks what every answer must be: in time, the healthy bucket's and the
// directory's traces whole, no secret.
func (r *bucketRig) checkAnswer(t *testing.T, where string, a answer, took, bound time.Duration) {
	t.Helper()
	if took > bound {
		t.Errorf("%s: the kernels query took %v, more than %v", where, took, bound)
	}
	if s := r.secrets.leaked(a.raw); s != "" {
		t.Errorf("%s: the answer carries the secret %q", where, s)
	}
	if a.err != "" {
		t.Errorf("%s: the query failed: %s", where, a.err)
		return
	}
	for _, o := range []bucketTrace{r.healthy, r.dir} {
		if n := kernelCount(a, o.ref); n != o.kernels {
			t.Errorf("%s: %d kernels from %s, want %d: %s\n%s", where, n, o.ref, o.kernels, a.shape(), a.text)
		}
	}
}

// checkChosen checks the kernels query of the faulty bucket's object chosen by its reference,
// as the editor's file picker sends it: nothing else to show, it fails or warns naming the
// object and the cause.
func (r *bucketRig) checkChosen(t *testing.T, where string, f bucketFault) {
	t.Helper()
	now := time.Now()
	res, err := r.host.QueryData(ctxFor(t, 2*bucketTimeout+time.Minute), pluginhost.Query{RefID: "A", From: now.Add(-time.Hour), To: now,
		JSON: map[string]any{"queryType": "kernels", "file": r.faulty.ref}})
	took := time.Since(now)
	if err != nil {
		t.Errorf("%s, the object chosen: %v", where, err)
		return
	}
	a := decode(res.Responses["A"])
	if took > f.bound() {
		t.Errorf("%s, the object chosen: took %v, more than %v", where, took, f.bound())
	}
	if s := r.secrets.leaked(a.raw); s != "" {
		t.Errorf("%s, the object chosen: the answer carries the secret %q", where, s)
	}
	for _, c := range append([]string{r.faulty.ref + ": "}, f.cause...) {
		if !strings.Contains(a.text, c) {
			t.Errorf("%s, the object chosen: no error or notice says %q:\n%s", where, c, a.text)
		}
	}
	t.Logf("%s, the object chosen: %s", where, a.text)
}

// checkFiles checks the editor's file list of the request (kernel-files): the healthy bucket's
// and the directory's files listed, the faulty bucket's listing failure said.
func (r *bucketRig) checkFiles(t *testing.T, where string, f bucketFault) {
	t.Helper()
	start := time.Now()
	res, err := r.host.CallResource(ctxFor(t, 2*bucketTimeout+time.Minute), "kernel-files?traceId="+r.traceID)
	took := time.Since(start)
	if err != nil {
		t.Errorf("%s: kernel-files: %v", where, err)
		return
	}
	if took > f.bound() {
		t.Errorf("%s: kernel-files took %v, more than %v", where, took, f.bound())
	}
	if s := r.secrets.leaked(res.Body); s != "" {
		t.Errorf("%s: kernel-files carries the secret %q", where, s)
	}
	var reply struct {
		Files []struct {
			File string `json:"file"`
		} `json:"files"`
		Notices []string `json:"notices"`
	}
	if res.Status != http.StatusOK || json.Unmarshal(res.Body, &reply) != nil {
		t.Errorf("%s: kernel-files answered %d %s", where, res.Status, res.Body)
		return
	}
	listed := map[string]bool{}
	for _, file := range reply.Files {
		listed[file.File] = true
	}
	if !listed[r.healthy.ref] || !listed[r.dir.ref] {
		t.Errorf("%s: kernel-files lacks the healthy bucket's or the directory's file: %s", where, res.Body)
	}
	notices := strings.Join(reply.Notices, "\n")
	switch {
	case f.object && !listed[r.faulty.ref]:
		t.Errorf("%s: kernel-files lacks the faulty bucket's file, listed before the fault: %s", where, res.Body)
	case !f.object && (listed[r.faulty.ref] || !strings.Contains(notices, "bucket faulty: cannot list it: ")):
		t.Errorf("%s: kernel-files should say the faulty bucket cannot be listed: %s", where, res.Body)
	}
}

// checkHealth checks the health check's line of each bucket: the faulty one's says why it
// cannot be listed while its listing is at fault, even though it was listed before.
func (r *bucketRig) checkHealth(t *testing.T, where string, f bucketFault) {
	t.Helper()
	start := time.Now()
	health, err := r.host.CheckHealth(ctxFor(t, 2*bucketTimeout+time.Minute))
	took := time.Since(start)
	if err != nil {
		t.Errorf("%s: the health check failed (process exited: %v): %v", where, r.host.Exited(), err)
		return
	}
	if took > f.bound() {
		t.Errorf("%s: the health check took %v, more than %v", where, took, f.bound())
	}
	msg := health.GetMessage()
	if s := r.secrets.leaked([]byte(msg + string(health.GetJsonDetails()))); s != "" {
		t.Errorf("%s: the health check carries the secret %q", where, s)
	}
	faultyOK := f.object && f.fault != faultproxy.Down // the listing itself is not at fault
	want := "bucket faulty: cannot list it: "
	if faultyOK {
		want = "bucket faulty: OK"
	}
	if !strings.Contains(msg, want) || !strings.Contains(msg, "bucket healthy: OK") {
		t.Errorf("%s: health %q, want %q and the healthy bucket OK", where, msg, want)
	}
	t.Logf("%s: health %q (%v)", where, msg, took.Round(100*time.Millisecond))
}
