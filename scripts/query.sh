#!/usr/bin/env bash
# Runs hsi-query (the plugin binary, launched as Grafana does) against the running test bed.
#   scripts/query.sh [flags] health | query JSON | resource PATH | request TRACE_ID | tail SERVICE OPERATION [PERCENTILE]
#   flags: --rows N, --since 1h, --json-data '{"traceDirectories":["/tmp/traces"]}', --nvml, -v, ...
#   (scripts/query.sh -h lists them). Exits non-zero when the answer is an error.
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
[ -s "$ENV_FILE" ] || { log "no test bed running: start it with scripts/run.sh"; exit 1; }
bin="$RUN_DIR/hsi-query"
# Quiet unless the build fails (go: downloading lines and the like are noise here).
if ! build=$(go build -o "$bin" ./cmd/hsi-query 2>&1); then
  printf '%s\n' "$build" >&2
  exit 1
fi
[ -x "$PLUGIN_BINARY" ] || { log "no plugin binary $PLUGIN_BINARY: run scripts/setup.sh"; exit 1; }
# Tables fit the terminal: hsi-query reads its width from COLUMNS, which the shell does not export.
if [ -z "${COLUMNS:-}" ] && [ -t 1 ]; then
  COLUMNS=$(tput cols 2>/dev/null || true)
fi
[ -z "${COLUMNS:-}" ] || export COLUMNS
exec "$bin" --plugin "$PLUGIN_BINARY" --env-file "$ENV_FILE" "$@"
