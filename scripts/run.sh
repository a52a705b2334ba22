#!/usr/bin/env bash
# README command 1: set everything up, start the test bed (Prometheus, Pyroscope, Jaeger and the
# demo workload, with steady traffic) in the background, and show real answers through the plugin
# binary. The stack keeps running; scripts/query.sh asks it more, scripts/stop.sh stops it.
. "$(dirname "$0")/lib.sh"

scripts/setup.sh
mkdir -p "$RUN_DIR"
if [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
  log "test bed already running (pid $(cat "$PID_FILE"))"
else
  rm -f "$ENV_FILE"
  go build -o "$RUN_DIR/hsi-testbed" ./cmd/hsi-testbed
  log "starting the test bed (log: $RUN_DIR/testbed.log)"
  setsid "$RUN_DIR/hsi-testbed" --env-file "$ENV_FILE" >"$RUN_DIR/testbed.log" 2>&1 < /dev/null &
  echo $! > "$PID_FILE"
  wait_for_env "$(cat "$PID_FILE")" || { cat "$RUN_DIR/testbed.log"; log "the test bed did not start"; exit 1; }
fi
cat "$ENV_FILE" | sed 's/^/    /' >&2

log "waiting for the demo's first profiles and traces"
for _ in $(seq 60); do
  # Answers are read whole, not piped into grep -q: with pipefail, grep quitting early fails the pipe.
  health=$(scripts/query.sh health 2>/dev/null || true)
  case "$health" in *"status:  OK"*) case "$health" in *"(0 profile types)"*) ;; *) break ;; esac ;; esac
  sleep 2
done

log "health check, through the plugin binary over gRPC, as Grafana runs it:"
scripts/query.sh health
log "CPU flame graph of the demo backend over the last 15 minutes:"
scripts/query.sh --rows 25 query '{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}","profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds"}'
log "allocations (objects) of the enrichment service:"
scripts/query.sh --rows 12 query '{"queryType":"profile","labelSelector":"{service_name=\"ai-enrichment\"}","profileTypeId":"memory:alloc_objects:count:space:bytes"}'
demo=$(grep DEMO_URL "$ENV_FILE" | cut -d= -f2)
# One request, slow in its database step (the traffic generator's first slow step); it prints the
# trace ID first on its line.
trace_id=$(go run ./cmd/hsi-demo traffic --backend "$demo" --requests 1 --slow-every 1 | cut -f1)
if [ -n "$trace_id" ]; then
  log "one slow request (slow database query), trace $trace_id: its whole-request CPU profile"
  log "across the three services (waiting for the profilers' next upload):"
  request_query="{\"queryType\":\"profile\",\"traceId\":\"$trace_id\"}"
  for _ in $(seq 15); do
    answer=$(scripts/query.sh query "$request_query" 2>/dev/null || true)
    case "$answer" in *"matched by span ID"*) break ;; esac
    sleep 2
  done
  scripts/query.sh --rows 25 query "$request_query"
  log "the same request span by span: self time, CPU, hot function, and the GPU state on its host"
  log "(the GPUs are simulated: series labelled simulated=\"true\"):"
  scripts/query.sh --rows 12 query "{\"queryType\":\"trace\",\"traceId\":\"$trace_id\"}"
fi
log "what limits each simulated GPU over the last 15 minutes (workload classification):"
gpu_query='{"queryType":"gpuClass","hosts":["gpu-node-1"],"format":"summary"}'
# A fresh stack has scraped the simulator for seconds only: wait for its first 30 s step.
for _ in $(seq 30); do
  answer=$(scripts/query.sh query "$gpu_query" 2>&1 || true)
  case "$answer" in *"no DCGM series match"*) sleep 2 ;; *) break ;; esac
done
scripts/query.sh query "$gpu_query"
log "latency by endpoint and the slowest traces:"
scripts/query.sh --rows 5 query '{"queryType":"slowRequests"}'
cat >&2 <<MSG

The stack keeps running:
  Jaeger UI      $(grep JAEGER_URL "$ENV_FILE" | cut -d= -f2)
  Pyroscope UI   $(grep PYROSCOPE_URL "$ENV_FILE" | cut -d= -f2)
  Prometheus     $(grep PROMETHEUS_URL "$ENV_FILE" | cut -d= -f2)
Ask it more:     scripts/query.sh query '{"queryType":"profile","labelSelector":"{service_name=\"ai-detector\"}"}'
                 scripts/query.sh query '{"queryType":"profile","traceId":"$trace_id","perService":true}'
                 scripts/query.sh query '{"queryType":"diff","labelSelector":"{service_name=\"nemotron-backend\"}","baseline":{"from":"now-15m","to":"now"},"comparison":{"traceId":"$trace_id"}}'
                 scripts/query.sh query '{"queryType":"metrics","groupBy":["service_name"]}'
                 scripts/query.sh query '{"queryType":"gpuMetrics","metrics":["gpu_utilization","temperature"]}'
Stop it:         scripts/stop.sh
MSG
