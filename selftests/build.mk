# Selftests.
#  - in-VM tests: selftests/exanet/*.c -> $(BUILD)/selftests/exanet/ and
#    selftests/extoll/*.c -> $(BUILD)/selftests/extoll/, each directory with
#    a copy of its tests.list (the cluster runner reads it: "<program> <nodes>")
#  - host unit tests: selftests/host/test_*.c -> $(BUILD)/host-tests/ (TAP)
#
#   make selftests        build both
#   make host-check       build and run the host unit tests

ST_DIR := $(TOP)/selftests
ST_OUT := $(BUILD)/selftests/exanet
HT_OUT := $(BUILD)/host-tests
# The helper library (selftests/lib/), linked into every test program: its
# sources, compiler flags and libraries
ST_LIB_SRCS := $(ST_DIR)/lib/oob.c $(ST_DIR)/lib/exa_util.c $(EXA_GENL)
ST_LIB_CFLAGS := $(NL_CFLAGS) -I$(TOOLS_COMMON)
ST_LIB_LDLIBS := $(NL_LIBS)
ST_LIB_HDRS := $(KSFT_HDRS) $(ST_DIR)/lib/oob.h $(ST_DIR)/lib/exa_util.h $(EXA_GENL_H) \
	$(ST_DIR)/lib/stream_tally.h \
	$(ST_DIR)/exanet/exa_test.h $(ST_DIR)/exanet/exa_stream.h

ST_RDMA_PROGS := exanet_rdma_basic exanet_rdma_remote exanet_rdma_alltoall exanet_odp exanet_coll
ST_PROGS := exanet_basic exanet_bad_input exanet_protection exanet_msg_remote exanet_alltoall \
	exanet_module exanet_isolation exanet_limits $(ST_RDMA_PROGS) exanet_irq exanet_irq_teardown \
	exanet_ipd exanet_fi exanet_fi_atomic exanet_fi_thresh exanet_mpi exanet_coll_mpi exanet_evb exa_fault_inject exa_poll_wait
ST_BINS := $(addprefix $(ST_OUT)/,$(ST_PROGS))
# helpers the device-model tests run on the nodes (no TAP, not in tests.list):
# exanet_rdma_stream, of direct_test.py's node restart
ST_HELPERS := $(ST_OUT)/exanet_rdma_stream
ST_LIB_HDRS += $(ST_DIR)/exanet/exa_rdma.h $(ST_DIR)/lib/exa_kid.h $(ST_DIR)/lib/exa_limits.h $(TOP)/uapi/exanet_rdma.h \
	$(TOP)/uapi/exa_domain.h $(ST_DIR)/exanet/ipd_test.h $(ST_DIR)/exanet/odp_test.h \
	$(ST_DIR)/exanet/mpi_test.h \
	$(ST_DIR)/lib/coll_ref.h $(TOP)/uapi/exanet_coll.h

$(ST_OUT)/%: $(ST_DIR)/exanet/%.c $(ST_LIB_SRCS) $(ST_LIB_HDRS) $(LIBEXANET_SO) \
		$(LIBEXANET_DIR)/include/libexanet.h $(TOP)/uapi/exanet.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(ST_LIB_CFLAGS) -o $@ $< $(ST_LIB_SRCS) $(USER_LDFLAGS) \
		$(ST_LIB_LDLIBS) $(LIBEXANET_LDLIBS)

# exanet_ipd, exanet_fi, exanet_msg_remote, exanet_coll and exanet_odp:
# one translation unit each, their cases in <program>-*.h included by the
# .c in run order (the pattern rule above builds the last three; the lines
# below add their parts).  exanet_ipd forges heartbeats with the daemon's
# own encoder.
ST_IPD_HDRS := $(addprefix $(ST_DIR)/exanet/exanet_ipd-,traffic.h hostile.h peers.h modes.h \
	poweroff.h)
ST_FI_HDRS := $(addprefix $(ST_DIR)/exanet/exanet_fi-,getinfo.h xfer.h datapath.h faults.h \
	mrcache.h)
ST_MSG_HDRS := $(addprefix $(ST_DIR)/exanet/exanet_msg_remote-,delivery.h failures.h tools.h \
	bypass.h)
