#!/usr/bin/env python3
"""make style: no two-file circles in lib/ or drivers/ (issue 51).

Usage: scripts/check-circles.py [PATH-PREFIX...]  (only circles whose
first file starts with one of the prefixes)

Two kinds of circle between a pair of files are refused:
  * includes: a.h includes b.h and b.h includes a.h (directly);
  * calls: a.c uses a function or variable defined (not static) in b.c and
    b.c uses one defined in a.c.  A circle says the two files are one part
    split at a random line, or that a helper lives in the wrong file: move
    the helper to the file (or header) both parts use.

Definitions come from universal-ctags; uses are the identifiers of a file
with comments and string literals removed.  Uses are counted between files
of one directory and from any file to lib/common and drivers/common (the
shared homes); names defined in several files (one per library variant)
are not counted.  Prints each circle with one name per direction.
"""
import collections
import os
import re
import subprocess
import sys

TOP = os.environ.get("TOP") or os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))
AREAS = ("lib/", "drivers/")
COMMON = ("lib/common/", "drivers/common/")


def tracked(pattern):
    out = subprocess.run(["git", "-C", TOP, "ls-files", "--", pattern],
                         check=True, capture_output=True, text=True).stdout
    return [f for f in out.split() if f.startswith(AREAS)]


def definitions(c_files):
    """name -> set of files defining it with external linkage."""
    out = subprocess.run(
        ["ctags", "--languages=C", "--kinds-C=fv", "--fields=+KF", "-f", "-"]
        + c_files, cwd=TOP, check=True, capture_output=True,
        text=True).stdout
    defs = collections.defaultdict(set)
    for line in out.splitlines():
        cols = line.split("\t")
        if len(cols) < 4 or "file:" in cols[4:]:
            continue
        defs[cols[0]].add(cols[1])
    return defs


COMMENT_OR_STRING = re.compile(
    r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
    re.S)
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read(path):
    with open(os.path.join(TOP, path), encoding="utf-8",
              errors="replace") as f:
        return f.read()


def uses(path):
    return set(IDENT.findall(COMMENT_OR_STRING.sub(" ", read(path))))


def counted(user, owner):
    return (os.path.dirname(user) == os.path.dirname(owner)
            or owner.startswith(COMMON))


def call_circles(c_files):
    defs = definitions(c_files)
    edge = collections.defaultdict(dict)   # user -> {owner: a name}
    for user in c_files:
        for name in sorted(uses(user)):
            owners = defs.get(name)
            if not owners or len(owners) != 1 or user in owners:
                continue
            owner = next(iter(owners))
            if counted(user, owner):
                edge[user].setdefault(owner, name)
    found = []
    for a in sorted(edge):
        for b, name in sorted(edge[a].items()):
            if a < b and a in edge.get(b, {}):
                found.append("%s uses %s of %s, which uses %s of it"
                             % (a, name, b, edge[b][a]))
    return found


def include_circles(h_files):
    known = set(h_files)
    inc = {}
    for h in h_files:
        targets = set()
        for name in INCLUDE.findall(COMMENT_OR_STRING.sub(
                lambda m: m.group(0) if m.group(0).startswith('"') else " ",
                read(h))):
            path = os.path.normpath(os.path.join(os.path.dirname(h), name))
            if path in known:
                targets.add(path)
        inc[h] = targets
    return ["%s and %s include each other" % (a, b)
            for a in sorted(inc) for b in sorted(inc[a])
            if a < b and a in inc.get(b, ())]


def main():
    areas = sys.argv[1:]
    found = call_circles(tracked("*.c")) + include_circles(tracked("*.h"))
    if areas:
        found = [line for line in found if line.startswith(tuple(areas))]
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
