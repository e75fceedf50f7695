#!/usr/bin/env bash
# CI: builds the fuzz binary and runs each target for FUZZ_SECONDS (default 60) on top of the
# committed corpus; fails on any crash, disagreement, timeout or build warning. The two targets
# run at the same time, one per core (libFuzzer runs one input at a time), so the fuzzing takes
# FUZZ_SECONDS, not twice that.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}

Fuzz/build.sh
status=0
targets=(parser import)
declare -A work log pid
for target in "${targets[@]}"; do
    # A fresh working corpus: CI starts from the committed one only.
    work[$target]=$(mktemp -d)
    log[$target]="${work[$target]}.log"
    echo "== fuzzing $target for $seconds s"
    FUZZ_WORK="${work[$target]}" Fuzz/run.sh "$target" "$seconds" >"${log[$target]}" 2>&1 &
    pid[$target]=$!
done
for target in "${targets[@]}"; do
    set +e
    wait "${pid[$target]}"
    rc=$?
    set -e
    echo "-- $target"
    grep -E "^#[0-9]+ +(INITED|DONE)|stat::number_of_executed_units" "${log[$target]}" || true
    if [ $rc -ne 0 ]; then
        echo "fuzz target $target failed (status $rc); the end of its log:" >&2
        tail -60 "${log[$target]}" >&2
        status=1
    fi
    rm -rf "${work[$target]}" "${log[$target]}"
done
exit $status
