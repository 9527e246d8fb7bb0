# EXTOLL user-space: librma2 (soname librma2.so.2), libvelo2 (soname
# libvelo2.so.2), their pkg-config files, public headers staged in
# $(BUILD)/include/extoll/ (installed flat into $(INCLUDEDIR), the original
# EXTOLL layout that pscom's FindExtoll.cmake expects), the in-VM selftests
# (selftests/extoll/) and the host tests
# (selftests/host/test_rma2_*, test_velo2_*); the tools rma2-pingpong, rma2-bw,
# velo2-pingpong build in tools/build.mk.  See Documentation/extoll/.
#
# Two pkg-config files per library: $(BUILD)/lib/<name>.pc describes a
# default PREFIX install (like libexanet.pc); $(BUILD)/pkgconfig/<name>.pc
# describes the staged build tree and is what the compatibility build uses
# (PKG_CONFIG_PATH=$(BUILD)/pkgconfig pkg-config --cflags --libs rma2 velo2).

EXTOLL_LIB_MAJOR := 2
EXTOLL_LIB_MINOR := 0
EXTOLL_LIB_VERSION := $(EXTOLL_LIB_MAJOR).$(EXTOLL_LIB_MINOR)
EXTOLL_INC_OUT := $(BUILD)/include/extoll
EXTOLL_PC_STAGED := $(BUILD)/pkgconfig
EXTOLL_LIB_OUT := $(BUILD)/lib
EXTOLL_HT_OUT := $(BUILD)/host-tests

RMA2_DIR := $(TOP)/lib/librma2
VELO2_DIR := $(TOP)/lib/libvelo2
RMA2_PUB_HDRS := rma2.h sys_rma2.h extoll2_list.h rma2_region.h arch_define.h rma2_ioctl.h pmap.h
VELO2_PUB_HDRS := velo2.h velo2_mod.h
RMA2_HDRS := $(addprefix $(RMA2_DIR)/include/,$(RMA2_PUB_HDRS))
VELO2_HDRS := $(addprefix $(VELO2_DIR)/include/,$(VELO2_PUB_HDRS))
RMA2_SRCS := $(RMA2_DIR)/src/librma2.c $(RMA2_DIR)/src/rma2_noti.c $(RMA2_DIR)/src/extoll2_list.c
VELO2_SRCS := $(VELO2_DIR)/src/libvelo2.c
RMA2_INT_H := $(RMA2_DIR)/src/rma2_int.h $(TOP)/uapi/extoll.h $(TOP)/uapi/extoll_hw.h \
	$(EXA_COMMON_HDRS)
VELO2_INT_H := $(VELO2_DIR)/src/velo2_int.h $(TOP)/uapi/extoll.h $(TOP)/uapi/extoll_hw.h \
	$(EXA_COMMON_HDRS)

EXTOLL_CFLAGS := -I$(RMA2_DIR)/include -I$(VELO2_DIR)/include

RMA2_SONAME := librma2.so.$(EXTOLL_LIB_MAJOR)
RMA2_REAL := $(EXTOLL_LIB_OUT)/librma2.so.$(EXTOLL_LIB_VERSION)
RMA2_SO := $(EXTOLL_LIB_OUT)/librma2.so
VELO2_SONAME := libvelo2.so.$(EXTOLL_LIB_MAJOR)
VELO2_REAL := $(EXTOLL_LIB_OUT)/libvelo2.so.$(EXTOLL_LIB_VERSION)
VELO2_SO := $(EXTOLL_LIB_OUT)/libvelo2.so

RMA2_LDLIBS := -L$(EXTOLL_LIB_OUT) -lrma2 -Wl,-rpath,'$$ORIGIN/../lib'
VELO2_LDLIBS := -L$(EXTOLL_LIB_OUT) -lvelo2 -Wl,-rpath,'$$ORIGIN/../lib'

EXTOLL_STAGED_HDRS := $(addprefix $(EXTOLL_INC_OUT)/,$(RMA2_PUB_HDRS) $(VELO2_PUB_HDRS) extoll.h)
EXTOLL_PCS := $(EXTOLL_LIB_OUT)/rma2.pc $(EXTOLL_LIB_OUT)/velo2.pc \
	$(EXTOLL_PC_STAGED)/rma2.pc $(EXTOLL_PC_STAGED)/velo2.pc

ALL_TARGETS += $(RMA2_REAL) $(RMA2_SO) $(VELO2_REAL) $(VELO2_SO) \
	$(EXTOLL_STAGED_HDRS) $(EXTOLL_PCS)

