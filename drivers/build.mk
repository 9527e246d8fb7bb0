# Kernel modules (out of tree, Kbuild).  Included by the top-level Makefile,
# which defines TOP, BUILD, KVER and KDIR.
#
#   make modules   build exa_core.ko, exanet.ko and extoll.ko with W=1, copy
#                  them to build/modules/
#   make sparse    rebuild the modules under sparse (C=2: check every file)
#   (style: make style, scripts/check-style.sh, runs the kernel's
#   checkpatch.pl --strict over drivers/ and uapi/)

KMOD_SRCS := $(wildcard $(TOP)/drivers/exanet/*.[ch] $(TOP)/drivers/common/*.[ch]) $(TOP)/drivers/exanet/Kbuild \
	$(TOP)/drivers/common/Kbuild \
	$(TOP)/Kbuild $(wildcard $(TOP)/uapi/*.h)
KMOD_SRCS += $(wildcard $(TOP)/drivers/extoll/*.[ch]) $(TOP)/drivers/extoll/Kbuild \
	$(TOP)/drivers/extoll/60-extoll.rules
KMOD_MAKE = $(MAKE) -C $(KDIR) M=$(TOP) W=1

.PHONY: modules modules-clean sparse
ALL_TARGETS += modules

modules: $(BUILD)/modules/exanet.ko

$(BUILD)/modules/exanet.ko: $(KMOD_SRCS)
	@test -d "$(KDIR)" || { echo "modules: no kernel headers in '$(KDIR)' (run: make deps)" >&2; exit 1; }
	$(KMOD_MAKE) modules
	@mkdir -p $(dir $@)
	@# mkinitramfs.sh takes every *.ko here: a renamed module must not linger
	rm -f $(BUILD)/modules/*.ko
	cp $(TOP)/drivers/exanet/exanet.ko $@
	cp $(TOP)/drivers/exanet/60-exanet.rules $(BUILD)/modules/

# extoll.ko and exa_core.ko (which both drivers depend on) are built by the
# same Kbuild run as exanet.ko.
modules: $(BUILD)/modules/extoll.ko $(BUILD)/modules/exa_core.ko

$(BUILD)/modules/extoll.ko: $(BUILD)/modules/exanet.ko
	@mkdir -p $(dir $@)
	cp $(TOP)/drivers/extoll/extoll.ko $@
	cp $(TOP)/drivers/extoll/60-extoll.rules $(BUILD)/modules/

$(BUILD)/modules/exa_core.ko: $(BUILD)/modules/exanet.ko
	@mkdir -p $(dir $@)
	cp $(TOP)/drivers/common/exa_core.ko $@

sparse:
	@test -d "$(KDIR)" || { echo "sparse: no kernel headers in '$(KDIR)' (run: make deps)" >&2; exit 1; }
	$(KMOD_MAKE) C=2 modules

modules-clean:
	-$(MAKE) -C $(KDIR) M=$(TOP) clean

CLEAN_FILES += $(TOP)/drivers/common/*.o $(TOP)/drivers/common/*.ko \
	$(TOP)/drivers/common/*.mod $(TOP)/drivers/common/*.mod.c \
	$(TOP)/drivers/common/.*.cmd $(TOP)/drivers/common/modules.order
CLEAN_FILES += $(TOP)/drivers/extoll/*.o $(TOP)/drivers/extoll/*.ko \
	$(TOP)/drivers/extoll/*.mod $(TOP)/drivers/extoll/*.mod.c \
	$(TOP)/drivers/extoll/.*.cmd $(TOP)/drivers/extoll/modules.order
CLEAN_FILES += $(TOP)/drivers/exanet/*.o $(TOP)/drivers/exanet/*.ko \
	$(TOP)/drivers/exanet/*.mod $(TOP)/drivers/exanet/*.mod.c \
	$(TOP)/drivers/exanet/.*.cmd $(TOP)/drivers/exanet/modules.order \
	$(TOP)/modules.order $(TOP)/Module.symvers $(TOP)/.*.cmd