$(ST_OUT)/exanet_msg_remote: $(ST_MSG_HDRS)
ST_COLL_HDRS := $(ST_DIR)/exanet/coll_test.h $(addprefix $(ST_DIR)/exanet/exanet_coll-,data.h \
	groups.h refused.h members.h limits.h)
$(ST_OUT)/exanet_coll: $(ST_COLL_HDRS)
$(ST_OUT)/exanet_odp: $(addprefix $(ST_DIR)/exanet/exanet_odp-,changes.h load.h)

$(ST_OUT)/exanet_ipd: $(ST_DIR)/exanet/exanet_ipd.c $(ST_IPD_HDRS) $(ST_LIB_SRCS) $(ST_LIB_HDRS) \
		$(LIBEXANET_SO) $(LIBEXANET_DIR)/include/libexanet.h \
		$(TOP)/tools/exanet-ipd/ipd_proto.c $(TOP)/tools/exanet-ipd/ipd_proto.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(ST_LIB_CFLAGS) -o $@ $< $(ST_LIB_SRCS) \
		$(TOP)/tools/exanet-ipd/ipd_proto.c \
		$(USER_LDFLAGS) $(ST_LIB_LDLIBS) $(LIBEXANET_LDLIBS) -lz

# The fixture of the libfabric provider tests, the cases both run and
# their bodies by concern (fi_cases-*.h), all in the program's one
# translation unit
FI_TEST_HDRS := $(addprefix $(ST_DIR)/lib/,fi_test.h fi_objs.h fi_cases.h fi_cases-xfer.h \
	fi_cases-endpoints.h fi_cases-close.h)

# the libfabric provider through Debian's libfabric (the provider itself is
# found by libfabric at run time, from the node image's provider directory)
$(ST_OUT)/exanet_fi: $(ST_DIR)/exanet/exanet_fi.c $(ST_FI_HDRS) $(ST_LIB_SRCS) $(ST_LIB_HDRS) \
		$(LIBEXANET_SO) $(TOP)/lib/fi-providers/fi_exanet.h \
		$(FI_TEST_HDRS) $(XFI_SO)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(ST_LIB_CFLAGS) -o $@ $< $(ST_LIB_SRCS) $(USER_LDFLAGS) \
		$(ST_LIB_LDLIBS) $(LIBEXANET_LDLIBS) -lfabric -lpthread

$(ST_OUT)/exanet_fi_atomic: $(ST_DIR)/exanet/exanet_fi_atomic.c $(ST_LIB_SRCS) $(ST_LIB_HDRS) \
		$(ST_DIR)/lib/fi_objs.h \
		$(LIBEXANET_SO) $(XFI_SO)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(ST_LIB_CFLAGS) -o $@ $< $(ST_LIB_SRCS) $(USER_LDFLAGS) \
		$(ST_LIB_LDLIBS) $(LIBEXANET_LDLIBS) -lfabric

# measurement helper for the eager/rendezvous threshold (not in tests.list)
$(ST_OUT)/exanet_fi_thresh: $(ST_DIR)/exanet/exanet_fi_thresh.c $(ST_LIB_SRCS) $(ST_LIB_HDRS) \
		$(LIBEXANET_SO) $(XFI_SO)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(ST_LIB_CFLAGS) -o $@ $< $(ST_LIB_SRCS) $(USER_LDFLAGS) \
		$(ST_LIB_LDLIBS) $(LIBEXANET_LDLIBS) -lfabric

# MPI programs, built with Debian's Open MPI wrapper and started by mpirun
# from exanet_mpi (the node image carries Open MPI, tools/cluster/mkinitramfs.sh)
ST_MPI_BINS := $(ST_OUT)/mpi/exanet_mpi_check $(ST_OUT)/mpi/exanet_coll_check
$(ST_OUT)/mpi/%: $(ST_DIR)/exanet/mpi/%.c
	@mkdir -p $(@D)
	$(MPICC) $(USER_CFLAGS) -o $@ $< -lm

# exanet_evb reads exanet-evb's JSON (json-c)
$(ST_OUT)/exanet_evb: $(ST_DIR)/exanet/exanet_evb.c $(ST_LIB_SRCS) $(ST_LIB_HDRS) $(LIBEXANET_SO) \
		$(LIBEXANET_DIR)/include/libexanet.h $(TOP)/uapi/exanet.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(ST_LIB_CFLAGS) $(JSON_CFLAGS) -o $@ $< $(ST_LIB_SRCS) \
		$(USER_LDFLAGS) $(ST_LIB_LDLIBS) $(LIBEXANET_LDLIBS) $(JSON_LIBS)

