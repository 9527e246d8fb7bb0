#!/bin/bash
# make check-packages: install the Debian packages of build/deb/ into a clean
# bookworm root (packaging/mkroot.sh, cached) and check, as an
# administrator on a real node would:
#   - every package installs with dpkg (dependencies from the base root);
#   - DKMS built exa_core.ko, exanet.ko and extoll.ko for the node kernel
#     (scripts/kver.sh) into /lib/modules/KVER/updates/dkms, vermagic KVER;
#   - pkg-config --libs libexanet rma2 velo2, and a program using all three
#     libraries compiles and links against the installed -dev packages;
#   - every tool runs (--help exits 0), prints "<tool> <version>" with
#     --version, the version of the installed exanet-tools package, and its
#     man page is installed;
#   - every librma2/libvelo2 call has a man page name; exanet-doc holds the
#     documents the man pages name;
#   - the udev rules and exanet-ipd's sysctl file are in place;
#   - exanet-ipd's systemd unit is installed, valid (systemd-analyze verify)
#     and enabled;
#   - ompi_info lists the coll/exanet component (openmpi-coll-exanet);
#   - unless NO_VM=1: the DKMS-built modules load (modprobe exanet, extoll)
#     on an emulated node, and the unit's command line, run from the
#     installed root, brings exa0 up and stops cleanly on SIGTERM
#     (packaging/node-modprobe.sh).
# Output is TAP; the last line is "packages: N passed, N failed".
set -uo pipefail
TOP=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-$TOP/build}
KVER=${KVER:-$("$TOP/scripts/kver.sh")}
DEBS=$BUILD/deb
WORK=$BUILD/check-packages
ROOT=$WORK/root
TOOLS=(exanetctl:8 exanet-ipd:8 exanet-pingpong:1 exanet-rdma-bw:1 exanet-rdma-lat:1 udp-pingpong:1
	rma2-pingpong:1 rma2-bw:1 velo2-pingpong:1)

[ "$(id -u)" -eq 0 ] || { echo "check-packages: needs root (chroot)" >&2; exit 1; }
ls "$DEBS"/exanet-dkms_*.deb >/dev/null 2>&1 || { echo "check-packages: no packages in $DEBS (make deb)" >&2; exit 1; }

t0=$(date +%s)
tarball=$("$TOP/packaging/mkroot.sh" "$KVER") || exit 1
t_root=$(( $(date +%s) - t0 ))

umount_all() {
	for m in dev/pts dev sys proc; do
		mountpoint -q "$ROOT/$m" 2>/dev/null && umount "$ROOT/$m"
	done
	return 0
}
umount_all
rm -rf "$WORK"
mkdir -p "$ROOT"
trap 'umount_all' EXIT
tar -C "$ROOT" -xf "$tarball"
mount -t proc proc "$ROOT/proc"
mount --bind /dev "$ROOT/dev"
in_root() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"; }

