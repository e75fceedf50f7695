#!/usr/bin/env bash
# Runs the SIGKILL durability tests N times (default 100): DurabilityTests (kills at random points
# inside an import's transaction) and DurabilityKillPointTests (kills after the commit, during the
# background checkpoint and during close()). Each run kills the SQLiteCrashHelper child about 44
# times (20 inside transactions, 12 + 12 after commits) and checks after each kill that the file
# is intact, holds every committed import whole and nothing of an uncommitted one.
#
#   Scripts/crash-loop.sh 100
#   SCRATCH_PATH=.build-crash Scripts/crash-loop.sh 5     # another build folder
#
# Builds once, then runs the tests without building. Exits non-zero if any run failed; the logs
# of failed runs are kept (the path is printed).
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-100}"
scratch="${SCRATCH_PATH:-.build}"
filter='DurabilityTests|DurabilityKillPointTests'
logs="$(mktemp -d "${TMPDIR:-/tmp}/tether-crash-loop.XXXXXX")"

echo "== building (scratch path $scratch)"
swift build --build-tests --scratch-path "$scratch" > "$logs/build.log" 2>&1 || { cat "$logs/build.log"; exit 1; }

passed=0
failed=0
started=$(date +%s)
for run in $(seq 1 "$runs"); do
    log="$logs/run-$run.log"
    if TETHER_CRASH_LOOP=1 swift test --skip-build --scratch-path "$scratch" --filter "$filter" > "$log" 2>&1 \
        && grep -q "Test run with .* passed" "$log"; then
        passed=$((passed + 1))
        grep "^crash-loop:" "$log" >> "$logs/landings.txt" || true
        rm -f "$log"
    else
        failed=$((failed + 1))
        echo "run $run FAILED (log: $log)"
        grep -E "✘|error" "$log" | head -20 || true
    fi
    if (( run % 10 == 0 )); then echo "$run runs: $passed passed, $failed failed ($(( $(date +%s) - started )) s)"; fi
done

echo "== $runs runs: $passed passed, $failed failed in $(( $(date +%s) - started )) s"
if [[ -s "$logs/landings.txt" ]]; then
    echo "== where the kills after a commit landed (summed over the passed runs)"
    for phase in checkpoint close; do
        grep "^crash-loop: $phase " "$logs/landings.txt" | sed 's/.*: //' | tr ',' '\n' | tr -d ' ' \
            | awk -F= -v phase="$phase" '{ n[$1] += $2 } END { printf "%s:", phase; for (k in n) printf " %s=%d", k, n[k]; printf "\n" }'
    done
fi
if (( failed > 0 )); then
    echo "logs: $logs"
    exit 1
fi
rm -rf "$logs"
