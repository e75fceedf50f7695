#!/usr/bin/env bash
# Builds the libFuzzer targets: Fuzz/build.sh
#
# One binary, Fuzz/.build/tether-fuzz, compiled by swiftc directly from Tether's sources
# (Sources/Tether) and the targets (Fuzz/Targets) as one module, so that the targets reach
# Tether's internal API, with every file instrumented for libFuzzer and AddressSanitizer.
# Fuzz/.build/parser and Fuzz/.build/import are links to it: the name it runs as picks the
# target. The flags are the package's (Swift 6, the same upcoming features); warnings are errors.
# FUZZ_OPT=-Onone builds without optimisation (slower runs, quicker build).
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFTC=${SWIFTC:-swiftc}
OUT=${FUZZ_OUT:-Fuzz/.build}
OPT=${FUZZ_OPT:--O}
# A frontend job per core (here quicker than a whole-module build).
MODE=${FUZZ_MODE:--j $(nproc)}
mkdir -p "$OUT"

# Compile a copy, so that an edit made meanwhile in the working tree cannot break the build.
rm -rf "$OUT/src"
mkdir -p "$OUT/src"
cp -R Sources/Tether "$OUT/src/Tether"
cp -R Fuzz/Targets "$OUT/src/Targets"
mapfile -t sources < <(find "$OUT/src" -name '*.swift' | LC_ALL=C sort)

echo "building $OUT/tether-fuzz ($OPT, ${#sources[@]} files)"
start=$(date +%s)
# shellcheck disable=SC2086
"$SWIFTC" "$OPT" $MODE -g -parse-as-library -sanitize=fuzzer,address -use-ld=lld \
    -swift-version 6 -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
    -warnings-as-errors -module-name Tether -package-name tether \
    -module-cache-path "$OUT/module-cache" \
    "${sources[@]}" -o "$OUT/tether-fuzz"
ln -sf tether-fuzz "$OUT/parser"
ln -sf tether-fuzz "$OUT/import"
echo "built $OUT/tether-fuzz in $(( $(date +%s) - start )) s"