$(RMA2_REAL): $(RMA2_SRCS) $(RMA2_HDRS) $(RMA2_INT_H) $(RMA2_DIR)/librma2.map
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(EXTOLL_CFLAGS) -fPIC -fvisibility=hidden -shared \
		-Wl,-soname,$(RMA2_SONAME) -Wl,-Bsymbolic \
		-Wl,--version-script=$(RMA2_DIR)/librma2.map \
		-o $@ $(RMA2_SRCS) $(USER_LDFLAGS) -lpthread

$(EXTOLL_LIB_OUT)/$(RMA2_SONAME) $(RMA2_SO): $(RMA2_REAL)
	ln -sf $(notdir $(RMA2_REAL)) $(EXTOLL_LIB_OUT)/$(RMA2_SONAME)
	ln -sf $(RMA2_SONAME) $(RMA2_SO)

$(VELO2_REAL): $(VELO2_SRCS) $(VELO2_HDRS) $(VELO2_INT_H) $(VELO2_DIR)/libvelo2.map
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(EXTOLL_CFLAGS) -fPIC -fvisibility=hidden -shared \
		-Wl,-soname,$(VELO2_SONAME) -Wl,-Bsymbolic \
		-Wl,--version-script=$(VELO2_DIR)/libvelo2.map \
		-o $@ $(VELO2_SRCS) $(USER_LDFLAGS)

$(EXTOLL_LIB_OUT)/$(VELO2_SONAME) $(VELO2_SO): $(VELO2_REAL)
	ln -sf $(notdir $(VELO2_REAL)) $(EXTOLL_LIB_OUT)/$(VELO2_SONAME)
	ln -sf $(VELO2_SONAME) $(VELO2_SO)

$(EXTOLL_INC_OUT)/%.h: $(RMA2_DIR)/include/%.h
	@mkdir -p $(@D)
	cp $< $@
$(EXTOLL_INC_OUT)/%.h: $(VELO2_DIR)/include/%.h
	@mkdir -p $(@D)
	cp $< $@
# rma2_ioctl.h includes the kernel ABI header
$(EXTOLL_INC_OUT)/extoll.h: $(TOP)/uapi/extoll.h
	@mkdir -p $(@D)
	cp $< $@

EXTOLL_PC_SED = sed -e 's|@PREFIX@|$(1)|' -e 's|@LIBDIR@|$(2)|' \
	-e 's|@INCLUDEDIR@|$(3)|' -e 's|@VERSION@|$(EXTOLL_LIB_VERSION)|'

$(EXTOLL_LIB_OUT)/rma2.pc: $(RMA2_DIR)/rma2.pc.in
	@mkdir -p $(@D)
	$(call EXTOLL_PC_SED,$(PREFIX),$(LIBDIR),$(INCLUDEDIR)) $< > $@
$(EXTOLL_LIB_OUT)/velo2.pc: $(VELO2_DIR)/velo2.pc.in
	@mkdir -p $(@D)
	$(call EXTOLL_PC_SED,$(PREFIX),$(LIBDIR),$(INCLUDEDIR)) $< > $@
$(EXTOLL_PC_STAGED)/rma2.pc: $(RMA2_DIR)/rma2.pc.in
	@mkdir -p $(@D)
	$(call EXTOLL_PC_SED,$(BUILD),$(EXTOLL_LIB_OUT),$(EXTOLL_INC_OUT)) $< > $@
$(EXTOLL_PC_STAGED)/velo2.pc: $(VELO2_DIR)/velo2.pc.in
	@mkdir -p $(@D)
	$(call EXTOLL_PC_SED,$(BUILD),$(EXTOLL_LIB_OUT),$(EXTOLL_INC_OUT)) $< > $@

.PHONY: librma2 libvelo2 install-extoll-libs
librma2: $(RMA2_SO) $(EXTOLL_LIB_OUT)/rma2.pc $(EXTOLL_STAGED_HDRS)
libvelo2: $(VELO2_SO) $(EXTOLL_LIB_OUT)/velo2.pc $(EXTOLL_STAGED_HDRS)

