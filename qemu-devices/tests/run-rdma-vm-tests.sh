#!/bin/bash
# Boot throw-away VMs with the exanet device + 8 DMA context functions (no
# IOMMU) and run the driverless RDMA test (exanet-rdmatest.c).  TAP output.
#
#   qemu-devices/tests/run-rdma-vm-tests.sh      (make qemu-rdma-vm-test)
#
# Env: QEMU, KERNEL, KEEP=1 as in run-vm-tests.sh; ITERS (bandwidth loops);
# ONLY_BW=1 (only the two-node bandwidth run); EXTRA_QEMU="-global ..." for
# every VM (e.g. exanet.rx-thread=off exercises the main-loop receive path).
set -uo pipefail

TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$TOP/build}
CACHE=${CACHE:-$HOME/.cache/exanet-fabric}
QEMU=${QEMU:-$BUILD/qemu-system-x86_64}
KVER=${KVER:-$("$TOP/scripts/kver.sh" 2>/dev/null)}
KERNEL=${KERNEL:-/boot/vmlinuz-$KVER}
FW=$CACHE/share/qemu
ITERS=${ITERS:-20}

[ -x "$QEMU" ] || { echo "Bail out! no $QEMU (make qemu)"; exit 1; }
[ -r "$KERNEL" ] || { echo "Bail out! no kernel $KERNEL"; exit 1; }
BUSYBOX=$(command -v busybox) || { echo "Bail out! busybox-static missing"; exit 1; }

W=$(mktemp -d /tmp/exanet-rdmatest.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] && echo "# kept $W" || rm -rf "$W"
}
trap cleanup EXIT

R=$W/rootfs
mkdir -p "$R"/{bin,proc,sys,dev,tmp}
cp "$BUSYBOX" "$R/bin/busybox"
gcc -static -O2 -Wall -Wextra -I"$TOP/uapi" -o "$R/bin/exanet-rdmatest" \
	"$TOP/qemu-devices/tests/exanet-rdmatest.c" || { echo "Bail out! cannot build exanet-rdmatest"; exit 1; }
cat > "$R/init" <<'EOI'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for a in $(cat /proc/cmdline); do case $a in rdmatest=*) cmd="${a#rdmatest=}";; esac; done
/bin/exanet-rdmatest $(echo "$cmd" | tr , ' ')
echo "RDMATEST-EXIT: $?"
poweroff -f
EOI
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$W/initrd.gz"

qemu_argv() {	# <node> <nodes> <args> [extra qemu args...]
	local node=$1 nodes=$2 args=$3
	shift 3
	ARGV=("$QEMU" -machine q35 -accel tcg -m 512M -nographic -no-reboot
		-L "$FW" -nic none -kernel "$KERNEL" -initrd "$W/initrd.gz"
		-append "console=ttyS0 quiet rdmatest=$args"
		-device "exanet,id=exa0,node-id=$node,num-nodes=$nodes,fabric=$W/fabric")
	for r in 0 1 2 3 4 5 6 7; do ARGV+=(-device "exanet-ctx,ni=exa0,rank=$r"); done
	# shellcheck disable=SC2206
	ARGV+=(${EXTRA_QEMU:-} "$@")
}

n=0 fails=0
tap() {	# name log [extra regex]
	local name=$1 log=$2 ok=1
	n=$((n + 1))
	grep -aq "RESULT: PASS" "$log" || ok=0
	[ -z "${3:-}" ] || grep -aqE "$3" "$log" || ok=0
	grep -a -E "FAIL|BW:|counters" "$log" | sed 's/^/# /'
	if [ $ok = 1 ]; then echo "ok $n $name"; else echo "not ok $n $name"; fails=$((fails + 1)); fi
}

remote_run() {	# tag [extra qemu args]
	local tag=$1 srv line rpa npa
	shift
	qemu_argv 1 2 serve,600 "$@"
	timeout 700 "${ARGV[@]}" > "$W/$tag-srv.log" 2>&1 &
	srv=$!
	PIDS+=("$srv")
	for _ in $(seq 900); do grep -aq "^serving" "$W/$tag-srv.log" 2>/dev/null && break; sleep 0.1; done
	line=$(grep -a "^serving" "$W/$tag-srv.log" | head -1)
	rpa=$(echo "$line" | sed -n 's/.*R=\(0x[0-9a-f]*\).*/\1/p')
	npa=$(echo "$line" | sed -n 's/.*N=\(0x[0-9a-f]*\).*/\1/p')
	qemu_argv 0 2 "remote,1,$ITERS,$rpa,$npa" "$@"
	timeout 600 "${ARGV[@]}" > "$W/$tag-cli.log" 2>&1
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
}

if [ -n "${ONLY_BW:-}" ]; then
	echo "1..1"
	remote_run bw
	tap "two nodes: bandwidth" "$W/bw-cli.log" "BW: 4 MiB RDMA write"
	exit $((fails != 0))
fi
echo "1..3"
qemu_argv 0 1 self
timeout 300 "${ARGV[@]}" > "$W/self.log" 2>&1
tap "RDMA engine local checks (loopback write/read, PDID, contexts, bad descriptors, DMA faults, abort, fuzz)" "$W/self.log"

remote_run bw
tap "two nodes: 4 MiB write/read, remote PDID/context errors, bandwidth" "$W/bw-cli.log" "BW: 4 MiB RDMA write"

ITERS=5 remote_run fi -global exanet.fabric-drop-ppm=20000 -global exanet.fabric-corrupt-ppm=20000 -global exanet.fabric-seed=5
tap "2% drop + 2% corruption on the bulk path: data intact, retransmissions" "$W/fi-cli.log" "retx [1-9]"

exit $((fails != 0))
