#!/bin/bash
# QEMU trace events of the device models on a 2-node cluster booted with
# exacluster --trace (needs make initramfs): see trace_events_test.py.  TAP.
#
#   qemu-devices/tests/run-trace-vm-tests.sh
exec python3 "$(dirname "$0")/trace_events_test.py" "$@"