n=0 fail=0 passed=0
ok() { n=$((n + 1)); passed=$((passed + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*"; }
check() { local what=$1; shift; if "$@" >"$WORK/last.log" 2>&1; then ok "$what"; else notok "$what"; sed 's/^/#   /' "$WORK/last.log" | tail -n 20; fi; }
# a check of the emulated node's log: a failure shows its end and the exit code
node_check() { local what=$1; shift; if "$@"; then ok "$what"; else notok "$what"; tail -n 30 "$WORK/node.log" | sed 's/^/#   /'; echo "#   (node-modprobe.sh exited $node_rc)"; fi; }

echo "# root $(basename "$tarball") ready in ${t_root} s; node kernel $KVER"
mkdir -p "$ROOT/tmp/debs"
cp $(ls "$DEBS"/*.deb | grep -v -- '-dbgsym_') "$ROOT/tmp/debs/"
t1=$(date +%s)
check "dpkg -i of $(ls "$ROOT"/tmp/debs | wc -l) packages (DKMS build in exanet-dkms postinst)" \
	in_root sh -c 'DEBIAN_FRONTEND=noninteractive dpkg -i /tmp/debs/*.deb'
echo "# dpkg -i took $(( $(date +%s) - t1 )) s"
grep -E 'Building module|Signing|Installing|Error|error' "$WORK/last.log" | sed 's/^/#   /' | head -n 10
audit_clean() { [ -z "$(in_root dpkg --audit 2>&1)" ]; }
check "dpkg --audit: nothing half-installed" audit_clean

# DKMS: the postinst builds for the kernels whose headers are installed; the
# running (host) kernel has none here, the node kernel's are in the root.
dkms_ok() { in_root dkms status -m exanet -k "$KVER" | grep -q installed; }
if ! dkms_ok; then
	echo "# dkms status after postinst: $(in_root dkms status 2>&1 | tr '\n' ' ')"
	in_root dkms install -m exanet -v "$(in_root dpkg-query -W -f '${Version}' exanet-dkms)" -k "$KVER" \
		>"$WORK/dkms.log" 2>&1 || sed 's/^/#   /' "$WORK/dkms.log" | tail -n 20
fi
check "dkms status: exanet installed for $KVER" dkms_ok
for m in exa_core exanet extoll; do
	f=$ROOT/lib/modules/$KVER/updates/dkms/$m.ko
	[ -f "$f" ] || f=$f.xz
	if [ -f "$f" ] && vm=$(in_root modinfo -F vermagic "${f#"$ROOT"}") && [ "${vm%% *}" = "$KVER" ]; then
		ok "$m.ko in /lib/modules/$KVER/updates/dkms, vermagic ${vm%% *}"
	else
		notok "$m.ko for $KVER"; ls -l "$ROOT/lib/modules/$KVER/updates/dkms" 2>&1 | sed 's/^/#   /'
	fi
done
check "modules.dep of $KVER lists exanet.ko (depmod ran)" \
	grep -q 'updates/dkms/exanet.ko' "$ROOT/lib/modules/$KVER/modules.dep"

libs=$(in_root pkg-config --libs libexanet rma2 velo2 2>&1)
if [ $? -eq 0 ] && [ "$(echo $libs)" = "-lexanet -lrma2 -lvelo2" ]; then
	ok "pkg-config --libs libexanet rma2 velo2: $libs"
else
	notok "pkg-config --libs libexanet rma2 velo2: $libs"
fi
cat > "$ROOT/tmp/use.c" <<'C'
#include <libexanet.h>
#include <rma2.h>
#include <velo2.h>
int main(void)
{
	struct exanet_dev *dev;
	RMA2_Port port;
	velo2_port_t vport;
	/* No device in the root: each open fails cleanly. */
	int a = exanet_open(NULL, &dev) < 0;
	int b = rma2_open(&port) != RMA2_SUCCESS;
	int c = velo2_open(&vport) != VELO2_RET_SUCCESS;
	return a && b && c ? 0 : 1;
}
C
check "a program using the three libraries builds with pkg-config and runs" \
	in_root sh -c 'cc -o /tmp/use /tmp/use.c $(pkg-config --cflags --libs libexanet rma2 velo2) && /tmp/use'

# the project's one version (debian/changelog): the package's and the tools'
pkg_version=$(in_root dpkg-query -W -f '${Version}' exanet-tools 2>/dev/null)
for t in "${TOOLS[@]}"; do
	tool=${t%%:*} sec=${t##*:}
	check "$tool --help exits 0" in_root "$tool" --help
	check "$tool --version prints '$tool $pkg_version'" \
		in_root sh -c '[ "$("$1" --version)" = "$1 $2" ]' sh "$tool" "$pkg_version"
	check "man page $tool($sec) installed" test -e "$ROOT/usr/share/man/man$sec/$tool.$sec.gz"
done
check "libexanet(3) and exanet_send(3) link installed" test -e "$ROOT/usr/share/man/man3/exanet_send_wait.3.gz"
check "librma2 and libvelo2 calls have their man page names" test -e "$ROOT/usr/share/man/man3/rma2_post_put_bt.3.gz" \
	-a -e "$ROOT/usr/share/man/man3/rma2_noti_get_lock_value.3.gz" -a -e "$ROOT/usr/share/man/man3/velo2_send.3.gz"
check "man page coll-exanet(7) installed by openmpi-coll-exanet" test -e "$ROOT/usr/share/man/man7/coll-exanet.7.gz"
# exanet-doc: every document an installed man page names is there, uncompressed
check "exanet-doc has every document the man pages name" sh -c '
	refs=$(zcat "$1"/usr/share/man/man*/*.gz | sed "s/\\\\&//g" | grep -o "/usr/share/doc/exanet-doc/[A-Za-z0-9_./-]*\.md" | sort -u)
	[ -n "$refs" ] || exit 1
	for r in $refs; do test -f "$1$r" || { echo "missing $r" >&2; exit 1; }; done' - "$ROOT"
# libfabric loads the provider from its own directory; with any readable
# device path it lists the provider (the root has no NI)
check "fi_info -p exanet lists the provider installed by libfabric-exanet" \
	in_root sh -c 'FI_EXANET_DEVICE=/dev/null fi_info -p exanet | grep -q "provider: exanet"'
check "man page fi_exanet(7) installed by libfabric-exanet" test -e "$ROOT/usr/share/man/man7/fi_exanet.7.gz"
check "fi_info -p extoll lists the provider installed by libfabric-extoll" \
	in_root sh -c 'FI_EXTOLL_DEVICE=/dev/null fi_info -p extoll | grep -q "provider: extoll"'
check "man page fi_extoll(7) installed by libfabric-extoll" test -e "$ROOT/usr/share/man/man7/fi_extoll.7.gz"
# Open MPI loads every mca_coll_*.so of its component directory: ompi_info
# (openmpi-bin in the root) lists the one of openmpi-coll-exanet
check "ompi_info lists the coll component installed by openmpi-coll-exanet" \
	in_root sh -c 'OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ompi_info | grep -q "MCA coll: exanet"'
check "udev rules installed" test -f "$ROOT/lib/udev/rules.d/60-exanet.rules" -a -f "$ROOT/lib/udev/rules.d/60-extoll.rules"
check "busy polling sysctl of exanet-ipd installed" grep -qx 'net.core.busy_read = 200' "$ROOT/usr/lib/sysctl.d/60-exanet-ipd.conf"
check "exanet-ipd.service installed by exanet-tools" \
	in_root sh -c 'dpkg -L exanet-tools | grep -qx /lib/systemd/system/exanet-ipd.service'
check "systemd-analyze verify exanet-ipd.service" in_root systemd-analyze verify --man=no exanet-ipd.service
check "exanet-ipd.service enabled by the package" \
	in_root sh -c 'test "$(systemctl is-enabled exanet-ipd.service)" = enabled'

umount_all
if [ "${NO_VM:-0}" != 1 ] && [ -x "$TOP/packaging/node-modprobe.sh" ]; then
	"$TOP/packaging/node-modprobe.sh" "$ROOT/lib/modules/$KVER/updates/dkms" "$ROOT/usr/bin" "$ROOT" \
		>"$WORK/node.log" 2>&1
	node_rc=$?
	# each check looks for its own success line only (one failing does not
	# fail the other; progress lines share their prefixes)
	for what in "modprobe exanet and extoll (DKMS-built) on an emulated node:node-modprobe: the DKMS-built exanet.ko and extoll.ko" \
		"exanet-ipd.service's command brings exa0 up on the node and stops cleanly on SIGTERM:node-ipd-unit: exanet-ipd.service's command from the installed root brought exa0 up and stopped cleanly"; do
		node_check "${what%%:*}" grep -qF -- "${what#*:}" "$WORK/node.log"
	done
	node_check "node-modprobe.sh exits 0" test "$node_rc" -eq 0
fi
echo "1..$n"
echo "# check-packages took $(( $(date +%s) - t0 )) s"
echo "packages: $passed passed, $fail failed"
[ "$fail" -eq 0 ]