# make install-extoll-libs [DESTDIR=...] [PREFIX=/usr/local]
install-extoll-libs: librma2 libvelo2
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 0755 $(RMA2_REAL) $(VELO2_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(RMA2_REAL)) $(DESTDIR)$(LIBDIR)/$(RMA2_SONAME)
	ln -sf $(RMA2_SONAME) $(DESTDIR)$(LIBDIR)/librma2.so
	ln -sf $(notdir $(VELO2_REAL)) $(DESTDIR)$(LIBDIR)/$(VELO2_SONAME)
	ln -sf $(VELO2_SONAME) $(DESTDIR)$(LIBDIR)/libvelo2.so
	$(call EXTOLL_PC_SED,$(PREFIX),$(LIBDIR),$(INCLUDEDIR)) $(RMA2_DIR)/rma2.pc.in \
		> $(DESTDIR)$(LIBDIR)/pkgconfig/rma2.pc
	$(call EXTOLL_PC_SED,$(PREFIX),$(LIBDIR),$(INCLUDEDIR)) $(VELO2_DIR)/velo2.pc.in \
		> $(DESTDIR)$(LIBDIR)/pkgconfig/velo2.pc
	install -m 0644 $(RMA2_HDRS) $(VELO2_HDRS) $(TOP)/uapi/extoll.h $(DESTDIR)$(INCLUDEDIR)/

# ---------------------------------------------------------------- host tests
# test_rma2_abi: layout/enum/constant/macro checks (static + TAP);
# test_extoll2_list: the exported extoll2_list pools, through the .so;
# test_extoll_kernel_fake: both libraries' sources against a fake kernel
# (ld --wrap of open/ioctl/mmap/munmap/close/calloc/aligned_alloc);
# test_rma2_fake / test_velo2_fake: the library sources linked with a fake
# device (endpoint over plain memory); test_rma2_cxx: headers in C++ next to
# a pscom-style list.h.
EXTOLL_HT := $(EXTOLL_HT_OUT)/test_rma2_abi $(EXTOLL_HT_OUT)/test_rma2_fake $(EXTOLL_HT_OUT)/test_velo2_fake \
	$(EXTOLL_HT_OUT)/test_rma2_cxx $(EXTOLL_HT_OUT)/test_extoll2_list \
	$(EXTOLL_HT_OUT)/test_extoll_kernel_fake
EXTOLL_HT_DEPS := $(RMA2_HDRS) $(VELO2_HDRS) $(KSFT_HDRS)

$(EXTOLL_HT_OUT)/test_rma2_abi: $(TOP)/selftests/host/test_rma2_abi.c $(EXTOLL_HT_DEPS) $(RMA2_SO) $(VELO2_SO)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) -o $@ $< $(USER_LDFLAGS) \
		-L$(EXTOLL_LIB_OUT) -lrma2 -lvelo2 -Wl,-rpath,$(EXTOLL_LIB_OUT)

$(EXTOLL_HT_OUT)/test_extoll2_list: $(TOP)/selftests/host/test_extoll2_list.c $(EXTOLL_HT_DEPS) $(RMA2_SO)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) -o $@ $< $(USER_LDFLAGS) \
		-L$(EXTOLL_LIB_OUT) -lrma2 -Wl,-rpath,$(EXTOLL_LIB_OUT)

EXTOLL_HT_WRAP := -Wl,--wrap=open,--wrap=ioctl,--wrap=mmap,--wrap=munmap,--wrap=close \
	-Wl,--wrap=calloc,--wrap=aligned_alloc
$(EXTOLL_HT_OUT)/test_extoll_kernel_fake: $(TOP)/selftests/host/test_extoll_kernel_fake.c \
		$(EXTOLL_HT_DEPS) $(RMA2_SRCS) $(RMA2_INT_H) $(VELO2_SRCS) $(VELO2_INT_H)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) -o $@ $< $(RMA2_SRCS) $(VELO2_SRCS) \
		$(EXTOLL_HT_WRAP) $(USER_LDFLAGS) -lpthread

$(EXTOLL_HT_OUT)/test_rma2_fake: $(TOP)/selftests/host/test_rma2_fake.c $(EXTOLL_HT_DEPS) \
		$(RMA2_SRCS) $(RMA2_INT_H)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) -I$(RMA2_DIR)/src -o $@ $< $(RMA2_SRCS) \
		$(USER_LDFLAGS) -lpthread

$(EXTOLL_HT_OUT)/test_velo2_fake: $(TOP)/selftests/host/test_velo2_fake.c $(EXTOLL_HT_DEPS) \
		$(VELO2_SRCS) $(VELO2_INT_H)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) -I$(VELO2_DIR)/src -o $@ $< $(VELO2_SRCS) \
		$(USER_LDFLAGS) -lpthread

CXX ?= g++
$(EXTOLL_HT_OUT)/test_rma2_cxx: $(TOP)/selftests/host/test_rma2_cxx.cpp $(EXTOLL_HT_DEPS) $(RMA2_SO) \
		$(VELO2_SO) $(EXTOLL_STAGED_HDRS)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -Wshadow -Wundef -Werror -I$(EXTOLL_INC_OUT) -o $@ $< \
		-L$(EXTOLL_LIB_OUT) -lrma2 -lvelo2 -Wl,-rpath,$(EXTOLL_LIB_OUT)

