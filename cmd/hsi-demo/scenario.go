package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/scenario"
)

// scenarioCmd runs one slow request of a known cause through services with random names (see
// internal/scenario) and prints, as JSON, its trace ID and what the verdict should say of it.
func scenarioCmd(args []string) error {
	fs := flag.NewFlagSet("scenario", flag.ExitOnError)
	kind := fs.String("kind", "", "the cause to inject: "+kindList())
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "draws the names and the duration")
	otlp := fs.String("otlp", "", "OTLP gRPC endpoint (host:port) of Jaeger")
	pyro := fs.String("pyroscope", "", "Pyroscope URL to push the culprit's profiles to")
	traceDir := fs.String("trace-dir", "", "folder for the kernel traces of the GPU kinds (the plugin's traceDirectories)")
	gpuHost := fs.String("gpu-host", "", "host of the simulated dcgm-exporter whose GPUs the GPU kinds run on")
	gpus := fs.Int("gpus", 7, "GPUs of --gpu-host (gpusim.Live's classes, three apart)")
	since := fs.Int64("series-since", 0, "unix time before which --prometheus refuses samples (the end of its backfilled blocks)")
	prom := fs.String("prometheus", "", "URL of a Prometheus with --web.enable-remote-write-receiver, for the series around the request (cAdvisor's throttling)")
	_ = fs.Parse(args)
	if *kind == "" {
		return fmt.Errorf("--kind is required: %s", kindList())
	}
	spec := scenario.NewSpec(scenario.Kind(*kind), *seed)
	if spec.Kind.WritesKernelTrace() && *traceDir == "" {
		return fmt.Errorf("--kind %s writes a kernel trace: give --trace-dir", *kind)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	log.Printf("scenario %s", spec)
	res, err := scenario.Run(ctx, scenario.Config{
		OTLP: *otlp, Pyroscope: *pyro, TraceDir: *traceDir,
		Host: HostName, GPUHost: *gpuHost, GPUCount: *gpus, Prometheus: *prom, Log: log.Printf,
		SeriesSince: time.Unix(*since, 0),
	}, spec)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

func kindList() string {
	names := make([]string, len(scenario.Kinds))
	for i, k := range scenario.Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
