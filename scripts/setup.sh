#!/usr/bin/env bash
# Installs and builds everything: frontend dependencies and bundle, the backend binary, the test
# bed's servers, Chromium for the browser test. Safe to run again: each step is skipped or fast
# when already done.
. "$(dirname "$0")/lib.sh"

if [ ! -x node_modules/.bin/webpack ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing frontend dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi
log "building the frontend (dist/module.js)"
npm run --silent build >/dev/null
log "building the backend (dist/gpx_hsi_profiling_linux_*)"
mage -v build:linux >/dev/null
testbed/install.sh

# The browser test drives Debian's Chromium through puppeteer-core (npm's puppeteer would download
# a browser of its own).
if ! command -v chromium >/dev/null; then
  log "installing Chromium (Debian package) for the browser test"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
