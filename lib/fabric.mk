# libexanet-fi and libextoll-fi: the libfabric providers "exanet" and
# "extoll", external (dlopen'ed) providers for Debian's libfabric: libfabric
# loads every lib*-fi.so of $FI_PROVIDER_PATH (else /usr/lib/<triplet>/libfabric/)
# and calls its fi_prov_ini.  One protocol engine, two NIC backends:
# Documentation/exanet/libfabric.md, Documentation/extoll/libfabric.md.

XFI_DIR := $(TOP)/lib/fi-providers
XFI_SO := $(BUILD)/lib/libexanet-fi.so
# the protocol engine, built once per NIC backend (lib/fi-providers/xfi_nic.h)
XFI_ENGINE_SRCS := $(addprefix $(XFI_DIR)/,xfi_prov.c xfi_proto.c xfi_atomic_ops.c \
	xfi_mr_cache.c xfi_mr.c xfi_av.c xfi_cq_ring.c xfi_peer.c xfi_msg.c xfi_rndv.c xfi_tx.c \
	xfi_atomic.c xfi_rma.c xfi_rx.c xfi_progress.c xfi_recv.c xfi_cq.c xfi_cntr.c xfi_ep.c \
	xfi_info.c xfi_domain.c xfi_fabric.c)
XFI_ENGINE_HDRS := $(XFI_DIR)/xfi.h $(XFI_DIR)/fi_exanet.h $(XFI_DIR)/xfi_proto.h \
	$(XFI_DIR)/xfi_atomic_ops.h $(XFI_DIR)/xfi_nic.h $(EXA_COMMON_HDRS)
XFI_SRCS := $(XFI_ENGINE_SRCS) $(XFI_DIR)/xfi_nic_exanet.c
XFI_HDRS := $(XFI_ENGINE_HDRS) $(XFI_DIR)/xfi_nic_exanet.h $(LIBEXANET_DIR)/include/libexanet.h \
	$(TOP)/uapi/exanet.h
# where Debian's libfabric looks for external providers
XFI_PROVDIR ?= $(shell gcc -print-multiarch 2>/dev/null | sed 's|^|/usr/lib/|;s|$$|/libfabric|')
# $(call xfi_link,backend header,sources,libraries): one provider .so
XFI_FABRIC_CHECK = @test -f /usr/include/rdma/providers/fi_prov.h || \
	{ echo "$(@F): libfabric-dev missing (make deps)" >&2; exit 1; }
xfi_link = $(CC) $(USER_CFLAGS) -DXFI_NIC_IMPL='"$(1)"' -fPIC -fvisibility=hidden -shared \
	-Wl,--version-script=$(XFI_DIR)/fi_prov.map -Wl,-z,defs \
	-o $@ $(2) $(USER_LDFLAGS) $(3) -lfabric -lpthread

# the same engine over VELO + RMA (libvelo2, librma2)
XFI_EXTOLL_SO := $(BUILD)/lib/libextoll-fi.so
XFI_EXTOLL_SRCS := $(XFI_ENGINE_SRCS) $(XFI_DIR)/xfi_nic_extoll.c

ALL_TARGETS += $(XFI_SO) $(XFI_EXTOLL_SO)

$(XFI_SO): $(XFI_SRCS) $(XFI_HDRS) $(XFI_DIR)/fi_prov.map $(LIBEXANET_SO)
	@mkdir -p $(@D)
	$(XFI_FABRIC_CHECK)
	$(call xfi_link,xfi_nic_exanet.h,$(XFI_SRCS),$(LIBEXANET_LDLIBS))

$(XFI_EXTOLL_SO): $(XFI_EXTOLL_SRCS) $(XFI_ENGINE_HDRS) $(XFI_DIR)/xfi_nic_extoll.h \
		$(XFI_DIR)/fi_prov.map $(RMA2_HDRS) $(VELO2_HDRS) $(RMA2_SO) $(VELO2_SO)
	@mkdir -p $(@D)
	$(XFI_FABRIC_CHECK)
	$(call xfi_link,xfi_nic_extoll.h,$(EXTOLL_CFLAGS) $(XFI_EXTOLL_SRCS),$(RMA2_LDLIBS) -lvelo2)

.PHONY: libexanet-fi libextoll-fi install-libexanet-fi install-libextoll-fi
libexanet-fi: $(XFI_SO)
libextoll-fi: $(XFI_EXTOLL_SO)

# make install-libexanet-fi [DESTDIR=...] [XFI_PROVDIR=...]
install-libexanet-fi: $(XFI_SO)
	install -d $(DESTDIR)$(XFI_PROVDIR)
	install -m 0644 $(XFI_SO) $(DESTDIR)$(XFI_PROVDIR)/

# make install-libextoll-fi [DESTDIR=...] [XFI_PROVDIR=...]
install-libextoll-fi: $(XFI_EXTOLL_SO)
	install -d $(DESTDIR)$(XFI_PROVDIR)
	install -m 0644 $(XFI_EXTOLL_SO) $(DESTDIR)$(XFI_PROVDIR)/
