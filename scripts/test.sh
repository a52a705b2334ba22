#!/usr/bin/env bash
# README command 2: every test. Go unit tests, frontend checks and tests, then one shared test bed
# (real Prometheus, Pyroscope, Jaeger and the demo) for the integration and protocol tests.
. "$(dirname "$0")/lib.sh"
start=$SECONDS

scripts/setup.sh

log "Go: vet and unit tests"
go vet "${GO_PACKAGES[@]}"
go vet -tags integration "${GO_PACKAGES[@]}"
go test -count=1 "${GO_PACKAGES[@]}"

log "frontend: typecheck, lint, tests"
npm run --silent typecheck
npm run --silent lint
npm run --silent test:ci

log "starting a test bed for the integration tests"
bed_dir=$(mktemp -d)
env_file="$bed_dir/env"
go build -o "$bed_dir/hsi-testbed" ./cmd/hsi-testbed
# Bounded: the bed stops by itself after 40 minutes whatever happens to this script.
"$bed_dir/hsi-testbed" --env-file "$env_file" --for 40m >"$bed_dir/testbed.log" 2>&1 &
bed_pid=$!
trap 'kill $bed_pid 2>/dev/null; wait $bed_pid 2>/dev/null; rm -rf "$bed_dir"' EXIT
for _ in $(seq 180); do
  [ -s "$env_file" ] && break
  kill -0 $bed_pid 2>/dev/null || { cat "$bed_dir/testbed.log"; exit 1; }
  sleep 1
done
[ -s "$env_file" ] || { cat "$bed_dir/testbed.log"; log "test bed not ready in 180 s"; exit 1; }
set -a; . "$env_file"; set +a

log "Go: integration and protocol tests against the test bed"
go test -count=1 -tags integration -timeout 20m "${GO_PACKAGES[@]}"

log "all tests passed in $((SECONDS - start)) s"
