//go:build integration

package protocol

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/scenario"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

// fleetObjects is how many other requests' kernel traces sit in the bucket beside the one asked
// for: a fleet's few days of uploads, more than one listing page (S3 pages hold 1,000 keys).
const fleetObjects = 3000

// A request's kernel trace uploaded to a real S3 store (the bed's SeaweedFS) the way the README
// says a fleet lays them out (<prefix>/<service>/<day>/<host>_<trace ID>.pt.trace.json), among
// thousands of other requests' traces, and read by the plugin binary from there alone (no trace
// directory): the trace query's verdict has the kernel trace's cause, the kernels query reads
// that one object, kernel-files lists every object and finds the request's by its trace ID, the
// health check counts them, and the bucket's credentials show nowhere.
func TestBinaryReadsARequestsKernelTraceFromABucket(t *testing.T) {
	s3, err := bed.S3Client()
	if err != nil {
		t.Fatal(err)
	}
	prefix := "protocol-" + randomHex(6)
	t.Cleanup(func() { removePrefix(t, s3, prefix) })

	// The request: a slow one whose host synchronises after every kernel, written by the
	// scenario as a PyTorch service with a kernel trace would, then uploaded as a sidecar would.
	dir := t.TempDir()
	res := runScenario(t, scenario.HostSync, uint64(time.Now().UnixNano()), dir)
	day := time.Now().UTC().Format("2006-01-02")
	key := fmt.Sprintf("%s/%s/%s/%s", res.Service, day, "gpu-node-2", res.KernelTrace)
	if _, err := s3.FPutObject(ctx(t), bed.S3Bucket, prefix+"/"+key, filepath.Join(dir, res.KernelTrace), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("uploading the kernel trace: %v", err)
	}
	// The same trace once more under another request's name beside it: the diff's default
	// baseline (the target's folder, any day, the name before the trace ID) finds it.
	baselineKey := fmt.Sprintf("%s/%s/%s/%s_%s.pt.trace.json", res.Service, day, "gpu-node-2", res.Service, randomHex(16))
	if _, err := s3.FPutObject(ctx(t), bed.S3Bucket, prefix+"/"+baselineKey, filepath.Join(dir, res.KernelTrace), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("uploading the baseline's kernel trace: %v", err)
	}
	uploadFleet(t, s3, prefix, day)
	const objects = fleetObjects + 2

	h, log := startWith(t, map[string]any{
		"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL, "jaegerUrl": bed.JaegerURL,
		"kernelBuckets": []map[string]any{{
			"name": "fleet", "provider": "s3", "bucket": bed.S3Bucket, "prefix": prefix,
			"endpoint": bed.S3Endpoint, "region": testbed.S3Region, "insecure": true,
		}},
	}, map[string]string{"kernelBucket.fleet.accessKey": bed.S3AccessKey, "kernelBucket.fleet.secretKey": bed.S3SecretKey})
	var answers bytes.Buffer // everything the plugin returned, searched for the credentials at the end

	// The trace query: the verdict's first cause is the kernel trace's, in the culprit.
	first, last := verdictOf(t, h, res, &answers)
	if first.kind != res.CauseKind || first.service != res.Service {
		t.Fatalf("first cause %q (%s in %s), want %s in %s (last answer: %s)", first.cause, first.kind, first.service, res.CauseKind, res.Service, last)
	}
	if d := first.explains - res.InjectedMs; d > 0.1*res.InjectedMs || d < -0.1*res.InjectedMs {
		t.Errorf("first cause %q explains %.1f ms, injected %.1f ms", first.cause, first.explains, res.InjectedMs)
	}

	// The kernels query reads that object, and says so.
	now := time.Now()
	qr, err := h.QueryData(ctx(t), pluginhost.Query{RefID: "K", From: now.Add(-time.Hour), To: now, JSON: map[string]any{"queryType": "kernels", "traceId": res.TraceID}})
	if err != nil {
		t.Fatal(err)
	}
	k := qr.Responses["K"]
	answers.WriteString(k.Error)
	answers.Write(bytes.Join(k.Frames, nil))
	if k.Error != "" {
		t.Fatalf("kernels: %s", k.Error)
	}
	frames, err := data.UnmarshalArrowFrames(k.Frames)
	if err != nil {
		t.Fatal(err)
	}
	ref := "bucket:fleet/" + key
	if texts := noticeTexts(frames); !contains(texts, "Read from "+ref) {
		t.Errorf("kernels query's notices %q do not say it read %s", texts, ref)
	}
	if frames[0].Rows() == 0 {
		t.Errorf("kernels query of %s: no kernels in frame %q", res.TraceID, frames[0].Name)
	}

	// Every other view reads the object from the bucket too: the per-launch times, the critical
	// path, the timeline (a trace frame), and the diff against the copy, where nothing moved.
	for view, want := range map[string][]string{
		"launches":     {"kernel launches", "ranges on the GPU"},
		"criticalPath": {"critical path", "critical path segments"},
		"timeline":     {"timeline"},
		"diff":         {"kernel diff", "temporal breakdown diff"},
	} {
		qr, err := h.QueryData(ctx(t), pluginhost.Query{RefID: "V", From: now.Add(-time.Hour), To: now,
			JSON: map[string]any{"queryType": "kernels", "traceId": res.TraceID, "view": view}})
		if err != nil {
			t.Fatal(err)
		}
		v := qr.Responses["V"]
		answers.WriteString(v.Error)
		answers.Write(bytes.Join(v.Frames, nil))
		if v.Error != "" {
			t.Errorf("view %s: %s", view, v.Error)
			continue
		}
		fs, err := data.UnmarshalArrowFrames(v.Frames)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range fs {
			names = append(names, f.Name)
		}
		if strings.Join(names, ",") != strings.Join(want, ",") || fs[0].Rows() == 0 {
			t.Errorf("view %s: frames %q (first with %d rows), want %q; notices %q", view, names, fs[0].Rows(), want, noticeTexts(fs))
			continue
		}
		if view == "diff" {
			change, _ := fs[0].FieldByName("change")
			for i := 0; change != nil && i < change.Len(); i++ {
				if x, ok := change.ConcreteAt(i); !ok || x.(float64) != 0 {
					t.Errorf("diff of a trace against its copy: kernel %d changed by %v", i, x)
				}
			}
		}
	}

	// kernel-files: the request's object by its trace ID, and every object of the fleet.
	var listed struct {
		Files []struct {
			File string `json:"file"`
		} `json:"files"`
		Notices []string `json:"notices"`
	}
	for _, c := range []struct {
		path string
		want int
	}{{"kernel-files?traceId=" + res.TraceID, 1}, {"kernel-files", objects}} {
		rr, err := h.CallResource(ctx(t), c.path)
		if err != nil {
			t.Fatal(err)
		}
		answers.Write(rr.Body)
		listed.Files = nil
		if rr.Status != 200 || json.Unmarshal(rr.Body, &listed) != nil {
			t.Fatalf("%s: HTTP %d %.300s", c.path, rr.Status, rr.Body)
		}
		if len(listed.Files) != c.want {
			t.Errorf("%s: %d files, want %d (notices %q)", c.path, len(listed.Files), c.want, listed.Notices)
		} else if c.want == 1 && listed.Files[0].File != ref {
			t.Errorf("%s: %s, want %s", c.path, listed.Files[0].File, ref)
		}
	}

	// The health check lists the bucket afresh and counts its trace objects.
	health, err := h.CheckHealth(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	answers.WriteString(health.Message)
	if want := fmt.Sprintf("bucket fleet: OK (listed; %d trace objects seen)", objects); !strings.Contains(health.Message, want) {
		t.Errorf("health %q lacks %q", health.Message, want)
	}

	for _, secret := range []string{bed.S3SecretKey, bed.S3AccessKey} {
		if strings.Contains(answers.String(), secret) || strings.Contains(log.String(), secret) {
			t.Errorf("a bucket credential shows in the plugin's answers or log")
		}
	}
}

// startWith is start with secureJsonData.
func startWith(t *testing.T, jsonData map[string]any, secure map[string]string) (*pluginhost.Host, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	h, err := pluginhost.Start(binary, pluginhost.DataSource{UID: "hsi-test", Name: "HSI Profiling", JSONData: jsonData, SecureJSONData: secure}, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h, &log
}

// uploadFleet puts fleetObjects small kernel traces of other requests under the prefix, spread
// over services and the two days before day, 16 at a time.
func uploadFleet(t *testing.T, s3 *minio.Client, prefix, day string) {
	t.Helper()
	d, _ := time.Parse("2006-01-02", day)
	body := []byte(`{"schemaVersion":1,"traceEvents":[]}`)
	g, gctx := errgroup.WithContext(ctx(t))
	g.SetLimit(16)
	for i := range fleetObjects {
		g.Go(func() error {
			key := fmt.Sprintf("%s/svc-%02d/%s/gpu-node-%d_%s.pt.trace.json", prefix, i%40, d.AddDate(0, 0, -1-i%2).Format("2006-01-02"), i%7, randomHex(16))
			_, err := s3.PutObject(gctx, bed.S3Bucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("uploading the fleet's traces: %v", err)
	}
}

// removePrefix deletes what the test put under prefix (the bed's bucket outlives the test).
func removePrefix(t *testing.T, s3 *minio.Client, prefix string) {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	objects := s3.ListObjects(c, bed.S3Bucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true})
	for e := range s3.RemoveObjects(c, bed.S3Bucket, objects, minio.RemoveObjectsOptions{}) {
		t.Logf("removing %s: %v", e.ObjectName, e.Err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runScenario runs `hsi-demo scenario` (the bed's demo binary): one slow request of kind through
// services with random names, its kernel trace written into traceDir.
func runScenario(t *testing.T, kind scenario.Kind, seed uint64, traceDir string) scenario.Result {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, log, err := bed.RunScenario(c, kind, seed, traceDir)
	if err != nil || res.KernelTrace == "" {
		t.Fatalf("scenario %s: %v (kernel trace %q)\n%s", kind, err, res.KernelTrace, log)
	}
	if _, err := os.Stat(filepath.Join(traceDir, res.KernelTrace)); err != nil {
		t.Fatal(err)
	}
	t.Logf("scenario: %+v", res)
	return res
}

type firstCause struct {
	cause, kind, service string
	explains             float64
}

// verdictOf asks the trace query until the trace holds every service of the scenario and the
// verdict names the expected cause (spans reach Jaeger within seconds), or a minute has passed;
// it returns the last first cause and a description of the last answer.
func verdictOf(t *testing.T, h *pluginhost.Host, res scenario.Result, answers *bytes.Buffer) (firstCause, string) {
	t.Helper()
	var first firstCause
	last := "no answer"
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		now := time.Now()
		qr, err := h.QueryData(ctx(t), pluginhost.Query{RefID: "T", From: now.Add(-time.Hour), To: now, JSON: map[string]any{"queryType": "trace", "traceId": res.TraceID}})
		if err != nil {
			t.Fatal(err)
		}
		r := qr.Responses["T"]
		answers.WriteString(r.Error)
		answers.Write(bytes.Join(r.Frames, nil))
		if r.Error != "" {
			last = r.Error
			continue
		}
		frames, err := data.UnmarshalArrowFrames(r.Frames)
		if err != nil {
			t.Fatal(err)
		}
		if len(frames) < 3 || frames[2].Name != "verdict" || frames[2].Rows() == 0 {
			last = fmt.Sprintf("%d frames, no verdict row", len(frames))
			continue
		}
		v := frames[2]
		first = firstCause{cause: str(v, "cause"), kind: str(v, "kind"), service: str(v, "service")}
		if f, _ := v.FieldByName("explains"); f != nil {
			if x, ok := f.ConcreteAt(0); ok {
				first.explains, _ = x.(float64)
			}
		}
		last = fmt.Sprintf("first cause %q (%s in %s, %.1f ms); notices %q", first.cause, first.kind, first.service, first.explains, noticeTexts(frames))
		if first.kind == res.CauseKind && first.service == res.Service {
			break
		}
	}
	return first, last
}

// str is a string field's first value, "" when the frame has no such field.
func str(f *data.Frame, name string) string {
	field, _ := f.FieldByName(name)
	if field == nil || field.Len() == 0 {
		return ""
	}
	v, _ := field.ConcreteAt(0)
	s, _ := v.(string)
	return s
}

func noticeTexts(frames data.Frames) []string {
	var out []string
	for _, f := range frames {
		if f.Meta == nil {
			continue
		}
		for _, n := range f.Meta.Notices {
			out = append(out, n.Text)
		}
	}
	return out
}
