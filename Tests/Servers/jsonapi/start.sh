#!/usr/bin/env bash
# Start the JSON:API test server (djangorestframework-jsonapi, a blog) on 127.0.0.1:PORT in the background.
#   path/to/jsonapi/start.sh [PORT]          (default 8100; works from any directory)
# Nothing is written beside this script. State goes under
#   STATE=${SERVERS_STATE_DIR:-${TMPDIR:-/tmp}/rest-test-servers}
#   $STATE/jsonapi/venv/   virtualenv, shared by all ports
#   $STATE/jsonapi/PORT/   db.sqlite3, server.pid, server.started, server.log
# Env: JSONAPI_PAGE_SIZE (objects a page, default 2),
#      KEEP_DATA=1 keeps the previous SQLite file instead of re-seeding,
#      JSONAPI_VENV=path of another virtualenv to use (created and filled there if needed),
#      SERVERS_STATE_DIR=root folder for the state (see above).
# Stop with stop.sh PORT (same SERVERS_STATE_DIR/TMPDIR).
set -euo pipefail
unset CDPATH
DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
PORT="${1:-8100}"
[[ "$PORT" =~ ^[0-9]+$ ]] || { echo "usage: $0 [PORT]" >&2; exit 2; }
abspath() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
STATE="$(abspath "${SERVERS_STATE_DIR:-${TMPDIR:-/tmp}/rest-test-servers}")/jsonapi"
RUN="$STATE/$PORT"
VENV="$(abspath "${JSONAPI_VENV:-$STATE/venv}")"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ folders beside the sources
mkdir -p "$RUN"

# alive PID: the process exists and is not a zombie.
alive() { local s; s="$(ps -o stat= -p "$1" 2>/dev/null)" && [[ -n "$s" && "$s" != Z* ]]; }
# started PID: the process's start time (clock ticks since boot from /proc, else ps's lstart),
# recorded at launch so that a recycled pid is never taken for our server.
started() { if [[ -r "/proc/$1/stat" ]]; then sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20; else ps -o lstart= -p "$1"; fi 2>/dev/null; }
# ours: the pid file names a live process with the start time recorded when we launched it.
ours() {
  local pid
  pid="$(cat "$RUN/server.pid" 2>/dev/null)" && [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" \
    && [[ "$(started "$pid")" == "$(cat "$RUN/server.started" 2>/dev/null)" ]]
}

if ours; then
  echo "jsonapi already running on port $PORT (pid $(cat "$RUN/server.pid")); stop it with $DIR/stop.sh $PORT" >&2; exit 1
fi
rm -f "$RUN/server.pid" "$RUN/server.started"
if (: <>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  echo "port $PORT on 127.0.0.1 is already in use by another process" >&2; exit 1
fi

# Virtualenv: (re)filled when missing or when requirements.txt changed; locked so that
# two ports starting at once do not install into it together.
REQ_SUM="$(cksum <"$DIR/requirements.txt")"
venv_ok() { [[ -x "$VENV/bin/python" && "$(cat "$VENV/.requirements.cksum" 2>/dev/null)" == "$REQ_SUM" ]]; }
if ! venv_ok; then
  mkdir -p "$(dirname "$VENV")"
  (
    if command -v flock >/dev/null; then flock 9; fi
    if ! venv_ok; then
      [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
      "$VENV/bin/python" -m pip install -q -r "$DIR/requirements.txt"
      printf '%s\n' "$REQ_SUM" >"$VENV/.requirements.cksum"
    fi
  ) 9>"$STATE/venv.lock"
fi

export JSONAPI_DATA_DIR="$RUN" DJANGO_SETTINGS_MODULE=blog_project.settings
cd "$RUN"
if [[ "${KEEP_DATA:-0}" != 1 || ! -f "$RUN/db.sqlite3" ]]; then
  rm -f "$RUN/db.sqlite3" "$RUN/db.sqlite3-journal"
  "$VENV/bin/python" "$DIR/manage.py" migrate -v 0
  "$VENV/bin/python" "$DIR/manage.py" loaddata -v 0 seed
fi

# set -m puts the server in a process group of its own (group id = its pid); stop.sh stops that group.
t0=$(date +%s%N)
set -m
nohup "$VENV/bin/python" "$DIR/manage.py" runserver "127.0.0.1:$PORT" --noreload </dev/null >"$RUN/server.log" 2>&1 &
PID=$!
set +m
echo "$PID" >"$RUN/server.pid"
started "$PID" >"$RUN/server.started" || true

for _ in $(seq 1 300); do
  if ! alive "$PID"; then
    echo "jsonapi server exited; log ($RUN/server.log):" >&2; cat "$RUN/server.log" >&2
    rm -f "$RUN/server.pid" "$RUN/server.started"; exit 1
  fi
  if curl -sf -o /dev/null --max-time 5 -H "Accept: application/vnd.api+json" "http://127.0.0.1:$PORT/api/tags"; then
    echo "JSON:API ready at http://127.0.0.1:$PORT/api/ (pid $PID, $(( ($(date +%s%N) - t0) / 1000000 )) ms after launch)"
    exit 0
  fi
  sleep 0.1
done
echo "jsonapi server did not answer within 30 s; stopping it (pid $PID). Log ($RUN/server.log):" >&2
cat "$RUN/server.log" >&2
"$DIR/stop.sh" "$PORT" >&2 || true
exit 1
