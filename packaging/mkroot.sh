#!/bin/bash
# Print the path of a clean Debian bookworm root (a tarball) for the package
# install test, building it on first use:
#   debootstrap --variant=minbase bookworm, then, with the host's own apt
#   sources (so bookworm-updates/-security, where the node kernel's headers
#   may live, are there too), dkms, the headers of the node kernel,
#   pkg-config, libfabric and Open MPI (for the provider and the coll
#   component packages), systemd (systemd-analyze and systemctl check the
#   exanet-ipd unit offline).
# The tarball is cached under $CACHE (default ~/.cache/exanet-fabric) and
# keyed by its inputs: this script, the suite, the kernel release, the host
# apt sources.  A cold build downloads from the Debian registry.
#
#   usage: packaging/mkroot.sh KVER      -> prints the tarball path
set -euo pipefail
KVER=${1:?usage: mkroot.sh KVER}
CACHE=${CACHE:-$HOME/.cache/exanet-fabric}
SUITE=bookworm
PKGS=(dkms "linux-headers-$KVER" pkg-config kmod libc6-dev libnl-genl-3-200 libnl-3-200 libudev1 libjson-c5
	libfabric1 libfabric-bin libopenmpi3 openmpi-bin systemd)

sources() {
	cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true
}
key=$( { cat "$0"; echo "$SUITE $KVER ${PKGS[*]}"; sources; } | sha256sum | cut -c1-16)
tarball=$CACHE/pkgroot-$SUITE-$KVER-$key.tar
if [ -s "$tarball" ]; then
	echo "$tarball"
	exit 0
fi

# The mirror debootstrap uses: the host's first Debian URI.
mirror=$(sources | sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' \
	-e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\)[[:space:]].*/\2/p' | head -n1)
[ -n "$mirror" ] || { echo "mkroot: no Debian mirror in the host's apt sources" >&2; exit 1; }

mkdir -p "$CACHE"
work=$(mktemp -d "$CACHE/pkgroot.XXXXXX")
root=$work/root
cleanup() {
	for m in proc sys dev/pts dev; do umount "$root/$m" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

t0=$(date +%s)
echo "mkroot: debootstrap --variant=minbase $SUITE (cold: downloads from the Debian registry)" >&2
debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
	{ tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
# Same apt sources as the host (bookworm-updates / -security included).
rm -f "$root/etc/apt/sources.list"
cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/" 2>/dev/null || true
[ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$root/etc/apt/sources.list"
sed -i 's/^Types: deb deb-src$/Types: deb/' "$root"/etc/apt/sources.list.d/*.sources 2>/dev/null || true
[ -f "$root/etc/apt/sources.list" ] && sed -i '/^deb-src /d' "$root/etc/apt/sources.list"
mount -t proc proc "$root/proc"
chroot "$root" apt-get update -q >"$work/apt.log" 2>&1 || { tail -n 30 "$work/apt.log" >&2; exit 1; }
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q --no-install-recommends "${PKGS[@]}" \
	>>"$work/apt.log" 2>&1 || { tail -n 30 "$work/apt.log" >&2; exit 1; }
chroot "$root" apt-get clean
umount "$root/proc"
tar -C "$root" -cf "$tarball.tmp" .
mv "$tarball.tmp" "$tarball"
# Older roots of other keys are dead weight.
find "$CACHE" -maxdepth 1 -name "pkgroot-*.tar" ! -path "$tarball" -delete
echo "mkroot: built $tarball in $(( $(date +%s) - t0 )) s" >&2
echo "$tarball"
