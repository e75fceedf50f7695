#!/usr/bin/env bash
# Starts or stops the REST servers the integration tests and the server-backed examples use.
# They live in the repository, under Tests/Servers/<name> (Tests/Servers/README.md), and each
# has its own `start.sh PORT` and `stop.sh PORT`.
#
#   bash .ci/servers.sh start [NAME...]   # every server below (or the ones named), fresh seeded databases
#   bash .ci/servers.sh stop [NAME...]
#   bash .ci/servers.sh env [NAME...]     # prints the variables `swift test` needs, for `eval`
#   bash .ci/servers.sh list              # name, port and URL of each server
#
# `start` writes the servers' URLs to .build/tether-servers.env, where a plain `swift test` finds
# them (Tests/TestSupport/TestServers.swift; `stop` removes it). CI requires them:
#   eval "$(bash .ci/servers.sh env)" && swift test
# which sets, with the default ports:
#   TETHER_DRF_URL=http://127.0.0.1:8000/api TETHER_RAILS_URL=http://127.0.0.1:3000
#   TETHER_JSONAPI_URL=http://127.0.0.1:8100/api TETHER_REQUIRE_SERVERS=1
#
# Ports: each server's port comes from TETHER_<NAME>_PORT (TETHER_DRF_PORT, TETHER_RAILS_PORT, ...),
# with the default of the table below; give `stop` and `env` the same values as `start`.
# The servers keep their state (virtualenv, databases, logs) under
# ${SERVERS_STATE_DIR:-${TMPDIR:-/tmp}/rest-test-servers}, one folder per server and port, never in the checkout.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"

# One line per server: name, default port, and the path of its API root on that port.
# The test variable is TETHER_<NAME>_URL, the port variable TETHER_<NAME>_PORT.
# Adding a server is one line here plus its folder Tests/Servers/<name> with start.sh and stop.sh.
# For example, a JSON:API server in Tests/Servers/jsonapi on port 8100, served at its root, is
#     "jsonapi 8100 "     (TETHER_JSONAPI_PORT, TETHER_JSONAPI_URL=http://127.0.0.1:8100)
servers=(
    "drf 8000 /api"
    "rails 3000 "
    "jsonapi 8100 /api"
)

upper() { printf '%s' "$1" | tr '[:lower:]-' '[:upper:]_'; }
port_of() {  # the port of server $1 with default $2: TETHER_<NAME>_PORT or the default
    local var
    var="TETHER_$(upper "$1")_PORT"
    printf '%s' "${!var:-$2}"
}

selected=()  # the lines of the servers named on the command line (all when none)
select_servers() {
    if [ $# -eq 0 ]; then
        selected=("${servers[@]}")
        return
    fi
    local name line found
    for name in "$@"; do
        found=""
        for line in "${servers[@]}"; do
            if [ "${line%% *}" = "$name" ]; then
                selected+=("$line")
                found=1
            fi
        done
        [ -n "$found" ] || { echo "servers.sh: no server named $name (known: $(printf '%s ' "${servers[@]%% *}"))" >&2; exit 2; }
    done
}

command="${1:-}"
shift || true
select_servers "$@"

case "$command" in
start)
    started=()
    for line in "${selected[@]}"; do
        read -r name default _ <<< "$line"
        if ! bash "$root/Tests/Servers/$name/start.sh" "$(port_of "$name" "$default")"; then
            for other in "${started[@]}"; do
                read -r oname odefault _ <<< "$other"
                bash "$root/Tests/Servers/$oname/stop.sh" "$(port_of "$oname" "$odefault")" || true
            done
            exit 1
        fi
        started+=("$line")
    done
    # The URLs of the servers running, where `swift test` finds them without any variable
    # (Tests/TestSupport/TestServers.swift); `stop` removes the file.
    mkdir -p "$root/.build"
    for line in "${selected[@]}"; do
        read -r name default path <<< "$line"
        echo "TETHER_$(upper "$name")_URL=http://127.0.0.1:$(port_of "$name" "$default")${path:-}"
    done > "$root/.build/tether-servers.env"
    ;;
stop)
    status=0
    for line in "${selected[@]}"; do
        read -r name default _ <<< "$line"
        bash "$root/Tests/Servers/$name/stop.sh" "$(port_of "$name" "$default")" || status=1
    done
    rm -f "$root/.build/tether-servers.env"
    exit $status
    ;;
env)
    for line in "${selected[@]}"; do
        read -r name default path <<< "$line"
        echo "export TETHER_$(upper "$name")_URL=http://127.0.0.1:$(port_of "$name" "$default")${path:-}"
    done
    echo "export TETHER_REQUIRE_SERVERS=1"
    ;;
list)
    for line in "${selected[@]}"; do
        read -r name default path <<< "$line"
        printf '%-8s port %-5s TETHER_%s_URL=http://127.0.0.1:%s%s\n' "$name" "$(port_of "$name" "$default")" \
            "$(upper "$name")" "$(port_of "$name" "$default")" "${path:-}"
    done
    ;;
*)
    echo "usage: bash .ci/servers.sh start|stop|env|list [NAME...]   (servers: $(printf '%s ' "${servers[@]%% *}"))" >&2
    exit 2
    ;;
esac
