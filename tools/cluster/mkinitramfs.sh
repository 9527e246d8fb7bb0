#!/bin/bash
# Build the node image of the emulated cluster: a gzip'd newc cpio initramfs.
#
#   tools/cluster/mkinitramfs.sh [OUTPUT]      (default $BUILD/initramfs.cpio.gz)
#
# Environment: TOP (repo), BUILD (build dir), KVER (guest kernel release),
# EXTRA_MODULES (space separated extra host kernel modules to include),
# EXTRA_FILES (space separated host files to copy to the same path),
# MODROOT (root of the kernel's module tree, default /: the debug kernel of
# `make check-debug` has its own), KO_DIR (our modules, default $BUILD/modules).
#
# Contents: busybox-static (+ applet links), kmod, systemd-udevd/udevadm with
# 50-udev-default.rules, 80-drivers.rules and our drivers/*/*.rules, strace,
# iperf3, sockperf, qemu-ga (qemu-guest-agent), fi_info/fi_pingpong (libfabric-bin) with the exanet and extoll providers in
# /usr/lib/x86_64-linux-gnu/libfabric, Open MPI (openmpi-bin, without the
# components for other NICs, MPI-IO and OpenSHMEM, with coll/exanet from
# $BUILD/ompi in its component directory) and sshd/ssh with keys
# made here (MPI=0 leaves them out), a libpsm2 stub (tools/cluster/psm2-stub.c), virtio/tun/zram/9p kernel modules with deps, $BUILD/modules/*.ko in
# /lib/modules/$KVER/extra, $BUILD/bin -> /usr/bin, $BUILD/lib -> /usr/lib,
# $BUILD/selftests -> /usr/lib/exanet/selftests, tools/cluster/tests ->
# /usr/lib/exanet/cluster-tests, plus the shared libraries of every ELF.
set -euo pipefail

TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$TOP/build}
KVER=${KVER:-$("$TOP/scripts/kver.sh")}
OUT=${1:-$BUILD/initramfs.cpio.gz}
HERE=$TOP/tools/cluster
MODROOT=${MODROOT:-}
MODSRC=$MODROOT/lib/modules/$KVER
KO_DIR=${KO_DIR:-$BUILD/modules}
STAGE=${STAGE:-$BUILD/initramfs.d}

[ -d "$MODSRC" ] || { echo "mkinitramfs: $MODSRC missing (make deps)" >&2; exit 1; }
command -v busybox >/dev/null || { echo "mkinitramfs: busybox missing (make deps)" >&2; exit 1; }

rm -rf "$STAGE"
mkdir -p "$STAGE"
cd "$STAGE"
mkdir -p usr/bin usr/sbin usr/lib/x86_64-linux-gnu usr/lib64 usr/lib/systemd \
	usr/lib/udev/rules.d usr/lib/exanet etc/udev/rules.d dev proc sys tmp run root var mnt
ln -s usr/bin bin
ln -s usr/sbin sbin
ln -s usr/lib lib
ln -s usr/lib64 lib64
ln -s ../run var/run
ln -s ../tmp var/tmp
chmod 1777 tmp

# --- busybox and its applets (real binaries copied later overwrite links) ---
cp "$(command -v busybox)" usr/bin/busybox
for a in $(busybox --list-full); do
	case "$a" in usr/bin/*|bin/*) d=usr/bin;; usr/sbin/*|sbin/*) d=usr/sbin;; *) continue;; esac
	n=${a##*/}
	[ -L "usr/bin/$n" ] || [ -L "usr/sbin/$n" ] || [ -e "usr/bin/$n" ] || ln -s /usr/bin/busybox "$d/$n"
done
rm -f usr/sbin/init usr/bin/init && ln -s /usr/bin/busybox usr/sbin/init

