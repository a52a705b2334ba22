#!/usr/bin/env bash
# Stops the test bed started by scripts/run.sh (every server and the demo with it). A bed started
# some other way is left alone, with its endpoints file.
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
if bed_running; then
  kill "$(cat "$PID_FILE")"
  for _ in $(seq 30); do kill -0 "$(cat "$PID_FILE")" 2>/dev/null || break; sleep 1; done
  log "test bed stopped"
elif bed_answers; then
  log "the test bed at ${ENV_FILE#"$ROOT"/} was not started by scripts/run.sh: stop it where it was started"
  rm -f "$PID_FILE"
  exit 0
else
  log "no test bed running"
fi
rm -f "$PID_FILE" "$ENV_FILE"
