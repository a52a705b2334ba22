//go:build integration

package plugin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/thanos-io/objstore"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/heapwatch"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/buckets"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/tracestore"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// BenchmarkRealBucket200MB reads the 200 MB Kineto trace of BenchmarkChrome200MB (pkg/gputrace)
// from the test bed's S3 bucket (SeaweedFS, through the plugin's own s3 client) and, side by side
// in each iteration, the same file from disk, each through its store's Analyze as the kernels
// query does (the object is listed, and the file found, once before). The two analyses must be
// the same. Metrics: seconds of each, their ratio, the heap each needed at its peak
// (heapwatch.Peak, as BenchmarkChrome200MB measures it) and the file's size.
func BenchmarkRealBucket200MB(b *testing.B) {
	if bed.S3Endpoint == "" {
		b.Fatal("the test bed names no S3 endpoint (HSI_TESTBED_S3_ENDPOINT)")
	}
	dir := b.TempDir()
	const name = "big.pt.trace.json"
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	err = kinetogen.WriteBig(f, 200<<20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	mb := float64(st.Size()) / (1 << 20)

	// Uploaded once under a prefix of this run's own (the bed's bucket is shared), removed after.
	prefix := fmt.Sprintf("bench-%016x", rand.Uint64())
	key := prefix + "/" + name
	s3c, err := bed.S3Client()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s3c.FPutObject(ctx, bed.S3Bucket, key, path, minio.PutObjectOptions{ContentType: "application/json"}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s3c.RemoveObject(context.Background(), bed.S3Bucket, key, minio.RemoveObjectOptions{}); err != nil {
			b.Errorf("removing %s from the bed's bucket: %v", key, err)
		}
	})

	kb := models.KernelBucket{
		Name: "bench", Provider: models.ProviderS3, Bucket: bed.S3Bucket, Prefix: prefix,
		Endpoint: bed.S3Endpoint, Insecure: true, AccessKey: bed.S3AccessKey, SecretKey: bed.S3SecretKey,
	}
	bucket := tracestore.OpenBucket(kb.Name, func(ctx context.Context) (objstore.Bucket, error) {
		return buckets.Open(ctx, kb)
	}, tracestore.BucketOptions{Prefix: kb.Prefix, Secrets: kb.Secrets()})
	bucketStore := tracestore.NewStore(nil, 10, 1<<30).WithBuckets(bucket)
	b.Cleanup(func() { bucketStore.Close() })
	diskStore := tracestore.NewStore([]string{dir}, 10, 1<<30)
	bucketFile := onlyTraceFile(b, bucketStore, "bucket:bench/"+name)
	diskFile := onlyTraceFile(b, diskStore, name)

	var bucketT, diskT time.Duration
	var bucketPeak, diskPeak uint64
	for b.Loop() {
		var disk, object *gputrace.Result
		diskPeak = max(diskPeak, heapwatch.Peak(func() {
			t0 := time.Now()
			disk, err = diskStore.Analyze(ctx, diskFile)
			diskT += time.Since(t0)
			if err != nil {
				b.Fatalf("disk: %v", err)
			}
		}))
		bucketPeak = max(bucketPeak, heapwatch.Peak(func() {
			t0 := time.Now()
			object, err = bucketStore.Analyze(ctx, bucketFile)
			bucketT += time.Since(t0)
			if err != nil {
				b.Fatalf("bucket: %v", err)
			}
		}))
		if len(disk.Kernels) == 0 || !slices.Equal(object.Kernels, disk.Kernels) || object.Temporal != disk.Temporal {
			b.Fatalf("the bucket's analysis differs from the disk's: %d kernels, temporal %+v; from disk %d kernels, temporal %+v",
				len(object.Kernels), object.Temporal, len(disk.Kernels), disk.Temporal)
		}
	}
	n := float64(b.N)
	b.ReportMetric(mb, "file-MB")
	b.ReportMetric(bucketT.Seconds()/n, "bucket-s/op")
	b.ReportMetric(diskT.Seconds()/n, "disk-s/op")
	b.ReportMetric(bucketT.Seconds()/diskT.Seconds(), "bucket/disk")
	b.ReportMetric(float64(bucketPeak)/(1<<20), "bucket-peak-heap-MB")
	b.ReportMetric(float64(diskPeak)/(1<<20), "disk-peak-heap-MB")
}

// onlyTraceFile lists a store and returns its one trace file, which must be rel.
func onlyTraceFile(b *testing.B, s *tracestore.Store, rel string) gputrace.TraceFile {
	files, missed := s.List(context.Background())
	if len(files) != 1 || files[0].Rel != rel {
		b.Fatalf("listed %+v (notices %q), want only %s", files, missed.Texts(), rel)
	}
	return files[0]
}
