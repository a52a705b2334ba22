#!/usr/bin/env bash
# The benchmarks (docs/developer-guide.md, "Benchmarks"). Runs every Go benchmark of the plugin
# (the unit ones, then the integration ones against a test bed this script starts, bounded, and
# stops) and the long form of the load test (test/load), then prints the machine and ONE table:
# each figure beside its reference, both measured in the same run, and their ratio; the load
# test's percentiles by request follow.
# Run it on a fresh machine after scripts/setup.sh; under 10 minutes on 2 cores.
# Its output is what docs/developer-guide.md shows under "Last run": paste it there (machine line,
# table, load report) after a change that moves a figure.
#
#   BENCHTIME=1s            go test -benchtime for every benchmark (the slow ones run once anyway)
#   HSI_LOAD_QUERIES=1000   requests of the load test, HSI_LOAD_INFLIGHT=32 at once
#   HSI_TESTBED_*           a bed already running (scripts/run.sh's env) is used instead of a new one
. "$(dirname "$0")/lib.sh"
start=$SECONDS
benchtime=${BENCHTIME:-1s}
work=$(mktemp -d)
bed_pid=""
cleanup() {
  if [ -n "$bed_pid" ]; then kill "$bed_pid" 2>/dev/null || true; wait "$bed_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
raw="$work/bench.txt"
: >"$raw"

# Taken before anything of ours runs: the figures are only as good as the machine was quiet.
machine="machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1 /proc/loadavg) at the start"

# bench LOG ARGS...: one go test -bench run; its result lines go to $raw (and, as they come, to
# stderr); on failure the end of its output is shown and the script stops.
bench() {
  local log="$work/$1.log"; shift
  if ! go test -count=1 -run '^$' -benchtime "$benchtime" -timeout 20m "$@" >"$log" 2>&1; then
    grep -v '"@level"' "$log" | tail -40 >&2
    log "benchmark run failed: go test $*"
    exit 1
  fi
  grep -E '^Benchmark' "$log" | tee -a "$raw" >&2
}

log "unit benchmarks (benchtime $benchtime): frames, classify, plugin, gputrace (and its readers and store)"
bench unit -bench . ./pkg/frames/ ./pkg/classify/ ./pkg/plugin/ ./pkg/gputrace/...

if [ -n "${HSI_TESTBED_PROMETHEUS_URL:-}" ]; then
  log "using the test bed already named by HSI_TESTBED_* ($HSI_TESTBED_PROMETHEUS_URL, ...)"
else
  log "starting a test bed for the integration benchmarks and the load test"
  testbed/install.sh # the bed's servers, Prometheus and promtool: seconds when already there
  go build -o "$work/hsi-testbed" ./cmd/hsi-testbed
  # Bounded: the bed stops by itself after 30 minutes whatever happens to this script.
  "$work/hsi-testbed" --env-file "$work/env" --for 30m >"$work/testbed.log" 2>&1 &
  bed_pid=$!
  for _ in $(seq 180); do
    [ -s "$work/env" ] && break
    kill -0 "$bed_pid" 2>/dev/null || { cat "$work/testbed.log" >&2; exit 1; }
    sleep 1
  done
  [ -s "$work/env" ] || { cat "$work/testbed.log" >&2; log "test bed not ready in 180 s"; exit 1; }
  set -a; . "$work/env"; set +a
fi

log "integration benchmarks against the bed: a real traceId profile; gpuClass on 64 GPUs × 24 h (own Prometheus); a 200 MB trace from its S3 bucket"
bench integration -tags integration -bench '^BenchmarkReal' ./pkg/plugin/

# The load test's long form: its figures (latency under load beside the same requests one at a
# time, the process after beside its baseline) join the table; its percentiles follow it.
queries=${HSI_LOAD_QUERIES:-1000} inflight=${HSI_LOAD_INFLIGHT:-32}
log "load test: $queries requests, $inflight in flight, through one plugin process"
if ! HSI_LOAD_QUERIES=$queries HSI_LOAD_INFLIGHT=$inflight HSI_LOAD_REPORT="$work/load.md" HSI_LOAD_FIGURES="$work/load.txt" \
  go test -count=1 -tags integration -timeout 15m ./test/load/ >"$work/load.log" 2>&1; then
  kept="${TMPDIR:-/tmp}/hsi-bench-load.log"
  cp "$work/load.log" "$kept"
  # What failed, then the end of the log (the plugin's own log, the report).
  grep -E '^\s+load_test\.go:[0-9]+: ' "$work/load.log" | grep -v 'plugin log' | head -20 >&2 || true
  tail -40 "$work/load.log" >&2
  log "load test failed (its whole log: $kept)"
  exit 1
fi
[ -s "$work/load.md" ] && [ -s "$work/load.txt" ] || { tail -20 "$work/load.log" >&2; log "the load test passed but wrote no figures"; exit 1; }
tee -a "$raw" <"$work/load.txt" >&2

# What the table shows, one row a line: benchmark | figure's metric | what it is | its unit |
# reference's metric (OTHER:metric for another benchmark of this run) | what the reference is.
# Ratio = figure ÷ reference. Metric names are those the benchmarks pass to b.ReportMetric.
rows=$(cat <<'EOF'
FlameGraphFrame16k|frame-ns/node|16,384-node flame graph: building the frame Grafana reads|ns/node|decode-ns/node|decoding the Pyroscope reply (protobuf)
FlameGraphFrame16k|frame-allocs/node|allocations building the frame|allocs/node|decode-allocs/node|allocations decoding the reply
TraceProfileFanOut/spans=3|wall-ms/op|`traceId` profile, 3 spans (fake Jaeger 20 ms, Pyroscope 30 ms a call): wall time|ms|in-flight-ms/op|critical path: Jaeger call, then slowest Pyroscope call
TraceProfileFanOut/spans=3|wall-ms/op|same, against its calls one after another|ms|calls-sum-ms/op|its 4 calls added up
TraceProfileFanOut/spans=12|wall-ms/op|`traceId` profile, 12 spans: wall time|ms|in-flight-ms/op|critical path: Jaeger call, then slowest Pyroscope call
TraceProfileFanOut/spans=12|wall-ms/op|same, against its calls one after another|ms|calls-sum-ms/op|its 13 calls added up
RealTraceProfile|wall-ms/op|`traceId` profile of a real slow demo request (3 services, the bed's Jaeger and Pyroscope): wall time|ms|slowest-call-ms/op|slowest single upstream call
RealTraceProfile|wall-ms/op|same, against its critical path|ms|in-flight-ms/op|Jaeger call, then slowest Pyroscope call
RealTraceProfile|wall-ms/op|same, against its calls one after another|ms|calls-sum-ms/op|its calls added up
TraceQueryLargeRequest|wall-ms/op|`trace` query of a 2,005-span request over 30 services (fake Jaeger 10 ms, Pyroscope 40 ms, Prometheus 8 ms a call, as the bed's): wall time|ms|critical-path-ms/op|critical path: Jaeger read, then the slower of Pyroscope's 29 calls 16 at once and Prometheus' calls
TraceQueryLargeRequest|peak-heap-MB|same: peak heap during the query|MB|replies-MB/op|the upstreams' replies to it
TraceQueryLargeRequest|alloc-MB/op|same: bytes allocated by the query|MB|replies-MB/op|the upstreams' replies to it
TailQuery|tail-wall-ms/op|`tail` query with its defaults (20 tail requests against 10 median ones: 30 joins) of an endpoint of 400 requests, same fakes: wall time|ms|trace-wall-ms/op|one `trace` query of one of its requests
TailQuery|tail-peak-heap-MB|same: peak heap during the tail|MB|trace-peak-heap-MB|during the one `trace` query
ClassifySeries|evidence-ns/sample|GPU classification, 24 h of one GPU: with evidence|ns/sample|classes-ns/sample|classes only
GPUClassQueryOwnTime|own-ms/op|`gpuClass`, 64 GPUs × 24 h at 15 s, figures in memory: the plugin's own time|ms|RealGPUClass64GPUs24h:raw-prom-ms|Prometheus answering plain selectors (row below)
RealGPUClass64GPUs24h|own-ms/op|`gpuClass`, 64 GPUs × 24 h at 15 s (4.7 M samples in a real Prometheus): the plugin's own time|ms|raw-prom-ms|Prometheus answering plain selectors for the same series (range and clock history, same steps)
RealGPUClass64GPUs24h|fetch-ms/op|same: fetching the figures through `GPUFigures` (limit, fallbacks, per-GPU join)|ms|raw-prom-ms|Prometheus answering plain selectors for them
Chrome200MB|parse-s/op|200 MB Kineto trace: reading and analysing it|s|tokenise-s/op|`encoding/json` merely tokenising it
Chrome200MB|parse-peak-heap-MB|peak heap while reading it|MB|file-MB|the file's size
Chrome200MB|retained-heap-MB|heap kept after reading it|MB|file-MB|the file's size
RealBucket200MB|bucket-s/op|the same 200 MB trace as an object of the bed's S3 bucket (SeaweedFS, the plugin's s3 client): reading and analysing it|s|disk-s/op|the same file from disk, same analysis
RealBucket200MB|bucket-peak-heap-MB|same: peak heap while reading it|MB|disk-peak-heap-MB|the same file from disk
ChromeMemoryVsSize/20MB|peak-heap-MB|20 MB trace, kept intervals capped at 10,000: peak heap|MB|file-MB|the file's size
ChromeMemoryVsSize/80MB|peak-heap-MB|80 MB trace, same caps: peak heap|MB|file-MB|the file's size
Diff200MB|diff-s/op|kernels diff of two 200 MB Kineto traces (two requests): reading and comparing both|s|read-one-s/op|reading one of them (the summary view)
Diff200MB|diff-peak-heap-MB|same: peak heap|MB|read-one-peak-heap-MB|reading one of them
Load|p50-ms|load test through the plugin protocol (every query type, the bed): median latency under load|ms|alone-p50-ms|the same requests one at a time
Load|p99-ms|same: 99th percentile|ms|alone-p99-ms|the same requests one at a time
Load|requests/s|same: requests answered per second|/s|alone-requests/s|one at a time
Load|plugin-cpu-s|same: the plugin's CPU time during the load|s|machine-cpu-s|the machine's CPU time in that wall time (cores × wall)
Load|machine-busy-s|same: the machine's busy CPU time during the load (every process: the plugin, the bed's servers, the load's client)|s|machine-cpu-s|the machine's CPU time in that wall time (cores × wall)
Load|alone-request-cores|the same requests one at a time: the cores they kept busy (every process, the bed's own work aside)|cores|free-cores|the machine's cores less those the bed keeps busy on its own (no request)
Load|heap-after-MiB|live heap after the load (after GC)|MiB|heap-base-MiB|before the load
Load|others-after|goroutines after the load, pooled upstream connections aside||others-base|before the load
EOF
)

table=$(awk -F'|' -v rows="$rows" '
  # Four significant figures at most, no exponent: 655, 12.3, 0.0261.
  function num(x) {
    if (x >= 100) return sprintf("%.0f", x)
    if (x >= 10) return sprintf("%.1f", x)
    if (x >= 1) return sprintf("%.2f", x)
    return sprintf("%.3g", x)
  }
  # go test lines: BenchmarkName/sub-GOMAXPROCS, iterations, then value-unit pairs.
  {
    nf = split($0, f, /[ \t]+/)
    name = f[1]; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
    for (i = 3; i < nf; i += 2) m[name "|" f[i+1]] = f[i]
  }
  END {
    print "| benchmark | figure | value | reference | ratio (value ÷ reference) |"
    print "| --- | --- | --- | --- | --- |"
    n = split(rows, line, "\n")
    for (r = 1; r <= n; r++) {
      split(line[r], c, "|")
      ref = c[5]
      refKey = (index(ref, ":") ? ref : c[1] ":" ref); sub(":", "|", refKey)
      if (!((c[1] "|" c[2]) in m) || !(refKey in m)) { print "missing figure for " line[r] > "/dev/stderr"; missing = 1; continue }
      v = m[c[1] "|" c[2]]; rv = m[refKey]
      printf "| %s | %s | %s %s | %s: %s %s | %s |\n", c[1], c[3], num(v), c[4], c[6], num(rv), c[4], num(v / rv)
    }
    exit missing
  }' "$raw") || { log "some figures are missing from the benchmark output (see above)"; exit 1; }

echo
echo "$machine"
echo
echo "$table"
echo
echo "Load test (test/load, HSI_LOAD_QUERIES=$queries HSI_LOAD_INFLIGHT=$inflight), by request:"
echo
cat "$work/load.md"

log "benchmarks done in $((SECONDS - start)) s"
