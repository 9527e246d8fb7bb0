# ExaNet / EXTOLL fabric stack: top-level build.
#
#   make            build modules, libraries, tools and tests
#   make demo       boot a 2-node emulated cluster and run the ping-pong demo
#   make check      build everything and run all tests (host + in-VM)
#   make examples   the programs of examples/ into build/examples/
#                   (Documentation/getting-started.md)
#   make version    print the project's version (debian/changelog's top entry)
#   make check-debug  the in-VM suite on a KASAN/lockdep/kmemleak/UBSAN debug
#                   kernel (built once, cached), writes build/bench/debug.json
#   make check-fuzz only the fuzzer, EXA_FUZZ_SECONDS (600) [EXA_FUZZ_SEED=N]
#   make check-faults  the fault campaign of the torus (10^6 messages and RDMA
#                   blocks under random link faults), writes build/bench/faults.json
#   make check-fabtests  libfabric's own test suite (fabtests, built from
#                   FABTESTS_SRC, default ../shared/third-party/fabtests-*.tar.gz):
#                   its RDM cases on both providers (make check runs a quick share)
#   make bench-msg  messaging benchmark, writes build/bench/msg.json
#   make bench-rdma RDMA benchmark, writes build/bench/rdma.json
#   make bench-extoll EXTOLL VELO/RMA benchmark, writes build/bench/extoll.json
#   make deb        Debian packages into build/deb/ (packaging/build.mk)
#   make check-packages  install them into a clean root and test them
#   make bench-ip   IP over the fabric vs the management network, writes build/bench/ip.json
#   make bench-ip-breakdown  where one small UDP packet's time goes over exa0
#                   (guest ftrace, both nodes), writes build/bench/ip-breakdown.json
#   make bench-mpi  Open MPI over the exanet provider vs Open MPI over TCP,
#                   writes build/bench/mpi.json
#   make bench-latency  where the microseconds of an 8 B message go (QEMU trace
#                   events), writes build/bench/latency-breakdown.json
#   make bench-agent  the command channel (qemu-guest-agent), 1000 commands
#                   under load from one and from two clients, writes
#                   build/bench/agent.json
#   make results    Documentation/results.md and its plots (Documentation/results/)
#                   from whichever build/bench/*.json exist (python3-matplotlib)
#   make doc-pictures  Documentation/architecture.svg from architecture.dot
#                   (Graphviz's dot; not part of the default build)
#
# Each directory contributes a build.mk fragment; this file only ties them
# together.  Slow artefacts (the emulator) are cached under $(CACHE).

SHELL := /bin/bash
TOP := $(CURDIR)
BUILD := $(TOP)/build
CACHE ?= $(HOME)/.cache/exanet-fabric
KVER ?= $(shell $(TOP)/scripts/kver.sh 2>/dev/null)
KDIR ?= /usr/src/linux-headers-$(KVER)
export TOP BUILD CACHE KVER KDIR
# The project's version: the top entry of debian/changelog, its one source
# (the packages take theirs from it too).  The tools print it with --version
# (tools/common/tool_version.c); the libraries' sonames and pkg-config
# versions are their ABI versions instead (Documentation/packaging.md).
EXA_VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' $(TOP)/debian/changelog)

CC ?= gcc
USER_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror=implicit-function-declaration \
	-I$(TOP)/uapi -I$(TOP)/lib/libexanet/include -I$(TOP)/lib/common
USER_LDFLAGS :=
# MPI programs (selftests, benchmark): Debian's Open MPI wrapper compiler
MPICC ?= mpicc
# What the tools share (tools/common/): objects, each compiled once into
# $(TOOLS_OBJ) (tools/build.mk) and linked into every program that uses it,
# headers (with lib/common/'s, lib/build.mk), compiler flags and libraries;
# their JSON output is written with Debian's json-c (tool_json.c)
TOOLS_COMMON := $(TOP)/tools/common
TOOLS_OBJ := $(BUILD)/obj/tools
JSON_CFLAGS := $(shell pkg-config --cflags json-c 2>/dev/null || echo -I/usr/include/json-c)
JSON_LIBS := $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c)
TOOL_JSON := $(TOOLS_OBJ)/tool_json.o
TOOL_JSON_H := $(TOOLS_COMMON)/tool_json.h
# the one meaning of --sizes (tool_sizes.h)
TOOL_SIZES := $(TOOLS_OBJ)/tool_sizes.o
# every tool's --version (tool_version.h, EXA_VERSION)
TOOL_VERSION := $(TOOLS_OBJ)/tool_version.o
TOOL_VERSION_H := $(TOOLS_COMMON)/tool_version.h
# the ping-pong and bandwidth tools: parameters (pp_params.c) and the rest
PP_COMMON := $(TOOLS_OBJ)/pp_common.o $(TOOLS_OBJ)/pp_params.o $(TOOL_SIZES) $(TOOL_JSON) $(TOOL_VERSION)
PP_COMMON_H = $(TOOLS_COMMON)/pp_common.h $(TOOLS_COMMON)/pp_params.h $(TOOLS_COMMON)/tool_parse.h \
	$(TOOLS_COMMON)/tool_sizes.h $(TOOL_VERSION_H) \
	$(TOOL_JSON_H) $(EXA_COMMON_HDRS)