copy_host() {	# copy a host file to the same path (through the usr merge)
	local src=$1 dst
	dst=${2:-$src}
	dst=${dst#/}
	case "$dst" in bin/*|sbin/*|lib/*|lib64/*) dst=usr/$dst;; esac
	mkdir -p "$(dirname "$dst")"
	rm -f "$dst"
	cp -L "$src" "$dst"
}

# --- kmod (modprobe/insmod/rmmod/lsmod/modinfo/depmod) ---
if [ -x /usr/bin/kmod ]; then
	copy_host /usr/bin/kmod
	for t in modprobe insmod rmmod lsmod modinfo depmod; do
		rm -f usr/bin/$t usr/sbin/$t
		ln -s /usr/bin/kmod usr/sbin/$t
	done
fi

# --- udev ---
HAVE_UDEV=0
if [ -x /usr/bin/udevadm ]; then
	copy_host /usr/bin/udevadm
	ln -s /usr/bin/udevadm usr/lib/systemd/systemd-udevd
	for r in 50-udev-default.rules 80-drivers.rules; do
		[ -f /usr/lib/udev/rules.d/$r ] && cp /usr/lib/udev/rules.d/$r usr/lib/udev/rules.d/
	done
	HAVE_UDEV=1
fi
for r in "$TOP"/drivers/*/*.rules; do
	[ -f "$r" ] && cp "$r" usr/lib/udev/rules.d/
done
# exanet-ipd's busy polling, as the exanet-tools package installs it
mkdir -p usr/lib/sysctl.d
cp "$TOP"/tools/exanet-ipd/60-exanet-ipd.conf usr/lib/sysctl.d/
echo "udev_log=err" > etc/udev/udev.conf

# --- diagnostics ---
for b in /usr/bin/flock /usr/bin/strace /usr/bin/iperf3 /usr/bin/sockperf /usr/bin/fi_info \
	/usr/bin/fi_pingpong /usr/sbin/qemu-ga; do
	if [ -x "$b" ]; then copy_host "$b"; fi
done
for f in ${EXTRA_FILES:-}; do copy_host "$f"; done

# --- kernel modules ---
MODDST=usr/lib/modules/$KVER
mkdir -p "$MODDST/extra"
for f in modules.order modules.builtin modules.builtin.modinfo; do
	[ -f "$MODSRC/$f" ] && cp "$MODSRC/$f" "$MODDST/"
done
add_module() {	# name or path of a host module; copies it and its deps
	local m=$1 line p
	modprobe -d "${MODROOT:-/}" -S "$KVER" --show-depends "$m" 2>/dev/null | while read -r line; do
		case "$line" in insmod\ *) ;; *) continue;; esac
		p=${line#insmod }; p=${p%% *}
		[ -f "$p" ] || continue
		mkdir -p "$MODDST/$(dirname "${p#$MODSRC/}")"
		cp "$p" "$MODDST/${p#$MODSRC/}"
	done
}
for m in virtio_pci virtio_net tun virtio_console zram 9pnet_virtio 9p ${EXTRA_MODULES:-}; do
	add_module "$m"
done
shopt -s nullglob
for ko in "$KO_DIR"/*.ko; do
	cp "$ko" "$MODDST/extra/"
	for d in $(modinfo -F depends "$ko" 2>/dev/null | tr ',' ' '); do
		[ -e "$KO_DIR/$d.ko" ] || add_module "$d"
	done
done
shopt -u nullglob
depmod -b "$STAGE" "$KVER"

# --- project outputs ---
[ -d "$BUILD/bin" ] && for f in "$BUILD"/bin/*; do
	case "$(basename "$f")" in exanet-mgmt-hub) continue;; esac
	cp -a "$f" usr/bin/
done
[ -d "$BUILD/lib" ] && cp -a "$BUILD"/lib/. usr/lib/
# the libfabric providers "exanet" and "extoll" where Debian's libfabric looks
# without FI_PROVIDER_PATH
for f in "$BUILD/lib/libexanet-fi.so" "$BUILD/lib/libextoll-fi.so"; do
	[ -f "$f" ] || continue
	mkdir -p usr/lib/x86_64-linux-gnu/libfabric
	cp "$f" usr/lib/x86_64-linux-gnu/libfabric/
done
[ -d "$BUILD/selftests" ] && cp -a "$BUILD"/selftests usr/lib/exanet/selftests
if [ -d "$HERE/tests" ]; then
	mkdir -p usr/lib/exanet/cluster-tests
	cp -a "$HERE"/tests/. usr/lib/exanet/cluster-tests/
fi

# --- init (it adds a qemu-ga per agent port to inittab) ---
install -m 0755 "$HERE/init" init
cat > etc/inittab <<'EOF'
::ctrlaltdel:/sbin/poweroff
::shutdown:/usr/sbin/exa-shutdown
EOF
cat > usr/sbin/exa-shutdown <<'EOF'
#!/bin/sh
sync
[ -x /usr/lib/systemd/systemd-udevd ] && udevadm control --exit 2>/dev/null
umount -a -r 2>/dev/null
exit 0
EOF
chmod 0755 usr/sbin/exa-shutdown

# --- /etc ---
cat > etc/passwd <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
{
	echo "root:x:0:"
	gid=5
	for g in tty disk kmem lp dialout cdrom audio video tape input kvm render sgx; do
		echo "$g:x:$gid:"
		gid=$((gid + 1))
	done
	echo "nogroup:x:65534:"
} > etc/group
echo "root::0:0:99999:7:::" > etc/shadow
chmod 600 etc/shadow
{
	echo "127.0.0.1 localhost"
	for i in $(seq 0 63); do echo "10.42.0.$((i + 1)) node$i"; done
} > etc/hosts
printf 'hosts: files\npasswd: files\ngroup: files\n' > etc/nsswitch.conf
printf '/usr/lib\n/usr/lib/x86_64-linux-gnu\n' > etc/ld.so.conf
echo "exanet-node" > etc/hostname
: > etc/fstab

# --- Open MPI and the ssh server it launches through (MPI=0 leaves them out) ---
# mpirun on node 0 starts orted on the other nodes with ssh over the
# management network.  Keys are made here, once per image: the host key is
# the same on every node (listed in ssh_known_hosts for node* and 10.42.0.*),
# root's key pair lets any node reach any other.  The cluster is private
# (unix-socket netdevs), the keys protect nothing else.
HAVE_MPI=0
OMPI_LIB=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
if [ "${MPI:-1}" = 1 ] && [ -x /usr/bin/orterun ] && [ -x /usr/sbin/sshd ] &&
	[ -x /usr/bin/ssh ] && [ -d "$OMPI_LIB" ]; then
	for b in /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info /usr/sbin/sshd \
		/usr/bin/ssh; do
		copy_host "$b"
	done
	for t in mpirun mpiexec; do ln -sf orterun usr/bin/$t; done
	# the libraries MPI programs link, without Fortran/Java/SHMEM
	for l in mpi.so.40 open-pal.so.40 open-rte.so.40 mca_common_ofi.so.10 mca_common_sm.so.40; do
		copy_host "/usr/lib/x86_64-linux-gnu/lib$l"
	done
	# the components: not those for other NICs (UCX, verbs, PSM), MPI-IO,
	# OpenSHMEM, nor the monitoring/checkpoint ones
	mkdir -p "${OMPI_LIB#/}"
	for c in "$OMPI_LIB"/*.so; do
		case "${c##*/}" in
		*ucx*|*openib*|*psm*|mca_io_*|mca_fcoll_*|mca_fbtl_*|mca_fs_*|mca_sharedfp_*|\
		*monitoring*|mca_atomic_*|mca_memheap_*|mca_scoll_*|mca_spml_*|mca_sshmem_*|\
		mca_compress_*|mca_crs_*|mca_vprotocol_*|mca_topo_treematch*|libompi_dbg_msgq*) continue;;
		esac
		cp "$c" "${OMPI_LIB#/}/"
	done
	# coll/exanet (lib/coll-exanet.mk): MPI_Allreduce/MPI_Barrier on the NI's
	# collective unit, picked up by a plain mpirun (it finds libexanet.so.1
	# in /usr/lib through ld.so.cache)
	if [ -f "$BUILD/ompi/mca_coll_exanet.so" ]; then
		cp "$BUILD/ompi/mca_coll_exanet.so" "${OMPI_LIB#/}/"
	fi
	# PMIx's components and help texts (libpmix.so.2 itself comes with the
	# shared libraries below)
	PMIX=usr/lib/x86_64-linux-gnu/pmix2
	if [ -d "/$PMIX/lib/pmix" ]; then
		mkdir -p "$PMIX/lib"
		cp -a "/$PMIX/lib/pmix" "$PMIX/lib/"
		[ -d "/$PMIX/share" ] && cp -a "/$PMIX/share" "$PMIX/"
	fi
	mkdir -p usr/share/openmpi etc/openmpi
	cp /usr/share/openmpi/help-*.txt usr/share/openmpi/ 2>/dev/null || true
	cp /etc/openmpi/openmpi-default-hostfile etc/openmpi/ 2>/dev/null || true
	# Open MPI's defaults on the nodes: our provider through the cm PML, the
	# runtime on the management network (Documentation/exanet/libfabric.md)
	cat > etc/openmpi/openmpi-mca-params.conf <<'EOF'
