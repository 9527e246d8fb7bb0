#!/bin/bash
# Build (once) the debug kernel of `make check-debug` and print its directory.
#
#   scripts/build-debug-kernel.sh [--print-dir]
#
# Source: Debian's linux-source-6.1 package (/usr/src/linux-source-6.1.tar.xz),
# unpacked once to $CACHE/linux-source-<version>.  Config: `make tinyconfig`
# + scripts/debug-kernel.config (merged, then olddefconfig; every option of
# the fragment must survive, or the build stops).  Output, keyed by the
# fragment and the source version:
#
#   $CACHE/debug-kernel-<hash>/build/           O= object tree (KDIR for our modules)
#   $CACHE/debug-kernel-<hash>/vmlinux          the kernel the nodes boot (PVH ELF)
#   $CACHE/debug-kernel-<hash>/bzImage          the same as a bzImage
#   $CACHE/debug-kernel-<hash>/root/lib/modules/<release>/  modules.builtin etc.
#   $CACHE/debug-kernel-<hash>/release          kernel release (uname -r)
#   $CACHE/debug-kernel-<hash>/build_seconds    wall time of the cold build
#
# Only vmlinux/bzImage are built (no in-tree modules: the nodes need none);
# Module.symvers for out-of-tree builds is vmlinux.symvers.
# --print-dir: print the directory without building (empty if not built).
# Environment: CACHE (default ~/.cache/exanet-fabric), JOBS (default 2),
# DEBUG_KERNEL_NICE (default 10).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/exanet-fabric}
JOBS=${JOBS:-2}
NICE=${DEBUG_KERNEL_NICE:-10}
FRAG=$TOP/scripts/debug-kernel.config
TARBALL=/usr/src/linux-source-6.1.tar.xz

srcver=$(dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null || true)
if [ -z "$srcver" ] || [ ! -f "$TARBALL" ]; then
	echo "build-debug-kernel: linux-source-6.1 is not installed (run: make deps-debug)" >&2
	exit 1
fi
hash=$( { echo "$srcver"; cat "$FRAG"; } | sha256sum | cut -c1-16)
DIR=$CACHE/debug-kernel-$hash
if [ "${1:-}" = --print-dir ]; then
	[ -f "$DIR/.done" ] && echo "$DIR"
	exit 0
fi
mkdir -p "$CACHE"
exec 8>"$CACHE/debug-kernel.lock"
flock 8
if [ -f "$DIR/.done" ]; then
	echo "$DIR"
	exit 0
fi

t0=$(date +%s)
SRC=$CACHE/linux-source-$srcver
if [ ! -f "$SRC/Makefile" ]; then
	echo "build-debug-kernel: unpacking $TARBALL" >&2
	rm -rf "$SRC.tmp"
	mkdir -p "$SRC.tmp"
	tar -C "$SRC.tmp" -xf "$TARBALL"
	rm -rf "$SRC"
	mv "$SRC.tmp/linux-source-6.1" "$SRC"
	rmdir "$SRC.tmp"
fi

O=$DIR/build
# Seed the object tree from the newest finished build of the same source:
# make then recompiles only what the changed options touch.
if [ ! -d "$O" ]; then
	prev=$(ls -td "$CACHE"/debug-kernel-*/.done 2>/dev/null | head -n1 || true)
	prev=${prev%/.done}
	if [ -n "$prev" ] && [ -f "$prev/build/.config" ] &&
	   [ "$(cat "$prev/source" 2>/dev/null)" = "$srcver" ]; then
		echo "build-debug-kernel: starting from $prev" >&2
		mkdir -p "$DIR"
		cp -a "$prev/build" "$O.tmp"
		mv "$O.tmp" "$O"
	fi
fi
mkdir -p "$O"
kmake() { nice -n "$NICE" make -C "$SRC" O="$O" ARCH=x86_64 -j"$JOBS" "$@"; }
kmake -s tinyconfig >&2
"$SRC/scripts/kconfig/merge_config.sh" -m -O "$O" "$O/.config" "$FRAG" >/dev/null
kmake -s olddefconfig >&2
# every option the fragment asks for must be in the final config
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*) grep -qxF "$line" "$O/.config" || { echo "build-debug-kernel: $line did not survive olddefconfig" >&2; bad=1; } ;;
	"# CONFIG_"*" is not set") opt=${line#\# }; opt=${opt%% *}
		! grep -q "^$opt=" "$O/.config" || { echo "build-debug-kernel: $opt should be unset" >&2; bad=1; } ;;
	esac
done < "$FRAG"
[ "$bad" = 0 ] || exit 1
echo "build-debug-kernel: building in $O (make -j$JOBS, nice $NICE)" >&2
kmake bzImage modules_prepare modules.builtin >&2
cp "$O/vmlinux.symvers" "$O/Module.symvers"
rel=$(cat "$O/include/config/kernel.release")
MODDIR=$DIR/root/lib/modules/$rel
rm -rf "$DIR/root"
mkdir -p "$MODDIR"
: > "$MODDIR/modules.order"
for f in modules.builtin modules.builtin.modinfo; do
	if [ -f "$O/$f" ]; then cp "$O/$f" "$MODDIR/"; else : > "$MODDIR/$f"; fi
done
depmod -b "$DIR/root" "$rel"
cp "$O/arch/x86/boot/bzImage" "$DIR/bzImage"
# PVH ELF image: QEMU boots it without the in-guest decompression
objcopy --strip-all "$O/vmlinux" "$DIR/vmlinux"
echo "$rel" > "$DIR/release"
echo "$srcver" > "$DIR/source"
echo $(( $(date +%s) - t0 )) > "$DIR/build_seconds"
touch "$DIR/.done"
echo "build-debug-kernel: done in $(cat "$DIR/build_seconds") s" >&2
echo "$DIR"
