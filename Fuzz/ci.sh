#!/usr/bin/env bash
# CI: builds the fuzz binary and runs each target for FUZZ_SECONDS (default 60) on top of the
# committed corpus; fails on any crash, disagreement, timeout or build warning. About 3 minutes
# on 2 cores, build included.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}

Fuzz/build.sh
status=0
for target in parser import; do
    # A fresh working corpus: CI starts from the committed one only.
    work=$(mktemp -d)
    log="$work.log"
    echo "== fuzzing $target for $seconds s"
    set +e
    FUZZ_WORK="$work" Fuzz/run.sh "$target" "$seconds" >"$log" 2>&1
    rc=$?
    set -e
    grep -E "^#[0-9]+ +(INITED|DONE)|stat::number_of_executed_units" "$log" || true
    if [ $rc -ne 0 ]; then
        echo "fuzz target $target failed (status $rc); the end of its log:" >&2
        tail -60 "$log" >&2
        status=1
    fi
    rm -rf "$work" "$log"
done
exit $status
