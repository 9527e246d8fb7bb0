# User-space tools -> $(BUILD)/bin/: exanet-pingpong, udp-pingpong, exanetctl,
# exanet-mpi-bench, exanet-evb, the RDMA tools, exanet-ipd and the EXTOLL tools.
# (tools/cluster/ has its own build.mk.)

TOOLS_OUT := $(BUILD)/bin
# Code shared by several tools lives in tools/common/ (PP_COMMON and the
# rest in the top Makefile): each .c compiled once into $(TOOLS_OBJ), with
# the flags of all its users, and linked into the tools.
UDEV_LIBS := $(shell pkg-config --libs libudev 2>/dev/null || echo -ludev)

TOOLS_COMMON_HDRS := $(addprefix $(TOOLS_COMMON)/,exa_genl.h extoll_tool.h pp_common.h pp_params.h \
	rdma_tool.h rma2_tool.h tool_json.h tool_parse.h tool_sizes.h tool_version.h) $(EXA_COMMON_HDRS) \
	$(TOP)/uapi/exanet.h $(LIBEXANET_DIR)/include/libexanet.h $(RMA2_HDRS)
TOOLS_OBJ_CC = $(CC) $(USER_CFLAGS) $(NL_CFLAGS) $(JSON_CFLAGS) $(EXTOLL_CFLAGS) -I$(TOOLS_COMMON) \
	-c -o $@ $<
$(TOOLS_OBJ)/%.o: $(TOOLS_COMMON)/%.c $(TOOLS_COMMON_HDRS)
	@mkdir -p $(@D)
	$(TOOLS_OBJ_CC)
# the project's version, compiled into this object only
$(TOOL_VERSION): $(TOOLS_COMMON)/tool_version.c $(TOOL_VERSION_H) $(TOP)/debian/changelog
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -DEXA_VERSION='"$(EXA_VERSION)"' -c -o $@ $<
# the wait loop of the libraries (lib/common/exa_wait.c), for the tools
EXA_WAIT_OBJ := $(TOOLS_OBJ)/exa_wait.o
$(EXA_WAIT_OBJ): $(EXA_WAIT_SRC) $(EXA_COMMON_HDRS)
	@mkdir -p $(@D)
	$(TOOLS_OBJ_CC)

USER_TOOLS := $(TOOLS_OUT)/exanet-pingpong $(TOOLS_OUT)/udp-pingpong $(TOOLS_OUT)/exanetctl
ALL_TARGETS += $(USER_TOOLS)

$(TOOLS_OUT)/exanet-pingpong: $(TOP)/tools/exanet-pingpong/exanet-pingpong.c $(PP_COMMON) \
		$(PP_COMMON_H) $(LIBEXANET_SO) $(LIBEXANET_DIR)/include/libexanet.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(PP_CFLAGS) -o $@ $< $(PP_COMMON) \
		$(USER_LDFLAGS) $(LIBEXANET_LDLIBS) $(JSON_LIBS)

$(TOOLS_OUT)/udp-pingpong: $(TOP)/tools/udp-pingpong/udp-pingpong.c $(PP_COMMON) $(PP_COMMON_H)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(PP_CFLAGS) -o $@ $< $(PP_COMMON) $(USER_LDFLAGS) $(JSON_LIBS)

# exanetctl: one file a subcommand, what they share in exanetctl.h
EXANETCTL_DIR := $(TOP)/tools/exanetctl
EXANETCTL_SRCS := $(addprefix $(EXANETCTL_DIR)/,exanetctl.c ctl_devices.c ctl_show.c ctl_links.c ctl_pdid.c \
	ctl_run.c)
$(TOOLS_OUT)/exanetctl: $(EXANETCTL_SRCS) $(EXANETCTL_DIR)/exanetctl.h $(TOP)/uapi/exanet.h \
		$(TOP)/uapi/exa_torus.h $(TOOLS_COMMON)/tool_parse.h $(EXA_GENL) $(EXA_GENL_H) $(TOOL_JSON) \
		$(TOOL_JSON_H) $(TOOL_VERSION) $(TOOL_VERSION_H)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(NL_CFLAGS) $(JSON_CFLAGS) -I$(TOOLS_COMMON) -o $@ $(EXANETCTL_SRCS) $(EXA_GENL) \
		$(TOOL_JSON) $(TOOL_VERSION) $(USER_LDFLAGS) $(NL_LIBS) $(UDEV_LIBS) $(JSON_LIBS)