$(ST_OUT)/tests.list: $(ST_DIR)/exanet/tests.list
	@mkdir -p $(@D)
	cp $< $@

# The EXTOLL in-VM selftests: selftests/extoll/*.c -> $(BUILD)/selftests/extoll/
# plus tests.list (same format as selftests/exanet/tests.list; run on
# clusters with the extoll device, see Documentation/extoll/librma2.md), on
# librma2 and libvelo2 (lib/extoll.mk).
EXTOLL_ST_OUT := $(BUILD)/selftests/extoll
EXTOLL_ST_PROGS := extoll_rma2_basic extoll_velo2_basic extoll_remote extoll_alltoall \
	extoll_protection extoll_isolation extoll_teardown extoll_bad_input extoll_module extoll_limits \
	extoll_direct
EXTOLL_ST_BINS := $(addprefix $(EXTOLL_ST_OUT)/,$(EXTOLL_ST_PROGS))
# helpers the device-model tests run on the nodes (no TAP, not in tests.list):
# extoll_put_stream, of direct_test.py's node restart
EXTOLL_ST_HELPERS := $(EXTOLL_ST_OUT)/extoll_put_stream
EXTOLL_ST_SRCS := $(ST_LIB_SRCS)
EXTOLL_ST_DEPS := $(EXTOLL_ST_SRCS) $(ST_DIR)/lib/oob.h $(KSFT_HDRS) $(EXA_GENL_H) \
	$(ST_DIR)/lib/stream_tally.h \
	$(ST_DIR)/lib/exa_util.h $(ST_DIR)/extoll/extoll_test.h \
	$(ST_DIR)/extoll/extoll_raw.h $(ST_DIR)/lib/exa_kid.h \
	$(ST_DIR)/lib/exa_limits.h $(TOP)/uapi/exa_domain.h \
	$(RMA2_HDRS) $(VELO2_HDRS) $(RMA2_SO) $(VELO2_SO)

$(EXTOLL_ST_OUT)/%: $(ST_DIR)/extoll/%.c $(EXTOLL_ST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) $(ST_LIB_CFLAGS) -o $@ $< $(EXTOLL_ST_SRCS) \
		$(USER_LDFLAGS) $(ST_LIB_LDLIBS) $(RMA2_LDLIBS) $(VELO2_LDLIBS)

# the provider "extoll" through Debian's libfabric (found at run time in the
# node image's provider directory); fixture shared with exanet_fi
$(EXTOLL_ST_OUT)/extoll_fi: $(ST_DIR)/extoll/extoll_fi.c $(FI_TEST_HDRS) $(EXTOLL_ST_DEPS) \
		$(XFI_EXTOLL_SO)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) $(ST_LIB_CFLAGS) -o $@ $< $(EXTOLL_ST_SRCS) \
		$(USER_LDFLAGS) $(ST_LIB_LDLIBS) $(RMA2_LDLIBS) $(VELO2_LDLIBS) -lfabric

# FI_ATOMIC of the provider "extoll": exanet_fi_atomic's source built for it
$(EXTOLL_ST_OUT)/extoll_fi_atomic: $(ST_DIR)/exanet/exanet_fi_atomic.c $(ST_LIB_SRCS) \
		$(ST_LIB_HDRS) $(ST_DIR)/lib/fi_objs.h $(LIBEXANET_SO) $(XFI_EXTOLL_SO)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(ST_LIB_CFLAGS) -DFA_PROV='"extoll"' \
		-DFA_DEVICE='"/dev/extoll/rma2"' -o $@ $< $(ST_LIB_SRCS) $(USER_LDFLAGS) \
		$(ST_LIB_LDLIBS) $(LIBEXANET_LDLIBS) -lfabric

