#!/bin/bash
# The 3D torus of the fabric on an 8-node 2x2x2 cluster with both NICs
# (needs make initramfs, up to date: exacluster check-image): see
# torus_test.py.  TAP.
#
#   qemu-devices/tests/run-torus-vm-tests.sh
"$(dirname "$0")/../../tools/cluster/exacluster" check-image || exit
exec python3 "$(dirname "$0")/torus_test.py" "$@"
