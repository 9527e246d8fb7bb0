#!/bin/bash
# Install everything the build, the demo and the tests need from the Debian
# registry.  Idempotent and quick when all is present.
set -euo pipefail

PKGS=(
	# guest kernel and out-of-tree module build
	linux-image-amd64 linux-headers-amd64 kmod sparse
	# emulator build (QEMU 7.2 source package, minimal x86_64 configure)
	dpkg-dev ninja-build meson python3 pkg-config libglib2.0-dev
	libpixman-1-dev zlib1g-dev libfdt-dev flex bison
	# virtio-9p (--enable-virtfs) for exacluster up --share
	libcap-ng-dev libattr1-dev
	# emulator firmware (the dfsg source package ships no blobs)
	seabios qemu-system-data ipxe-qemu
	# node images
	busybox-static cpio udev
	# user space: libraries and tools
	gcc make libnl-3-dev libnl-genl-3-dev libudev-dev libjson-c-dev
	# libfabric provider (headers) and the node image's fi_info / fi_pingpong
	libfabric-dev libfabric-bin
	# Open MPI over the provider on the nodes (mpirun reaches them by ssh)
	openmpi-bin libopenmpi-dev openssh-server openssh-client
	# packages, man pages and their install test (make deb, make check-packages)
	debhelper dh-dkms dkms fakeroot lintian scdoc man-db debootstrap
	# libfabric's own test suite, fabtests, built from its release (make check-fabtests)
	autoconf automake libtool
	# benchmarks and diagnostics; the plots of make bench-evb
	strace iperf3 sockperf python3-matplotlib
	# the node image's second command channel (make bench-agent)
	qemu-guest-agent
	# the kernel's kselftest harness for the tests and checkpatch.pl (make style)
	linux-source-6.1 xz-utils
	# the two-file circle check of make style (scripts/check-circles.py)
	universal-ctags
)
# make check-debug only (scripts/build-debug-kernel.sh): what building the
# kernel from linux-source-6.1 needs
if [ "${1:-}" = --debug-kernel ]; then
	PKGS+=(bc libelf-dev libssl-dev)
fi

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# apt-get source needs deb-src entries.
need_src=0
if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	need_src=1
fi

if [ "$need_src" -eq 1 ]; then
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		$SUDO sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources
	else
		grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | sed 's/^deb /deb-src /' |
			$SUDO tee /etc/apt/sources.list.d/exanet-deb-src.list >/dev/null
	fi
fi

if [ "${#missing[@]}" -gt 0 ] || [ "$need_src" -eq 1 ]; then
	echo "install-deps: installing ${missing[*]:-(source index only)}"
	$SUDO apt-get update -q
	if [ "${#missing[@]}" -gt 0 ]; then
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
	fi
fi
