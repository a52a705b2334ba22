#!/usr/bin/env bash
# Installs and builds everything: frontend dependencies and bundle, the backend binary, the test
# bed's servers. Safe to run again: each step is skipped or fast when already done.
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
