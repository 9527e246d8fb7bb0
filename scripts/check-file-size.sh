#!/bin/bash
# make style: no C source of ours over 1,000 lines (issue 51: one concern per
# file).  Not counted: selftests/ (test programs whose cases are lists) and
# the *-<part>.h case files of a test program.  Prints the files over it.
set -uo pipefail
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
MAX=${MAX_C_LINES:-1000}
cd "$TOP" || exit 1
over=0
while read -r n f; do
	[ "$f" = total ] && continue
	if [ "$n" -gt "$MAX" ]; then
		echo "$f: $n lines (at most $MAX: split it by part)"
		over=$((over + 1))
	fi
done < <(git ls-files '*.c' | grep -v '^selftests/' | xargs wc -l)
[ "$over" -eq 0 ]