# Open MPI on the emulated ExaNet cluster (made by tools/cluster/mkinitramfs.sh)
pml = cm
mtl = ofi
mtl_ofi_provider_include = exanet
# one-sided over the same path (osc rdma would need btl ofi, whose atomics the
# provider applies only while the target rank calls into MPI), and no BTL that could carry
# MPI traffic over TCP unless asked for (--mca pml ob1 --mca btl tcp,self)
osc = pt2pt
btl = self
oob_tcp_if_include = 10.42.0.0/24
btl_tcp_if_include = 10.42.0.0/24
plm_rsh_agent = ssh
EOF
	# ssh: server key, root's key pair, the known-hosts line for every node
	mkdir -p etc/ssh root/.ssh
	chmod 0700 root/.ssh
	ssh-keygen -q -t ed25519 -N '' -C exanet-node -f etc/ssh/ssh_host_ed25519_key
	ssh-keygen -q -t ed25519 -N '' -C root@exanet-cluster -f root/.ssh/id_ed25519
	cp root/.ssh/id_ed25519.pub root/.ssh/authorized_keys
	chmod 0600 root/.ssh/authorized_keys
	echo "node*,10.42.0.* $(cut -d' ' -f1,2 etc/ssh/ssh_host_ed25519_key.pub)" > etc/ssh/ssh_known_hosts
	cat > etc/ssh/sshd_config <<'EOF'
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
PrintMotd no
PrintLastLog no
PidFile /run/sshd.pid
EOF
	cat > etc/ssh/ssh_config <<'EOF'
