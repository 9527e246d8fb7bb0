#!/bin/bash
# Part of make check-packages: boot one emulated node (exanet + extoll
# devices) whose image carries the DKMS-built modules and the packaged
# exanetctl instead of build/modules and build/bin, and check that
# `modprobe exanet` and `modprobe extoll` load exactly those modules (the
# file modprobe resolves has the DKMS-built file's sha256; the Debian kernel
# has no srcversion for modules without MODULE_VERSION) and that the device
# shows up.  With ROOT (the root the packages were installed into), the
# node also mounts it (exacluster --share) and runs exanet-ipd.service's
# command line from there, as systemd would (the unit's Environment=
# defaults, ExecStart in the root, SIGTERM to its process group): exa0 must
# come up, and the daemon must exit 0 and remove exa0.
#
#   packaging/node-modprobe.sh DKMS_MODULE_DIR [PACKAGED_BIN_DIR [ROOT]]
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
PKGROOT=${3:-}
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
"$CL" up -n 1 --name "$NAME" --extoll --qemu "$QEMU" --initrd "$NODE/initramfs.cpio.gz" \
	${PKGROOT:+--share "$PKGROOT"}
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

[ -n "$PKGROOT" ] || exit 0
unit=$PKGROOT/lib/systemd/system/exanet-ipd.service
[ -f "$unit" ] || { echo "node-ipd-unit: $unit missing" >&2; exit 1; }
# ExecStart with the unit's Environment= defaults, expanded as systemd does:
# ${X} is one word, $X splits on white space
ipd_cmd=$(python3 - "$unit" <<'PY'
import re, shlex, sys
env, start = {}, None
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("Environment="):
        for tok in shlex.split(line[len("Environment="):]):
            key, _, val = tok.partition("=")
            env[key] = val
    elif line.startswith("ExecStart="):
        start = line[len("ExecStart="):]
if not start:
    sys.exit("no ExecStart in " + sys.argv[1])
words = []
for w in start.split():
    m = re.fullmatch(r"\$\{(\w+)\}", w)
    if m:
        words.append(shlex.quote(env.get(m.group(1), "")))
        continue
    m = re.fullmatch(r"\$(\w+)", w)
    words += [shlex.quote(x) for x in (env.get(m.group(1), "").split() if m else [w])]
print(" ".join(words))
PY
) || exit 1
echo "node-ipd-unit: ExecStart: $ipd_cmd"
# tun comes from the node image (the root holds only the DKMS-built
# modules); the unit's ExecStartPre=-modprobe tun may fail there
out=$("$CL" run --name "$NAME" --node 0 --timeout 120 -- sh -c '
	r=/share
	modprobe tun
	mount --bind /dev $r/dev && mount -t proc proc $r/proc && mount -t sysfs sysfs $r/sys &&
		mount -t tmpfs tmpfs $r/run || exit 1
	setsid chroot $r /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin '"$ipd_cmd"' >/tmp/ipd.log 2>&1 &
	pid=$!
	i=0
	while [ ! -e /sys/class/net/exa0 ] && [ $i -lt 150 ] && kill -0 $pid 2>/dev/null; do
		sleep 0.2; i=$((i + 1))
	done
	[ -e /sys/class/net/exa0 ] && echo "exa0 up after $i polls: $(ip -o -4 addr show exa0 | tr -s " " | cut -d" " -f4)"
	kill -0 $pid 2>/dev/null && echo "daemon running"
	kill -TERM -$pid 2>/dev/null
	rc=0
	wait $pid || rc=$?
	echo "daemon exit $rc"
	[ -e /sys/class/net/exa0 ] || echo "exa0 gone"
	sed "s/^/ipd: /" /tmp/ipd.log | tail -n 15
	umount $r/run $r/sys $r/proc $r/dev')
echo "$out"
grep -q '^exa0 up after' <<<"$out" && grep -qx 'daemon running' <<<"$out" &&
	grep -qx 'daemon exit 0' <<<"$out" && grep -qx 'exa0 gone' <<<"$out" ||
	{ echo "node-ipd-unit: exanet-ipd.service's command did not start and stop cleanly" >&2; exit 1; }
echo "node-ipd-unit: exanet-ipd.service's command from the installed root brought exa0 up and stopped cleanly on SIGTERM"
