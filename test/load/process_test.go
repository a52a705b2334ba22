//go:build integration

package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
)

// plugin is the plugin process under load, with the SDK's pprof server turned on
// (GF_PLUGIN_PROFILING_ENABLED, the switch Grafana's [plugin.<id>] profiling settings set): its
// heap endpoint with gc=1 runs a garbage collection, so heap figures compare live memory rather
// than wherever the GC cycle happens to be, and its goroutine dump tells idle keep-alive
// connections from anything else.
type plugin struct {
	*pluginhost.Host
	pprof string       // http://127.0.0.1:port/debug/pprof/
	http  *http.Client // without keep-alive: the measurement must not leave connections behind
}

func startPlugin(settings pluginhost.DataSource, log io.Writer) (*plugin, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the profiler
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	h, err := pluginhost.Start(binary, settings, log,
		"GF_PLUGIN_PROFILING_ENABLED=true", fmt.Sprintf("GF_PLUGIN_PROFILING_PORT=%d", port))
	if err != nil {
		return nil, err
	}
	return &plugin{Host: h, pprof: fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", port),
		http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}}, nil
}

// snapshot is the process's state as its own metrics (CollectMetrics) and goroutine dump say.
type snapshot struct {
	goroutines float64 // go_goroutines
	heapInuse  float64 // go_memstats_heap_inuse_bytes, right after a garbage collection
	resident   float64 // process_resident_memory_bytes
	cpu        float64 // process_cpu_seconds_total: the plugin's CPU time so far
	// From the goroutine dump (taken just after the metrics, so its total may differ by one or two):
	dumped    int    // goroutines in it
	keepAlive int    // of which pooled HTTP connections to the upstreams (read and write loops)
	dump      string // grouped by stack
}

// others are the goroutines that are not pooled upstream connections.
func (s snapshot) others() int { return s.dumped - s.keepAlive }

// dumpGroup is the head of one stack in a debug=1 goroutine dump: "N @ 0x... 0x...".
var dumpGroup = regexp.MustCompile(`(?m)^(\d+) @ `)

func (p *plugin) get(ctx context.Context, path string) (string, error) {
	return p.read(ctx, p.http, path)
}

// getLong reads a profile that takes longer than the client's timeout, bounded by ctx alone.
func (p *plugin) getLong(ctx context.Context, path string) (string, error) {
	return p.read(ctx, &http.Client{Transport: p.http.Transport}, path)
}

func (p *plugin) read(ctx context.Context, client *http.Client, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.pprof+path, nil)
	if err != nil {
		return "", err
	}
	res, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("pprof %s: HTTP %d", path, res.StatusCode)
	}
	return string(body), err
}

// snapshot reads the metrics. full (the baseline and the after-load check) collects garbage
// first and reads the goroutine dump; samples during the load leave the GC alone.
func (p *plugin) snapshot(ctx context.Context, full bool) (snapshot, error) {
	var s snapshot
	if full {
		// Two collections: the first moves sync.Pool contents to their victim caches, the second
		// frees them, so pooled buffers the load grew do not count as live heap.
		for range 2 {
			if _, err := p.get(ctx, "heap?gc=1"); err != nil {
				return s, err
			}
		}
	}
	text, err := p.Metrics(ctx)
	if err != nil {
		return s, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return s, fmt.Errorf("the plugin's metrics: %w", err)
	}
	for name, dst := range map[string]*float64{"go_goroutines": &s.goroutines,
		"go_memstats_heap_inuse_bytes": &s.heapInuse, "process_resident_memory_bytes": &s.resident} {
		f, ok := families[name]
		if !ok || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge() == nil {
			return s, fmt.Errorf("the plugin's metrics lack the gauge %s", name)
		}
		*dst = f.GetMetric()[0].GetGauge().GetValue()
	}
	cpu, ok := families["process_cpu_seconds_total"]
	if !ok || len(cpu.GetMetric()) != 1 || cpu.GetMetric()[0].GetCounter() == nil {
		return s, fmt.Errorf("the plugin's metrics lack the counter process_cpu_seconds_total")
	}
	s.cpu = cpu.GetMetric()[0].GetCounter().GetValue()
	if !full {
		return s, nil
	}
	// debug=1 groups goroutines by stack: "N @ 0x... 0x..." then the frames.
	if s.dump, err = p.get(ctx, "goroutine?debug=1"); err != nil {
		return s, err
	}
	for _, group := range strings.Split(s.dump, "\n\n") {
		m := dumpGroup.FindStringSubmatch(group)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		s.dumped += n
		if strings.Contains(group, "net/http.(*persistConn).readLoop") || strings.Contains(group, "net/http.(*persistConn).writeLoop") {
			s.keepAlive += n
		}
	}
	return s, nil
}

// peaks samples the process every interval while the load runs.
type peaks struct {
	mu                              sync.Mutex
	goroutines, heapInuse, resident float64
	err                             error
}

// samplePeaks samples until stop is called, which waits for the last sample.
func (p *plugin) samplePeaks(ctx context.Context, every time.Duration) (pk *peaks, stop func()) {
	pk = &peaks{}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			s, err := p.snapshot(ctx, false)
			pk.mu.Lock()
			if err != nil && ctx.Err() == nil {
				pk.err = err
			}
			pk.goroutines, pk.heapInuse, pk.resident = max(pk.goroutines, s.goroutines), max(pk.heapInuse, s.heapInuse), max(pk.resident, s.resident)
			pk.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
		}
	}()
	return pk, func() { cancel(); <-done }
}

// lockedWriter collects the plugin's log, written from its output goroutines and read on failure.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
