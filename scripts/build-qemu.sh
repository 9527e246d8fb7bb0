#!/bin/bash
# Build qemu-system-x86_64 from Debian bookworm's QEMU 7.2 source package
# with the project's device models (qemu-devices/) compiled in.
#
#   scripts/build-qemu.sh            build (incrementally) and publish
#   scripts/build-qemu.sh --print    print the path of the published binary
#
# Layout under $CACHE (default ~/.cache/exanet-fabric):
#   src/qemu_7.2+dfsg-*.dsc ...  the Debian source package (apt-get source)
#   qemu-7.2-src/                unpacked tree (dpkg-source -x, Debian patches,
#                                then qemu-devices/patches/*.patch)
#   qemu-7.2-build/              persistent build directory (ninja)
#   bin/qemu-system-x86_64-<h>   published binary, <h> = hash of the device
#                                sources, their build glue and trace-events
#                                (qemu-devices/), the uapi headers and this
#                                script
#
# qemu-devices/ goes to hw/exafab/ of the QEMU tree (meson.build, Kconfig
# with EXAFAB, EXANET_NI, EXTOLL_NIC; common/ exanet/ extoll/ each with
# trace-events and trace.h); the device list is qemu-devices/x86_64-softmmu.mak.
# The trace backend is QEMU's default, "log": -trace enable=PATTERN,file=F.
#   share/qemu/                  firmware (SeaBIOS, option ROMs, iPXE)
#
# $BUILD/qemu-system-x86_64 is a symlink to the published binary.  The
# binary finds its firmware by itself ($CACHE/share/qemu is the relocated
# data dir of the configure prefix $CACHE); passing "-L $CACHE/share/qemu"
# explicitly is equivalent and recommended in launch scripts.
#
# When the hash is unchanged the script only refreshes the symlink.
set -euo pipefail

TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$TOP/build}
CACHE=${CACHE:-$HOME/.cache/exanet-fabric}
JOBS=${QEMU_JOBS:-2}

SRC=$CACHE/qemu-7.2-src
OBJ=$CACHE/qemu-7.2-build
FW=$CACHE/share/qemu
BINDIR=$CACHE/bin
DEV_DIR=hw/exafab		# where qemu-devices/ goes inside the QEMU tree
# Trace event groups (directories with a trace-events file and a trace.h).
TRACE_DIRS="'$DEV_DIR/common', '$DEV_DIR/exanet', '$DEV_DIR/extoll'"

log() { echo "build-qemu: $*" >&2; }
die() { echo "build-qemu: error: $*" >&2; exit 1; }

