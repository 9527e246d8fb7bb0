# EXTOLL user-space libraries: librma2 (soname librma2.so.2), libvelo2
# (soname libvelo2.so.2), their pkg-config files and public headers staged in
# $(BUILD)/include/extoll/ (installed flat into $(INCLUDEDIR), the original
# EXTOLL layout that pscom's FindExtoll.cmake expects).  Their users build
# next to their code: the tools rma2-pingpong, rma2-bw, velo2-pingpong in
# tools/build.mk, the host tests and in-VM selftests in selftests/build.mk.
# See Documentation/extoll/.
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

RMA2_DIR := $(TOP)/lib/librma2
VELO2_DIR := $(TOP)/lib/libvelo2
RMA2_PUB_HDRS := rma2.h sys_rma2.h extoll2_list.h rma2_region.h arch_define.h rma2_ioctl.h pmap.h
VELO2_PUB_HDRS := velo2.h velo2_mod.h
RMA2_HDRS := $(addprefix $(RMA2_DIR)/include/,$(RMA2_PUB_HDRS))
VELO2_HDRS := $(addprefix $(VELO2_DIR)/include/,$(VELO2_PUB_HDRS))
RMA2_SRCS := $(RMA2_DIR)/src/librma2.c $(RMA2_DIR)/src/rma2_noti.c $(RMA2_DIR)/src/extoll2_list.c \
	$(EXA_WAIT_SRC)
VELO2_SRCS := $(VELO2_DIR)/src/libvelo2.c $(EXA_WAIT_SRC)
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
