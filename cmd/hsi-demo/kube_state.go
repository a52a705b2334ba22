package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
)

// kubeState simulates kube-state-metrics for the demo's pods (gpusim.KubeStateLive).
//
//	hsi-demo kube-state --listen ADDR --node gpu-node-1 --pods inference/ai-detector-0,inference/nemotron-llm-0
//	    serves /metrics as kube-state-metrics v2 does, every series labelled simulated="true"; the
//	    first pod's tokenizer container is OOM-killed 20 s after the start.
func kubeState(args []string) error {
	fs := flag.NewFlagSet("kube-state", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve /metrics on")
	node := fs.String("node", HostName, "the node the pods run on (kube_pod_info's node label)")
	pods := fs.String("pods", "", `the pods, "namespace/pod,namespace/pod"; the first one's tokenizer is OOM-killed`)
	_ = fs.Parse(args)
	var list []string
	for p := range strings.SplitSeq(*pods, ",") {
		if ns, name, ok := strings.Cut(strings.TrimSpace(p), "/"); ok && ns != "" && name != "" {
			list = append(list, strings.TrimSpace(p))
		} else if strings.TrimSpace(p) != "" {
			return fmt.Errorf("--pods: want namespace/pod, got %q", p)
		}
	}
	if len(list) == 0 {
		return errors.New("--pods: name at least one pod, as namespace/pod")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sim := &gpusim.KubeStateLive{Node: *node, Pods: list, Started: time.Now()}
	log.Printf("simulated kube-state-metrics: %d pod(s) on node %s, /metrics on %s (simulated=\"true\"; %s's %s OOM-killed after %s)",
		len(list), *node, *listen, list[0], gpusim.KubeLiveTokenizer, gpusim.KubeOOMKillAfter)
	return serveUntilStopped(ctx, *listen, sim)
}
