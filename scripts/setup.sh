#!/usr/bin/env bash
# Installs and builds everything: frontend dependencies and bundle, the backend binary, the test
# bed's servers, Chromium for the browser test and the bed's S3 server (neither with --no-browser:
# scripts/run.sh needs neither; scripts/test.sh builds them).
# Safe to run again: each step is skipped or fast when already done. Each step says how long it
# took; what the builds print goes to .testbed/run/setup.log.
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
start=$SECONDS
browser=1
[ "${1:-}" = "--no-browser" ] && browser=0
mkdir -p "$RUN_DIR"
: >"$SETUP_LOG"

# What a fresh machine needs before anything can be built (docs/sources/get-started.md, "Prerequisites").
missing=()
command -v go >/dev/null || missing+=("Go 1.26 (https://go.dev/dl/)")
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=("Node.js 20 or newer with npm")
elif [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  missing+=("Node.js 20 or newer (this is $(node --version))")
fi
case "$PLUGIN_BINARY" in # only linux/amd64 builds the NVML binding
  *_linux_amd64) command -v "$(go env CC 2>/dev/null || echo gcc)" >/dev/null ||
    missing+=("a C compiler for the NVML binding (cgo): sudo apt-get install gcc") ;;
esac
if { ! command -v prometheus >/dev/null || { [ "$browser" = 1 ] && ! command -v chromium >/dev/null; }; } && ! command -v apt-get >/dev/null; then
  missing+=("apt-get (a Debian-family system) to install Prometheus and Chromium, or both installed yourself")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  log "missing prerequisites:"
  printf '  - %s\n' "${missing[@]}" >&2
  exit 1
fi

if [ ! -x node_modules/.bin/webpack ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  quietly "installing frontend dependencies (npm ci)" npm ci --no-audit --no-fund --loglevel=error
fi
quietly "building the frontend (dist/module.js)" npm run --silent build
case "$PLUGIN_BINARY" in
  *_linux_amd64) quietly "building the backend ($PLUGIN_BINARY, cgo for NVML)" mage -v build:linux ;;
  *_linux_arm64) quietly "building the backend ($PLUGIN_BINARY)" mage -v build:linuxARM64 ;;
  *) log "the test bed runs on Linux (amd64 or arm64), not $(go env GOOS)/$(go env GOARCH)"; exit 1 ;;
esac
if [ "$browser" = 1 ]; then
  quietly "installing the test bed's servers (testbed/install.sh)" testbed/install.sh
else
  quietly "installing the test bed's servers, the S3 server left for scripts/test.sh (testbed/install.sh --no-s3)" testbed/install.sh --no-s3
fi

# The browser test drives Debian's Chromium through puppeteer-core (npm's puppeteer would download
# a browser of its own).
install_chromium() {
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium
}
if [ "$browser" = 1 ] && ! command -v chromium >/dev/null; then
  quietly "installing Chromium (Debian package) for the browser test" install_chromium
fi
log "setup done in $((SECONDS - start)) s (build output: ${SETUP_LOG#"$ROOT"/})"
