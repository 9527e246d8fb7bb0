#!/bin/bash
# make style: each project's own checkpatch.pl over the code written in its
# style.  qemu-devices/ (device models, the fabric, the driverless device
# tests): QEMU's scripts/checkpatch.pl from the QEMU source the emulator
# build unpacks; drivers/ and uapi/: the kernel's scripts/checkpatch.pl
# --strict from linux-source-6.1.  A file passes with no ERROR (warnings are
# listed); documents and comments name files that exist
# (check-doc-refs.py); no C file over 1,000 lines outside selftests/
# (check-file-size.sh); no two-file circles of includes or uses in lib/
# and drivers/ (check-circles.py); the last line is "style: N passed, N failed".
set -uo pipefail
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
CACHE=${CACHE:-$HOME/.cache/exanet-fabric}
QEMU_CP=${QEMU_CHECKPATCH:-$CACHE/qemu-7.2-src/scripts/checkpatch.pl}
# the kernel's checkpatch: extracted by make (scripts/linux-source.mk)
KERNEL_CP=${KERNEL_CHECKPATCH:-$CACHE/linux-source-$(dpkg-query -W -f '${Version}' \
	linux-source-6.1 2>/dev/null || echo none)/scripts/checkpatch.pl}

[ -r "$QEMU_CP" ] || { echo "style: no $QEMU_CP (run: make style)" >&2; exit 1; }
[ -r "$KERNEL_CP" ] || { echo "style: no $KERNEL_CP (run: make style)" >&2; exit 1; }

cd "$TOP" || exit 1
pass=0 fail=0
check() {	# style file checkpatch-args...
	local style=$1 f=$2 out errs warns
	shift 2
	out=$(perl "$@" "$f" 2>&1)
	errs=$(grep -c '^ERROR' <<<"$out")
	warns=$(grep -c '^WARNING\|^CHECK' <<<"$out")
	if [ "$errs" -eq 0 ]; then
		pass=$((pass + 1))
		[ "$warns" -eq 0 ] || echo "ok   $f ($style: $warns warnings)"
	else
		fail=$((fail + 1))
		echo "FAIL $f ($style: $errs errors, $warns warnings)"
		grep -A3 '^ERROR' <<<"$out" | sed 's/^/    | /'
	fi
}
for f in $(git ls-files 'qemu-devices/*.[ch]'); do
	check qemu "$f" "$QEMU_CP" --no-tree -q -f
done
for f in $(git ls-files 'drivers/*.[ch]' 'uapi/*.h' | grep -v '\.mod\.c$'); do
	check kernel "$f" "$KERNEL_CP" --no-tree --strict -q -f
done
# documents and comments name files that exist, links lead somewhere
if out=$(python3 "$TOP/scripts/check-doc-refs.py" 2>&1); then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL file names in documents and comments (scripts/check-doc-refs.py)"
	sed 's/^/    | /' <<<"$out"
fi
# no C source over 1,000 lines outside selftests/
if out=$("$TOP/scripts/check-file-size.sh" 2>&1); then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL C files over 1,000 lines (scripts/check-file-size.sh)"
	sed 's/^/    | /' <<<"$out"
fi
# no two files of lib/ or drivers/ that use each other
if out=$(python3 "$TOP/scripts/check-circles.py" 2>&1); then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL two-file circles (scripts/check-circles.py)"
	sed 's/^/    | /' <<<"$out"
fi
echo "style: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
