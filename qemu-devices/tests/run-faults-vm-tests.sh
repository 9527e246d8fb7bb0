#!/bin/bash
# The fault campaign of the torus (make check-faults) as TAP checks, on its
# own 8-node cluster (needs make initramfs, up to date: exacluster
# check-image): see faults_test.py.
#
#   qemu-devices/tests/run-faults-vm-tests.sh
"$(dirname "$0")/../../tools/cluster/exacluster" check-image || exit
exec python3 "$(dirname "$0")/faults_test.py" "$@"
