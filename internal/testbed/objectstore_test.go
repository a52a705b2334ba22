//go:build integration

package testbed

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// The bed's object store is a real S3 server (SeaweedFS): these tests speak S3 to it with
// minio-go, the client thanos-io/objstore's S3 provider uses.

func s3Client(t *testing.T) *minio.Client {
	t.Helper()
	if bed.S3Endpoint == "" {
		t.Fatal("the bed named by HSI_TESTBED_* has no S3 object store (HSI_TESTBED_S3_ENDPOINT): restart it")
	}
	c, err := bed.S3Client()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestS3PutListGet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := s3Client(t)
	if bed.S3Bucket != S3Bucket {
		t.Errorf("bucket %q, want %q", bed.S3Bucket, S3Bucket)
	}
	// A prefix of this run's own, so a shared bed's earlier objects do not count.
	prefix := fmt.Sprintf("test/%d/", time.Now().UnixNano())
	content := make([]byte, 300_000) // random bytes: a text-only round trip would hide encoding slips
	_, _ = rand.Read(content)
	objects := map[string][]byte{
		prefix + "node-0/detect_0123.pt.trace.json": content,
		prefix + "node-1/report.nsys-rep.sqlite":    []byte("second"),
	}
	for key, data := range objects {
		if _, err := c.PutObject(ctx, bed.S3Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	// Listed by prefix, recursively and one level at a time.
	var keys []string
	for obj := range c.ListObjects(ctx, bed.S3Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		keys = append(keys, obj.Key)
		if want := int64(len(objects[obj.Key])); obj.Size != want {
			t.Errorf("%s listed with size %d, want %d", obj.Key, obj.Size, want)
		}
	}
	if want := []string{prefix + "node-0/detect_0123.pt.trace.json", prefix + "node-1/report.nsys-rep.sqlite"}; strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Errorf("listed %v, want %v", keys, want)
	}
	keys = nil
	for obj := range c.ListObjects(ctx, bed.S3Bucket, minio.ListObjectsOptions{Prefix: prefix + "node-0/"}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	if len(keys) != 1 || keys[0] != prefix+"node-0/detect_0123.pt.trace.json" {
		t.Errorf("listed under node-0/: %v", keys)
	}
	// Read back byte for byte, whole and a range.
	for key, data := range objects {
		obj, err := c.GetObject(ctx, bed.S3Bucket, key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		obj.Close()
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("get %s: %d bytes differ from the %d put", key, len(got), len(data))
		}
	}
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(1000, 1999); err != nil {
		t.Fatal(err)
	}
	obj, err := c.GetObject(ctx, bed.S3Bucket, prefix+"node-0/detect_0123.pt.trace.json", opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, content[1000:2000]) {
		t.Errorf("range 1000-1999: %d bytes, %v", len(got), err)
	}
	// A missing key is S3's NoSuchKey.
	_, err = c.StatObject(ctx, bed.S3Bucket, prefix+"missing", minio.StatObjectOptions{})
	if code := minio.ToErrorResponse(err).Code; code != "NoSuchKey" {
		t.Errorf("stat of a missing key: %v (code %q), want NoSuchKey", err, code)
	}
	for key := range objects {
		if err := c.RemoveObject(ctx, bed.S3Bucket, key, minio.RemoveObjectOptions{}); err != nil {
			t.Errorf("remove %s: %v", key, err)
		}
	}
}

func TestS3RefusesWrongCredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s3Client(t)
	// The secret with its last character changed (to "x", or "y" where it already is "x": the
	// random secret ends in "x" once in 62 beds).
	last := "x"
	if strings.HasSuffix(bed.S3SecretKey, last) {
		last = "y"
	}
	for name, keys := range map[string][2]string{
		"wrong secret":     {bed.S3AccessKey, bed.S3SecretKey[:39] + last},
		"unknown key":      {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		"swapped the keys": {bed.S3SecretKey, bed.S3AccessKey},
	} {
		c, err := NewS3Client(bed.S3Endpoint, keys[0], keys[1])
		if err != nil {
			t.Fatal(err)
		}
		for op, err := range map[string]error{
			"list": func() error {
				for obj := range c.ListObjects(ctx, bed.S3Bucket, minio.ListObjectsOptions{}) {
					return obj.Err
				}
				return nil
			}(),
			"put": func() error {
				_, err := c.PutObject(ctx, bed.S3Bucket, "refused", strings.NewReader("x"), 1, minio.PutObjectOptions{})
				return err
			}(),
		} {
			if status := minio.ToErrorResponse(err).StatusCode; status != http.StatusForbidden {
				t.Errorf("%s, %s: %v (HTTP %d), want 403", name, op, err, status)
			}
		}
	}
	// Unsigned requests: no anonymous identity.
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/" + bed.S3Bucket + "?list-type=2"},
		{http.MethodPut, "/" + bed.S3Bucket + "/anonymous"},
		{http.MethodGet, "/"},
	} {
		r, _ := http.NewRequestWithContext(ctx, req.method, "http://"+bed.S3Endpoint+req.path, strings.NewReader(""))
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("unsigned %s %s: HTTP %d, want 403", req.method, req.path, res.StatusCode)
		}
	}
}

// TestS3BedStopLeavesNoWeed starts a bed of its own (no demo), uses its object store, stops it,
// and checks that no weed process and none of its listeners remain.
func TestS3BedStopLeavesNoWeed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	start := time.Now()
	b, err := Start(ctx, Options{Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a bed without the demo was ready in %s", time.Since(start).Round(100*time.Millisecond))
	stopped := false
	defer func() {
		if !stopped {
			b.Stop()
		}
	}()
	c, err := b.S3Client()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, b.S3Bucket, "k", strings.NewReader("v"), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	pid, dir, ports := b.seaweed.cmd.Process.Pid, b.Dir, b.seaweedPorts.all()
	if ps := weedProcesses(t, dir); len(ps) != 1 || ps[0] != pid {
		t.Fatalf("weed processes of the bed before Stop: %v, want [%d]", ps, pid)
	}
	start = time.Now()
	b.Stop()
	stopped = true
	t.Logf("Stop took %s", time.Since(start).Round(100*time.Millisecond))
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("weed (pid %d) still exists after Stop: kill -0 says %v", pid, err)
	}
	if ps := weedProcesses(t, dir); len(ps) > 0 {
		t.Errorf("weed processes left after Stop: %v", ps)
	}
	for _, port := range ports {
		l, err := net.Listen("tcp", addr(port))
		if err != nil {
			t.Errorf("port %d still taken after Stop: %v", port, err)
			continue
		}
		l.Close()
	}
	for _, sock := range seaweedSockets(b.seaweedPorts) {
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Errorf("weed's socket %s is still there: %v", sock, err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the bed's folder %s is still there: %v", dir, err)
	}
}

// weedProcesses lists the processes whose command line names the bed's folder and is weed's.
func weedProcesses(t *testing.T, bedDir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // ended meanwhile
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasPrefix(filepath.Base(args[0]), "seaweedfs-") && strings.Contains(string(cmdline), bedDir) {
			pids = append(pids, pid)
		}
	}
	return pids
}
