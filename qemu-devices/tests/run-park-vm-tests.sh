#!/bin/bash
# Poll parking of the device models on a 2-node and an 8-node cluster
# (needs make initramfs, up to date: exacluster check-image): see
# park_test.py.  TAP.
#
#   qemu-devices/tests/run-park-vm-tests.sh
"$(dirname "$0")/../../tools/cluster/exacluster" check-image || exit
exec python3 "$(dirname "$0")/park_test.py" "$@"
