#!/usr/bin/env bash
# Installs the test bed's servers, once: Prometheus from Debian's package, Pyroscope, Jaeger and
# SeaweedFS (the bed's S3-compatible object store) built from their Go modules (testbed/tools/*).
# --no-s3 leaves SeaweedFS out (scripts/run.sh's first run reads no bucket; the build takes
# minutes): a bed then starts without it when asked to (hsi-testbed --s3-if-installed).
# Binaries are cached outside the clone, under $HSI_TESTBED_CACHE/bin (default
# ~/.cache/hsi-profiling/bin) keyed by version, so later runs and other clones take seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/versions.sh"
bin="${HSI_TESTBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hsi-profiling}/bin"
mkdir -p "$bin"

log() { printf '[testbed] %s\n' "$*" >&2; }
s3=1
[ "${1:-}" = "--no-s3" ] && s3=0

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  log "installing Prometheus (Debian package)"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq prometheus >/dev/null
  # The package starts a system service on some hosts; the test bed runs its own instances.
  $sudo systemctl disable --now prometheus >/dev/null 2>&1 || true
fi

build() { # name version package
  local name=$1 version=$2 pkg=$3 out="$bin/$1-$2"
  if [ -x "$out" ]; then return; fi
  log "building $name $version from its Go module (first time only, a few minutes)"
  local start=$SECONDS
  (cd "$here/tools/$name" && go build -trimpath -buildvcs=false -o "$out.tmp" "$pkg")
  mv "$out.tmp" "$out"
  log "built $name in $((SECONDS - start)) s"
}

build pyroscope "$PYROSCOPE_VERSION" github.com/grafana/pyroscope/cmd/pyroscope
build jaeger "$JAEGER_VERSION" github.com/jaegertracing/jaeger/cmd/jaeger
if [ "$s3" = 1 ]; then
  build seaweedfs "$SEAWEEDFS_VERSION" github.com/seaweedfs/seaweedfs/weed
  log "ready: $(prometheus --version 2>&1 | head -1); pyroscope $PYROSCOPE_VERSION; jaeger $JAEGER_VERSION; seaweedfs $SEAWEEDFS_VERSION"
else
  log "ready: $(prometheus --version 2>&1 | head -1); pyroscope $PYROSCOPE_VERSION; jaeger $JAEGER_VERSION (no S3 server: --no-s3)"
fi