ALL_TARGETS += $(EXTOLL_HT)
HOST_TESTS += $(EXTOLL_HT)

# ---------------------------------------------------------------- compatibility client
# selftests/extoll/extoll_compat.c is built like an outside client: only
# the pkg-config flags of the staged tree, pscom's warning set, -Werror.
# The same binary is the host test test_rma2_compat (it SKIPs without a
# device, so on the host it proves the build and link).
EXTOLL_ST_OUT := $(BUILD)/selftests/extoll
EXTOLL_COMPAT_CFLAGS := -std=gnu99 -O2 -Wall -Wextra -Wconversion -Wstrict-prototypes \
	-Wmissing-prototypes -Wshadow -Wundef -Werror-implicit-function-declaration -Werror
EXTOLL_PKG = PKG_CONFIG_PATH=$(EXTOLL_PC_STAGED) pkg-config

$(EXTOLL_ST_OUT)/extoll_compat: $(TOP)/selftests/extoll/extoll_compat.c $(EXTOLL_STAGED_HDRS) \
		$(EXTOLL_PC_STAGED)/rma2.pc $(EXTOLL_PC_STAGED)/velo2.pc $(RMA2_SO) $(VELO2_SO)
	@mkdir -p $(@D)
	$(CC) $(EXTOLL_COMPAT_CFLAGS) $$($(EXTOLL_PKG) --cflags rma2 velo2) -o $@ $< \
		$$($(EXTOLL_PKG) --libs rma2 velo2) -Wl,-rpath,$(EXTOLL_LIB_OUT)

$(EXTOLL_HT_OUT)/test_rma2_compat: $(EXTOLL_ST_OUT)/extoll_compat
	@mkdir -p $(@D)
	cp $< $@

ALL_TARGETS += $(EXTOLL_ST_OUT)/extoll_compat $(EXTOLL_HT_OUT)/test_rma2_compat
HOST_TESTS += $(EXTOLL_HT_OUT)/test_rma2_compat

# ---------------------------------------------------------------- in-VM selftests
# selftests/extoll/*.c -> $(BUILD)/selftests/extoll/ plus tests.list (same
# format as selftests/exanet/tests.list; run on clusters with the extoll
# device, see Documentation/extoll/librma2.md).
EXTOLL_ST_PROGS := extoll_rma2_basic extoll_velo2_basic extoll_2node extoll_alltoall \
	extoll_protection extoll_isolation extoll_teardown extoll_bad_input extoll_module extoll_limits
EXTOLL_ST_BINS := $(addprefix $(EXTOLL_ST_OUT)/,$(EXTOLL_ST_PROGS))
EXTOLL_ST_SRCS := $(ST_LIB_SRCS)
EXTOLL_ST_DEPS := $(EXTOLL_ST_SRCS) $(TOP)/selftests/lib/oob.h $(KSFT_HDRS) $(EXA_GENL_H) \
	$(TOP)/selftests/lib/exa_util.h $(TOP)/selftests/extoll/extoll_test.h \
	$(TOP)/selftests/extoll/extoll_raw.h $(TOP)/selftests/lib/exa_kid.h \
	$(TOP)/selftests/lib/exa_limits.h $(TOP)/uapi/exa_domain.h \
	$(RMA2_HDRS) $(VELO2_HDRS) $(RMA2_SO) $(VELO2_SO)

$(EXTOLL_ST_OUT)/%: $(TOP)/selftests/extoll/%.c $(EXTOLL_ST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) $(ST_LIB_CFLAGS) -o $@ $< $(EXTOLL_ST_SRCS) \
		$(USER_LDFLAGS) $(ST_LIB_LDLIBS) $(RMA2_LDLIBS) $(VELO2_LDLIBS)

$(EXTOLL_ST_OUT)/tests.list: $(TOP)/selftests/extoll/tests.list
	@mkdir -p $(@D)
	cp $< $@

ALL_TARGETS += $(EXTOLL_ST_BINS) $(EXTOLL_ST_OUT)/tests.list

# the EXTOLL tools (tools/build.mk) run between two nodes
$(EXTOLL_ST_OUT)/extoll_tools: $(TOP)/selftests/extoll/extoll_tools.sh
	@mkdir -p $(@D)
	install -m 0755 $< $@
ALL_TARGETS += $(EXTOLL_ST_OUT)/extoll_tools
