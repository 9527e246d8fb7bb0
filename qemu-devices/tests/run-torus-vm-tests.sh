#!/bin/bash
# The 3D torus of the fabric on an 8-node 2x2x2 cluster with both NICs
# (needs make initramfs): see torus_test.py.  TAP.
#
#   qemu-devices/tests/run-torus-vm-tests.sh
exec python3 "$(dirname "$0")/torus_test.py" "$@"
