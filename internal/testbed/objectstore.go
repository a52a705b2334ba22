package testbed

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Bucket is the bucket the bed creates in its object store for the GPU kernel traces.
const S3Bucket = "hsi-kernel-traces"

// S3Region is the region the bed's clients sign for; SeaweedFS accepts any.
const S3Region = "us-east-1"

// seaweedGrace is how long weed gets after SIGTERM before its process group is killed. It was
// seen still running 10 s after SIGTERM, even with -volume.preStopSeconds=0; its data is thrown
// away with the bed's folder, so the bed does not wait long.
const seaweedGrace = 2 * time.Second

// seaweedPorts are the loopback ports of the bed's one weed server (master, volume server, filer,
// S3 gateway), each with its gRPC port (weed's default is port+10000, which may be taken).
type seaweedPorts struct {
	master, masterGRPC, volume, volumeGRPC, filer, filerGRPC, s3, s3GRPC int
}

func (p seaweedPorts) all() []int {
	return []int{p.master, p.masterGRPC, p.volume, p.volumeGRPC, p.filer, p.filerGRPC, p.s3, p.s3GRPC}
}

// s3Identities is SeaweedFS's static S3 configuration (-s3.config): one identity with the bed's
// keys, and no anonymous identity, so unsigned requests are refused.
func s3Identities(accessKey, secretKey string) ([]byte, error) {
	type credential struct {
		AccessKey string `json:"accessKey"`
		SecretKey string `json:"secretKey"`
	}
	type identity struct {
		Name        string       `json:"name"`
		Credentials []credential `json:"credentials"`
		Actions     []string     `json:"actions"`
	}
	return json.MarshalIndent(map[string][]identity{"identities": {{
		Name:        "hsi",
		Credentials: []credential{{AccessKey: accessKey, SecretKey: secretKey}},
		Actions:     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}}, "", "  ")
}

// randomKey returns n characters from alphabet, from crypto/rand.
func randomKey(n int, alphabet string) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// newS3Keys makes a bed's S3 keys, shaped like AWS's (20 and 40 characters).
func newS3Keys() (accessKey, secretKey string) {
	const upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	const mixed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	return "HSI" + randomKey(17, upper), randomKey(40, mixed)
}

// seaweedArgs are weed's arguments: one process running a master, a volume server, a filer and
// the S3 gateway, on 127.0.0.1 only, with every port chosen by the bed, its data, logs and local
// sockets in dir, nothing reported outside (telemetry off) and the extra listeners off.
func seaweedArgs(dir, s3Config string, p seaweedPorts) []string {
	return []string{
		"-logdir=" + dir,
		"server",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-dir=" + filepath.Join(dir, "seaweedfs-data"),
		"-master.port=" + strconv.Itoa(p.master), "-master.port.grpc=" + strconv.Itoa(p.masterGRPC),
		"-master.telemetry=false",
		"-master.volumeSizeLimitMB=64",
		"-volume.port=" + strconv.Itoa(p.volume), "-volume.port.grpc=" + strconv.Itoa(p.volumeGRPC),
		"-volume.max=0",
		// Its default waits 10 s after SIGTERM before the volume server stops.
		"-volume.preStopSeconds=0",
		"-filer.port=" + strconv.Itoa(p.filer), "-filer.port.grpc=" + strconv.Itoa(p.filerGRPC),
		"-filer.localSocket=" + filepath.Join(dir, "seaweedfs-filer.sock"),
		"-s3", "-s3.port=" + strconv.Itoa(p.s3), "-s3.port.grpc=" + strconv.Itoa(p.s3GRPC),
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.localSocket=" + filepath.Join(dir, "seaweedfs-s3.sock"),
		"-s3.config=" + s3Config,
	}
}

// startSeaweed writes the S3 identities (the bed's keys, readable by its user only) and starts
// weed; the bed's Endpoints must already hold the S3 fields.
func (b *Bed) startSeaweed(bin string, ports seaweedPorts) (*process, error) {
	cfg, err := s3Identities(b.S3AccessKey, b.S3SecretKey)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(b.Dir, "seaweedfs-s3.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(b.Dir, "seaweedfs-data"), 0o755); err != nil {
		return nil, err
	}
	p, err := b.start("seaweedfs", nil, bin, seaweedArgs(b.Dir, path, ports)...)
	if err != nil {
		return nil, err
	}
	p.grace = seaweedGrace
	b.seaweed, b.seaweedPorts = p, ports
	return p, nil
}

// removeSeaweedSockets removes the Unix sockets weed makes for its gRPC services in /tmp, a path
// it does not let one choose (/tmp/seaweedfs-<service>-grpc-<port>.sock), and leaves behind when
// killed.
func (b *Bed) removeSeaweedSockets() {
	if b.seaweed == nil {
		return
	}
	p := b.seaweedPorts
	for _, s := range seaweedSockets(p) {
		_ = os.Remove(s)
	}
}

func seaweedSockets(p seaweedPorts) []string {
	return []string{
		fmt.Sprintf("/tmp/seaweedfs-master-grpc-%d.sock", p.masterGRPC),
		fmt.Sprintf("/tmp/seaweedfs-volume-grpc-%d.sock", p.volumeGRPC),
		fmt.Sprintf("/tmp/seaweedfs-filer-grpc-%d.sock", p.filerGRPC),
		fmt.Sprintf("/tmp/seaweedfs-s3-grpc-%d.sock", p.s3GRPC),
	}
}

// S3Client returns a client of the bed's object store signed with the bed's keys.
func (e Endpoints) S3Client() (*minio.Client, error) {
	if e.S3Endpoint == "" {
		return nil, fmt.Errorf("the test bed has no S3 object store (HSI_TESTBED_S3_ENDPOINT is empty)")
	}
	return NewS3Client(e.S3Endpoint, e.S3AccessKey, e.S3SecretKey)
}

// NewS3Client returns a client of an S3 server at endpoint (host:port, plain HTTP, path-style
// buckets) signing with the given keys.
func NewS3Client(endpoint, accessKey, secretKey string) (*minio.Client, error) {
	return minio.New(endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(accessKey, secretKey, ""),
		Region:       S3Region,
		BucketLookup: minio.BucketLookupPath,
	})
}

// waitS3Ready creates the bed's bucket as soon as the S3 gateway takes it (the gateway starts
// before its filer is ready), then waits until a signed ListObjects of the bucket answers.
func (b *Bed) waitS3Ready(ctx context.Context, p *process) error {
	client, err := b.S3Client()
	if err != nil {
		return err
	}
	var last error
	for {
		if dead, err := p.exited(); dead {
			return fmt.Errorf("%s exited before it was ready (%v); log %s:\n%s", p.name, err, p.log, p.tail())
		}
		if last = s3Ready(ctx, client, b.S3Bucket); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w (last: %v); log %s:\n%s", p.name, b.S3Endpoint, ctx.Err(), last, p.log, p.tail())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func s3Ready(ctx context.Context, client *minio.Client, bucket string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	exists, err := client.BucketExists(ctx, bucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", bucket, err)
	}
	if !exists {
		if err := client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: S3Region}); err != nil {
			return fmt.Errorf("creating bucket %s: %w", bucket, err)
		}
	}
	// One page of one key is an answer; the deferred cancel ends the lister.
	for obj := range client.ListObjects(ctx, bucket, minio.ListObjectsOptions{MaxKeys: 1}) {
		if obj.Err != nil {
			return fmt.Errorf("listing bucket %s: %w", bucket, obj.Err)
		}
		break
	}
	return ctx.Err()
}
