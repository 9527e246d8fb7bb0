# Packaging: man pages, install targets for the tools, udev rules and the
# DKMS source, Debian packages.  Included by the top-level Makefile after
# the library and tool fragments.  See Documentation/packaging.md.
#
#   make man             man/*.scd -> build/man/*.{1,3,7,8} (scdoc)
#   make install-tools   tools + their man pages, exanet-ipd's sysctl file and
#                        systemd unit (PREFIX=, DESTDIR=, MANDIR=, SYSTEMDUNITDIR=)
#   make install-udev    drivers/*/60-*.rules into UDEVRULESDIR (/lib/udev/rules.d)
#   make install-man     every man page (install-libexanet and
#                        install-extoll-libs install their section 3 pages,
#                        install-libexanet-fi fi_exanet(7),
#                        install-libextoll-fi fi_extoll(7),
#                        install-coll-exanet coll-exanet(7); the pages of the
#                        programs that run from the source tree, exacluster(1),
#                        exanet-mpi-bench(1), exanet-evb(1), only here)
#   make dkms-install    module source + dkms.conf into /usr/src/exanet-VERSION,
#                        then `dkms install` for KVER (DKMS_STAGE_ONLY=1: copy only)
#   make deb             Debian packages into build/deb/ (dpkg-buildpackage -us -uc
#                        on a copy of the tree: the work tree stays clean)
#   make check-packages  install the packages into a clean bookworm root, DKMS
#                        build for KVER, pkg-config, tools; modprobe on a node

# the project's version (debian/changelog, EXA_VERSION in the top Makefile)
PKG_VERSION := $(EXA_VERSION)
MANDIR ?= $(PREFIX)/share/man
UDEVRULESDIR ?= /lib/udev/rules.d
BINDIR ?= $(PREFIX)/bin
MAN_OUT := $(BUILD)/man
DEB_OUT := $(BUILD)/deb

# Installed tools find the libraries in LIBDIR, without a RUNPATH (the
# in-tree build links with $ORIGIN/../lib).  debian/rules sets this.
ifdef PKG_NO_RPATH
LIBEXANET_LDLIBS := -L$(LIBEXANET_OUT) -lexanet
RMA2_LDLIBS := -L$(EXTOLL_LIB_OUT) -lrma2
VELO2_LDLIBS := -L$(EXTOLL_LIB_OUT) -lvelo2
endif

