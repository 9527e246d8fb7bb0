# tools/cluster: the emulated cluster (node image, launcher, test runner).
# Included last by the top-level Makefile, so ALL_TARGETS already lists every
# other fragment's outputs here.  See Documentation/cluster.md.
#
#   make initramfs       build/initramfs.cpio.gz (node image), rebuilt when
#                        modules, libraries, tools, selftests or the image
#                        scripts change
#   make cluster-test    boot 2 and 4 nodes and run the cluster's own tests
#                        (tools/cluster/tests/tests.list) through run-tests
#   make cluster-up      boot a detached 2-node cluster "default"
#                        (CLUSTER_NODES=4 for more); cluster-down ends it

CLUSTER_DIR := $(TOP)/tools/cluster
INITRAMFS := $(BUILD)/initramfs.cpio.gz
MGMT_HUB := $(BUILD)/bin/exanet-mgmt-hub
MGMT_HUB_TEST := $(BUILD)/host-tests/test_mgmt_hub
RUNNER_TEST := $(BUILD)/host-tests/test_runner_tap
QGA_TEST := $(BUILD)/host-tests/test_qga
IMAGE_CHECK_TEST := $(BUILD)/host-tests/test_image_check
CLUSTER_NODES ?= 2

# Everything the image packs: real files built by the other fragments
# (normal prerequisites), phony targets such as `modules` (order-only, so a
# phony does not force a rebuild by itself), plus whatever is in the build
# output directories right now.
INITRAMFS_EXCLUDE := $(INITRAMFS) $(BUILD)/qemu-system-x86_64 $(BUILD)/host-tests/% $(MGMT_HUB)
INITRAMFS_DEPS := $(filter-out $(INITRAMFS_EXCLUDE),$(filter $(BUILD)/%,$(ALL_TARGETS)))
INITRAMFS_ORDER := $(filter-out qemu $(BUILD)/% $(TOP)/%,$(ALL_TARGETS))
INITRAMFS_INPUTS := $(CLUSTER_DIR)/mkinitramfs.sh $(CLUSTER_DIR)/init \
	$(CLUSTER_DIR)/psm2-stub.c \
	$(wildcard $(CLUSTER_DIR)/tests/*) $(wildcard $(TOP)/drivers/*/*.rules) \
	$(TOP)/tools/exanet-ipd/60-exanet-ipd.conf \
	$(wildcard /lib/modules/$(KVER)/modules.dep) \
	$(shell find $(BUILD)/bin $(BUILD)/lib $(BUILD)/selftests $(BUILD)/modules \
		\( -type f -o -type l \) ! -name exanet-mgmt-hub 2>/dev/null)

.PHONY: initramfs cluster-test cluster-up cluster-down
initramfs: $(INITRAMFS)

$(INITRAMFS): $(INITRAMFS_INPUTS) $(INITRAMFS_DEPS) | $(INITRAMFS_ORDER)
	@$(CLUSTER_DIR)/mkinitramfs.sh $@

$(MGMT_HUB): $(CLUSTER_DIR)/mgmt-hub.c
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -o $@ $< $(USER_LDFLAGS)

$(MGMT_HUB_TEST): $(CLUSTER_DIR)/tests/test_mgmt_hub.py $(MGMT_HUB)
	@mkdir -p $(@D)
	install -m 0755 $< $@

$(RUNNER_TEST): $(CLUSTER_DIR)/tests/test_runner_tap.py $(CLUSTER_DIR)/run-tests
	@mkdir -p $(@D)
	install -m 0755 $< $@

$(QGA_TEST): $(CLUSTER_DIR)/tests/test_qga.py $(CLUSTER_DIR)/qga.py
	@mkdir -p $(@D)
	install -m 0755 $< $@

$(IMAGE_CHECK_TEST): $(CLUSTER_DIR)/tests/test_image_check.py $(CLUSTER_DIR)/exacluster.py \
		$(CLUSTER_DIR)/exacluster $(CLUSTER_DIR)/run-tests \
		$(wildcard $(TOP)/qemu-devices/tests/run-*vm-tests.sh)
	@mkdir -p $(@D)
	install -m 0755 $< $@

cluster-test: $(INITRAMFS) $(MGMT_HUB) | qemu
	@$(CLUSTER_DIR)/run-tests --no-host --no-default-list \
		--list $(CLUSTER_DIR)/tests/tests.list --list $(CLUSTER_DIR)/tests/tests4.list \
		--json $(BUILD)/cluster-test-results.json

cluster-up: $(INITRAMFS) $(MGMT_HUB) | qemu
	@$(CLUSTER_DIR)/exacluster up -n $(CLUSTER_NODES)

cluster-down:
	@$(CLUSTER_DIR)/exacluster down

ALL_TARGETS += $(MGMT_HUB) $(MGMT_HUB_TEST) $(RUNNER_TEST) $(QGA_TEST) $(IMAGE_CHECK_TEST)
HOST_TESTS += $(MGMT_HUB_TEST) $(RUNNER_TEST) $(QGA_TEST) $(IMAGE_CHECK_TEST)
