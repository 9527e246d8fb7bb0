#!/bin/bash
# Direct delivery on a 2-node cluster with the EXTOLL NIC (needs make
# initramfs): see direct_test.py.  TAP.
#
#   qemu-devices/tests/run-direct-vm-tests.sh
exec python3 "$(dirname "$0")/direct_test.py" "$@"
