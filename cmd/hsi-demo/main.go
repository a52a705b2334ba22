// Command hsi-demo is the demo workload: a small imitation of the seeds' inference platform
// (a backend that calls a detector and an enrichment service), instrumented the way users
// instrument theirs: OpenTelemetry spans to Jaeger over OTLP, span profiles to Pyroscope with
// pyroscope-go + otel-profiling-go, request-duration histograms for Prometheus. Some requests are
// slow on purpose, in named functions (serializeResponse, dbQuery, modelPredict), so a user (and
// the tests) can find the cause with the plugin; a request with ?tokens= above MaxTokens fails in
// the detector with PyTorch's CUDA out-of-memory error (cudaoom.go).
//
//	hsi-demo serve   --service backend|detector|enrichment --listen ADDR ...
//	hsi-demo traffic --backend URL [--requests N] [--every D] [--slow-every K] [--oom-every M]
//	hsi-demo gpus    --listen ADDR --host gpu-node-1 --gpus 2      (simulated dcgm-exporter)
//	hsi-demo gpus    --history 2h --step 15s --end UNIX --out FILE [--kube-out FILE2]
//	                                                               (GPU and kube-state-metrics test fixtures)
//	hsi-demo scenario --kind KIND --otlp ADDR --pyroscope URL ...   (one slow request of a known cause)
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "traffic":
		err = traffic(os.Args[2:])
	case "gpus":
		err = gpus(os.Args[2:])
	case "scenario":
		err = scenarioCmd(os.Args[2:])
	case "kube-state":
		err = kubeState(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hsi-demo:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: hsi-demo serve|traffic|gpus|scenario|kube-state [flags] (see -h of each)")
	os.Exit(2)
}
