#!/usr/bin/env bash
# Runs hsi-query (the plugin binary, launched as Grafana does) against the running test bed.
#   scripts/query.sh health | query JSON | resource PATH      (flags: see scripts/query.sh -h)
. "$(dirname "$0")/lib.sh"
[ -s "$ENV_FILE" ] || { log "no test bed running: start it with scripts/run.sh"; exit 1; }
bin="$RUN_DIR/hsi-query"
go build -o "$bin" ./cmd/hsi-query
plugin=$(ls dist/gpx_hsi_profiling_linux_* 2>/dev/null | grep -v '\.' | head -1 || true)
[ -n "$plugin" ] || { log "no plugin binary in dist/: run scripts/setup.sh"; exit 1; }
exec "$bin" --plugin "$plugin" --env-file "$ENV_FILE" "$@"
