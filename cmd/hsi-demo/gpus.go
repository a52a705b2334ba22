package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
)

// gpus simulates NVIDIA's dcgm-exporter for machines without a GPU (internal/gpusim).
//
//	hsi-demo gpus --listen ADDR --host gpu-node-1 --gpus 2
//	    serves /metrics as dcgm-exporter 4.x does, every series labelled simulated="true"; the
//	    GPUs move through the seven classes on a 14-minute cycle (gpusim.Live).
//	hsi-demo gpus --history 2h --step 15s --end UNIX --out FILE [--kube-out FILE2]
//	    writes the test fixtures (hosts fixture-node-a to fixture-node-d) for [end-history, end]
//	    in OpenMetrics, for `promtool tsdb create-blocks-from openmetrics FILE DIR`; with
//	    --kube-out, also the kube-state-metrics series of fixture-node-d's pods (a second file,
//	    backfilled the same way).
func gpus(args []string) error {
	fs := flag.NewFlagSet("gpus", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:9400", "address to serve /metrics on")
	host := fs.String("host", HostName, "Hostname label of the simulated GPUs")
	count := fs.Int("gpus", 2, "number of simulated GPUs")
	history := fs.Duration("history", 0, "write fixtures covering this long before --end instead of serving")
	step := fs.Duration("step", gpusim.FixtureStep, "fixtures: time between samples")
	end := fs.String("end", "", "fixtures: end of the window, Unix seconds (default now)")
	out := fs.String("out", "-", "fixtures: output file (- for standard output)")
	kubeOut := fs.String("kube-out", "", "fixtures: also write fixture-node-d's kube-state-metrics series to this file")
	pods := fs.String("pods", "", `GPUs mapped to Kubernetes pods, as dcgm-exporter's pod mapping labels them: "0=namespace/pod,1=namespace/pod"`)
	_ = fs.Parse(args)

	if *history > 0 {
		endTime := time.Now().Truncate(time.Second)
		if *end != "" {
			sec, err := strconv.ParseInt(*end, 10, 64)
			if err != nil {
				return fmt.Errorf("--end: want Unix seconds, got %q", *end)
			}
			endTime = time.Unix(sec, 0)
		}
		if err := writeFixtures(*out, gpusim.WriteFixtures, endTime.Add(-*history), endTime, *step); err != nil {
			return err
		}
		if *kubeOut != "" {
			return writeFixtures(*kubeOut, gpusim.WriteKubeStateFixtures, endTime.Add(-*history), endTime, *step)
		}
		return nil
	}
	if *count < 1 {
		return fmt.Errorf("--gpus must be at least 1")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sim := gpusim.NewSimulator(*host, *count)
	if err := mapPods(sim, *pods); err != nil {
		return err
	}
	log.Printf("simulated dcgm-exporter: %d GPU(s) on host %s, /metrics on %s (simulated=\"true\")", *count, *host, *listen)
	return serveUntilStopped(ctx, *listen, sim)
}

// serveUntilStopped serves h on addr until ctx ends (SIGINT, SIGTERM), then shuts down within 5 s.
func serveUntilStopped(ctx context.Context, addr string, h http.Handler) error {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(c)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// mapPods labels the GPUs given as "index=namespace/pod,..." with pod, namespace and container
// (the pod's name less its ordinal), the labels dcgm-exporter 4.x adds with its pod mapping.
func mapPods(sim *gpusim.Simulator, spec string) error {
	if spec == "" {
		return nil
	}
	for _, item := range strings.Split(spec, ",") {
		index, pod, ok := strings.Cut(item, "=")
		ns, name, okPod := strings.Cut(pod, "/")
		i, err := strconv.Atoi(index)
		if !ok || !okPod || err != nil || ns == "" || name == "" {
			return fmt.Errorf("--pods: want index=namespace/pod, got %q", item)
		}
		if i < 0 || i >= len(sim.GPUs) {
			return fmt.Errorf("--pods: GPU %d is not one of the %d simulated GPUs", i, len(sim.GPUs))
		}
		container := name
		if j := strings.LastIndex(name, "-"); j > 0 {
			container = name[:j]
		}
		labels := maps.Clone(sim.GPUs[i].Labels)
		labels["pod"], labels["namespace"], labels["container"] = name, ns, container
		sim.GPUs[i].Labels = labels
	}
	return nil
}

func writeFixtures(path string, write func(io.Writer, time.Time, time.Time, time.Duration) error, start, end time.Time, step time.Duration) error {
	if path == "-" {
		w := bufio.NewWriter(os.Stdout)
		if err := write(w, start, end, step); err != nil {
			return err
		}
		return w.Flush()
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, start, end, step); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
