#!/bin/bash
# Boot throw-away VMs with the extoll device and run the driverless
# register-level test (extoll-regtest.c) in them.  TAP output.
#
#   qemu-devices/tests/run-extoll-vm-tests.sh     (make qemu-extoll-vm-test)
#
# Env: see vm-lib.sh.
set -uo pipefail
. "$(dirname "$0")/vm-lib.sh"

vm_image extoll-regtest
TAP_SHOW="FAIL|round trips|MB/s|retransmits"

qemu_argv() {	# <node> <nodes> <args> [extra qemu args...]
	nic_argv extoll 256M "$@"
}

echo "1..5"

vm "$W/self.log" 0 2 self
tap "loopback: VELO (requester page and send window), ring back-pressure, put/get/imm/noti put, notifications, ATU errors, full queue" "$W/self.log"

vm "$W/prot.log" 0 2 prot
tap "loopback protection IDs: refused put/get/imm/noti put/lock, same IDs work, ATU entry IDs, VELO refused with credit back" "$W/prot.log"

vm "$W/fuzz.log" 0 2 fuzz,200000
tap "random MMIO fuzzing, then loopback checks" "$W/fuzz.log" "device alive"

vm_pingpong pp 1000
tap "two nodes: 1000 VELO round trips, remote put/get, remote ATU error, remote protection ID refusals" "$W/pp-cli.log"

vm_pingpong fi 300 -global extoll.fabric-drop-ppm=100000 -global extoll.fabric-corrupt-ppm=50000 -global extoll.fabric-seed=7
tap "10% drop + 5% corruption: retransmission delivers exactly once, in order" "$W/fi-cli.log" "retransmits [1-9]"

exit $((fails != 0))
