# Shared by the scripts: repository root, logging, the test bed's run folder.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN_DIR="${HSI_TESTBED_DIR:-$ROOT/.testbed}/run"
ENV_FILE="$RUN_DIR/env"
PID_FILE="$RUN_DIR/testbed.pid"
log() { printf '\033[1m[hsi]\033[0m %s\n' "$*" >&2; }
cd "$ROOT"

# Go's toolchain and build cache are shared with the developer's; nothing else is installed
# outside the repository except Prometheus (Debian package) by testbed/install.sh.
mage() { go run github.com/magefile/mage "$@"; }

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
