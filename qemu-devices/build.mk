# qemu-devices: emulated hardware (QEMU device models + host fabric).
#
#   make qemu          build/refresh $(BUILD)/qemu-system-x86_64 (cached in
#                      $(CACHE); a no-op in < 1 s when nothing changed)
#   make test-fabric   run the fabric host unit tests (TAP)

QEMU_BIN := $(BUILD)/qemu-system-x86_64
QEMU_FIRMWARE := $(CACHE)/share/qemu
FABRIC_DIR := $(TOP)/qemu-devices/common
FABRIC_TESTS := $(addprefix $(BUILD)/host-tests/,test_fabric test_fabric_rings test_fabric_torus \
	test_fabric_direct test_fabric_xlat)

.PHONY: qemu test-fabric
qemu:
	@$(TOP)/scripts/build-qemu.sh

FABRIC_SRC := $(FABRIC_DIR)/fabric.c $(FABRIC_DIR)/fabric-rings.c $(FABRIC_DIR)/fabric-torus.c \
	$(FABRIC_DIR)/fabric-direct.c $(FABRIC_DIR)/fabric-direct-xlat.c
FABRIC_TEST_DIR := $(TOP)/qemu-devices/tests
# a program's cases may live in <program>-*.h beside it (one translation unit)
$(FABRIC_TESTS): $(BUILD)/host-tests/%: $(FABRIC_TEST_DIR)/%.c $(FABRIC_TEST_DIR)/fabric_test_util.c \
		$(wildcard $(FABRIC_TEST_DIR)/test_fabric*-*.h) \
		$(FABRIC_TEST_DIR)/fabric_test_util.h $(FABRIC_TEST_DIR)/fabric_fixture.h $(FABRIC_SRC) $(FABRIC_DIR)/fabric.h $(FABRIC_DIR)/fabric-int.h \
		$(FABRIC_DIR)/fabric-torus.h $(FABRIC_DIR)/fabric-direct.h $(FABRIC_DIR)/fabric-direct-int.h $(TOP)/uapi/exa_torus.h $(KSFT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -I$(FABRIC_DIR) -I$(TOP)/uapi -o $@ $< \
		$(FABRIC_TEST_DIR)/fabric_test_util.c $(FABRIC_SRC) $(USER_LDFLAGS) -lz

test-fabric: $(FABRIC_TESTS)
	for t in $(FABRIC_TESTS); do $$t || exit 1; done

# The trace reader of make bench-latency against the trace-events formats.
TRACELIB_TEST := $(BUILD)/host-tests/test_tracelib
$(TRACELIB_TEST): $(TOP)/qemu-devices/tests/test_tracelib.py $(TOP)/tools/bench/tracelib.py \
		$(TOP)/tools/cluster/taplib.py \
		$(wildcard $(TOP)/qemu-devices/*/trace-events)
	@mkdir -p $(dir $@)
	install -m 0755 $< $@

ALL_TARGETS += qemu $(FABRIC_TESTS) $(TRACELIB_TEST)
HOST_TESTS += $(FABRIC_TESTS) $(TRACELIB_TEST)

# The driverless device tests: static programs on the kernel's kselftest
# harness (qemu-devices/tests/devtest_main.h) that run-*vm-tests.sh put into
# the initramfs of throw-away VMs (the guest runs the host's x86-64 Debian
# userland).  vm-lib.sh builds them through these rules.
DEVTEST_DIR := $(TOP)/qemu-devices/tests
DEVTEST_OUT := $(BUILD)/device-tests
DEVTEST_BINS := $(addprefix $(DEVTEST_OUT)/,exanet-regtest exanet-rdmatest extoll-regtest)
DEVTEST_CFLAGS := -static -O2 -Wall -Wextra -I$(TOP)/uapi $(KSFT_CFLAGS)
DEVTEST_HDRS := $(DEVTEST_DIR)/devmem.h $(DEVTEST_DIR)/devtest_main.h $(KSFT_HDRS)
EXTOLL_DEVTEST_SRCS := $(DEVTEST_DIR)/extoll-regtest.c $(DEVTEST_DIR)/extoll-dev.c

$(DEVTEST_OUT)/exanet-%: $(DEVTEST_DIR)/exanet-%.c $(DEVTEST_HDRS) $(TOP)/uapi/exanet.h \
		$(TOP)/uapi/exanet_rdma.h
	@mkdir -p $(@D)
	$(CC) $(DEVTEST_CFLAGS) -o $@ $<

# extoll-regtest-*.h: cases in the translation unit of extoll-regtest.c
$(DEVTEST_OUT)/extoll-regtest: $(EXTOLL_DEVTEST_SRCS) $(DEVTEST_DIR)/extoll-dev.h \
		$(DEVTEST_DIR)/extoll-regtest-prot.h $(DEVTEST_DIR)/extoll-regtest-dead.h \
		$(DEVTEST_HDRS) $(TOP)/uapi/extoll_hw.h
	@mkdir -p $(@D)
	$(CC) $(DEVTEST_CFLAGS) -o $@ $(EXTOLL_DEVTEST_SRCS)

ALL_TARGETS += $(DEVTEST_BINS)

# Driverless in-VM test of the device model (boots throw-away VMs, ~1 min).
.PHONY: qemu-vm-test qemu-rdma-vm-test
qemu-vm-test: qemu $(DEVTEST_OUT)/exanet-regtest
	$(TOP)/qemu-devices/tests/run-vm-tests.sh

# Driverless in-VM test of the RDMA engine (no IOMMU, ~1 min).
qemu-rdma-vm-test: qemu $(DEVTEST_OUT)/exanet-rdmatest
	$(TOP)/qemu-devices/tests/run-rdma-vm-tests.sh

# Driverless in-VM test of the EXTOLL model (loopback, 2 nodes, faults,
# retransmission budget: silent and restarted nodes; ~3 min).
.PHONY: qemu-extoll-vm-test
qemu-extoll-vm-test: qemu $(DEVTEST_OUT)/extoll-regtest
	$(TOP)/qemu-devices/tests/run-extoll-vm-tests.sh
