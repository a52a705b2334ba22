package plugin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// The secrets of the bucket tests: none may appear in an answer.
var bucketSecrets = map[string]string{
	"kernelBucket.denied.accessKey": "AKIADENIEDSECRET01",
	"kernelBucket.denied.secretKey": "denied-secret-key-value-02",
	"kernelBucket.down.accessKey":   "AKIADOWNSECRET03",
	"kernelBucket.down.secretKey":   "down-secret-key-value-04",
}

// deniedS3 answers every S3 request as a store refusing the credentials does, and repeats the
// access key it was sent in its message, as some stores do: the plugin must not pass it on.
func deniedS3(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, cred, _ := strings.Cut(r.Header.Get("Authorization"), "Credential=")
		key, _, _ := strings.Cut(cred, "/")
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied for ` + key + `.</Message><Resource>/traces</Resource><RequestId>1</RequestId></Error>`))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// bucketDatasource reads a trace directory, a filesystem bucket holding a trace of the request,
// an S3 store refusing its credentials (403) and an S3 store that is down.
func bucketDatasource(t *testing.T) *Datasource {
	dir, _ := kernelDirs(t)
	bucketDir := t.TempDir()
	writeFile(t, filepath.Join(bucketDir, "gpu", "infer", "2026-11-27", "worker1_"+kernelTraceID+".pt.trace.json"), kinetoTrace("worker1"))
	return newTestDatasource(t, map[string]any{
		"traceDirectories": []string{dir},
		"kernelBuckets": []map[string]any{
			{"name": "disk", "provider": "filesystem", "directory": bucketDir, "prefix": "gpu"},
			{"name": "denied", "provider": "s3", "bucket": "traces", "endpoint": deniedS3(t), "insecure": true, "region": "us-east-1"},
			{"name": "down", "provider": "s3", "bucket": "traces", "endpoint": strings.TrimPrefix(closedURL(t), "http://"), "insecure": true, "region": "us-east-1"},
		},
	}, bucketSecrets)
}

func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range bucketSecrets {
		if strings.Contains(text, s) {
			t.Errorf("%s carries a secret: %s", where, text)
		}
	}
}

func TestKernelsQueryReadsBucketsBesideTheDirectories(t *testing.T) {
	ds := bucketDatasource(t)
	r := runKernels(t, ds, `{"queryType":"kernels","traceId":"`+kernelTraceID+`"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	var names, notices []string
	for _, f := range r.Frames {
		names = append(names, f.Name)
		notices = append(notices, noticeTexts(f))
	}
	all := strings.Join(notices, "\n")
	for _, want := range []string{
		"Read from infer/infer_" + kernelTraceID + ".pt.trace.json",
		"Read from bucket:disk/infer/2026-11-27/worker1_" + kernelTraceID + ".pt.trace.json",
		"bucket denied: cannot list it: access denied (403)",
		"bucket down: cannot list it: ",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("notices lack %q:\n%s", want, all)
		}
	}
	if !strings.Contains(strings.Join(names, ","), "bucket:disk/infer/2026-11-27/worker1_"+kernelTraceID+".pt.trace.json") {
		t.Errorf("frames %q: want the bucket object's frames named for it", names)
	}
	raw, _ := json.Marshal(r.Frames)
	assertNoSecret(t, "the frames", string(raw))

	// A chosen object by its reference.
	r = runKernels(t, ds, `{"queryType":"kernels","file":"bucket:disk/infer/2026-11-27/worker1_`+kernelTraceID+`.pt.trace.json"}`)
	if r.Error != nil || r.Frames[0].Rows() != 2 {
		t.Fatalf("chosen object: %v", r.Error)
	}
	r = runKernels(t, ds, `{"queryType":"kernels","file":"bucket:disk/../../etc/passwd.json"}`)
	if r.Error == nil || r.ErrorSource != backend.ErrorSourceDownstream {
		t.Fatalf("an escape: %v", r.Error)
	}

	// The editor's file picker lists the objects as files.
	req := httptest.NewRequest(http.MethodGet, "/kernel-files", nil)
	w := httptest.NewRecorder()
	ds.resourceKernelFiles(w, req)
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, `"file":"bucket:disk/infer/2026-11-27/worker1_`+kernelTraceID+`.pt.trace.json"`) || !strings.Contains(body, "bucket denied") {
		t.Errorf("kernel-files: %d %s", w.Code, body)
	}
	assertNoSecret(t, "kernel-files", body)
}

func TestCheckHealthNamesEachBucket(t *testing.T) {
	ds := bucketDatasource(t)
	res := checkHealth(t, ds)
	for _, want := range []string{
		"bucket disk: OK (listed; 1 trace objects seen)",
		"bucket denied: cannot list it: access denied (403)",
		"bucket down: cannot list it: ",
	} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("health %q lacks %q", res.Message, want)
		}
	}
	if res.Status != backend.HealthStatusError {
		t.Errorf("status %v: a bucket that cannot be listed fails the check", res.Status)
	}
	assertNoSecret(t, "the health message", res.Message+string(res.JSONDetails))

	// A client that cannot be made (a service account that is no JSON key) is its bucket's line.
	key := `{"type":"service_account","private_key":"GCS-PRIVATE-KEY-SECRET-05"`
	gcs := newTestDatasource(t, map[string]any{"kernelBuckets": []map[string]any{{"name": "g", "provider": "gcs", "bucket": "b"}}},
		map[string]string{"kernelBucket.g.serviceAccount": key})
	res = checkHealth(t, gcs)
	if !strings.Contains(res.Message, "bucket g: cannot be used: cannot make its gcs client: ") || strings.Contains(res.Message, "GCS-PRIVATE-KEY") {
		t.Errorf("gcs without a usable key: %q", res.Message)
	}

	bad := newTestDatasource(t, map[string]any{"kernelBuckets": []map[string]any{{"name": "x", "provider": "s4", "bucket": "b"}}}, nil)
	if res := checkHealth(t, bad); !strings.Contains(res.Message, `GPU kernel traces: jsonData.kernelBuckets item 1 ("x"): unknown provider "s4"`) {
		t.Errorf("invalid bucket settings: %q", res.Message)
	}
}
