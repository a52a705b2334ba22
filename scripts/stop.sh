#!/usr/bin/env bash
# Stops the test bed started by scripts/run.sh (every server and the demo with it).
. "$(dirname "$0")/lib.sh"
if [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
  kill "$(cat "$PID_FILE")"
  for _ in $(seq 30); do kill -0 "$(cat "$PID_FILE")" 2>/dev/null || break; sleep 1; done
  log "test bed stopped"
else
  log "no test bed running"
fi
rm -f "$PID_FILE" "$ENV_FILE"
