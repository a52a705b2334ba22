package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// jaegerQueryConfig is Jaeger v2 with its query server and an OTLP receiver into memory storage
// only: the bed's Jaeger without the forwarding to Tempo. %[4]s is the query server's HTTP
// keep-alive line, empty to keep Jaeger's default.
const jaegerQueryConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %[1]s
%[4]s    grpc:
      endpoint: %[2]s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[3]s
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// StartJaegerQuery starts a Jaeger of its own, empty, for a test that needs its query server
// configured otherwise than the bed's: keepAlives false leaves the query server's HTTP
// keep-alive at Jaeger's default (off), true sets keep_alives_enabled as the bed does. It
// answers the query URL and a stop function, and is ready when it returns.
func StartJaegerQuery(ctx context.Context, keepAlives bool) (url string, stop func(), err error) {
	root, err := RepoRoot()
	if err != nil {
		return "", nil, err
	}
	bins, err := binaries(root, true)
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "hsi-jaeger-")
	if err != nil {
		return "", nil, err
	}
	b := &Bed{Dir: dir}
	defer func() {
		if err != nil {
			b.Stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return "", nil, err
	}
	keep := ""
	if keepAlives {
		keep = "      keep_alives_enabled: true\n"
	}
	path := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, jaegerQueryConfig, addr(ports[0]), addr(ports[1]), addr(ports[2]), keep), 0o644); err != nil {
		return "", nil, err
	}
	p, err := b.start("jaeger", nil, bins.jaeger, "--config="+path)
	if err != nil {
		return "", nil, err
	}
	url = "http://" + addr(ports[0])
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	if err := p.waitReady(ctx, url+"/api/v3/services", statusOK); err != nil {
		return "", nil, err
	}
	return url, b.Stop, nil
}
