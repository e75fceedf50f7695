#!/usr/bin/env bash
# Builds the DocC documentation of every library module, offline, with the toolchain's own tools
# (no package dependency), and measures its documentation coverage.
#
#   bash Scripts/docs.sh                  # build every archive, print the coverage per module
#   bash Scripts/docs.sh --undocumented   # the same, then list every undocumented declaration
#   bash Scripts/docs.sh --coverage-only  # skip DocC: symbol graphs and coverage only
#
# For each module (Tether, TetherSQLite, TetherURLSession, TetherTesting, TetherRails,
# TetherEntityMapper, TetherKeyPaths, TetherRouteTable, TetherJSONAPI):
#   1. builds the library targets in their own scratch path, `.build-docs` (never `.build`, so it
#      neither invalidates nor waits for anybody's build), and extracts the module's symbol graphs
#      with `swift-symbolgraph-extract` (public and open declarations, extensions of other
#      modules' types as extension blocks; always fresh, whatever the incremental build skipped);
#   2. assembles a temporary copy of the module's catalog (`<Module>.docc` beside its sources) in
#      `.build-docs/catalogs`, adding the guides of `Docs/` as articles: all of them for Tether,
#      and for another module the guides its catalog links to (`<doc:Strategy-Rails>`). Docs/ stays
#      the one source of the guides' text; links between guides become `<doc:…>` links (or plain
#      text when the other guide is not in that catalog), and links to files outside Docs/ become
#      the file's path;
#   3. runs `docc convert --warnings-as-errors` into `.build-docs/archives/<Module>.doccarchive`.
#      Each module is built alone, so a doc comment outside Tether names a symbol of Tether in
#      code voice (`Store`), not as a link (``Store``), which DocC could not resolve; the members
#      a module adds to Tether's types are linked as ``Tether/Client/Builder/sqlite(path:busyTimeout:cacheSize:)``;
#   4. prints `Module: documented/total = NN.N%`.
# Exits non-zero when DocC reports any warning or error, or any module is below 95%
# (TETHER_DOCS_MIN_COVERAGE overrides the threshold). About a minute and a half on 2 cores from a
# cold `.build-docs`, 20 s when it is warm.
#
# The coverage rule. Measured on the symbol graphs DocC reads (the module's own graph and its
# extension graphs, `Module@Other.symbols.json`), so it counts what the reference shows:
#   - counted: every public or open declaration written in the module's sources: types,
#     protocols, members, enum cases, initializers, operators, result-builder methods, and the
#     members of extensions of other modules' types (not the extension blocks themselves);
#   - not counted: synthesized symbols (`::SYNTHESIZED::` in the symbol graph: members a type
#     inherits from a protocol extension or a superclass, documented once where they are
#     declared), and declarations the compiler makes without source (no source location: a
#     raw-value enum's `init(rawValue:)`, the members of derived `Equatable`, `Hashable` and
#     `Codable` conformances, implicit initializers), since nobody can write a comment on them;
#   - documented: a declaration with a `///` comment of its own; or a declaration without one that
#     implements a protocol requirement which is itself documented (the symbol graph's
#     `sourceOrigin`): the requirement's comment is the contract it fulfils, and DocC shows it on
#     the page ("Inherited from `Store.write(_:)`" with a link, or the comment itself). Such
#     inherited comments are counted apart in the `--undocumented` listing. A requirement of a
#     protocol of another module (`CustomStringConvertible.description`, `Hashable.hash(into:)`)
#     counts as documented there.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

modules=(
    "Tether:Sources/Tether"
    "TetherSQLite:Sources/TetherSQLite"
    "TetherURLSession:Sources/TetherURLSession"
    "TetherTesting:Sources/TetherTesting"
    "TetherRails:Strategies/Rails"
    "TetherEntityMapper:Strategies/EntityMapper"
    "TetherKeyPaths:Strategies/KeyPaths"
    "TetherRouteTable:Strategies/RouteTable"
    "TetherJSONAPI:Strategies/JSONAPI"
)
core=Tether
scratch=.build-docs
graphs="$scratch/symbol-graphs"
catalogs="$scratch/catalogs"
archives="$scratch/archives"
minimum="${TETHER_DOCS_MIN_COVERAGE:-95}"