# MPI benchmark of make bench-mpi (Debian's Open MPI wrapper compiler)
MPI_BENCH := $(TOOLS_OUT)/exanet-mpi-bench
ALL_TARGETS += $(MPI_BENCH)
$(MPI_BENCH): $(TOP)/tools/mpi/exanet-mpi-bench.c $(TOOL_JSON) $(TOOL_JSON_H) $(TOOL_SIZES) \
		$(TOOLS_COMMON)/tool_sizes.h $(TOOL_VERSION) $(TOOL_VERSION_H)
	@mkdir -p $(@D)
	$(MPICC) $(USER_CFLAGS) $(JSON_CFLAGS) -I$(TOOLS_COMMON) -o $@ $< $(TOOL_JSON) $(TOOL_SIZES) \
		$(TOOL_VERSION) $(JSON_LIBS)

# Event building (make bench-evb, Documentation/evb.md)
EVB := $(TOOLS_OUT)/exanet-evb
ALL_TARGETS += $(EVB)
$(EVB): $(TOP)/tools/mpi/exanet-evb.c $(TOOLS_COMMON)/tool_parse.h $(TOOL_JSON) $(TOOL_JSON_H) \
		$(TOOL_SIZES) $(TOOLS_COMMON)/tool_sizes.h $(TOOL_VERSION) $(TOOL_VERSION_H)
	@mkdir -p $(@D)
	$(MPICC) $(USER_CFLAGS) $(JSON_CFLAGS) -I$(TOOLS_COMMON) -o $@ $< $(TOOL_JSON) $(TOOL_SIZES) \
		$(TOOL_VERSION) $(JSON_LIBS)

.PHONY: user-tools
user-tools: $(USER_TOOLS)

# RDMA tools (share pp_params.c for options, pp_common.c for TCP and
# rdma_tool.c for setup).
RDMA_TOOL_OBJS := $(PP_COMMON) $(TOOLS_OBJ)/rdma_tool.o
RDMA_TOOLS := $(TOOLS_OUT)/exanet-rdma-bw $(TOOLS_OUT)/exanet-rdma-lat
ALL_TARGETS += $(RDMA_TOOLS)

RDMA_TOOL_DEPS := $(TOOLS_COMMON)/rdma_tool.h $(RDMA_TOOL_OBJS) $(PP_COMMON_H) $(LIBEXANET_SO) \
	$(LIBEXANET_DIR)/include/libexanet.h
RDMA_TOOL_CC = $(CC) $(USER_CFLAGS) $(PP_CFLAGS) \
	-o $@ $< $(RDMA_TOOL_OBJS) $(USER_LDFLAGS) $(LIBEXANET_LDLIBS) $(JSON_LIBS)

$(TOOLS_OUT)/exanet-rdma-bw: $(TOP)/tools/exanet-rdma-bw/exanet-rdma-bw.c $(RDMA_TOOL_DEPS)
	@mkdir -p $(@D)
	$(RDMA_TOOL_CC)

$(TOOLS_OUT)/exanet-rdma-lat: $(TOP)/tools/exanet-rdma-lat/exanet-rdma-lat.c $(RDMA_TOOL_DEPS)
	@mkdir -p $(@D)
	$(RDMA_TOOL_CC)

# IP over the fabric daemon (Documentation/exanet/ipd.md).  ipd_proto.c is
# also linked into the host unit test selftests/host/test_ipd_proto.c.
IPD_DIR := $(TOP)/tools/exanet-ipd
IPD_SRCS := $(addprefix $(IPD_DIR)/,exanet-ipd.c ipd_peer.c ipd_tx.c ipd_rx.c ipd_live.c ipd_opts.c ipd_proto.c \
	ipd_status.c)
IPD_HDRS := $(addprefix $(IPD_DIR)/,ipd.h ipd_fabric.h ipd_proto.h)
ALL_TARGETS += $(TOOLS_OUT)/exanet-ipd