# Debian's Open MPI over the provider "extoll" (mpirun of exanet_mpi's check
# program; fixture in selftests/exanet/mpi_test.h)
$(EXTOLL_ST_OUT)/extoll_mpi: $(ST_DIR)/extoll/extoll_mpi.c $(ST_DIR)/exanet/mpi_test.h $(ST_LIB_SRCS) \
		$(ST_LIB_HDRS) $(LIBEXANET_SO) $(XFI_EXTOLL_SO) $(ST_MPI_BINS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(ST_LIB_CFLAGS) -o $@ $< $(ST_LIB_SRCS) $(USER_LDFLAGS) \
		$(ST_LIB_LDLIBS) $(LIBEXANET_LDLIBS)

$(EXTOLL_ST_OUT)/tests.list: $(ST_DIR)/extoll/tests.list
	@mkdir -p $(@D)
	cp $< $@

# the EXTOLL tools (tools/build.mk) run between two nodes
$(EXTOLL_ST_OUT)/extoll_tools: $(ST_DIR)/extoll/extoll_tools.sh
	@mkdir -p $(@D)
	install -m 0755 $< $@

# selftests/extoll/extoll_compat.c is built like an outside client: only
# the pkg-config flags of the staged tree, pscom's warning set, -Werror.
# The same binary is the host test test_rma2_compat (it SKIPs without a
# device, so on the host it proves the build and link).
EXTOLL_COMPAT_CFLAGS := -std=gnu99 -O2 -Wall -Wextra -Wconversion -Wstrict-prototypes \
	-Wmissing-prototypes -Wshadow -Wundef -Werror-implicit-function-declaration -Werror
EXTOLL_PKG = PKG_CONFIG_PATH=$(EXTOLL_PC_STAGED) pkg-config

$(EXTOLL_ST_OUT)/extoll_compat: $(ST_DIR)/extoll/extoll_compat.c $(EXTOLL_STAGED_HDRS) \
		$(EXTOLL_PC_STAGED)/rma2.pc $(EXTOLL_PC_STAGED)/velo2.pc $(RMA2_SO) $(VELO2_SO)
	@mkdir -p $(@D)
	$(CC) $(EXTOLL_COMPAT_CFLAGS) $$($(EXTOLL_PKG) --cflags rma2 velo2) -o $@ $< \
		$$($(EXTOLL_PKG) --libs rma2 velo2) -Wl,-rpath,$(EXTOLL_LIB_OUT)

ALL_TARGETS += $(EXTOLL_ST_BINS) $(EXTOLL_ST_HELPERS) $(EXTOLL_ST_OUT)/tests.list $(EXTOLL_ST_OUT)/extoll_tools \
	$(EXTOLL_ST_OUT)/extoll_compat $(EXTOLL_ST_OUT)/extoll_fi $(EXTOLL_ST_OUT)/extoll_mpi \
	$(EXTOLL_ST_OUT)/extoll_fi_atomic

# The structured fuzzer (selftests/fuzz/, Documentation/fuzzing.md): one
# program for both NICs, listed in its own tests.list (run on the clusters
# whose nodes carry the ExaNet and the EXTOLL NIC).
FUZZ_OUT := $(BUILD)/selftests/fuzz
FUZZ_SRCS := $(addprefix $(ST_DIR)/fuzz/,exa_fuzz.c fuzz_ops.c fuzz_ioctl.c fuzz_map.c fuzz_netlink.c)
FUZZ_BINS := $(FUZZ_OUT)/exa_fuzz $(FUZZ_OUT)/tests.list

$(FUZZ_OUT)/exa_fuzz: $(FUZZ_SRCS) $(ST_DIR)/fuzz/fuzz.h $(ST_DIR)/fuzz/fuzz_ops.h $(ST_LIB_SRCS) $(ST_LIB_HDRS) \
		$(ST_DIR)/extoll/extoll_test.h $(LIBEXANET_SO) $(RMA2_SO) $(VELO2_SO) \
		$(RMA2_HDRS) $(VELO2_HDRS) $(TOP)/uapi/extoll.h $(TOP)/uapi/extoll_hw.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) $(ST_LIB_CFLAGS) -o $@ $(FUZZ_SRCS) \
		$(ST_LIB_SRCS) $(USER_LDFLAGS) $(ST_LIB_LDLIBS) \
		$(LIBEXANET_LDLIBS) $(RMA2_LDLIBS) $(VELO2_LDLIBS) -lpthread

$(FUZZ_OUT)/tests.list: $(ST_DIR)/fuzz/tests.list
	@mkdir -p $(@D)
	cp $< $@

ALL_TARGETS += $(FUZZ_BINS)

