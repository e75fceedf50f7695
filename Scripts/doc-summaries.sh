#!/usr/bin/env bash
# Fails when a doc comment of the library's sources (Sources/, Strategies/) has no summary: a
# `///` comment whose first line is a `- Parameter`, `- Parameters`, `- Returns` or `- Throws`
# line. DocC counts such a declaration as documented but shows it with no abstract.
#
#   bash Scripts/doc-summaries.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - Sources Strategies <<'EOF'
import os, re, sys
found = 0
for root in sys.argv[1:]:
    for folder, _, files in os.walk(root):
        for file in sorted(files):
            if not file.endswith(".swift"):
                continue
            path = os.path.join(folder, file)
            lines = open(path, encoding="utf-8").read().split("\n")
            i = 0
            while i < len(lines):
                if not lines[i].strip().startswith("///"):
                    i += 1
                    continue
                j = i
                while j < len(lines) and lines[j].strip().startswith("///"):
                    j += 1
                first = next((l.strip()[3:].strip() for l in lines[i:j] if l.strip()[3:].strip()), "")
                if re.match(r"- (Parameters?|Returns|Throws)\b", first):
                    declaration = lines[j].strip() if j < len(lines) else ""
                    print(f"{path}:{i + 1}: a doc comment without a summary: {declaration}")
                    found += 1
                i = j
print(f"doc summaries: {found} doc comments without a summary")
sys.exit(1 if found else 0)
EOF
