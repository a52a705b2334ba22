#!/usr/bin/env bash
# README command 1: set everything up, start the test bed (Prometheus, Pyroscope, Jaeger and the
# demo workload, with steady traffic) in the background, and show real answers through the plugin
# binary: first why one slow request was slow. The stack keeps running; scripts/query.sh asks it
# more, scripts/stop.sh stops it. A bed already running (started by an earlier run.sh, or by hand
# with --env-file .testbed/run/env) is used rather than a second one.
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
start=$SECONDS

scripts/setup.sh --no-browser
mkdir -p "$RUN_DIR"
if bed_running; then
  log "test bed already running (pid $(cat "$PID_FILE"))"
elif bed_answers; then
  log "a test bed started elsewhere answers at the endpoints in ${ENV_FILE#"$ROOT"/}: using it"
else
  rm -f "$ENV_FILE"
  quietly "building the test bed (cmd/hsi-testbed)" go build -o "$RUN_DIR/hsi-testbed" ./cmd/hsi-testbed
  step=$SECONDS
  log "starting the test bed: Prometheus, Pyroscope, Jaeger, the demo and its traffic (log: ${RUN_DIR#"$ROOT"/}/testbed.log) …"
  setsid "$RUN_DIR/hsi-testbed" --env-file "$ENV_FILE" --s3-if-installed >"$RUN_DIR/testbed.log" 2>&1 </dev/null &
  echo $! >"$PID_FILE"
  wait_for_env "$(cat "$PID_FILE")" || { tail -n 40 "$RUN_DIR/testbed.log" >&2; log "the test bed did not start"; exit 1; }
  log "test bed up in $((SECONDS - step)) s"
fi
sed 's/^/    /' "$ENV_FILE" >&2
build_tools() {
  go build -o "$RUN_DIR/hsi-query" ./cmd/hsi-query
  go build -o "$RUN_DIR/hsi-demo" ./cmd/hsi-demo
}
quietly "building the command line (cmd/hsi-query) and the demo's traffic generator" build_tools

step=$SECONDS
log "waiting for the demo's first profiles and traces …"
for _ in $(seq 60); do
  # Answers are read whole, not piped into grep -q: with pipefail, grep quitting early fails the pipe.
  health=$(scripts/query.sh health 2>/dev/null || true)
  case "$health" in *"status:  OK"*) case "$health" in *"(0 profile types)"*) ;; *) break ;; esac ;; esac
  sleep 2
done
log "waited $((SECONDS - step)) s"

log "health check, through the plugin binary over gRPC, as Grafana runs it:"
scripts/query.sh health

demo=$(grep DEMO_URL "$ENV_FILE" | cut -d= -f2)
# One request, slow in its database step (the traffic generator's first slow step); it prints the
# trace ID first on its line.
trace_id=$("$RUN_DIR/hsi-demo" traffic --backend "$demo" --requests 1 --slow-every 1 | cut -f1)
if [ -n "$trace_id" ]; then
  log "one request made slow on purpose in its database step, trace $trace_id: why was it slow?"
  log "(asked once every profiled service has uploaded the request's samples, up to 60 s)"
  step=$SECONDS
  scripts/query.sh --rows 15 request "$trace_id" ||
    log "no answer for the request yet: ask again with scripts/query.sh request $trace_id"
  log "answered in $((SECONDS - step)) s"
fi
log "what limits each simulated GPU over the last 15 minutes, or since it has data (workload"
log "classification; the GPUs are simulated: series labelled simulated=\"true\"):"
gpu_query='{"queryType":"gpuClass","hosts":["gpu-node-1"],"format":"summary"}'
# A fresh stack has scraped the simulator for seconds, not 15 minutes: the range starts at its
# first sample, or the summary would count the minutes before it as "no data".
gpu_data=(--since-data 'DCGM_FI_DEV_GPU_UTIL{Hostname="gpu-node-1",simulated="true"}' --since-data-name "the simulated GPUs")
# A fresh stack has scraped the simulator for seconds only: wait for its first 30 s step.
for _ in $(seq 30); do
  answer=$(scripts/query.sh query "$gpu_query" 2>&1 || true)
  case "$answer" in *"no DCGM series match"*) sleep 2 ;; *) break ;; esac
done
scripts/query.sh "${gpu_data[@]}" query "$gpu_query" || true
log "latency by endpoint and the slowest traces:"
scripts/query.sh --rows 5 query '{"queryType":"slowRequests"}' || true
cat >&2 <<MSG

Ready in $((SECONDS - start)) s. The stack keeps running:
  Jaeger UI      $(grep JAEGER_URL "$ENV_FILE" | cut -d= -f2)
  Pyroscope UI   $(grep PYROSCOPE_URL "$ENV_FILE" | cut -d= -f2)
  Prometheus     $(grep PROMETHEUS_URL "$ENV_FILE" | cut -d= -f2)
  Tempo          $(grep TEMPO_URL "$ENV_FILE" | cut -d= -f2) (tenant $(grep TEMPO_TENANT "$ENV_FILE" | cut -d= -f2); Jaeger forwards it every span)
Ask it more:     scripts/query.sh request $trace_id
                 scripts/query.sh --trace-store tempo request $trace_id    (the same, traces read from Tempo)
                 scripts/query.sh query '{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}"}'
                 scripts/query.sh query '{"queryType":"profile","labelSelector":"{service_name=\"ai-enrichment\"}","profileTypeId":"memory:alloc_objects:count:space:bytes"}'
                 scripts/query.sh query '{"queryType":"diff","labelSelector":"{service_name=\"nemotron-backend\"}","baseline":{"from":"now-15m","to":"now"},"comparison":{"traceId":"$trace_id"}}'
                 scripts/query.sh query '{"queryType":"metrics","groupBy":["service_name"]}'
                 scripts/query.sh query '{"queryType":"gpuMetrics","metrics":["gpu_utilization","temperature"]}'
                 scripts/query.sh query '{"queryType":"spanHeatmap","service":"nemotron-backend","operation":"db_query"}'
                 scripts/query.sh query '{"queryType":"spanProfile","service":"nemotron-backend","operation":"GET /api/detect","percentile":95}'
Settings:        scripts/query.sh --json-data '{"traceDirectories":["/path/to/kernel/traces"]}' query '{"queryType":"kernels","traceId":"$trace_id"}'
Stop it:         scripts/stop.sh
Build output:    ${SETUP_LOG#"$ROOT"/}
MSG
