# Shared by the scripts: repository root, logging, the test bed's run folder.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN_DIR="$ROOT/.testbed/run"
ENV_FILE="$RUN_DIR/env"
PID_FILE="$RUN_DIR/testbed.pid"
log() { printf '\033[1m[hsi]\033[0m %s\n' "$*" >&2; }
cd "$ROOT"

# Outside the clone only caches are written: Go's, npm's, and the test bed's server binaries
# (testbed/install.sh); Prometheus comes from Debian's package.
mage() { go run github.com/magefile/mage "$@"; }

# Go packages of the project (./... would also walk node_modules, where some npm packages ship Go).
GO_PACKAGES=(./pkg/... ./cmd/... ./internal/... ./test/...)

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
