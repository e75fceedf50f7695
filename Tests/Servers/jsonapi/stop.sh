#!/usr/bin/env bash
# Stop the server that start.sh PORT started, by the pid in its state folder
# (${SERVERS_STATE_DIR:-${TMPDIR:-/tmp}/rest-test-servers}/jsonapi/PORT/server.pid):
# TERM to the process group start.sh created (group id = that pid), KILL after 5 s.
#   path/to/jsonapi/stop.sh [PORT]          (default 8100; works from any directory)
set -euo pipefail
PORT="${1:-8100}"
[[ "$PORT" =~ ^[0-9]+$ ]] || { echo "usage: $0 [PORT]" >&2; exit 2; }
abspath() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
RUN="$(abspath "${SERVERS_STATE_DIR:-${TMPDIR:-/tmp}/rest-test-servers}")/jsonapi/$PORT"
PIDFILE="$RUN/server.pid"

alive() { local s; s="$(ps -o stat= -p "$1" 2>/dev/null)" && [[ -n "$s" && "$s" != Z* ]]; }
started() { if [[ -r "/proc/$1/stat" ]]; then sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20; else ps -o lstart= -p "$1"; fi 2>/dev/null; }
# group_alive PGID: some process of that group still runs (zombies do not count).
group_alive() { ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'; }

[[ -f "$PIDFILE" ]] || { echo "jsonapi: no server to stop on port $PORT (no $PIDFILE)" >&2; exit 0; }
PID="$(cat "$PIDFILE")"
if [[ "$PID" =~ ^[0-9]+$ ]] && alive "$PID" && [[ "$(started "$PID")" == "$(cat "$RUN/server.started" 2>/dev/null)" ]]; then
  if [[ "$(ps -o pgid= -p "$PID" | tr -d ' ')" == "$PID" ]]; then
    TARGET="-$PID"                                  # the group start.sh created
    running() { group_alive "$PID"; }
  else
    TARGET="$PID"
    running() { alive "$PID"; }
  fi
  kill -TERM -- "$TARGET" 2>/dev/null || true
  for _ in $(seq 1 50); do running || break; sleep 0.1; done
  if running; then
    kill -KILL -- "$TARGET" 2>/dev/null || true
    for _ in $(seq 1 50); do running || break; sleep 0.1; done
  fi
  if running; then echo "jsonapi: pid $PID (port $PORT) survived KILL" >&2; exit 1; fi
  echo "stopped jsonapi on port $PORT (pid $PID)"
else
  echo "jsonapi: the server of port $PORT (pid $PID) is gone (that pid is free or now another process); nothing stopped" >&2
fi
rm -f "$PIDFILE" "$RUN/server.started"
