#!/usr/bin/env bash
# Runs one fuzz target for a given time: Fuzz/run.sh TARGET SECONDS [libFuzzer options...]
#   TARGET: parser or import. Builds the binary first if it is missing (Fuzz/build.sh).
#
# Starts from the committed corpus (Fuzz/corpus/TARGET, read only) and a working corpus that grows
# between local runs (Fuzz/.build/corpus/TARGET, not committed; FUZZ_WORK overrides it). A crash
# or a disagreement stops the run with a non-zero status and leaves the input in
# Fuzz/.build/artifacts/TARGET/; replay it with `Fuzz/.build/TARGET FILE`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
    echo "usage: Fuzz/run.sh parser|import SECONDS [libFuzzer options...]" >&2
    exit 2
fi
target=$1
seconds=$2
shift 2
case "$target" in
    parser) max_len=4096 ;;
    import) max_len=1024 ;;
    *) echo "unknown target $target (parser, import)" >&2; exit 2 ;;
esac

[ -x Fuzz/.build/tether-fuzz ] || Fuzz/build.sh
work=${FUZZ_WORK:-Fuzz/.build/corpus/$target}
artifacts=Fuzz/.build/artifacts/$target/
mkdir -p "$work" "$artifacts"

export SWIFT_BACKTRACE=enable=no
# Swift's runtime keeps caches for the life of the process: leak reports would be noise. No
# allocation stacks (a third faster); replay a crash with ASAN_OPTIONS=detect_leaks=0 for them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:handle_abort=1:malloc_context_size=0}

exec "Fuzz/.build/$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=30 -rss_limit_mb=4096 \
    -dict="Fuzz/dict/$target.dict" -artifact_prefix="$artifacts" -print_final_stats=1 \
    "$@" "$work" "Fuzz/corpus/$target"