coverage_only=0
undocumented=0
for arg in "$@"; do
    case "$arg" in
        --coverage-only) coverage_only=1 ;;
        --undocumented) undocumented=1 ;;
        *) echo "usage: $0 [--undocumented] [--coverage-only]" >&2; exit 2 ;;
    esac
done

# The toolchain's tools: next to the `swift` in use.
swift_bin="$(dirname "$(readlink -f "$(command -v swift)")")"
docc="${DOCC:-$swift_bin/docc}"
extract="${SWIFT_SYMBOLGRAPH_EXTRACT:-$swift_bin/swift-symbolgraph-extract}"
for tool in "$docc" "$extract"; do
    [ -x "$tool" ] || { echo "error: $tool not found (set DOCC / SWIFT_SYMBOLGRAPH_EXTRACT)" >&2; exit 1; }
done

started=$(date +%s)
# TETHER_DOCS_BUILD_PATH reuses another build folder (CI passes `.build`, which it has just built
# with the same configuration: nothing is compiled twice).
build_path="${TETHER_DOCS_BUILD_PATH:-$scratch}"
echo "-- building in $build_path"
build_log="$scratch/build.log"
mkdir -p "$scratch"
: > "$build_log"
# The library targets only (no examples, no tests). A source saved while the build reads it
# (someone editing the tree) fails the build; that build is tried once more.
for entry in "${modules[@]}"; do
    module="${entry%%:*}"
    if ! swift build --scratch-path "$build_path" --target "$module" >> "$build_log" 2>&1; then
        if ! grep -q "was modified during the build" "$build_log" \
            || ! swift build --scratch-path "$build_path" --target "$module" >> "$build_log" 2>&1; then
            cat "$build_log" >&2
            echo "error: the build of $module failed" >&2
            exit 1
        fi
    fi
done
bin="$(swift build --scratch-path "$build_path" --show-bin-path)"

# The target the modules were built for, and on Apple platforms the SDK.
triple="$(swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')"
sdk_args=()
if [ "$(uname)" = Darwin ]; then
    sdk_args=(-sdk "$(xcrun --show-sdk-path)")
    triple="${triple%%macosx*}macosx15.0"   # the package's minimum
fi

echo "-- extracting symbol graphs"
rm -rf "$graphs"
for entry in "${modules[@]}"; do
    module="${entry%%:*}"
    mkdir -p "$graphs/$module"
    "$extract" -module-name "$module" -target "$triple" "${sdk_args[@]}" \
        -I "$bin/Modules" -I "$bin" -I Sources/CSQLite \
        -minimum-access-level public -emit-extension-block-symbols -output-dir "$graphs/$module"
done

status=0
if [ "$coverage_only" = 0 ]; then
    echo "-- assembling catalogs"
    rm -rf "$catalogs"
    mkdir -p "$catalogs" "$archives"
    for entry in "${modules[@]}"; do
        module="${entry%%:*}"
        source="${entry#*:}/$module.docc"
        [ -d "$source" ] || { echo "error: $source is missing" >&2; exit 1; }
        cp -R "$source" "$catalogs/$module.docc"
    done
    python3 - "$root" "$catalogs" "$core" <<'PY'
# Adds the guides of Docs/ to the assembled catalogs as DocC articles.
import os, re, sys

root, catalogs, core = sys.argv[1:]
docs = os.path.join(root, "Docs")
guides = {name[:-3]: os.path.join(docs, name) for name in sorted(os.listdir(docs)) if name.endswith(".md")}

def slug_github(text):
    """The anchor GitHub gives a heading (what the guides link to)."""
    text = text.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")

def slug_docc(text):
    """The anchor DocC gives the same heading: punctuation dropped, words joined by dashes."""
    text = text.replace("`", "")
    text = re.sub(r"[^\w\s\-]", "", text)
    return "-".join(part for part in re.split(r"[\s\-]+", text) if part)

