#!/bin/bash
# Boot throw-away VMs with the extoll device and run the driverless
# register-level test (extoll-regtest.c) in them.  TAP output: its cases
# and the checks of the logs (vm-lib.sh).
#
#   qemu-devices/tests/run-extoll-vm-tests.sh     (make qemu-extoll-vm-test)
#
# Env: see vm-lib.sh.
set -uo pipefail
. "$(dirname "$0")/vm-lib.sh"

vm_image extoll-regtest
TAP_SHOW="round trips|MB/s|retransmits|failure reported after|again after|answers once it runs"

qemu_argv() {	# <node> <nodes> <args> [extra qemu args...]
	nic_argv extoll 256M "$@"
}

# loopback: VELO (requester page and send window), ring back-pressure,
# put/get/imm/noti put, notifications, ATU errors, full queue
vm "$W/self.log" 0 2 self
guest_tap "loopback" "$W/self.log"

# loopback protection IDs: refused put/get/imm/noti put/lock, same IDs work,
# ATU entry IDs, VELO refused with credit back
vm "$W/prot.log" 0 2 prot
guest_tap "protection IDs" "$W/prot.log"

vm "$W/fuzz.log" 0 2 fuzz,200000
guest_tap "random MMIO fuzzing, then loopback checks" "$W/fuzz.log"
log_tap "device alive after random MMIO fuzzing" "$W/fuzz.log" "device alive"

# two nodes: 1000 VELO round trips, remote put/get, remote ATU error, remote
# protection ID refusals
vm_pingpong pp 1000
guest_tap "two nodes" "$W/pp-cli.log"

vm_pingpong fi 300 -global extoll.fabric-drop-ppm=100000 -global extoll.fabric-corrupt-ppm=50000 -global extoll.fabric-seed=7
guest_tap "10% drop + 5% corruption" "$W/fi-cli.log"
log_tap "10% drop + 5% corruption: retransmission delivers exactly once, in order" "$W/fi-cli.log" \
	"retransmits [1-9]"

# Retransmission budget: node 2 of 3 never runs.  Put, immediate put, get,
# lock fail with requester error 1 after ~1.3 s, VELO credits back and
# VELO_DROPS, tx_failed, RMA_PENDING 0; the new stream fails the same way.
vm "$W/dead.log" 0 3 dead,2,15
guest_tap "node that is not running" "$W/dead.log"

# retx-max=5: RETX_MAX reads 5, the failure comes after ~0.26 s
vm "$W/dead5.log" 0 3 dead,2,5 -global extoll.retx-max=5
guest_tap "retx-max=5" "$W/dead5.log"

# A budget out of range is refused when the device is realized: no guest runs.
qemu_argv 0 2 idle -global extoll.retx-max=256
timeout 120 "${ARGV[@]}" > "$W/badretx.log" 2>&1
if grep -aq "retx-max must be 1\.\.255" "$W/badretx.log" && ! grep -aq "VMTEST-EXIT:" "$W/badretx.log"; then
	result 1 "retx-max=256 refused at realize"
else
	sed 's/^/# /' "$W/badretx.log" | tail -5
	result 0 "retx-max=256 refused at realize"
fi

# Node 0 sends to node 1 before it runs (failures), then node 1 starts its
# echo server (when node 0 says "REVIVE:") and the pair must work.
qemu_argv 0 2 revive,1
timeout 500 "${ARGV[@]}" > "$W/revive-cli.log" 2>&1 &
cli=$!
PIDS+=("$cli")
for _ in $(seq 600); do grep -aq "REVIVE:" "$W/revive-cli.log" 2>/dev/null && break; sleep 0.5; done
qemu_argv 1 2 serve,400
timeout 500 "${ARGV[@]}" > "$W/revive-srv.log" 2>&1 &
srv=$!
PIDS+=("$srv")
wait "$cli"
echo "QEMU-EXIT: $?" >> "$W/revive-cli.log"
kill "$srv" 2>/dev/null		# timeout(1) passes SIGTERM to its QEMU
wait "$srv" 2>/dev/null
# a node that was not running when its streams failed starts: no failed
# packet arrives, VELO round trips, put and get work
guest_tap "restarted node" "$W/revive-cli.log"

tap_end
