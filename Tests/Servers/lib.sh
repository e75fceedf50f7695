# Shared by every test server's start.sh and stop.sh (sourced, not run):
#   source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#   server_init NAME DEFAULT_PORT "$@"     sets NAME, PORT, DIR (the server's folder), STATE, RUN
#
# start.sh then calls, in order: refuse_if_running; its own set-up (python_venv for a Python
# server); launch COMMAND...; wait_ready TRIES LABEL URL [curl options...].
# stop.sh is `server_init NAME PORT "$@"; stop_server [extra files to remove...]`.
#
# State goes under ${SERVERS_STATE_DIR:-${TMPDIR:-/tmp}/rest-test-servers}/NAME/PORT (see README.md):
# server.pid (the process group start.sh launched), server.started (its start time, so that a
# recycled pid is never taken for our server), server.log.

abspath() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }

# server_init NAME DEFAULT_PORT [PORT]
server_init() {
  NAME="$1"
  PORT="${3:-$2}"
  [[ "$PORT" =~ ^[0-9]+$ ]] || { echo "usage: $0 [PORT]" >&2; exit 2; }
  DIR="$(cd -P -- "$(dirname -- "${BASH_SOURCE[1]}")" && pwd -P)"
  STATE="$(abspath "${SERVERS_STATE_DIR:-${TMPDIR:-/tmp}/rest-test-servers}")/$NAME"
  RUN="$STATE/$PORT"
}

# alive PID: the process exists and is not a zombie.
alive() { local s; s="$(ps -o stat= -p "$1" 2>/dev/null)" && [[ -n "$s" && "$s" != Z* ]]; }
# started PID: the process's start time (clock ticks since boot from /proc, else ps's lstart).
started() { if [[ -r "/proc/$1/stat" ]]; then sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20; else ps -o lstart= -p "$1"; fi 2>/dev/null; }
# ours: the pid file names a live process with the start time recorded when we launched it.
ours() {
  local pid
  pid="$(cat "$RUN/server.pid" 2>/dev/null)" && [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" \
    && [[ "$(started "$pid")" == "$(cat "$RUN/server.started" 2>/dev/null)" ]]
}
# group_alive PGID: some process of that group still runs (zombies do not count).
group_alive() { ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'; }

# Exits 1 when our server already runs on PORT, or when anything else listens on it.
refuse_if_running() {
  mkdir -p "$RUN"
  if ours; then
    echo "$NAME already running on port $PORT (pid $(cat "$RUN/server.pid")); stop it with $DIR/stop.sh $PORT" >&2; exit 1
  fi
  rm -f "$RUN/server.pid" "$RUN/server.started"
  if (: <>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    echo "port $PORT on 127.0.0.1 is already in use by another process" >&2; exit 1
  fi
}

# python_venv VENV: a virtualenv with $DIR/requirements.txt, (re)filled when missing or when the
# requirements changed; locked so that two ports starting at once do not install into it together.
python_venv() {
  local venv="$1" sum
  sum="$(cksum <"$DIR/requirements.txt")"
  venv_ok() { [[ -x "$venv/bin/python" && "$(cat "$venv/.requirements.cksum" 2>/dev/null)" == "$sum" ]]; }
  if ! venv_ok; then
    mkdir -p "$(dirname "$venv")"
    (
      if command -v flock >/dev/null; then flock 9; fi
      if ! venv_ok; then
        [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
        "$venv/bin/python" -m pip install -q -r "$DIR/requirements.txt"
        printf '%s\n' "$sum" >"$venv/.requirements.cksum"
      fi
    ) 9>"$STATE/venv.lock"
  fi
}

# launch COMMAND...: starts it in the background as the leader of a process group of its own
# (group id = its pid; stop.sh stops that whole group), its output in server.log; sets PID.
launch() {
  LAUNCHED_AT=$(date +%s%N)
  set -m
  nohup "$@" </dev/null >"$RUN/server.log" 2>&1 &
  PID=$!
  set +m
  echo "$PID" >"$RUN/server.pid"
  started "$PID" >"$RUN/server.started" || true
}

# wait_ready TRIES LABEL URL [curl options...]: polls URL every 0.1 s; exits 0 when it answers,
# 1 (with the log) when the server dies or does not answer in TRIES tries (then it is stopped).
wait_ready() {
  local tries="$1" label="$2" url="$3"
  shift 3
  for _ in $(seq 1 "$tries"); do
    if ! alive "$PID"; then
      echo "$NAME server exited; log ($RUN/server.log):" >&2; cat "$RUN/server.log" >&2
      rm -f "$RUN/server.pid" "$RUN/server.started"; exit 1
    fi
    if curl -sf -o /dev/null --max-time 5 "$@" "$url"; then
      echo "$label ready at ${url%/*}/ (pid $PID, $(( ($(date +%s%N) - LAUNCHED_AT) / 1000000 )) ms after launch)"
      exit 0
    fi
    sleep 0.1
  done
  echo "$NAME server did not answer within $((tries / 10)) s; stopping it (pid $PID). Log ($RUN/server.log):" >&2
  cat "$RUN/server.log" >&2
  bash "$DIR/stop.sh" "$PORT" >&2 || true
  exit 1
}

# stop_server [FILE...]: TERM to the process group start.sh created, KILL after 5 s; only when the
# pid file still names the process launched (by its start time). Removes the pid files and FILEs.
stop_server() {
  local pidfile="$RUN/server.pid" pid target
  [[ -f "$pidfile" ]] || { echo "$NAME: no server to stop on port $PORT (no $pidfile)" >&2; exit 0; }
  pid="$(cat "$pidfile")"
  if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" && [[ "$(started "$pid")" == "$(cat "$RUN/server.started" 2>/dev/null)" ]]; then
    if [[ "$(ps -o pgid= -p "$pid" | tr -d ' ')" == "$pid" ]]; then
      target="-$pid"                                  # the group start.sh created
      running() { group_alive "$pid"; }
    else
      target="$pid"
      running() { alive "$pid"; }
    fi
    kill -TERM -- "$target" 2>/dev/null || true
    for _ in $(seq 1 50); do running || break; sleep 0.1; done
    if running; then
      kill -KILL -- "$target" 2>/dev/null || true
      for _ in $(seq 1 50); do running || break; sleep 0.1; done
    fi
    if running; then echo "$NAME: pid $pid (port $PORT) survived KILL" >&2; exit 1; fi
    echo "stopped $NAME on port $PORT (pid $pid)"
  else
    echo "$NAME: the server of port $PORT (pid $pid) is gone (that pid is free or now another process); nothing stopped" >&2
  fi
  rm -f "$pidfile" "$RUN/server.started" "$@"
}
