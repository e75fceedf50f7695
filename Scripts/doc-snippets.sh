#!/usr/bin/env bash
# Type-checks the Swift snippets of Docs/*.md against the package's built modules.
#
#   bash Scripts/doc-snippets.sh            # after `swift build` (CI runs it after its build)
#   bash Scripts/doc-snippets.sh --list     # also print every snippet checked and every one skipped
#
# A snippet is a ```swift block. One that starts with `import` is a whole program, as a reader
# would paste it into a `main.swift` that depends on Tether: it is type-checked with
# `swiftc -typecheck` in Swift 6 language mode (strict concurrency), against the modules of
# `.build/debug` (TETHER_SNIPPETS_BUILD_PATH names another build folder). Any error fails the
# script, with the guide, the snippet's first line and the compiler's message.
#
# What a program leaves to the reader (their `schema`, a token, their own store type) is given by
# an HTML comment on the line before the block, which Markdown does not show:
#     <!-- snippet-context: var schema: Schema { fatalError("yours") }; let token = "" -->
# Its Swift (statements separated by "; ") is compiled as a second file beside the snippet, with
# the snippet's imports. A program that imports a package Tether does not depend on (swift-log's
# `Logging`, ...) is skipped, and said so.
#
# The other blocks are excerpts of a guide's running example (a call, part of a model) and are
# counted, not checked. The README's example is compiled and run by
# `Tests/TetherRailsTests/ReadmeExampleTests.swift`. About a second a snippet.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

list=0
for arg in "$@"; do
    case "$arg" in
        --list) list=1 ;;
        *) echo "usage: $0 [--list]" >&2; exit 2 ;;
    esac
done

build_path="${TETHER_SNIPPETS_BUILD_PATH:-.build}"
modules="$(swift build --scratch-path "$build_path" --show-bin-path)/Modules"
if [ ! -e "$modules/Tether.swiftmodule" ]; then
    echo "error: no built modules in $modules; run swift build first" >&2
    exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/tether-snippets.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# One file per snippet, <guide>-<first line>.check (a program) or .skip (an excerpt), and
# <guide>-<first line>.context for a program's context comment.
python3 - "$work" Docs/*.md <<'EOF'
import os, re, sys
work = sys.argv[1]
for path in sys.argv[2:]:
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```swift":
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            body = "\n".join(lines[start:j]) + "\n"
            name = f"{os.path.basename(path)[:-3]}-{start + 1}"
            kind = "check" if body.lstrip().startswith("import ") else "skip"
            with open(os.path.join(work, f"{name}.{kind}"), "w", encoding="utf-8") as out:
                out.write(body)
            context = re.fullmatch(r"<!-- snippet-context: (.*) -->", lines[i - 1].strip() if i > 0 else "")
            if context and kind == "check":
                imports = [line for line in body.split("\n") if line.startswith("import ")]
                with open(os.path.join(work, f"{name}.context"), "w", encoding="utf-8") as out:
                    out.write("\n".join(imports) + "\n" + context.group(1).replace("; ", "\n") + "\n")
            i = j
        i += 1
EOF

checked=0
failed=0
foreign=0
excerpts=0
for snippet in "$work"/*.check; do
    [ -e "$snippet" ] || continue
    name="$(basename "$snippet" .check)"
    where="Docs/${name%-*}.md:${name##*-}"
    mkdir -p "$work/$name"
    cp "$snippet" "$work/$name/main.swift"
    files=("$work/$name/main.swift")
    if [ -f "$work/$name.context" ]; then
        cp "$work/$name.context" "$work/$name/context.swift"
        files+=("$work/$name/context.swift")
    fi
    if swiftc -typecheck -swift-version 6 -I "$modules" -I "$root/Sources/CSQLite" \
        -module-cache-path "$work/module-cache" "${files[@]}" > "$work/$name.log" 2>&1; then
        [ $list -eq 0 ] || echo "ok    $where"
        checked=$((checked + 1))
        continue
    fi
    module="$(grep -oE "error: no such module '[A-Za-z_]+'" "$work/$name.log" | head -1 | cut -d"'" -f2 || true)"
    if [ -n "$module" ] && [ ! -e "$modules/$module.swiftmodule" ]; then
        echo "skip  $where (imports $module, a package Tether does not depend on)"
        foreign=$((foreign + 1))
        continue
    fi
    echo "FAIL  $where (the snippet starting at that line)" >&2
    sed -e "s|$work/$name/main.swift|$where, snippet line|" -e "s|$work/$name/context.swift|$where, context line|" \
        "$work/$name.log" >&2
    checked=$((checked + 1))
    failed=$((failed + 1))
done
for excerpt in "$work"/*.skip; do
    [ -e "$excerpt" ] || continue
    excerpts=$((excerpts + 1))
    if [ $list -eq 1 ]; then
        name="$(basename "$excerpt" .skip)"
        echo "skip  Docs/${name%-*}.md:${name##*-} (an excerpt: does not start with import)"
    fi
done
echo "doc snippets: $checked programs type-checked, $failed failed; $foreign skipped (other packages); $excerpts excerpts not checked"
[ $failed -eq 0 ]