Host *
	BatchMode yes
	LogLevel ERROR
	ConnectTimeout 20
	GlobalKnownHostsFile /etc/ssh/ssh_known_hosts
	UserKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	# The nodes' management network is private to the cluster; OpenSSH 9's
	# default key exchange (sntrup761x25519) costs ~1.7 s of an emulated
	# CPU per connection, curve25519 ~0.6 s.  One connection per peer is
	# kept for a minute and reused (mpirun's launch of /bin/true on 4
	# nodes: 8.4 s -> 4.0 s, measured).
	KexAlgorithms curve25519-sha256
	ControlMaster auto
	ControlPath /run/ssh-mux-%C
	ControlPersist 60
EOF
	echo "sshd:x:101:65534::/run/sshd:/usr/sbin/nologin" >> etc/passwd
	echo "::respawn:/usr/sbin/sshd -D -e" >> etc/inittab
	HAVE_MPI=1
fi

# --- shared libraries of every ELF ---
export LD_LIBRARY_PATH=$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
declare -A seen=()
is_elf() { [ "$(head -c4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
while IFS= read -r -d '' f; do
	is_elf "$f" || continue
	while read -r lib; do
		[ -n "$lib" ] && [ -z "${seen[$lib]:-}" ] || continue
		seen[$lib]=1
		case "$lib" in "$BUILD"/lib/*) continue;; esac
		copy_host "$lib"
	done < <(ldd "$f" 2>/dev/null | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}')
done < <(find usr -type f -print0)
[ -e usr/lib64/ld-linux-x86-64.so.2 ] || copy_host /lib64/ld-linux-x86-64.so.2
# libfabric's libpsm2 dies of SIGILL on the emulated CPU (AVX in its
# constructor, see the stub's header): a stub that finds no Omni-Path
if [ -e usr/lib/x86_64-linux-gnu/libpsm2.so.2 ]; then
	printf 'PSM2_1.0 {\n\tglobal: psm2_*;\n\tlocal: *;\n};\n' > "$BUILD/psm2-stub.map"
	${CC:-cc} -std=c11 -O2 -Wall -Wextra -shared -fPIC -Wl,--version-script="$BUILD/psm2-stub.map" \
		-Wl,-soname,libpsm2.so.2 -o usr/lib/x86_64-linux-gnu/libpsm2.so.2 "$HERE/psm2-stub.c"
fi
ldconfig -r "$STAGE" 2>/dev/null || true

echo "HAVE_UDEV=$HAVE_UDEV" > etc/exa-image
echo "KVER=$KVER" >> etc/exa-image
echo "HAVE_MPI=$HAVE_MPI" >> etc/exa-image

# --- pack ---
mkdir -p "$(dirname "$OUT")"
find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -4 > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "mkinitramfs: $OUT ($(du -h "$OUT" | cut -f1), $(find . | wc -l) files)"
