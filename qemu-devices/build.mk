# qemu-devices: emulated hardware (QEMU device models + host fabric).
#
#   make qemu          build/refresh $(BUILD)/qemu-system-x86_64 (cached in
#                      $(CACHE); a no-op in < 1 s when nothing changed)
#   make test-fabric   run the fabric host unit tests (TAP)

QEMU_BIN := $(BUILD)/qemu-system-x86_64
QEMU_FIRMWARE := $(CACHE)/share/qemu
FABRIC_DIR := $(TOP)/qemu-devices/common
FABRIC_TESTS := $(addprefix $(BUILD)/host-tests/,test_fabric test_fabric_rings test_fabric_torus)

.PHONY: qemu test-fabric
qemu:
	@$(TOP)/scripts/build-qemu.sh

FABRIC_SRC := $(FABRIC_DIR)/fabric.c $(FABRIC_DIR)/fabric-rings.c $(FABRIC_DIR)/fabric-torus.c
FABRIC_TEST_DIR := $(TOP)/qemu-devices/tests
$(FABRIC_TESTS): $(BUILD)/host-tests/%: $(FABRIC_TEST_DIR)/%.c $(FABRIC_TEST_DIR)/fabric_test.c \
		$(FABRIC_TEST_DIR)/fabric_test.h $(FABRIC_TEST_DIR)/fabric_fixture.h $(FABRIC_SRC) $(FABRIC_DIR)/fabric.h $(FABRIC_DIR)/fabric-int.h \
		$(FABRIC_DIR)/fabric-torus.h $(TOP)/uapi/exa_torus.h $(KSFT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -I$(FABRIC_DIR) -I$(TOP)/uapi -o $@ $< \
		$(FABRIC_TEST_DIR)/fabric_test.c $(FABRIC_SRC) $(USER_LDFLAGS)

test-fabric: $(FABRIC_TESTS)
	for t in $(FABRIC_TESTS); do $$t || exit 1; done

# The trace reader of make bench-latency against the trace-events formats.
TRACELIB_TEST := $(BUILD)/host-tests/test_tracelib
$(TRACELIB_TEST): $(TOP)/qemu-devices/tests/test_tracelib.py $(TOP)/tools/bench/tracelib.py \
		$(TOP)/qemu-devices/tests/taplib.py \
		$(wildcard $(TOP)/qemu-devices/*/trace-events)
	@mkdir -p $(dir $@)
	install -m 0755 $< $@

ALL_TARGETS += qemu $(FABRIC_TESTS) $(TRACELIB_TEST)
HOST_TESTS += $(FABRIC_TESTS) $(TRACELIB_TEST)

# Driverless in-VM test of the device model (boots throw-away VMs, ~1 min).
.PHONY: qemu-vm-test qemu-rdma-vm-test
qemu-vm-test: qemu
	$(TOP)/qemu-devices/tests/run-vm-tests.sh

# Driverless in-VM test of the RDMA engine (no IOMMU, ~1 min).
qemu-rdma-vm-test: qemu
	$(TOP)/qemu-devices/tests/run-rdma-vm-tests.sh

# Driverless in-VM test of the EXTOLL model (loopback, 2 nodes, faults,
# retransmission budget: silent and restarted nodes; ~3 min).
.PHONY: qemu-extoll-vm-test
qemu-extoll-vm-test: qemu
	$(TOP)/qemu-devices/tests/run-extoll-vm-tests.sh
