# shellcheck shell=bash
# Shared by the scripts: repository root, logging, the test bed's run folder.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN_DIR="$ROOT/.testbed/run"
ENV_FILE="$RUN_DIR/env"
PID_FILE="$RUN_DIR/testbed.pid"
# What the builds print (go: downloading, the NVML binding's cgo warnings, npm's notices) goes
# here rather than to the terminal; a failed step shows its end.
SETUP_LOG="$RUN_DIR/setup.log"
log() { printf '\033[1m[hsi]\033[0m %s\n' "$*" >&2; }
cd "$ROOT"

# Outside the clone only caches are written: Go's, npm's, and the test bed's server binaries
# (testbed/install.sh); Prometheus comes from Debian's package.
mage() { go run github.com/magefile/mage "$@"; }

# The plugin binary for this machine, as mage builds it (build:linux on amd64, build:linuxARM64
# on arm64).
# shellcheck disable=SC2034 # used by setup.sh and query.sh
PLUGIN_BINARY="dist/gpx_hsi_profiling_$(go env GOOS 2>/dev/null || echo linux)_$(go env GOARCH 2>/dev/null || echo amd64)"

# Go packages of the project (./... would also walk node_modules, where some npm packages ship Go).
# shellcheck disable=SC2034 # used by test.sh and bench.sh
GO_PACKAGES=(./pkg/... ./cmd/... ./internal/... ./test/...)

# quietly LABEL COMMAND...: one step of the setup. Its output goes to $SETUP_LOG, except the
# test bed installer's own "[testbed] ..." lines (they say when a long build starts); then it
# says how long the step took, or, when it failed, shows the end of its output.
quietly() {
  local label=$1 start=$SECONDS rc=0
  shift
  mkdir -p "$RUN_DIR"
  log "$label …"
  printf '\n== %s (%s)\n$ %s\n' "$label" "$(date '+%F %T')" "$*" >>"$SETUP_LOG"
  "$@" 2>&1 | tee -a "$SETUP_LOG" | { grep --line-buffered '^\[testbed\]' >&2 || true; } || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 30 "$SETUP_LOG" >&2
    log "$label: FAILED after $((SECONDS - start)) s (exit status $rc; whole output in $SETUP_LOG)"
    return "$rc"
  fi
  log "$label: done in $((SECONDS - start)) s"
}

# wait_for_env waits until hsi-testbed has written its endpoints, or its process died.
wait_for_env() {
  local pid=$1 limit=${2:-180}
  for _ in $(seq "$limit"); do
    [ -s "$ENV_FILE" ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 1
  done
  return 1
}

# bed_running says whether the bed scripts/run.sh started is still running.
bed_running() { [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }

# bed_answers says whether the endpoints file names a Prometheus that accepts connections: a bed
# started some other way (hsi-testbed --env-file .testbed/run/env) is running.
bed_answers() {
  [ -s "$ENV_FILE" ] || return 1
  local url hostport
  url=$(grep '^HSI_TESTBED_PROMETHEUS_URL=' "$ENV_FILE" | cut -d= -f2-)
  hostport=${url#*://}
  hostport=${hostport%%/*}
  [ -n "$hostport" ] && (: <"/dev/tcp/${hostport%:*}/${hostport##*:}") 2>/dev/null
}
