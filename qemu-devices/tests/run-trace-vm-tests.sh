#!/bin/bash
# QEMU trace events of the device models on a 2-node cluster booted with
# exacluster --trace (needs make initramfs, up to date: exacluster
# check-image): see trace_events_test.py.  TAP.
#
#   qemu-devices/tests/run-trace-vm-tests.sh
"$(dirname "$0")/../../tools/cluster/exacluster" check-image || exit
exec python3 "$(dirname "$0")/trace_events_test.py" "$@"