# ---------------------------------------------------------------- man pages
MAN_SRCS := $(wildcard $(TOP)/man/*.scd)
MAN_PAGES := $(patsubst $(TOP)/man/%.scd,$(MAN_OUT)/%,$(MAN_SRCS))
# programs no package installs (they run from the tree or need an MPI job)
MAN_TREE_TOOL_PAGES := $(addprefix $(MAN_OUT)/,exacluster.1 exanet-mpi-bench.1 exanet-evb.1)
MAN_TOOL_PAGES := $(filter-out $(MAN_TREE_TOOL_PAGES),$(filter %.1 %.8,$(MAN_PAGES)))
MAN_LIBEXANET_PAGES := $(filter $(MAN_OUT)/libexanet.3 $(MAN_OUT)/exanet_%.3,$(MAN_PAGES))
MAN_EXTOLL_PAGES := $(filter $(MAN_OUT)/librma2.3 $(MAN_OUT)/libvelo2.3 $(MAN_OUT)/rma2_%.3,$(MAN_PAGES))
MAN_FI_PAGES := $(filter $(MAN_OUT)/fi_%.7,$(MAN_PAGES))
MAN_COLLX_PAGES := $(MAN_OUT)/coll-exanet.7
# Every public call gets a name: man/links lists "page call..." and
# install-man writes a .so link per call (per other name of the page).
MAN_LINKS := $(TOP)/man/links

$(MAN_OUT)/%: $(TOP)/man/%.scd
	@mkdir -p $(@D)
	scdoc < $< > $@.tmp && mv $@.tmp $@

.PHONY: man install-man install-man-tools install-man-libexanet install-man-extoll \
	install-man-fi install-man-coll-exanet install-man-tree-tools
man: $(MAN_PAGES)
ifneq ($(shell command -v scdoc 2>/dev/null),)
ALL_TARGETS += $(MAN_PAGES)
endif

# install_man(pages): each page into man<section>/, plus the .so links of
# the calls documented on it.
define install_man
	@set -e; for p in $(1); do \
		b=$$(basename $$p); s=$${b##*.}; \
		install -d $(DESTDIR)$(MANDIR)/man$$s; \
		install -m 0644 $$p $(DESTDIR)$(MANDIR)/man$$s/; \
		for l in $$(sed -n "s/^$$b[[:space:]]\+//p" $(MAN_LINKS)); do \
			echo ".so man$$s/$$b" > $(DESTDIR)$(MANDIR)/man$$s/$$l.$$s; \
		done; \
	done
endef

install-man-tools: $(MAN_TOOL_PAGES)
	$(call install_man,$(MAN_TOOL_PAGES))
install-man-libexanet: $(MAN_LIBEXANET_PAGES)
	$(call install_man,$(MAN_LIBEXANET_PAGES))
install-man-extoll: $(MAN_EXTOLL_PAGES)
	$(call install_man,$(MAN_EXTOLL_PAGES))
install-man-fi: $(MAN_FI_PAGES)
	$(call install_man,$(MAN_FI_PAGES))
install-man-coll-exanet: $(MAN_COLLX_PAGES)
	$(call install_man,$(MAN_COLLX_PAGES))
install-man-tree-tools: $(MAN_TREE_TOOL_PAGES)
	$(call install_man,$(MAN_TREE_TOOL_PAGES))
install-man: install-man-tools install-man-libexanet install-man-extoll install-man-fi \
	install-man-coll-exanet install-man-tree-tools

install-libexanet: install-man-libexanet
install-extoll-libs: install-man-extoll
install-libexanet-fi: install-man-fi
install-libextoll-fi: install-man-fi
install-coll-exanet: install-man-coll-exanet

# ---------------------------------------------------------------- tools, udev
PKG_TOOLS := $(USER_TOOLS) $(RDMA_TOOLS) $(EXTOLL_TOOLS) $(TOOLS_OUT)/exanet-ipd

.PHONY: pkg-userspace install-tools install-udev
# What the packages contain, without the modules and the tests.
pkg-userspace: libexanet librma2 libvelo2 libexanet-fi libextoll-fi coll-exanet $(LIBEXANET_INC_OUT)/libexanet.h \
	$(LIBEXANET_INC_OUT)/exanet.h $(LIBEXANET_INC_OUT)/exanet_rdma.h $(LIBEXANET_INC_OUT)/exanet_coll.h \
	$(PKG_TOOLS) $(MAN_PAGES)

SYSCTLDIR ?= /usr/lib/sysctl.d
SYSTEMDUNITDIR ?= /lib/systemd/system
install-tools: $(PKG_TOOLS) install-man-tools
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(PKG_TOOLS) $(DESTDIR)$(BINDIR)/
	install -D -m 0644 $(TOP)/tools/exanet-ipd/60-exanet-ipd.conf \
		$(DESTDIR)$(SYSCTLDIR)/60-exanet-ipd.conf
	install -D -m 0644 $(TOP)/tools/exanet-ipd/exanet-ipd.service \
		$(DESTDIR)$(SYSTEMDUNITDIR)/exanet-ipd.service

install-udev:
	install -d $(DESTDIR)$(UDEVRULESDIR)
	install -m 0644 $(TOP)/drivers/exanet/60-exanet.rules $(TOP)/drivers/extoll/60-extoll.rules \
		$(DESTDIR)$(UDEVRULESDIR)/

# ---------------------------------------------------------------- DKMS
DKMS_NAME := exanet
DKMS_SRC_DIR := /usr/src/$(DKMS_NAME)-$(PKG_VERSION)
DKMS_FILES := Kbuild $(patsubst $(TOP)/%,%,$(wildcard $(TOP)/drivers/common/*.[ch] \
	$(TOP)/drivers/exanet/*.[ch] $(TOP)/drivers/extoll/*.[ch] $(TOP)/uapi/*.h)) \
	drivers/common/Kbuild drivers/exanet/Kbuild drivers/extoll/Kbuild
DKMS_FILES := $(filter-out %.mod.c,$(DKMS_FILES))

.PHONY: dkms-install dkms-uninstall
dkms-install:
	@set -e; cd $(TOP); for f in $(DKMS_FILES); do \
		install -D -m 0644 $$f $(DESTDIR)$(DKMS_SRC_DIR)/$$f; done
	sed 's/#MODULE_VERSION#/$(PKG_VERSION)/g' $(TOP)/packaging/dkms.conf \
		> $(DESTDIR)$(DKMS_SRC_DIR)/dkms.conf
ifndef DKMS_STAGE_ONLY
	@test -z "$(DESTDIR)" || { echo "dkms-install: DESTDIR set, source staged only" >&2; exit 0; }; \
	dkms status -m $(DKMS_NAME) -v $(PKG_VERSION) | grep -q . || dkms add -m $(DKMS_NAME) -v $(PKG_VERSION); \
	dkms install -m $(DKMS_NAME) -v $(PKG_VERSION) -k $(KVER)
endif

dkms-uninstall:
	-dkms remove -m $(DKMS_NAME) -v $(PKG_VERSION) --all
	rm -rf $(DKMS_SRC_DIR)

# ---------------------------------------------------------------- packages
# dpkg-buildpackage writes its results next to the source directory, so it
# runs on a copy in build/deb/exanet-fabric-VERSION/ (the files git knows
# plus new untracked ones, no build output) and the .debs land in build/deb/.
.PHONY: deb check-packages
deb:
	@rm -rf $(DEB_OUT) && mkdir -p $(DEB_OUT)/exanet-fabric-$(PKG_VERSION)
	cd $(TOP) && { git ls-files -co --exclude-standard 2>/dev/null || find . -path ./build -prune -o -type f -print | sed 's|^\./||'; } | \
		grep -v -e '^\.' -e '^build/' | while read -r f; do [ -e "$$f" ] && echo "$$f"; done | \
		tar -cf - -T - | tar -C $(DEB_OUT)/exanet-fabric-$(PKG_VERSION) -xf -
	cd $(DEB_OUT)/exanet-fabric-$(PKG_VERSION) && dpkg-buildpackage -us -uc -j2 > ../build.log 2>&1 || \
		{ tail -n 40 $(DEB_OUT)/build.log; exit 1; }
	rm -rf $(DEB_OUT)/exanet-fabric-$(PKG_VERSION)
	@ls -1 $(DEB_OUT)/*.deb

# The emulated node of the modprobe check needs the emulator and the
# management hub of tools/cluster (skipped with NO_VM=1).
ifeq ($(NO_VM),1)
check-packages:
else
check-packages: qemu $(BUILD)/bin/exanet-mgmt-hub
endif
	@$(TOP)/packaging/check-packages.sh

# ---------------------------------------------------------------- host test
# (after the pages and the programs it compares them with)
MAN_HT := $(BUILD)/host-tests/test_manpages
$(MAN_HT): $(TOP)/selftests/host/test_manpages.sh $(MAN_PAGES) $(PKG_TOOLS) $(MPI_BENCH)
	@mkdir -p $(@D)
	install -m 0755 $< $@
ALL_TARGETS += $(MAN_HT)
HOST_TESTS += $(MAN_HT)

# One version everywhere (debian/changelog, the tools' --version, NEWS.md),
# and libexanet.h's ABI version is the library's: after what it asks
VERSION_HT := $(BUILD)/host-tests/test_version
$(VERSION_HT): $(TOP)/selftests/host/test_version.sh $(PKG_TOOLS) $(MPI_BENCH) $(EVB) $(LIBEXANET_PC)
	@mkdir -p $(@D)
	install -m 0755 $< $@
ALL_TARGETS += $(VERSION_HT)
HOST_TESTS += $(VERSION_HT)