PP_CFLAGS := -I$(TOOLS_COMMON) $(JSON_CFLAGS)
# The one generic netlink client (exanetctl, exanet-ipd, the selftests'
# helpers): tools/common/exa_genl.c on Debian's libnl-genl-3
NL_CFLAGS := $(shell pkg-config --cflags libnl-genl-3.0 2>/dev/null || echo -I/usr/include/libnl3)
NL_LIBS := $(shell pkg-config --libs libnl-genl-3.0 2>/dev/null || echo -lnl-genl-3 -lnl-3)
EXA_GENL := $(TOOLS_OBJ)/exa_genl.o
EXA_GENL_H := $(TOP)/tools/common/exa_genl.h $(TOP)/uapi/exanet.h

# Fragments append to these.
ALL_TARGETS :=
HOST_TESTS :=
CLEAN_FILES :=

.PHONY: all version deps deps-debug style check examples check-debug check-faults check-fabtests demo bench-msg bench-rdma bench-extoll bench-ip bench-ip-breakdown bench-latency bench-mpi bench-evb bench-agent results doc-pictures clean
all:

deps:
	@$(TOP)/scripts/install-deps.sh

version:
	@echo $(EXA_VERSION)

deps-debug:
	@$(TOP)/scripts/install-deps.sh --debug-kernel

include scripts/linux-source.mk
include qemu-devices/build.mk
include drivers/build.mk
include lib/build.mk
include lib/extoll.mk
include lib/fabric.mk
include lib/coll-exanet.mk
include tools/build.mk
include packaging/build.mk
include selftests/build.mk
include tools/bench/build.mk
include tools/cluster/build.mk

all: $(ALL_TARGETS)

# Every part's in-VM and host test programs (the parts add to HOST_TESTS,
# so these rules come after all includes).
selftests: $(ST_BINS) $(ST_HELPERS) $(ST_MPI_BINS) $(ST_OUT)/tests.list $(FUZZ_BINS) \
	$(EXTOLL_ST_BINS) $(EXTOLL_ST_HELPERS) $(EXTOLL_ST_OUT)/tests.list $(EXTOLL_ST_OUT)/extoll_tools \
	$(EXTOLL_ST_OUT)/extoll_compat $(HOST_TESTS)

# Every host test of every part (the same programs make check runs).
host-check: $(HOST_TESTS)
	@fail=0; for t in $(HT_OUT)/test_*; do \
		echo "# host test $$(basename $$t)"; \
		$$t || fail=1; \
	done; exit $$fail

# The newcomer's examples (examples/Makefile), against this tree's librma2
# (its build-tree pkg-config file); not part of `all`.
examples: $(RMA2_SO) $(EXTOLL_PC_STAGED)/rma2.pc $(EXTOLL_STAGED_HDRS)
	@$(MAKE) --no-print-directory -C $(TOP)/examples EXA_BUILD=$(BUILD) O=$(BUILD)/examples

# The entry points re-invoke make after `deps` so that variables computed at
# parse time (KVER, KDIR) see the freshly installed kernel packages.
check: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/cluster/run-tests

# Coding style (Documentation/testing.md): QEMU's checkpatch.pl over
# qemu-devices/, the kernel's --strict over drivers/ and uapi/.
style: deps
	@$(MAKE) --no-print-directory qemu linux-source-files
	@KERNEL_CHECKPATCH=$(KERNEL_CHECKPATCH) $(TOP)/scripts/check-style.sh

# Documentation/debug-kernel.md; the kernel build runs under nice -n 10.
check-debug: deps-debug
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/cluster/check-debug

# Documentation/fabric.md, Documentation/testing.md
check-faults: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/fault-campaign

# Documentation/testing.md, "fabtests"
check-fabtests: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/fabtests/run-fabtests --set standard

demo: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/demo

bench-msg: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/bench-msg

bench-rdma: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/bench-rdma

bench-extoll: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/bench-extoll

bench-ip: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/bench-ip

bench-ip-breakdown: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/ip-breakdown

bench-latency: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/latency-breakdown

bench-mpi: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/bench-mpi

bench-evb: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/bench-evb

bench-agent: deps
	@$(MAKE) --no-print-directory all qemu initramfs
	@$(TOP)/tools/bench/bench-agent

# no deps: it only reads build/bench/, and draws nothing without matplotlib
results:
	@python3 $(TOP)/tools/bench/results.py

doc-pictures: $(TOP)/Documentation/architecture.svg

$(TOP)/Documentation/architecture.svg: $(TOP)/Documentation/architecture.dot
	@command -v dot >/dev/null || { echo "doc-pictures: needs Graphviz (apt-get install graphviz)" >&2; exit 1; }
	dot -Tsvg $< -o $@

clean:
	rm -rf $(BUILD) $(CLEAN_FILES)
