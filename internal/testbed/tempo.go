package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/tempofake"
)

// TempoTenant is the tenant the bed's Tempo keeps the demo's spans under: the bed's Tempo is
// multi-tenant, as Grafana Cloud's is, so a data source without it gets Tempo's "no org id".
const TempoTenant = "hsi-bed"

// TempoBinEnv names a real Tempo binary; when set, the bed runs it instead of the fake.
const TempoBinEnv = "HSI_TEMPO_BIN"

// TempoFakeVersion is HSI_TESTBED_TEMPO_VERSION when the bed's Tempo is the fake.
const TempoFakeVersion = "fake"

const tempoConfig = `multitenancy_enabled: true
stream_over_http_enabled: true
server:
  http_listen_address: 127.0.0.1
  http_listen_port: %[1]d
  grpc_listen_address: 127.0.0.1
  grpc_listen_port: %[2]d
  log_level: warn
distributor:
  receivers:
    otlp:
      protocols:
        grpc:
          endpoint: "127.0.0.1:%[3]d"
memberlist:
  bind_addr: [127.0.0.1]
  bind_port: %[4]d
storage:
  trace:
    backend: local
    wal:
      path: %[5]s/wal
    local:
      path: %[5]s/blocks
usage_report:
  reporting_enabled: false
`

// RealTempo is a real Tempo single binary run with local storage and an OTLP gRPC receiver.
type RealTempo struct {
	URL, OTLPAddr string
	proc          *process
}

// StartRealTempo runs bin (a Tempo binary) in dir, multi-tenant, on the given ports, and waits
// until it is ready.
func StartRealTempo(ctx context.Context, bin, dir string, httpPort, grpcPort, otlpPort, memberPort int) (*RealTempo, error) {
	data := filepath.Join(dir, "tempo-data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "tempo.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, tempoConfig, httpPort, grpcPort, otlpPort, memberPort, data), 0o644); err != nil {
		return nil, err
	}
	p, err := startProcess("tempo", dir, nil, bin, "-config.file="+cfg)
	if err != nil {
		return nil, err
	}
	rt := &RealTempo{URL: "http://" + addr(httpPort), OTLPAddr: addr(otlpPort), proc: p}
	if err := p.waitReady(ctx, rt.URL+"/ready", func(status int, body []byte) bool {
		return status == 200 && strings.TrimSpace(string(body)) == "ready"
	}); err != nil {
		p.stop(10 * time.Second)
		return nil, err
	}
	return rt, nil
}

// Stop ends the Tempo process.
func (t *RealTempo) Stop() { t.proc.stop(10 * time.Second) }

// startTempo starts the bed's Tempo: the real one HSI_TEMPO_BIN names, else the fake, on the
// given ports. Jaeger forwards every span it takes to its OTLP receiver (servers.go), so both
// stores hold the same traces.
func (b *Bed) startTempo(ctx context.Context, httpPort, grpcPort, otlpPort, memberPort int) error {
	b.TempoTenant = TempoTenant
	if bin := os.Getenv(TempoBinEnv); bin != "" {
		rt, err := StartRealTempo(ctx, bin, b.Dir, httpPort, grpcPort, otlpPort, memberPort)
		if err != nil {
			return fmt.Errorf("starting the real Tempo (%s=%s): %w", TempoBinEnv, bin, err)
		}
		b.procs = append(b.procs, rt.proc)
		b.TempoURL, b.TempoOTLP = rt.URL, rt.OTLPAddr
		b.TempoVersion = "real " + bin
		return nil
	}
	fake, err := tempofake.Start(tempofake.Options{HTTPAddr: addr(httpPort), OTLPAddr: addr(otlpPort), Tenant: TempoTenant})
	if err != nil {
		return err
	}
	b.closers = append(b.closers, fake.Close)
	b.TempoURL, b.TempoOTLP, b.TempoVersion = fake.URL, fake.OTLPAddr, TempoFakeVersion
	return nil
}
