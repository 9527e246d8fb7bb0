# Shared part of the driverless device tests (run-*vm-tests.sh): boot
# throw-away VMs whose initramfs holds busybox and one static test program,
# and report TAP.  Sourced, not run.
#
# Env: QEMU (default build/qemu-system-x86_64), KERNEL (default the Debian
# kernel in /boot), KEEP=1 keeps the work directory.
# shellcheck shell=bash

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${BUILD:-$TOP/build}
CACHE=${CACHE:-$HOME/.cache/exanet-fabric}
QEMU=${QEMU:-$BUILD/qemu-system-x86_64}
KVER=${KVER:-$("$TOP/scripts/kver.sh" 2>/dev/null)}
KERNEL=${KERNEL:-/boot/vmlinuz-$KVER}
FW=$CACHE/share/qemu

[ -x "$QEMU" ] || { echo "Bail out! no $QEMU (make qemu)"; exit 1; }
[ -r "$KERNEL" ] || { echo "Bail out! no kernel $KERNEL"; exit 1; }
BUSYBOX=$(command -v busybox) || { echo "Bail out! busybox-static missing"; exit 1; }

PIDS=()
vm_cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] && echo "# kept $W" || rm -rf "$W"
}

# vm_image PROGRAM: work dir $W and $W/initrd.gz whose init runs
# /bin/PROGRAM with the comma-separated arguments of vmtest= on the kernel
# command line, then powers off.
vm_image() {
	local prog=$1 R
	W=$(mktemp -d "/tmp/$prog.XXXXXX")
	trap vm_cleanup EXIT
	R=$W/rootfs
	mkdir -p "$R"/{bin,proc,sys,dev,tmp} "$W/fabric"
	cp "$BUSYBOX" "$R/bin/busybox"
	# the program and its parts ($prog-*.c, e.g. extoll-regtest-prot.c)
	gcc -static -O2 -Wall -Wextra -I"$TOP/uapi" -o "$R/bin/$prog" \
		"$TOP/qemu-devices/tests/$prog.c" $(ls "$TOP/qemu-devices/tests/$prog"-*.c 2>/dev/null) ||
		{ echo "Bail out! cannot build $prog"; exit 1; }
	cat > "$R/init" <<EOI
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for a in \$(cat /proc/cmdline); do case \$a in vmtest=*) cmd="\${a#vmtest=}";; esac; done
/bin/$prog \$(echo "\$cmd" | tr , ' ')
echo "VMTEST-EXIT: \$?"
poweroff -f
EOI
	chmod +x "$R/init"
	(cd "$R" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$W/initrd.gz"
}

# vm_argv MEMORY ARGS: the common part of a node's command line in ARGV;
# the caller appends its devices.
vm_argv() {
	ARGV=("$QEMU" -machine q35 -accel tcg -m "$1" -nographic -no-reboot
		-L "$FW" -nic none -kernel "$KERNEL" -initrd "$W/initrd.gz"
		-append "console=ttyS0 quiet vmtest=$2")
}

# nic_argv DEVICE MEMORY NODE NODES ARGS [extra qemu args...]: vm_argv plus
# the NIC DEVICE (exanet or extoll, may carry more properties) as node NODE
# of NODES on the fabric in $W/fabric.
nic_argv() {
	local dev=$1 mem=$2 node=$3 nodes=$4
	vm_argv "$mem" "$5"
	shift 5
	ARGV+=(-device "$dev,node-id=$node,num-nodes=$nodes,fabric=$W/fabric" "$@")
}

# tap NAME LOG [REGEX]: one TAP line; the log must say "RESULT: PASS", QEMU
# must have exited 0 where the caller recorded it, and REGEX (if any) must
# match.  Lines matching $TAP_SHOW are echoed as diagnostics.
n=0 fails=0
tap() {
	local name=$1 log=$2 ok=1
	n=$((n + 1))
	grep -aq "RESULT: PASS" "$log" || ok=0
	if grep -aq "QEMU-EXIT:" "$log"; then grep -aq "QEMU-EXIT: 0" "$log" || ok=0; fi
	[ -z "${3:-}" ] || grep -aqE "$3" "$log" || ok=0
	grep -a -E "${TAP_SHOW:-FAIL}" "$log" | sed 's/^/# /'
	if [ $ok = 1 ]; then echo "ok $n $name"; else echo "not ok $n $name"; fails=$((fails + 1)); fi
}

# The caller defines qemu_argv NODE NODES ARGS [extra qemu args...] (filling
# ARGV, usually vm_argv plus its devices); these run nodes with it.

# vm LOG NODE NODES ARGS [extra...]: one node, to completion.
vm() {
	local log=$1
	shift
	qemu_argv "$@"
	timeout 300 "${ARGV[@]}" > "$log" 2>&1
	echo "QEMU-EXIT: $?" >> "$log"
}

# vm_pingpong TAG COUNT [extra...]: echo server on node 1 (serve,240), the
# client (ping,1,COUNT) on node 0; logs $W/TAG-srv.log and $W/TAG-cli.log.
vm_pingpong() {
	local tag=$1 count=$2 srv
	shift 2
	qemu_argv 1 2 serve,240 "$@"
	timeout 300 "${ARGV[@]}" > "$W/$tag-srv.log" 2>&1 &
	srv=$!
	PIDS+=("$srv")
	for _ in $(seq 600); do grep -aq serving "$W/$tag-srv.log" 2>/dev/null && break; sleep 0.1; done
	vm "$W/$tag-cli.log" 0 2 ping,1,"$count" "$@"
	kill "$srv" 2>/dev/null		# timeout(1) passes SIGTERM to its QEMU
	wait "$srv" 2>/dev/null
}