def headings(path):
    found, fenced = {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{2,6} ", line):
            text = line.lstrip("#").strip()
            found[slug_github(text)] = slug_docc(text)
    return found

link = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")

def convert(name, included, problems):
    """The guide `name` as an article of a catalog holding the guides `included`."""
    path = guides[name]
    out, fenced = [], False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or line.startswith("```"):
            out.append(line)
            continue

        def rewrite(match):
            text, target = match.group(1), match.group(2)
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                return match.group(0)           # a web link, or a heading of this page
            file, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file))
            other = os.path.basename(resolved)[:-3] if resolved.endswith(".md") else None
            if os.path.dirname(resolved) == docs and other in guides:
                if other not in included:
                    return f"{text} (a guide of the Tether documentation)"
                fragment = ""
                if anchor:
                    known = headings(guides[other])
                    if anchor not in known:
                        problems.append(f"Docs/{name}.md:{number}: no heading #{anchor} in Docs/{other}.md")
                    else:
                        fragment = "#" + known[anchor]
                        fragments.add((name, other, known[anchor]))
                return f"[{text}](<doc:{other}{fragment}>)"
            # A file outside Docs/: name it by its path in the repository.
            relative = os.path.relpath(resolved, root)
            return text if relative in text else f"{text} (`{relative}`)"

        out.append(link.sub(rewrite, line))
    return "".join(out)

problems = []
for catalog in sorted(os.listdir(catalogs)):
    fragments = set()   # (article, target article, DocC anchor): checked in the archive later
    module, directory = catalog[:-5], os.path.join(catalogs, catalog)
    if module == core:
        included = set(guides)
    else:
        text = ""
        for base, _, files in os.walk(directory):
            text += "".join(open(os.path.join(base, f), encoding="utf-8").read() for f in files if f.endswith(".md"))
        included = {name for name in re.findall(r"<doc:([\w\-]+)", text) if name in guides}
    for name in sorted(included):
        target = os.path.join(directory, name + ".md")
        if os.path.exists(target):
            problems.append(f"{catalog}/{name}.md: the catalog has its own copy of Docs/{name}.md")
            continue
        with open(target, "w", encoding="utf-8") as file:
            file.write(convert(name, included, problems))
    with open(os.path.join(catalogs, module + ".fragments"), "w", encoding="utf-8") as file:
        file.write("".join(f"{a}\t{b}\t{c}\n" for a, b, c in sorted(fragments)))
for problem in problems:
    print("error: " + problem, file=sys.stderr)
sys.exit(1 if problems else 0)
PY

    echo "-- docc convert"
    for entry in "${modules[@]}"; do
        module="${entry%%:*}"
        rm -rf "$archives/$module.doccarchive"
        log="$scratch/docc-$module.log"
        if "$docc" convert "$catalogs/$module.docc" \
            --additional-symbol-graph-dir "$graphs/$module" \
            --fallback-display-name "$module" \
            --fallback-bundle-identifier "org.tether.$module" \
            --fallback-default-module-kind "Framework" \
            --output-path "$archives/$module.doccarchive" \
            --warnings-as-errors > "$log" 2>&1 \
            && ! grep -qE "^(warning|error):" "$log"; then
            echo "$module: $archives/$module.doccarchive"
            # DocC renders a link to a heading it does not find as plain text, without a
            # warning: check that every heading a guide links to is in the archive.
            python3 - "$archives/$module.doccarchive" "$catalogs/$module.fragments" <<'PY' || status=1
