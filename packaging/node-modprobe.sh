#!/bin/bash
# Part of make check-packages: boot one emulated node (exanet + extoll
# devices) whose image carries the DKMS-built modules and the packaged
# exanetctl instead of build/modules and build/bin, and check that
# `modprobe exanet` and `modprobe extoll` load exactly those modules (the
# file modprobe resolves has the DKMS-built file's sha256; the Debian kernel
# has no srcversion for modules without MODULE_VERSION) and that the device
# shows up.
#
#   packaging/node-modprobe.sh DKMS_MODULE_DIR [PACKAGED_BIN_DIR]
#
# Needs the emulator (make qemu) and the guest kernel (make deps).  The
# image is the cluster's own (tools/cluster/mkinitramfs.sh) built from a
# small build directory: modules/ = the DKMS .ko files, bin/ = exanetctl.
set -euo pipefail
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$TOP/build}
KVER=${KVER:-$("$TOP/scripts/kver.sh")}
MODDIR=${1:?usage: node-modprobe.sh DKMS_MODULE_DIR [BIN_DIR]}
BINDIR=${2:-}
NODE=$BUILD/check-packages/node
QEMU=$BUILD/qemu-system-x86_64
NAME=pkgtest
[ -x "$QEMU" ] || { echo "node-modprobe: $QEMU missing (make qemu)" >&2; exit 1; }

rm -rf "$NODE"
mkdir -p "$NODE/modules" "$NODE/bin"
for m in exa_core exanet extoll; do
	if [ -f "$MODDIR/$m.ko" ]; then cp "$MODDIR/$m.ko" "$NODE/modules/"
	elif [ -f "$MODDIR/$m.ko.xz" ]; then xz -dc "$MODDIR/$m.ko.xz" > "$NODE/modules/$m.ko"
	else echo "node-modprobe: no $m.ko in $MODDIR" >&2; exit 1; fi
done
[ -n "$BINDIR" ] && [ -x "$BINDIR/exanetctl" ] && cp "$BINDIR/exanetctl" "$NODE/bin/"
BUILD=$NODE TOP=$TOP KVER=$KVER "$TOP/tools/cluster/mkinitramfs.sh" "$NODE/initramfs.cpio.gz" >"$NODE/mkinitramfs.log" 2>&1 ||
	{ tail -n 20 "$NODE/mkinitramfs.log"; exit 1; }

want_exanet=$(sha256sum < "$NODE/modules/exanet.ko" | cut -c1-64)
want_extoll=$(sha256sum < "$NODE/modules/extoll.ko" | cut -c1-64)
CL=$TOP/tools/cluster/exacluster
down() { "$CL" down --name "$NAME" >/dev/null 2>&1 || true; }
trap down EXIT
down
"$CL" up -n 1 --name "$NAME" --extoll --qemu "$QEMU" --initrd "$NODE/initramfs.cpio.gz"
out=$("$CL" run --name "$NAME" --node 0 --timeout 60 -- sh -c '
	set -e
	modprobe exanet
	modprobe extoll
	for m in exanet extoll; do
		test "$(cat /sys/module/$m/initstate)" = live
		f=$(modinfo -F filename $m)
		echo "$m $(sha256sum < $f | cut -c1-64) $f live"
	done
	if command -v exanetctl >/dev/null; then exanetctl list; fi
	ls /dev/exanet0')
echo "$out"
got_exanet=$(sed -n 's/^exanet \([0-9a-f]*\) .*/\1/p' <<<"$out")
got_extoll=$(sed -n 's/^extoll \([0-9a-f]*\) .*/\1/p' <<<"$out")
[ "$got_exanet" = "$want_exanet" ] || { echo "node-modprobe: exanet sha256 '$got_exanet', DKMS-built '$want_exanet'" >&2; exit 1; }
[ "$got_extoll" = "$want_extoll" ] || { echo "node-modprobe: extoll sha256 '$got_extoll', DKMS-built '$want_extoll'" >&2; exit 1; }
echo "node-modprobe: the DKMS-built exanet.ko and extoll.ko (sha256 ${got_exanet:0:12}, ${got_extoll:0:12}) load on the node"
