#!/bin/bash
# The fault campaign of the torus (make check-faults) as TAP checks, on its
# own 8-node cluster (needs make initramfs): see faults_test.py.
#
#   qemu-devices/tests/run-faults-vm-tests.sh
exec python3 "$(dirname "$0")/faults_test.py" "$@"