import json, os, sys
archive, listing = sys.argv[1:]
def anchors(page):
    found = set()
    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "heading" and "anchor" in node:
                found.add(node["anchor"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    path = [os.path.join(root, name) for root, _, names in os.walk(os.path.join(archive, "data", "documentation"))
            for name in names if name == page.lower() + ".json"]
    if path:
        walk(json.load(open(path[0], encoding="utf-8")).get("primaryContentSections", []))
    return found
bad = [line.split("\t") for line in open(listing, encoding="utf-8").read().splitlines()]
bad = [(a, b, c) for a, b, c in bad if c not in anchors(b)]
for article, target, anchor in bad:
    print(f"error: Docs/{article}.md links to the heading #{anchor} of {target}, which DocC did not render", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
        else
            # Paths relative to the repository, not to the assembled copy.
            sed -E -e "s#$root/##g" -e "s#--> (\.\./)+#--> #" "$log" >&2
            echo "error: docc reported problems in $module (full log: $log)" >&2
            status=1
        fi
    done
fi

echo "-- documentation coverage (public and open declarations with a doc comment)"
list_arg=""
[ "$undocumented" = 1 ] && list_arg="--list"
python3 - "$root" "$graphs" "$minimum" $list_arg "${modules[@]%%:*}" <<'PY' || status=1
# The coverage rule is explained at the top of Scripts/docs.sh.
import glob, json, os, sys

root, graphs, minimum = sys.argv[1], sys.argv[2], float(sys.argv[3])
listing = "--list" in sys.argv[4:]
modules = [arg for arg in sys.argv[4:] if arg != "--list"]
failed = False
# Every documented declaration of every module: a requirement of Tether's implemented in another
# module (`SQLiteStore.write(_:)`) is checked where it is declared.
documented_anywhere = {}
for module in modules:
    for path in glob.glob(os.path.join(graphs, module, "*.symbols.json")):
        for symbol in json.load(open(path, encoding="utf-8"))["symbols"]:
            comment = symbol.get("docComment")
            own = bool(comment) and comment.get("module", module) == module
            documented_anywhere[symbol["identifier"]["precise"]] = documented_anywhere.get(symbol["identifier"]["precise"], False) or own
for module in modules:
    symbols, origins = {}, {}
    files = glob.glob(os.path.join(graphs, module, module + ".symbols.json"))
    files += glob.glob(os.path.join(graphs, module, module + "@*.symbols.json"))
    if not files:
        print(f"{module}: no symbol graph", file=sys.stderr)
        failed = True
        continue
    for path in files:
        graph = json.load(open(path, encoding="utf-8"))
        for symbol in graph["symbols"]:
            symbols[symbol["identifier"]["precise"]] = symbol
        for relationship in graph["relationships"]:
            if "sourceOrigin" in relationship:
                origins[relationship["source"]] = relationship["sourceOrigin"]["identifier"]

    def name(symbol):
        return ".".join(symbol["pathComponents"])

    def own_comment(identifier, symbol):
        """A comment written on this declaration (not one the graph copied from a requirement)."""
        comment = symbol.get("docComment")
        if not comment or comment.get("module", module) != module:
            return False
        origin = symbols.get(origins.get(identifier, ""))
        return not (origin and origin.get("docComment") == comment)

    total = documented = inherited = 0
    missing = []
    for identifier, symbol in symbols.items():
        if "::SYNTHESIZED::" in identifier or "location" not in symbol:
            continue
        if symbol.get("accessLevel") not in ("public", "open") or symbol["kind"]["identifier"] == "swift.extension":
            continue
        total += 1
        if own_comment(identifier, symbol):
            documented += 1
            continue
        origin = origins.get(identifier)
        if origin and documented_anywhere.get(origin, True):
            documented += 1
            inherited += 1
            continue
        location = symbol["location"]
        path = location["uri"].removeprefix("file://")
        path = os.path.relpath(path, root) if path.startswith(root) else path
        missing.append((path, location["position"]["line"] + 1, name(symbol), symbol["kind"]["displayName"]))
    percent = 100.0 * documented / total if total else 100.0
    print(f"{module}: {documented}/{total} = {percent:.1f}%")
    if percent < minimum:
        failed = True
    if listing:
        print(f"  ({inherited} of them documented by the requirement they implement; {len(missing)} undocumented)")
        for path, line, symbol, kind in sorted(missing):
            print(f"  {path}:{line}: {kind} {symbol}")
if failed:
    print(f"error: a module's documentation coverage is below {minimum:g}%"
          + ("" if listing else " (bash Scripts/docs.sh --coverage-only --undocumented lists what is missing)"),
          file=sys.stderr)
sys.exit(1 if failed else 0)
PY

echo "-- $(($(date +%s) - started)) s"
if [ "$status" = 0 ] && [ "$coverage_only" = 0 ]; then
    echo "To read an archive, serve it as a static site, e.g.:"
    echo "  python3 -m http.server --directory $archives/Tether.doccarchive 8080"
    echo "  then open http://localhost:8080/documentation/tether (tetherrails for TetherRails, ...)"
fi
exit $status
