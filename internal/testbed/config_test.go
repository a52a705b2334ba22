package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPrometheusConfig(t *testing.T) {
	root := t.TempDir()
	jobs := map[string][]string{DemoJob: {"127.0.0.1:1", "127.0.0.1:2"}, GPUJob: {"127.0.0.1:3"}}
	cfg := prometheusConfig(root, jobs)
	if strings.Contains(cfg, "rule_files") {
		t.Errorf("rule files without a rules folder:\n%s", cfg)
	}
	for _, want := range []string{
		"scrape_interval: 1s",
		"  - job_name: dcgm\n    static_configs:\n      - targets: [\"127.0.0.1:3\"]\n",
		"  - job_name: hsi-demo\n    static_configs:\n      - targets: [\"127.0.0.1:1\", \"127.0.0.1:2\"]\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, RulesDir), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = prometheusConfig(root, jobs)
	if want := "rule_files:\n  - \"" + filepath.Join(root, RulesDir, "*.yml") + "\"\n"; !strings.Contains(cfg, want) {
		t.Errorf("config lacks %q:\n%s", want, cfg)
	}
	if cfg := prometheusConfig(root, nil); strings.Contains(cfg, "scrape_configs") {
		t.Errorf("scrape_configs without jobs:\n%s", cfg)
	}
}

func TestFixtureWindowTravelsThroughTheEnvironment(t *testing.T) {
	e := Endpoints{PrometheusURL: "http://p", PyroscopeURL: "http://y", JaegerURL: "http://j",
		GPUSimulatorURL: "http://g", ScenarioGPUsURL: "http://s", DemoBinary: "/tmp/bed/hsi-demo", FixtureStart: time.Unix(1_780_000_000, 0), FixtureEnd: time.Unix(1_780_007_200, 0)}
	for _, kv := range e.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	got, ok := FromEnv()
	if !ok || !got.FixtureStart.Equal(e.FixtureStart) || !got.FixtureEnd.Equal(e.FixtureEnd) || got.GPUSimulatorURL != e.GPUSimulatorURL ||
		got.ScenarioGPUsURL != e.ScenarioGPUsURL || got.DemoBinary != e.DemoBinary {
		t.Errorf("FromEnv = %+v, %v; want %+v", got, ok, e)
	}
	t.Setenv("HSI_TESTBED_FIXTURE_START", "")
	if got, _ := FromEnv(); !got.FixtureStart.IsZero() {
		t.Errorf("empty variable gives %s", got.FixtureStart)
	}
}

func TestS3EndpointTravelsThroughTheEnvironment(t *testing.T) {
	access, secret := newS3Keys()
	e := Endpoints{PrometheusURL: "http://p", PyroscopeURL: "http://y", JaegerURL: "http://j",
		S3Endpoint: "127.0.0.1:1234", S3AccessKey: access, S3SecretKey: secret, S3Bucket: S3Bucket}
	for _, kv := range e.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	got, ok := FromEnv()
	if !ok || got.S3Endpoint != e.S3Endpoint || got.S3AccessKey != access || got.S3SecretKey != secret || got.S3Bucket != S3Bucket {
		t.Errorf("FromEnv = %+v, %v; want %+v", got, ok, e)
	}
}

func TestS3KeysAreMadePerBed(t *testing.T) {
	a1, s1 := newS3Keys()
	a2, s2 := newS3Keys()
	if len(a1) != 20 || len(s1) != 40 {
		t.Errorf("keys %q / %q: want 20 and 40 characters", a1, s1)
	}
	if a1 == a2 || s1 == s2 {
		t.Errorf("two beds got the same keys: %q %q", a1, s1)
	}
}

func TestS3IdentitiesAreSeaweedFSConfig(t *testing.T) {
	b, err := s3Identities("AK", "SK")
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "identities": [
    {
      "name": "hsi",
      "credentials": [
        {
          "accessKey": "AK",
          "secretKey": "SK"
        }
      ],
      "actions": [
        "Admin",
        "Read",
        "Write",
        "List",
        "Tagging"
      ]
    }
  ]
}`
	if string(b) != want {
		t.Errorf("identities:\n%s\nwant\n%s", b, want)
	}
}

func TestSeaweedListensOnTheBedsLoopbackPortsOnly(t *testing.T) {
	p := seaweedPorts{1, 2, 3, 4, 5, 6, 7, 8}
	args := strings.Join(seaweedArgs("/bed", "/bed/s3.json", p), " ")
	for _, want := range []string{
		"-logdir=/bed server ", "-ip=127.0.0.1 -ip.bind=127.0.0.1", "-dir=/bed/seaweedfs-data",
		"-master.port=1 -master.port.grpc=2", "-master.telemetry=false",
		"-volume.port=3 -volume.port.grpc=4", "-volume.preStopSeconds=0",
		"-filer.port=5 -filer.port.grpc=6", "-filer.localSocket=/bed/",
		"-s3 -s3.port=7 -s3.port.grpc=8", "-s3.port.iceberg=0 -s3.port.lance=0", "-s3.localSocket=/bed/",
		"-s3.config=/bed/s3.json",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("weed %s\nlacks %q", args, want)
		}
	}
}
