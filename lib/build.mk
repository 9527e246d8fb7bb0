# libexanet: shared library (soname libexanet.so.1), pkg-config file and the
# public headers (libexanet.h next to the uapi exanet.h under include/exanet/).

LIBEXANET_MAJOR := 1
# the minor version is the newest symbol version of the map (LIBEXANET_1.<n>),
# so the file name and libexanet.pc say which calls the library has
LIBEXANET_MINOR := $(lastword $(shell sed -n 's/^LIBEXANET_1\.\([0-9]*\) {.*/\1/p' \
	$(TOP)/lib/libexanet/libexanet.map))
LIBEXANET_VERSION := $(LIBEXANET_MAJOR).$(LIBEXANET_MINOR)
LIBEXANET_DIR := $(TOP)/lib/libexanet
LIBEXANET_OUT := $(BUILD)/lib
LIBEXANET_SONAME := libexanet.so.$(LIBEXANET_MAJOR)
LIBEXANET_REAL := $(LIBEXANET_OUT)/libexanet.so.$(LIBEXANET_VERSION)
LIBEXANET_SO := $(LIBEXANET_OUT)/libexanet.so
LIBEXANET_PC := $(LIBEXANET_OUT)/libexanet.pc
# What the libraries and tools share (lib/common/, not installed): headers,
# and the wait loop, compiled into each library (hidden) and into the tools.
EXA_COMMON_HDRS := $(addprefix $(TOP)/lib/common/,exa_cpu.h exa_clock.h exa_wait.h exa_env.h exa_endian.h)
EXA_WAIT_SRC := $(TOP)/lib/common/exa_wait.c
LIBEXANET_SRCS := $(addprefix $(LIBEXANET_DIR)/src/,libexanet.c libexanet-pkt.c libexanet-mbox.c \
	libexanet-rdma.c libexanet-coll.c) $(EXA_WAIT_SRC)
LIBEXANET_HDRS := $(LIBEXANET_DIR)/include/libexanet.h $(TOP)/uapi/exanet.h \
	$(TOP)/uapi/exanet_rdma.h $(TOP)/uapi/exanet_coll.h \
	$(LIBEXANET_DIR)/src/libexanet-int.h $(EXA_COMMON_HDRS)
LIBEXANET_INC_OUT := $(BUILD)/include/exanet

# Users inside the tree link with these.  (The build-tree libexanet.pc
# describes a default PREFIX install; install-libexanet writes its own.)
LIBEXANET_LDLIBS := -L$(LIBEXANET_OUT) -lexanet -Wl,-rpath,'$$ORIGIN/../lib'

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include

ALL_TARGETS += $(LIBEXANET_REAL) $(LIBEXANET_SO) $(LIBEXANET_PC) \
	$(LIBEXANET_INC_OUT)/libexanet.h $(LIBEXANET_INC_OUT)/exanet.h \
	$(LIBEXANET_INC_OUT)/exanet_rdma.h $(LIBEXANET_INC_OUT)/exanet_coll.h

$(LIBEXANET_REAL): $(LIBEXANET_SRCS) $(LIBEXANET_HDRS) $(LIBEXANET_DIR)/libexanet.map
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -fPIC -fvisibility=hidden -shared \
		-Wl,-soname,$(LIBEXANET_SONAME) \
		-Wl,--version-script=$(LIBEXANET_DIR)/libexanet.map \
		-o $@ $(LIBEXANET_SRCS) $(USER_LDFLAGS)

$(LIBEXANET_OUT)/$(LIBEXANET_SONAME) $(LIBEXANET_SO): $(LIBEXANET_REAL)
	ln -sf $(notdir $(LIBEXANET_REAL)) $(LIBEXANET_OUT)/$(LIBEXANET_SONAME)
	ln -sf $(LIBEXANET_SONAME) $(LIBEXANET_SO)

$(LIBEXANET_PC): $(LIBEXANET_DIR)/libexanet.pc.in $(TOP)/lib/build.mk
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(LIBEXANET_VERSION)|' $< > $@

$(LIBEXANET_INC_OUT)/%.h: $(LIBEXANET_DIR)/include/%.h
	@mkdir -p $(@D)
	cp $< $@
$(LIBEXANET_INC_OUT)/exanet.h: $(TOP)/uapi/exanet.h
	@mkdir -p $(@D)
	cp $< $@
$(LIBEXANET_INC_OUT)/exanet_rdma.h: $(TOP)/uapi/exanet_rdma.h
	@mkdir -p $(@D)
	cp $< $@
$(LIBEXANET_INC_OUT)/exanet_coll.h: $(TOP)/uapi/exanet_coll.h
	@mkdir -p $(@D)
	cp $< $@

.PHONY: libexanet install-libexanet
libexanet: $(LIBEXANET_SO) $(LIBEXANET_PC)

# make install-libexanet [DESTDIR=...] [PREFIX=/usr/local]
install-libexanet: libexanet
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/exanet
	install -m 0755 $(LIBEXANET_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIBEXANET_REAL)) $(DESTDIR)$(LIBDIR)/$(LIBEXANET_SONAME)
	ln -sf $(LIBEXANET_SONAME) $(DESTDIR)$(LIBDIR)/libexanet.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(LIBEXANET_VERSION)|' \
	    $(LIBEXANET_DIR)/libexanet.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libexanet.pc
	install -m 0644 $(filter-out %-int.h $(EXA_COMMON_HDRS),$(LIBEXANET_HDRS)) $(DESTDIR)$(INCLUDEDIR)/exanet/