$(TOOLS_OUT)/exanet-ipd: $(IPD_SRCS) $(IPD_HDRS) $(TOOLS_COMMON)/tool_parse.h $(EXA_COMMON_HDRS) \
		$(EXA_GENL) $(EXA_GENL_H) $(TOOL_JSON) $(TOOL_JSON_H) $(TOOL_VERSION) $(TOOL_VERSION_H) \
		$(LIBEXANET_SO) $(LIBEXANET_DIR)/include/libexanet.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(NL_CFLAGS) $(JSON_CFLAGS) -I$(TOOLS_COMMON) -o $@ $(IPD_SRCS) $(EXA_GENL) \
		$(TOOL_JSON) $(TOOL_VERSION) $(USER_LDFLAGS) $(LIBEXANET_LDLIBS) $(NL_LIBS) $(JSON_LIBS) -lz

# EXTOLL tools: rma2-pingpong, rma2-bw, velo2-pingpong (options, TCP
# handshake and statistics from tools/common/pp_params.c and pp_common.c,
# the EXTOLL part from tools/common/extoll_tool.c, the RMA tools' from
# rma2_tool.c; the libraries in lib/extoll.mk).
EXTOLL_TOOL_OBJS := $(PP_COMMON) $(TOOLS_OBJ)/extoll_tool.o $(EXA_WAIT_OBJ)
RMA2_TOOL_OBJS := $(EXTOLL_TOOL_OBJS) $(TOOLS_OBJ)/rma2_tool.o
EXTOLL_TOOLS := $(TOOLS_OUT)/rma2-pingpong $(TOOLS_OUT)/rma2-bw $(TOOLS_OUT)/velo2-pingpong
ALL_TARGETS += $(EXTOLL_TOOLS)

EXTOLL_TOOL_DEPS := $(TOOLS_COMMON)/extoll_tool.h $(TOOLS_COMMON)/rma2_tool.h $(PP_COMMON_H) \
	$(RMA2_HDRS) $(VELO2_HDRS) $(RMA2_SO) $(VELO2_SO)
EXTOLL_TOOL_CC = $(CC) $(USER_CFLAGS) $(EXTOLL_CFLAGS) $(PP_CFLAGS) \
	-o $@ $< $(EXTOLL_TOOL_OBJS) $(USER_LDFLAGS) $(JSON_LIBS)

$(TOOLS_OUT)/rma2-pingpong: $(TOP)/tools/rma2-pingpong/rma2-pingpong.c $(RMA2_TOOL_OBJS) \
		$(EXTOLL_TOOL_DEPS)
	@mkdir -p $(@D)
	$(EXTOLL_TOOL_CC) $(TOOLS_OBJ)/rma2_tool.o $(RMA2_LDLIBS)
$(TOOLS_OUT)/rma2-bw: $(TOP)/tools/rma2-bw/rma2-bw.c $(RMA2_TOOL_OBJS) $(EXTOLL_TOOL_DEPS)
	@mkdir -p $(@D)
	$(EXTOLL_TOOL_CC) $(TOOLS_OBJ)/rma2_tool.o $(RMA2_LDLIBS)
$(TOOLS_OUT)/velo2-pingpong: $(TOP)/tools/velo2-pingpong/velo2-pingpong.c $(EXTOLL_TOOL_OBJS) \
		$(EXTOLL_TOOL_DEPS)
	@mkdir -p $(@D)
	$(EXTOLL_TOOL_CC) $(VELO2_LDLIBS)

.PHONY: extoll-tools
extoll-tools: $(EXTOLL_TOOLS)

# Host test: every tool's one-line answer to a bad option value (exit 2),
# before any device is opened (selftests/host/test_tool_args.sh).
TOOL_ARGS_HT := $(BUILD)/host-tests/test_tool_args
$(TOOL_ARGS_HT): $(TOP)/selftests/host/test_tool_args.sh $(USER_TOOLS) $(MPI_BENCH) $(EVB) \
		$(RDMA_TOOLS) $(TOOLS_OUT)/exanet-ipd $(EXTOLL_TOOLS)
	@mkdir -p $(@D)
	install -m 0755 $< $@
ALL_TARGETS += $(TOOL_ARGS_HT)
HOST_TESTS += $(TOOL_ARGS_HT)
