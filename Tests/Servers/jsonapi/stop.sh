#!/usr/bin/env bash
# Stop the server that start.sh PORT started, by the pid in its state folder
# (${SERVERS_STATE_DIR:-${TMPDIR:-/tmp}/rest-test-servers}/jsonapi/PORT/server.pid):
# TERM to the process group start.sh created (group id = that pid), KILL after 5 s.
#   path/to/jsonapi/stop.sh [PORT]          (default 8100; works from any directory)
set -euo pipefail
source "$(dirname -- "${BASH_SOURCE[0]}")/../lib.sh"
server_init jsonapi 8100 "$@"
stop_server
