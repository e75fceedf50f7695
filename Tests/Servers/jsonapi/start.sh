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
# Stop with stop.sh PORT (same SERVERS_STATE_DIR/TMPDIR). The shared steps are in ../lib.sh.
set -euo pipefail
unset CDPATH
source "$(dirname -- "${BASH_SOURCE[0]}")/../lib.sh"
server_init jsonapi 8100 "$@"
VENV="$(abspath "${JSONAPI_VENV:-$STATE/venv}")"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ folders beside the sources
refuse_if_running
python_venv "$VENV"

export JSONAPI_DATA_DIR="$RUN" DJANGO_SETTINGS_MODULE=blog_project.settings
cd "$RUN"
if [[ "${KEEP_DATA:-0}" != 1 || ! -f "$RUN/db.sqlite3" ]]; then
  rm -f "$RUN/db.sqlite3" "$RUN/db.sqlite3-journal"
  "$VENV/bin/python" "$DIR/manage.py" migrate -v 0
  "$VENV/bin/python" "$DIR/manage.py" loaddata -v 0 seed
fi

launch "$VENV/bin/python" "$DIR/manage.py" runserver "127.0.0.1:$PORT" --noreload
wait_ready 300 "JSON:API" "http://127.0.0.1:$PORT/api/tags" -H "Accept: application/vnd.api+json"
