#!/usr/bin/env bash
# Starts or stops the two REST servers used by the integration tests (Tests/TetherURLSessionTests).
#
#   bash .ci/servers.sh start   # DRF on 127.0.0.1:8000, Rails on 127.0.0.1:3000 (fresh, seeded databases)
#   bash .ci/servers.sh stop
#   bash .ci/servers.sh shared  # prints the shared folder found (for TETHER_SHARED)
#
# The servers live in ../shared/servers (relative to the repository root); TETHER_SHARED names
# another shared folder, and a local clone (`git clone . /tmp/check`) without one beside it uses
# the one beside the repository it was cloned from. This script exports
# nothing; the caller sets, for `swift test`:
#   TETHER_DRF_URL=http://127.0.0.1:8000/api TETHER_RAILS_URL=http://127.0.0.1:3000 TETHER_REQUIRE_SERVERS=1
# Ports can be changed with TETHER_DRF_PORT and TETHER_RAILS_PORT.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${TETHER_SHARED:-$root/../shared}"
if [ ! -d "$shared/servers" ] && [ -z "${TETHER_SHARED:-}" ]; then
    origin="$(git -C "$root" config --get remote.origin.url 2>/dev/null || true)"
    if [ -n "$origin" ] && [ -d "$origin/../shared/servers" ]; then
        shared="$origin/../shared"
    fi
fi
servers="$shared/servers"
drf_port="${TETHER_DRF_PORT:-8000}"
rails_port="${TETHER_RAILS_PORT:-3000}"

if [ ! -d "$servers" ]; then
    echo "servers.sh: $servers not found" >&2
    exit 1
fi

case "${1:-}" in
shared)
    cd "$shared" && pwd
    ;;
start)
    bash "$servers/drf/start.sh" "$drf_port"
    if ! bash "$servers/rails/start.sh" "$rails_port"; then
        bash "$servers/drf/stop.sh" "$drf_port" || true
        exit 1
    fi
    bash "$root/Tests/Servers/jsonapi/start.sh" "${TETHER_JSONAPI_PORT:-8100}"  # the JSON:API blog (TETHER_JSONAPI_URL=…:8100/api)
    ;;
stop)
    status=0
    bash "$servers/drf/stop.sh" "$drf_port" || status=1
    bash "$servers/rails/stop.sh" "$rails_port" || status=1
    bash "$root/Tests/Servers/jsonapi/stop.sh" "${TETHER_JSONAPI_PORT:-8100}" || status=1
    exit $status
    ;;
*)
    echo "usage: bash .ci/servers.sh start|stop" >&2
    exit 2
    ;;
esac
