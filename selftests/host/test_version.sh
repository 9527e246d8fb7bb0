#!/bin/bash
# SPDX-License-Identifier: MIT
# Host test (TAP): one project version everywhere.  The version is the top
# entry of debian/changelog (Documentation/packaging.md, "Versions"):
#  - dpkg-parsechangelog parses the changelog, and the build's version
#    (make version, which the tools are compiled with) is its version;
#  - every program in build/bin prints exactly "<tool> <version>" with
#    --version and exits 0 (the internal programs listed below aside), and
#    so does tools/cluster/exacluster;
#  - NEWS.md has a section for the version;
#  - the ABI version libexanet.h declares (LIBEXANET_VERSION_MAJOR/MINOR)
#    is the library's (libexanet.pc, from lib/libexanet/libexanet.map).
# Installed as build/host-tests/test_version by packaging/build.mk; builds
# and boots nothing.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$(cd "$HERE/.." && pwd)}
TOP=${TOP:-$(cd "$BUILD/.." && pwd)}
BIN=$BUILD/bin
# The tools the project installs or documents, each must be in build/bin.
TOOLS=(exanetctl exanet-ipd exanet-pingpong exanet-rdma-bw exanet-rdma-lat udp-pingpong
	rma2-pingpong rma2-bw velo2-pingpong exanet-mpi-bench exanet-evb)
# Internal programs of the cluster and the benchmarks, no user's tools.
INTERNAL=" exanet-mgmt-hub exanet-fault-campaign "

n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fail=1; echo "not ok $n - $*"; }

# Every tool named above, and whatever else build/bin holds.
progs=("${TOOLS[@]}")
for f in "$BIN"/*; do
	b=$(basename "$f")
	if [ ! -f "$f" ] || [ ! -x "$f" ]; then continue; fi
	[[ $INTERNAL == *" $b "* || " ${TOOLS[*]} " == *" $b "* ]] || progs+=("$b")
done
echo "1..$(( ${#progs[@]} + 5 ))"

# The one source, as Debian reads it, and as the build reads it.
# dpkg-parsechangelog's warnings count: a malformed line is not parsed.
changelog=$TOP/debian/changelog
errfile=$(mktemp) || exit 1
trap 'rm -f "$errfile"' EXIT
version=$(dpkg-parsechangelog -l "$changelog" -S Version 2>"$errfile"); rc=$?
warnings=$(cat "$errfile")
if [ $rc -eq 0 ] && [ -n "$version" ] && [ -z "$warnings" ]; then
	ok "debian/changelog parses, version $version"
else
	notok "dpkg-parsechangelog -l debian/changelog: exit $rc, version '$version'"
	while IFS= read -r line; do echo "#   $line"; done <<<"$warnings"
	version=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$changelog")
fi
build_version=$(MAKEFLAGS='' make --no-print-directory -s -C "$TOP" BUILD="$BUILD" version 2>&1)
if [ "$build_version" = "$version" ]; then
	ok "make version says $build_version, as debian/changelog"
else
	notok "make version says '$build_version', debian/changelog $version"
fi

# tool --version: exactly "<tool> <version>" on stdout, exit 0.
check_version() {	# name command...
	local name=$1 out rc
	shift
	out=$("$@" --version 2>/dev/null </dev/null); rc=$?
	if [ $rc -eq 0 ] && [ "$out" = "$name $version" ]; then
		ok "$name --version: $out"
	else
		notok "$name --version: exit $rc, printed '$out', expected '$name $version'"
	fi
}
for p in "${progs[@]}"; do
	if [ -x "$BIN/$p" ]; then
		check_version "$p" "$BIN/$p"
	else
		notok "$p: $BIN/$p missing (make all)"
	fi
done
check_version exacluster "$TOP/tools/cluster/exacluster"

# NEWS.md: a section "## <version>" (the date may follow).
news=$TOP/NEWS.md
if grep -qE "^## ${version//./\\.}( |$)" "$news" 2>/dev/null; then
	ok "NEWS.md has a section for $version"
else
	notok "NEWS.md has no '## $version' section"
fi

# libexanet's ABI version: the header's macros against the built library's
pc_version=$(sed -n 's/^Version: *//p' "$BUILD/lib/libexanet.pc" 2>/dev/null)
header=$TOP/lib/libexanet/include/libexanet.h
h_major=$(sed -n 's/^#define LIBEXANET_VERSION_MAJOR \([0-9]*\)$/\1/p' "$header")
h_minor=$(sed -n 's/^#define LIBEXANET_VERSION_MINOR \([0-9]*\)$/\1/p' "$header")
if [ -n "$pc_version" ] && [ "$h_major.$h_minor" = "$pc_version" ]; then
	ok "libexanet.h declares ABI $h_major.$h_minor, as libexanet.pc"
else
	notok "libexanet.h declares ABI $h_major.$h_minor, libexanet.pc says '$pc_version'"
fi
exit $fail
