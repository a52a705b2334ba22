#!/usr/bin/env bash
# README command 2: every test. Go unit tests, frontend checks and tests, then one shared test bed
# (real Prometheus, Pyroscope, Jaeger and the demo) for the integration and protocol tests, and
# Grafana's own frontend code (its flame graph, in jsdom and in Chromium) on the frames the plugin
# returned from that bed. The last line says which step failed, or that all passed.
. "$(dirname "$0")/lib.sh"
start=$SECONDS

current_step="setup"
bed_pid=""
bed_dir=""
finish() {
  local rc=$?
  if [ -n "$bed_pid" ]; then
    kill "$bed_pid" 2>/dev/null || true
    wait "$bed_pid" 2>/dev/null || true
  fi
  if [ -n "$bed_dir" ]; then
    rm -rf "$bed_dir"
  fi
  if [ "$rc" -ne 0 ]; then
    log "FAILED at step \"$current_step\" (exit status $rc, after $((SECONDS - start)) s)"
  fi
}
trap finish EXIT
step() {
  current_step=$1
  log "$1"
}

step "setup: dependencies, builds, test bed servers, Chromium"
scripts/setup.sh

step "Go: vet"
go vet "${GO_PACKAGES[@]}"
go vet -tags integration "${GO_PACKAGES[@]}"

step "Go: unit tests"
go test -count=1 "${GO_PACKAGES[@]}"

step "frontend: typecheck"
npm run --silent typecheck

step "frontend: lint"
npm run --silent lint

step "frontend: Jest tests"
npm run --silent test:ci

step "starting a test bed for the integration tests"
bed_dir=$(mktemp -d)
env_file="$bed_dir/env"
go build -o "$bed_dir/hsi-testbed" ./cmd/hsi-testbed
# Bounded: the bed stops by itself after 40 minutes whatever happens to this script.
"$bed_dir/hsi-testbed" --env-file "$env_file" --for 40m >"$bed_dir/testbed.log" 2>&1 &
bed_pid=$!
for _ in $(seq 180); do
  [ -s "$env_file" ] && break
  kill -0 $bed_pid 2>/dev/null || { cat "$bed_dir/testbed.log"; exit 1; }
  sleep 1
done
[ -s "$env_file" ] || { cat "$bed_dir/testbed.log"; log "test bed not ready in 180 s"; exit 1; }
set -a; . "$env_file"; set +a

# test/frames writes the plugin's answers where the two Grafana suites below read them.
export HSI_FRAMES_DIR="$ROOT/.testbed/frames"
step "Go: integration and protocol tests against the test bed"
go test -count=1 -tags integration -timeout 20m "${GO_PACKAGES[@]}"

step "Grafana's flame graph model on the plugin's frames (npm run test:grafana)"
npm run --silent test:grafana

step "Chromium: editors, settings page and flame graphs (npm run test:browser)"
rm -rf "$ROOT/.testbed/screenshots" # each browser.*.test.ts adds its own
HSI_SCREENSHOTS_DIR="$ROOT/.testbed/screenshots" npm run --silent test:browser
log "screenshots of the browser test: .testbed/screenshots/"

trap - EXIT
finish
log "all tests passed in $((SECONDS - start)) s"
