#!/bin/bash
# Boot throw-away VMs with the exanet device + 8 DMA context functions (no
# IOMMU) and run the driverless RDMA test (exanet-rdmatest.c).  TAP output:
# its cases and the checks of the logs (vm-lib.sh).
#
#   qemu-devices/tests/run-rdma-vm-tests.sh      (make qemu-rdma-vm-test)
#
# Env: as in vm-lib.sh; ITERS (bandwidth loops); ONLY_BW=1 (only the
# two-node bandwidth run); EXTRA_QEMU="-global ..." for every VM (e.g.
# exanet.rx-thread=off exercises the main-loop receive path).
set -uo pipefail
. "$(dirname "$0")/vm-lib.sh"
ITERS=${ITERS:-20}

vm_image exanet-rdmatest
TAP_SHOW="BW:|counters"

qemu_argv() {	# <node> <nodes> <args> [extra qemu args...]
	nic_argv exanet,id=exa0 512M "$1" "$2" "$3"
	shift 3
	for r in 0 1 2 3 4 5 6 7; do ARGV+=(-device "exanet-ctx,ni=exa0,rank=$r"); done
	# shellcheck disable=SC2206
	ARGV+=(${EXTRA_QEMU:-} "$@")
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
	remote_run bw
	guest_tap "two nodes" "$W/bw-cli.log"
	log_tap "two nodes: bandwidth" "$W/bw-cli.log" "BW: 4 MiB RDMA write"
	tap_end
fi
# RDMA engine local checks (loopback write/read, PDID, contexts, bad
# descriptors, DMA faults, abort, fuzz)
qemu_argv 0 1 self
timeout 300 "${ARGV[@]}" > "$W/self.log" 2>&1
guest_tap "local" "$W/self.log"

remote_run bw
guest_tap "two nodes: 4 MiB write/read, remote PDID/context errors, bandwidth" "$W/bw-cli.log"
log_tap "two nodes: bandwidth" "$W/bw-cli.log" "BW: 4 MiB RDMA write"

ITERS=5 remote_run fi -global exanet.fabric-drop-ppm=20000 -global exanet.fabric-corrupt-ppm=20000 -global exanet.fabric-seed=5
guest_tap "2% drop + 2% corruption on the bulk path" "$W/fi-cli.log"
log_tap "2% drop + 2% corruption: data intact, retransmissions" "$W/fi-cli.log" "retx [1-9]"

tap_end