# Everything that goes into the binary we add (sorted, stable): sources,
# the build glue (meson.build, Kconfig) and the trace event lists.
hash_inputs() {
	(cd "$TOP" && {
		ls qemu-devices/meson.build qemu-devices/Kconfig qemu-devices/*.mak
		ls qemu-devices/*/meson.build qemu-devices/*/Kconfig
		ls qemu-devices/common/*.[ch] qemu-devices/exanet/*.[ch] 2>/dev/null
		ls qemu-devices/extoll/*.[ch] 2>/dev/null
		ls qemu-devices/*/trace-events
		ls qemu-devices/patches/*.patch
		echo uapi/extoll_hw.h
		echo uapi/exanet.h
		echo uapi/exanet_rdma.h
		echo uapi/exanet_coll.h
		echo uapi/exa_torus.h
		echo scripts/build-qemu.sh
	} | LC_ALL=C sort)
}

HASH=$(cd "$TOP" && hash_inputs | while read -r f; do echo "== $f"; cat "$f"; done |
	sha256sum | cut -c1-16)
BIN=$BINDIR/qemu-system-x86_64-$HASH

FW_FILES=(
	/usr/share/seabios/bios-256k.bin
	/usr/share/seabios/bios.bin
	/usr/share/seabios/vgabios-stdvga.bin
	/usr/share/seabios/vgabios-virtio.bin
	/usr/share/qemu/kvmvapic.bin
	/usr/share/qemu/linuxboot.bin
	/usr/share/qemu/linuxboot_dma.bin
	/usr/share/qemu/multiboot.bin
	/usr/share/qemu/multiboot_dma.bin
	/usr/share/qemu/pvh.bin
	/usr/lib/ipxe/qemu/efi-virtio.rom
	/usr/lib/ipxe/qemu/efi-e1000e.rom
	/usr/lib/ipxe/qemu/efi-e1000.rom
)

publish_link() {
	mkdir -p "$BUILD"
	ln -sfn "$BIN" "$BUILD/qemu-system-x86_64.tmp"
	mv -T "$BUILD/qemu-system-x86_64.tmp" "$BUILD/qemu-system-x86_64"
}

if [ "${1:-}" = "--print" ]; then
	echo "$BIN"
	exit 0
fi

# Fast path: nothing changed.
if [ -x "$BIN" ] && [ -f "$FW/.complete" ]; then
	publish_link
	exit 0
fi

mkdir -p "$CACHE" "$BINDIR"
# Several make invocations (other helpers, parallel test runs) may race.
exec 9>"$CACHE/build-qemu.lock"
if ! flock -n 9; then
	log "another build holds $CACHE/build-qemu.lock, waiting"
	flock 9
fi
if [ -x "$BIN" ] && [ -f "$FW/.complete" ]; then
	publish_link
	exit 0
fi

# ---------------------------------------------------------------- firmware
install_firmware() {
	mkdir -p "$FW"
	local f missing=0
	for f in "${FW_FILES[@]}"; do
		if [ -f "$f" ]; then
			cmp -s "$f" "$FW/$(basename "$f")" || cp "$f" "$FW/"
		else
			log "missing firmware $f (packages seabios qemu-system-data ipxe-qemu; run make deps)"
			missing=1
		fi
	done
	[ "$missing" -eq 0 ] || die "firmware incomplete"
	touch "$FW/.complete"
}
[ -f "$FW/.complete" ] || install_firmware

# ---------------------------------------------------------------- sources
if [ ! -f "$SRC/.exanet-unpacked" ]; then
	dsc=$(ls "$CACHE"/src/qemu_7.2*.dsc 2>/dev/null | sort -V | tail -n1 || true)
	if [ -z "$dsc" ]; then
		log "downloading the Debian QEMU source package"
		mkdir -p "$CACHE/src"
		(cd "$CACHE/src" && apt-get source --download-only qemu) ||
			die "apt-get source qemu failed (deb-src entries? run make deps)"
		dsc=$(ls "$CACHE"/src/qemu_7.2*.dsc | sort -V | tail -n1)
	fi
	log "unpacking $dsc"
	rm -rf "$SRC" "$SRC.tmp"
	dpkg-source --no-check -x "$dsc" "$SRC.tmp" >/dev/null
	mv "$SRC.tmp" "$SRC"
	touch "$SRC/.exanet-unpacked"
fi

# The project's own changes to QEMU itself (qemu-devices/patches/, applied
# in name order, each once: a patch that reverses cleanly is in already).
# Patches are only ever added; one that must change gets a new file that
# amends the tree as it is.
for p in "$TOP"/qemu-devices/patches/*.patch; do
	[ -e "$p" ] || continue
	if patch -d "$SRC" -p1 -R -s -f --dry-run < "$p" >/dev/null 2>&1; then
		continue
	fi
	log "applying $(basename "$p")"
	patch -d "$SRC" -p1 -N -s < "$p" || die "$(basename "$p") does not apply to $SRC"
done

# Hooks into the QEMU tree (idempotent).  The glue itself is
# qemu-devices/meson.build and qemu-devices/Kconfig, which include a
# meson.build and a Kconfig per directory.  Trees used by older
# checkouts also carry hw/misc/exafab (config EXANET); it stays, unused,
# since the device list below does not enable it.
if ! grep -q "^subdir('exafab')" "$SRC/hw/meson.build"; then
	echo "subdir('exafab')" >> "$SRC/hw/meson.build"
fi
if ! grep -q "^source exafab/Kconfig" "$SRC/hw/Kconfig"; then
	echo "source exafab/Kconfig" >> "$SRC/hw/Kconfig"
fi
# trace_events_subdirs must be complete before subdir('trace').
trace_line="trace_events_subdirs += [ $TRACE_DIRS ]  # exafab"
if ! grep -qxF "$trace_line" "$SRC/meson.build"; then
	grep -q "^subdir('trace')$" "$SRC/meson.build" ||
		die "no subdir('trace') in $SRC/meson.build"
	sed -i -e '/# exafab$/d' \
		-e "s|^subdir('trace')\$|$trace_line\n&|" "$SRC/meson.build"
fi
# Device list (qemu-devices/x86_64-softmmu.mak); the file name is part of
# the configure arguments below.
devmak=$SRC/configs/devices/x86_64-softmmu/exanet.mak
cmp -s "$TOP/qemu-devices/x86_64-softmmu.mak" "$devmak" ||
	cp "$TOP/qemu-devices/x86_64-softmmu.mak" "$devmak"

# Copy our sources; only files whose content changed get a new mtime.
sync_file() {	# src dst
	mkdir -p "$(dirname "$2")"
	cmp -s "$1" "$2" || cp "$1" "$2"
}
D=$SRC/$DEV_DIR
sync_file "$TOP/qemu-devices/meson.build" "$D/meson.build"
sync_file "$TOP/qemu-devices/Kconfig" "$D/Kconfig"
for sub in common exanet extoll; do
	for f in "$TOP"/qemu-devices/$sub/*.[ch] "$TOP/qemu-devices/$sub/trace-events" \
		"$TOP/qemu-devices/$sub/meson.build" "$TOP/qemu-devices/$sub/Kconfig"; do
		sync_file "$f" "$D/$sub/$(basename "$f")"
	done
done
for f in extoll_hw.h exanet.h exanet_rdma.h exanet_coll.h exa_torus.h; do
	sync_file "$TOP/uapi/$f" "$D/uapi/$f"
done

# ---------------------------------------------------------------- configure
CONF_ARGS=(
	--prefix="$CACHE"
	--target-list=x86_64-softmmu
	--without-default-features
	--without-default-devices
	--with-devices-x86_64=exanet
	--enable-tcg --enable-kvm
	--enable-virtfs --enable-cap-ng --enable-attr
	--disable-docs --disable-tools --disable-guest-agent
	--disable-werror --disable-install-blobs
)
conf_id=$(printf '%s\n' "${CONF_ARGS[@]}" | sha256sum | cut -c1-16)
if [ ! -f "$OBJ/build.ninja" ] || [ "$(cat "$OBJ/.exanet-conf" 2>/dev/null)" != "$conf_id" ]; then
	log "configuring QEMU in $OBJ"
	rm -rf "$OBJ"
	mkdir -p "$OBJ"
	(cd "$OBJ" && "$SRC/configure" "${CONF_ARGS[@]}") > "$OBJ.configure.log" 2>&1 ||
		{ tail -n 30 "$OBJ.configure.log" >&2; die "configure failed, see $OBJ.configure.log"; }
	echo "$conf_id" > "$OBJ/.exanet-conf"
fi

# ---------------------------------------------------------------- build
log "building qemu-system-x86_64 (ninja -j$JOBS; the first build takes a while)"
start=$(date +%s)
ninja -C "$OBJ" -j"$JOBS" qemu-system-x86_64 >&2 ||
	die "QEMU build failed"
log "build done in $(( $(date +%s) - start )) s"

cp "$OBJ/qemu-system-x86_64" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
# Older binaries stay: other checkouts sharing $CACHE may run them.
publish_link
log "published $BIN"
