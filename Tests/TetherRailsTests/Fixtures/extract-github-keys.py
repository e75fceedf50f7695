#!/usr/bin/env python3
"""Regenerates github-keys.txt: every distinct JSON object key found in the `response` bodies of
octokit/fixtures (https://github.com/octokit/fixtures, MIT, (c) GitHub) that is a valid Swift
identifier in snake_case.

Usage: extract-github-keys.py <octokit-fixtures dir> > github-keys.txt
(the repository keeps that collection in Tests/Fixtures/octokit-fixtures)."""
import glob, json, os, re, sys

root = sys.argv[1]
keys = set()

def walk(value):
    if isinstance(value, dict):
        for key, inner in value.items():
            keys.add(key)
            walk(inner)
    elif isinstance(value, list):
        for inner in value:
            walk(inner)

files = sorted(glob.glob(os.path.join(root, "api.github.com", "*", "normalized-fixture.json")))
for path in files:
    for record in json.load(open(path)):
        walk(record.get("response"))

snake = sorted(k for k in keys if re.fullmatch(r"[a-z_][a-z0-9_]*", k))
print("# Distinct JSON object keys of real GitHub REST API responses that are valid Swift identifiers")
print("# in snake_case, one per line (%d keys)." % len(snake))
print("# Extracted by extract-github-keys.py from the `response` bodies of the %d scenarios of" % len(files))
print("# octokit/fixtures @ cb8bc9da (https://github.com/octokit/fixtures), MIT license, (c) GitHub;")
print("# see octokit-fixtures-LICENSE.md. Lines starting with # are comments.")
for key in snake:
    print(key)
