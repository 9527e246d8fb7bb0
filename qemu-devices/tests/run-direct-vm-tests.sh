#!/bin/bash
# Direct delivery on a 2-node cluster with the EXTOLL NIC (needs make
# initramfs, up to date: exacluster check-image): see direct_test.py.  TAP.
#
#   qemu-devices/tests/run-direct-vm-tests.sh
"$(dirname "$0")/../../tools/cluster/exacluster" check-image || exit
exec python3 "$(dirname "$0")/direct_test.py" "$@"
