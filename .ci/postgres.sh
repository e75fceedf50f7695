#!/usr/bin/env bash
# Starts or stops a throwaway PostgreSQL cluster for the TetherPostgres tests (Stores/Postgres):
# initdb into a temporary folder, its own port, listening on 127.0.0.1 only, trust authentication
# (loopback only), and a database `tether` owned by the user `tether`.
#
#   bash .ci/postgres.sh start   # a fresh cluster (any previous one on the port is removed first)
#   bash .ci/postgres.sh stop    # stops it and removes its folder
#   bash .ci/postgres.sh env     # prints the variables `swift test` needs, for `eval`
#
# which sets, with the default port:
#   TETHER_POSTGRES_URL=postgres://tether@127.0.0.1:55432/tether TETHER_REQUIRE_SERVERS=1
#
# The port comes from TETHER_POSTGRES_PORT (default 55432); give `stop` and `env` the same one.
# The cluster lives in ${POSTGRES_STATE_DIR:-${TMPDIR:-/tmp}/tether-postgres}/<port>, never in
# the checkout. initdb, pg_ctl and postgres come from the PATH or Debian's
# /usr/lib/postgresql/<version>/bin (installed with `apt-get install postgresql` when missing).
#
# PostgreSQL refuses to run as root. When this script runs as root (as CI does), the cluster
# is made and run by an unprivileged user: `postgres` when it exists (Debian's package makes it),
# otherwise `tether-pg`, created here with useradd (no login shell, no home).
set -euo pipefail

port="${TETHER_POSTGRES_PORT:-55432}"
state="${POSTGRES_STATE_DIR:-${TMPDIR:-/tmp}/tether-postgres}/$port"
data="$state/data"
url="postgres://tether@127.0.0.1:$port/tether"

find_bin() {  # puts PostgreSQL's server programs on the PATH
    if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then return; fi
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
    if [ -z "$dir" ]; then
        echo "postgres.sh: no PostgreSQL server found; installing Debian's postgresql" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2
        dir="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
    fi
    export PATH="$dir:$PATH"
}

as_owner() {  # runs "$@" as the cluster's unprivileged owner (or as ourselves when not root)
    if [ "$(id -u)" != 0 ]; then "$@"; return; fi
    local user=postgres
    if ! id "$user" >/dev/null 2>&1; then
        user=tether-pg
        id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    fi
    chown -R "$user" "$state"
    # su with an explicit shell: the owner's own shell may be nologin.
    su -s /bin/sh "$user" -c "PATH='$PATH' $(printf '%q ' "$@")"
}

stop() {
    find_bin
    if [ -f "$data/postmaster.pid" ]; then
        as_owner pg_ctl -D "$data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$state"
}

case "${1:-}" in
start)
    stop
    mkdir -p "$state"
    chmod 755 "$(dirname "$state")" "$state"
    find_bin
    as_owner initdb -D "$data" -U tether --auth=trust -E UTF8 --locale=C >"$state/initdb.log" 2>&1 \
        || { cat "$state/initdb.log" >&2; exit 1; }
    # Loopback only, its own port and socket folder; enough connections for the tests' pools
    # and the concurrent-writer processes.
    as_owner pg_ctl -D "$data" -l "$state/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $state -c max_connections=200 -c fsync=off" start >/dev/null \
        || { cat "$state/server.log" >&2; exit 1; }
    as_owner psql -h 127.0.0.1 -p "$port" -U tether -d postgres -q -c "CREATE DATABASE tether OWNER tether" >/dev/null
    echo "postgres.sh: PostgreSQL on 127.0.0.1:$port ($url), data in $data"
    ;;
stop)
    stop
    echo "postgres.sh: stopped the cluster on port $port"
    ;;
env)
    echo "export TETHER_POSTGRES_URL=$url TETHER_REQUIRE_SERVERS=1"
    ;;
*)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
