#!/bin/bash
# Boot throw-away VMs with the extoll device and run the driverless
# register-level test (extoll-regtest.c) in them.  TAP output.
#
#   qemu-devices/tests/run-extoll-vm-tests.sh     (make qemu-extoll-vm-test)
#
# Env: QEMU (default build/qemu-system-x86_64), KERNEL (default the Debian
# kernel in /boot), KEEP=1 keeps the work directory.
set -uo pipefail

TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$TOP/build}
CACHE=${CACHE:-$HOME/.cache/exanet-fabric}
QEMU=${QEMU:-$BUILD/qemu-system-x86_64}
KVER=${KVER:-$("$TOP/scripts/kver.sh" 2>/dev/null)}
KERNEL=${KERNEL:-/boot/vmlinuz-$KVER}
FW=$CACHE/share/qemu

[ -x "$QEMU" ] || { echo "Bail out! no $QEMU (make qemu)"; exit 1; }
[ -r "$KERNEL" ] || { echo "Bail out! no kernel $KERNEL"; exit 1; }
BUSYBOX=$(command -v busybox) || { echo "Bail out! busybox-static missing"; exit 1; }

W=$(mktemp -d /tmp/extoll-vmtest.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] && echo "# kept $W" || rm -rf "$W"
}
trap cleanup EXIT

R=$W/rootfs
mkdir -p "$R"/{bin,proc,sys,dev,tmp}
cp "$BUSYBOX" "$R/bin/busybox"
gcc -static -O2 -Wall -Wextra -I"$TOP/uapi" -o "$R/bin/extoll-regtest" \
	"$TOP/qemu-devices/tests/extoll-regtest.c" || { echo "Bail out! cannot build extoll-regtest"; exit 1; }
cat > "$R/init" <<'EOS'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for a in $(cat /proc/cmdline); do case $a in regtest=*) cmd="${a#regtest=}";; esac; done
/bin/extoll-regtest $(echo "$cmd" | tr , ' ')
echo "REGTEST-EXIT: $?"
poweroff -f
EOS
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$W/initrd.gz"

qemu_argv() {	# <node> <nodes> <regtest args> [extra qemu args...]
	local node=$1 nodes=$2 args=$3
	shift 3
	ARGV=("$QEMU" -machine q35 -accel tcg -m 256M -nographic -no-reboot
		-L "$FW" -nic none -kernel "$KERNEL" -initrd "$W/initrd.gz"
		-append "console=ttyS0 quiet regtest=$args"
		-device "extoll,node-id=$node,num-nodes=$nodes,fabric=$W/fabric" "$@")
}

vm() {	# <log> <node> <nodes> <regtest args> [extra qemu args...]
	local log=$1
	shift
	qemu_argv "$@"
	timeout 300 "${ARGV[@]}" > "$log" 2>&1
	echo "QEMU-EXIT: $?" >> "$log"
}

n=0 fails=0
tap() {	# name log [extra grep that must match]
	local name=$1 log=$2 ok=1
	n=$((n + 1))
	grep -aq "RESULT: PASS" "$log" || ok=0
	grep -aq "QEMU-EXIT: 0" "$log" || ok=0
	[ -z "${3:-}" ] || grep -aqE "$3" "$log" || ok=0
	grep -a -E "FAIL|round trips|MB/s|retransmits" "$log" | sed 's/^/# /'
	if [ $ok = 1 ]; then echo "ok $n $name"; else echo "not ok $n $name"; fails=$((fails + 1)); fi
}

echo "1..4"
mkdir -p "$W/fabric"

vm "$W/self.log" 0 2 self
tap "loopback: VELO, ring back-pressure, put/get/imm/noti put, notifications, ATU errors, full queue" "$W/self.log"

vm "$W/fuzz.log" 0 2 fuzz,200000
tap "random MMIO fuzzing, then loopback checks" "$W/fuzz.log" "device alive"

pingpong() {	# tag count [extra qemu args]
	local tag=$1 count=$2 srv
	shift 2
	qemu_argv 1 2 serve,240 "$@"
	timeout 300 "${ARGV[@]}" > "$W/$tag-srv.log" 2>&1 &
	srv=$!
	PIDS+=("$srv")
	for _ in $(seq 600); do grep -aq serving "$W/$tag-srv.log" 2>/dev/null && break; sleep 0.1; done
	vm "$W/$tag-cli.log" 0 2 ping,1,"$count" "$@"
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
}
pingpong pp 1000
tap "two nodes: 1000 VELO round trips, remote put/get, remote ATU error" "$W/pp-cli.log"

pingpong fi 300 -global extoll.fabric-drop-ppm=100000 -global extoll.fabric-corrupt-ppm=50000 -global extoll.fabric-seed=7
tap "10% drop + 5% corruption: retransmission delivers exactly once, in order" "$W/fi-cli.log" "retransmits [1-9]"

exit $((fails != 0))
