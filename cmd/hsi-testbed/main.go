// Command hsi-testbed runs the test bed (Prometheus, Pyroscope, Jaeger, the S3 object store and the
// demo workload) in the foreground until interrupted, and writes the endpoints to an env file that
// the scripts and tests read. Stopping it (Ctrl-C, SIGTERM) stops every server it started.
//
//	hsi-testbed [--env-file PATH] [--demo=true] [--traffic=true] [--for DURATION]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

func main() {
	envFile := flag.String("env-file", "", "write the endpoints here as KEY=VALUE lines once ready")
	demo := flag.Bool("demo", true, "run the demo workload")
	traffic := flag.Bool("traffic", true, "send the demo a steady trickle of requests (some slow)")
	keep := flag.Bool("keep", false, "keep the bed's folder (logs, data) after stopping")
	lifetime := flag.Duration("for", 0, "stop by itself after this long (0: until interrupted)")
	s3IfInstalled := flag.Bool("s3-if-installed", false, "start the S3 object store only if testbed/install.sh built it (scripts/run.sh: the first run builds none)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *lifetime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *lifetime)
		defer cancel()
	}
	logf := func(format string, args ...any) { log.Printf("[testbed] "+format, args...) }

	bed, err := testbed.Start(ctx, testbed.Options{Demo: *demo, KeepDir: *keep, S3IfInstalled: *s3IfInstalled, Log: logf})
	if err != nil {
		log.Fatalf("[testbed] %v", err)
	}
	defer bed.Stop()
	logf("folder %s (server logs are there)", bed.Dir)

	if *traffic && *demo {
		go runTraffic(ctx, bed, logf)
	}
	if *envFile != "" {
		if err := writeEnv(*envFile, bed); err != nil {
			logf("%v", err)
			return
		}
		defer os.Remove(*envFile)
	}
	logf("ready; stop with Ctrl-C")
	<-ctx.Done()
	logf("stopping")
}

// runTraffic keeps the demo busy so dashboards and queries have fresh data.
func runTraffic(ctx context.Context, bed *testbed.Bed, logf func(string, ...any)) {
	out, err := os.Create(filepath.Join(bed.Dir, "traffic.log"))
	if err != nil {
		logf("traffic: %v", err)
		return
	}
	defer out.Close()
	if err := bed.Traffic(ctx, 0, 500*time.Millisecond, out); err != nil {
		logf("traffic stopped: %v (see %s)", err, out.Name())
	}
}

// writeEnv writes atomically, so a reader never sees half a file; readable by its user only, as it
// holds the bed's S3 keys.
func writeEnv(path string, bed *testbed.Bed) error {
	content := strings.Join(append(bed.Env(), "HSI_TESTBED_FOLDER="+bed.Dir), "\n") + "\n"
	tmp := path + ".tmp"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