# Host unit tests.  test_libexanet_fake links the library source against a
# fake kernel (ld --wrap of open/ioctl/mmap/munmap/close).
HT_PROGS := test_libexanet_fake test_oob test_harness test_pingpong_common test_tool_sizes test_ipd_proto \
	test_xfi_proto test_xfi_atomic test_coll_ref test_xfi_getinfo test_xfi_api \
	test_xfi_xfer
HT_BINS := $(addprefix $(HT_OUT)/,$(HT_PROGS))
HT_WRAP := -Wl,--wrap=open,--wrap=ioctl,--wrap=mmap,--wrap=munmap,--wrap=close

$(HT_OUT)/test_libexanet_fake: $(ST_DIR)/host/test_libexanet_fake.c \
		$(LIBEXANET_SRCS) $(LIBEXANET_HDRS) $(KSFT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -o $@ $< $(LIBEXANET_SRCS) $(HT_WRAP) $(USER_LDFLAGS)

$(HT_OUT)/test_oob: $(ST_DIR)/host/test_oob.c $(ST_DIR)/lib/oob.c $(ST_DIR)/lib/oob.h \
		$(KSFT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -o $@ $< $(ST_DIR)/lib/oob.c $(USER_LDFLAGS)

$(HT_OUT)/harness_sample: $(ST_DIR)/host/harness_sample.c $(KSFT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -o $@ $< $(USER_LDFLAGS)

$(HT_OUT)/test_harness: $(ST_DIR)/host/test_harness.c $(KSFT_HDRS) \
		$(HT_OUT)/harness_sample
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -o $@ $< $(USER_LDFLAGS)

$(HT_OUT)/test_pingpong_common: $(ST_DIR)/host/test_pingpong_common.c $(PP_COMMON) \
		$(PP_COMMON_H) $(KSFT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(PP_CFLAGS) -o $@ $< $(PP_COMMON) $(USER_LDFLAGS) \
		$(JSON_LIBS)

$(HT_OUT)/test_tool_sizes: $(ST_DIR)/host/test_tool_sizes.c $(TOOL_SIZES) \
		$(TOOLS_COMMON)/tool_sizes.h $(TOOLS_COMMON)/tool_parse.h $(KSFT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -I$(TOOLS_COMMON) -o $@ $< $(TOOL_SIZES) $(USER_LDFLAGS)

$(HT_OUT)/test_xfi_proto: $(ST_DIR)/host/test_xfi_proto.c $(TOP)/lib/fi-providers/xfi_proto.c \
		$(TOP)/lib/fi-providers/xfi_proto.h $(KSFT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -o $@ $< $(TOP)/lib/fi-providers/xfi_proto.c $(USER_LDFLAGS)

$(HT_OUT)/test_xfi_atomic: $(ST_DIR)/host/test_xfi_atomic.c $(TOP)/lib/fi-providers/xfi_proto.c \
		$(TOP)/lib/fi-providers/xfi_atomic_ops.c $(TOP)/lib/fi-providers/xfi_proto.h \
		$(TOP)/lib/fi-providers/xfi_atomic_ops.h $(KSFT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -o $@ $< $(TOP)/lib/fi-providers/xfi_proto.c \
		$(TOP)/lib/fi-providers/xfi_atomic_ops.c $(USER_LDFLAGS) -lpthread

# both providers (build/lib) through Debian's libfabric, devices faked
$(HT_OUT)/test_xfi_getinfo: $(ST_DIR)/host/test_xfi_getinfo.c $(ST_DIR)/lib/fi_hints.h \
		$(KSFT_HDRS) $(XFI_SO) $(XFI_EXTOLL_SO)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -o $@ $< $(USER_LDFLAGS) -lfabric

# The provider's engine over a loopback NIC in process memory
# (selftests/host/xfi_nic_loop.c), linked like the real providers
# (lib/fabric.mk) into two test providers: "loopack" (a send's outcome at
# the next poll, as ExaNet's ACK) and "loopnow" (at once, as EXTOLL's VELO,
# with the engine's fast path).  test_xfi_api reaches them through
# libfabric (FI_PROVIDER_PATH=build/host-tests/xfiloop).
XFI_LOOP_OUT := $(HT_OUT)/xfiloop
XFI_LOOP_SOS := $(XFI_LOOP_OUT)/libloopack-fi.so $(XFI_LOOP_OUT)/libloopnow-fi.so
$(XFI_LOOP_OUT)/libloop%-fi.so: $(XFI_ENGINE_SRCS) $(XFI_ENGINE_HDRS) $(XFI_DIR)/fi_prov.map \
		$(ST_DIR)/host/xfi_nic_loop.c $(ST_DIR)/host/xfi_nic_loop.h $(ST_DIR)/host/xfi_loop_calls.h
	@mkdir -p $(@D)
	$(XFI_FABRIC_CHECK)
	$(call xfi_link,xfi_nic_loop.h,-I$(ST_DIR)/host -I$(XFI_DIR) \
		-DXFI_LOOP_AT_ONCE=$(if $(filter now,$*),1,0) $(XFI_ENGINE_SRCS) \
		$(ST_DIR)/host/xfi_nic_loop.c,)

# every libfabric call of the offered capabilities, flag by flag: the
# control calls (test_xfi_api) and the data calls (test_xfi_xfer)
$(HT_OUT)/test_xfi_api $(HT_OUT)/test_xfi_xfer: $(HT_OUT)/%: $(ST_DIR)/host/%.c \
		$(ST_DIR)/host/xfi_loop_test.h $(ST_DIR)/host/xfi_loop_calls.h $(KSFT_HDRS) $(XFI_LOOP_SOS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -o $@ $< $(USER_LDFLAGS) -lfabric

# the allreduce reference of exanet_coll (header only, no device)
$(HT_OUT)/test_coll_ref: $(ST_DIR)/host/test_coll_ref.c $(ST_DIR)/lib/coll_ref.h \
		$(TOP)/uapi/exanet_coll.h $(KSFT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -o $@ $< $(USER_LDFLAGS)

$(HT_OUT)/test_ipd_proto: $(ST_DIR)/host/test_ipd_proto.c $(TOP)/tools/exanet-ipd/ipd_proto.c \
		$(TOP)/tools/exanet-ipd/ipd_proto.h $(KSFT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) -o $@ $< $(TOP)/tools/exanet-ipd/ipd_proto.c $(USER_LDFLAGS) -lz

# coll/exanet on the host (lib/coll-exanet.mk): mpirun of exanet_coll_check
# without a device, and with a stand-in libexanet.so.1 that emulates the
# collective unit in shared memory (found first through LD_LIBRARY_PATH)
COLLX_HT := $(HT_OUT)/test_coll_exanet
COLLX_FAKE := $(HT_OUT)/fakeni/libexanet.so.1
$(COLLX_FAKE): $(ST_DIR)/host/coll_exanet_fakeni.c $(LIBEXANET_DIR)/include/libexanet.h \
		$(TOP)/uapi/exanet_coll.h $(LIBEXANET_DIR)/libexanet.map
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -fPIC -fvisibility=hidden -shared -Wl,-soname,libexanet.so.1 \
		-Wl,--version-script=$(LIBEXANET_DIR)/libexanet.map -o $@ $< $(USER_LDFLAGS)
$(COLLX_HT): $(ST_DIR)/host/test_coll_exanet.sh $(COLLX_FAKE) $(COLLX_SO) \
		$(ST_OUT)/mpi/exanet_coll_check
	@mkdir -p $(@D)
	install -m 0755 $< $@
ALL_TARGETS += $(COLLX_HT)
HOST_TESTS += $(COLLX_HT)

# The EXTOLL host tests (librma2 and libvelo2, lib/extoll.mk):
# test_rma2_abi: layout/enum/constant/macro checks (static + TAP);
# test_extoll2_list: the exported extoll2_list pools, through the .so;
# test_extoll_kernel_fake: both libraries' sources against a fake kernel
# (ld --wrap of open/ioctl/mmap/munmap/close/calloc/aligned_alloc);
# test_rma2_fake / test_velo2_fake: the library sources linked with a fake
# device (endpoint over plain memory); test_rma2_cxx: headers in C++ next to
# a pscom-style list.h; test_rma2_compat: the compatibility client above.
EXTOLL_HT := $(HT_OUT)/test_rma2_abi $(HT_OUT)/test_rma2_fake $(HT_OUT)/test_velo2_fake \
	$(HT_OUT)/test_rma2_cxx $(HT_OUT)/test_extoll2_list \
	$(HT_OUT)/test_extoll_kernel_fake
EXTOLL_HT_DEPS := $(RMA2_HDRS) $(VELO2_HDRS) $(KSFT_HDRS)

$(HT_OUT)/test_rma2_abi: $(ST_DIR)/host/test_rma2_abi.c $(EXTOLL_HT_DEPS) $(RMA2_SO) $(VELO2_SO)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) -o $@ $< $(USER_LDFLAGS) \
		-L$(EXTOLL_LIB_OUT) -lrma2 -lvelo2 -Wl,-rpath,$(EXTOLL_LIB_OUT)

$(HT_OUT)/test_extoll2_list: $(ST_DIR)/host/test_extoll2_list.c $(EXTOLL_HT_DEPS) $(RMA2_SO)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) -o $@ $< $(USER_LDFLAGS) \
		-L$(EXTOLL_LIB_OUT) -lrma2 -Wl,-rpath,$(EXTOLL_LIB_OUT)

EXTOLL_HT_WRAP := -Wl,--wrap=open,--wrap=ioctl,--wrap=mmap,--wrap=munmap,--wrap=close \
	-Wl,--wrap=calloc,--wrap=aligned_alloc
$(HT_OUT)/test_extoll_kernel_fake: $(ST_DIR)/host/test_extoll_kernel_fake.c \
		$(EXTOLL_HT_DEPS) $(RMA2_SRCS) $(RMA2_INT_H) $(VELO2_SRCS) $(VELO2_INT_H)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) -o $@ $< $(sort $(RMA2_SRCS) $(VELO2_SRCS)) \
		$(EXTOLL_HT_WRAP) $(USER_LDFLAGS) -lpthread

$(HT_OUT)/test_rma2_fake: $(ST_DIR)/host/test_rma2_fake.c $(EXTOLL_HT_DEPS) \
		$(RMA2_SRCS) $(RMA2_INT_H)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) -I$(RMA2_DIR)/src -o $@ $< $(RMA2_SRCS) \
		$(USER_LDFLAGS) -lpthread

$(HT_OUT)/test_velo2_fake: $(ST_DIR)/host/test_velo2_fake.c $(EXTOLL_HT_DEPS) \
		$(VELO2_SRCS) $(VELO2_INT_H)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(EXTOLL_CFLAGS) -I$(VELO2_DIR)/src -o $@ $< $(VELO2_SRCS) \
		$(USER_LDFLAGS) -lpthread

CXX ?= g++
$(HT_OUT)/test_rma2_cxx: $(ST_DIR)/host/test_rma2_cxx.cpp $(EXTOLL_HT_DEPS) $(RMA2_SO) \
		$(VELO2_SO) $(EXTOLL_STAGED_HDRS)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -Wshadow -Wundef -Werror -I$(EXTOLL_INC_OUT) -o $@ $< \
		-L$(EXTOLL_LIB_OUT) -lrma2 -lvelo2 -Wl,-rpath,$(EXTOLL_LIB_OUT)

$(HT_OUT)/test_rma2_compat: $(EXTOLL_ST_OUT)/extoll_compat
	@mkdir -p $(@D)
	cp $< $@
EXTOLL_HT += $(HT_OUT)/test_rma2_compat

ALL_TARGETS += $(EXTOLL_HT)
HOST_TESTS += $(EXTOLL_HT)

ALL_TARGETS += $(ST_BINS) $(ST_HELPERS) $(ST_MPI_BINS) $(ST_OUT)/tests.list $(HT_BINS) $(HT_OUT)/harness_sample
HOST_TESTS += $(HT_BINS)

.PHONY: selftests host-check
# make selftests and make host-check: the top-level Makefile (after every
# part has added its programs).

# A longer fuzzing run on its own (Documentation/fuzzing.md):
#   make check-fuzz [EXA_FUZZ_SECONDS=600] [EXA_FUZZ_SEED=N]
EXA_FUZZ_SECONDS ?= 600
.PHONY: check-fuzz
check-fuzz: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@EXA_FUZZ_SECONDS=$(EXA_FUZZ_SECONDS) $(if $(EXA_FUZZ_SEED),EXA_FUZZ_SEED=$(EXA_FUZZ_SEED)) \
		$(TOP)/tools/cluster/run-tests --no-host --no-cluster-tests --filter '^exa_fuzz$$'
