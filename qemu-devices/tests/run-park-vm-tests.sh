#!/bin/bash
# Poll parking of the device models on a 2-node and an 8-node cluster
# (needs make initramfs): see park_test.py.  TAP.
#
#   qemu-devices/tests/run-park-vm-tests.sh
exec python3 "$(dirname "$0")/park_test.py" "$@"
