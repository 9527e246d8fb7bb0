#!/bin/bash
# Boot throw-away VMs with the exanet device and run the driverless
# register-level test (exanet-regtest.c) in them.  TAP output: its cases
# and the checks of the logs (vm-lib.sh).
#
#   qemu-devices/tests/run-vm-tests.sh        (make qemu-vm-test)
#
# Env: see vm-lib.sh.
set -uo pipefail
. "$(dirname "$0")/vm-lib.sh"

vm_image exanet-regtest
TAP_SHOW="ping-pong|counters|TIMEOUT after|ONGOING channel ignored|IRQ_CAPS"

qemu_argv() {	# <node> <nodes> <args> [extra qemu args...]
	nic_argv exanet 256M "$@"
}

# Local register, NACK, DMA, phase, FULL, interrupt and re-entrancy checks.
# Guest errors (bad DMA address, re-entrant MMIO) are both logged (-d
# guest_errors) and traced; -trace file= sends both to $W/self.trace.
vm "$W/self.log" 0 2 self -d guest_errors -trace "enable=*_err_*" \
	-trace "file=$W/self.trace"
guest_tap "self" "$W/self.log"
cat "$W/self.log" "$W/self.trace" > "$W/self-err.log" 2>/dev/null
log_tap "guest error traced: exanet_err_mbox_dma" "$W/self-err.log" \
	"^exanet_err_mbox_dma DMA to mailbox [0-9]+ at 0x[0-9a-f]+ failed$"
log_tap "guest error logged (LOG_GUEST_ERROR) with its trace event name" "$W/self-err.log" \
	"^exanet: DMA to mailbox [0-9]+ at 0x[0-9a-f]+ failed \(exanet_err_mbox_dma\)$"

vm "$W/noirq.log" 0 2 self -global exanet.msix=off
guest_tap "msix=off (like older NIs)" "$W/noirq.log"
log_tap "without MSI-X: IRQ_CAPS 0, nothing can be armed" "$W/noirq.log" "IRQ_CAPS 00000000"

vm "$W/fuzz.log" 0 2 fuzz,200000
guest_tap "random MMIO fuzzing, then local checks" "$W/fuzz.log"
log_tap "device alive after random MMIO fuzzing" "$W/fuzz.log" "device alive"

vm_pingpong pp 1000
guest_tap "two nodes: remote NACK DISABLED/PDID, 1000 round trips" "$W/pp-cli.log"

vm "$W/timeout.log" 0 3 timeout,2
guest_tap "node without a socket" "$W/timeout.log"

vm_pingpong fi 300 -global exanet.fabric-drop-ppm=100000 -global exanet.fabric-corrupt-ppm=50000 -global exanet.fabric-seed=7
guest_tap "10% drop + 5% corruption" "$W/fi-cli.log"
log_tap "10% drop + 5% corruption: retransmission delivers exactly once" "$W/fi-cli.log" "retransmits [1-9]"

tap_end
