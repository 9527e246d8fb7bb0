# Shared part of the driverless device tests (run-*vm-tests.sh): boot
# throw-away VMs whose initramfs holds busybox and one static test program
# (built by make: qemu-devices/build.mk), and report TAP: the cases of the
# program's kselftest TAP, one line each, and the runner's own checks of the
# logs; the plan and a summary at the end.  Sourced, not run.
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
	# make: up to date with its sources and the kselftest headers
	env -u MAKEFLAGS -u MFLAGS make --no-print-directory -s -C "$TOP" BUILD="$BUILD" \
		"$BUILD/device-tests/$prog" >&2 &&
		cp "$BUILD/device-tests/$prog" "$R/bin/$prog" ||
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

n=0 fails=0
# result OK DESCRIPTION: the next TAP line.
result() {
	n=$((n + 1))
	if [ "$1" = 1 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fails=$((fails + 1)); fi
}

# guest_tap PREFIX LOG: one TAP line per case of the guest program's TAP in
# LOG ("PREFIX: fixture.case"), one more that fails if the program did not
# report all its cases and end accordingly (or QEMU, where the caller
# recorded QEMU-EXIT, did not exit 0): taplib.py guest.  Diagnostics: a
# failed case's, and the program's lines matching $TAP_SHOW.
guest_tap() {
	local line out
	out=$(python3 "$TOP/tools/cluster/taplib.py" guest "$1" "$2" "${TAP_SHOW:-}") ||
		out="not ok $1: cannot read the TAP in $2"
	while IFS= read -r line; do
		case $line in
		"ok "*) result 1 "${line#ok }" ;;
		"not ok "*) result 0 "${line#not ok }" ;;
		*) echo "$line" ;;
		esac
	done <<<"$out"
}

# log_tap NAME LOG REGEX: one TAP line, ok if REGEX matches a line of LOG.
log_tap() {
	if grep -aqE "$3" "$2"; then result 1 "$1"; else result 0 "$1"; fi
}

# tap_end: the plan, the summary; the exit status 1 if anything failed.
tap_end() {
	echo "1..$n"
	echo "# $((n - fails)) passed, $fails failed"
	exit $((fails != 0))
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
