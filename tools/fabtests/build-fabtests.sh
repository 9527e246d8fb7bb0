#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build libfabric's own test suite, fabtests, from its release tarball (or
# an unpacked tree) against Debian's libfabric-dev, once per source: the
# result is cached under $EXA_CACHE/fabtests-<sha256 prefix of the source>/
# and reused while the source is the same.  Prints that directory (its bin/
# holds the stripped programs).  Exit 4 (skip) with a message when there is
# no source.  Documentation/testing.md, "fabtests".
#
#   tools/fabtests/build-fabtests.sh [SOURCE]   (default $FABTESTS_SRC, else
#            ../shared/third-party/fabtests-*.tar.gz, or ../../shared/..., ../../../shared/...)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${EXA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/exanet-fabric}
src=${1:-${FABTESTS_SRC:-}}
if [ -z "$src" ]; then
	# the team's shared copy beside the work tree (or a level or two up,
	# for a clone made inside it)
	for up in .. ../.. ../../..; do
		src=$(ls -1 "$top/$up"/shared/third-party/fabtests-*.tar.gz 2>/dev/null |
		      tail -n 1 || true)
		[ -z "$src" ] || break
	done
fi
if [ -z "$src" ] || [ ! -e "$src" ]; then
	echo "build-fabtests: no fabtests source (set FABTESTS_SRC to a fabtests-*.tar.gz" \
	     "release or an unpacked tree)" >&2
	exit 4
fi
for need in autoreconf libtoolize make cc; do
	command -v "$need" >/dev/null || {
		echo "build-fabtests: $need missing (make deps installs autoconf, automake," \
		     "libtool, libfabric-dev)" >&2
		exit 1
	}
done
[ -e /usr/include/rdma/fabric.h ] || {
	echo "build-fabtests: /usr/include/rdma/fabric.h missing (apt-get install libfabric-dev)" >&2
	exit 1
}

if [ -d "$src" ]; then
	key=$(cd "$src" && find . -type f \( -name '*.[ch]' -o -name '*.ac' -o -name '*.am' \) \
		-print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)
else
	key=$(sha256sum "$src" | cut -c1-12)
fi
out=$cache/fabtests-$key
if [ -x "$out/bin/fi_rdm_pingpong" ]; then
	echo "$out"
	exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/fabtests-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-fabtests: building $src in $work (cached as $out)" >&2
if [ -d "$src" ]; then
	cp -a "$src"/. "$work/src"
else
	mkdir "$work/src"
	tar -xzf "$src" -C "$work/src" --strip-components=1
fi
(
	cd "$work/src"
	[ -x configure ] || ./autogen.sh
	./configure --prefix="$work/inst" --quiet
	make -j"$(nproc)" --quiet
	make --quiet install
) > "$work/build.log" 2>&1 || {
	tail -n 40 "$work/build.log" >&2
	echo "build-fabtests: build failed (log above)" >&2
	exit 1
}
mkdir -p "$work/out/bin"
for f in "$work"/inst/bin/fi_*; do
	[ "$(head -c 4 "$f" | tail -c 3)" = ELF ] || continue
	strip -o "$work/out/bin/$(basename "$f")" "$f"
done
cp "$work/src/COPYING" "$work/out/" 2>/dev/null || true
rm -rf "$out"
mv "$work/out" "$out"
echo "$out"
