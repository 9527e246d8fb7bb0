# coll/exanet: an out-of-tree Open MPI "coll" component (mca_coll_exanet.so)
# that runs MPI_Allreduce and MPI_Barrier on the ExaNet NI's collective unit
# (libexanet 1.3).  Open MPI loads every mca_coll_*.so of its component
# directory; Documentation/exanet/coll-exanet.md.
#
#   make coll-exanet          build/ompi/mca_coll_exanet.so
#   make install-coll-exanet  into OMPI_COMPDIR [DESTDIR=...]
#
# Built against Debian's Open MPI 4.1 (libopenmpi-dev): the public flags of
# `mpicc --showme:compile` plus the internal headers (ompi/mca/coll/coll.h,
# opal_config.h), which Debian ships under .../openmpi/include/openmpi.  The
# in-tree build finds libexanet in build/lib through $ORIGIN/../lib; the
# packaged one (PKG_NO_RPATH) in the multiarch directory.

COLLX_DIR := $(TOP)/lib/coll-exanet
COLLX_OUT := $(BUILD)/ompi
COLLX_SO := $(COLLX_OUT)/mca_coll_exanet.so
COLLX_SRCS := $(addprefix $(COLLX_DIR)/,coll_exanet_state.c coll_exanet_module.c coll_exanet_ops.c \
	coll_exanet_component.c)
COLLX_HDRS := $(COLLX_DIR)/coll_exanet.h $(LIBEXANET_DIR)/include/libexanet.h \
	$(TOP)/uapi/exanet.h $(TOP)/uapi/exanet_rdma.h $(TOP)/uapi/exanet_coll.h $(EXA_COMMON_HDRS)
# Open MPI's component directory (Debian: .../openmpi/lib/openmpi3)
OMPI_COMPDIR ?= /usr/lib/$(shell gcc -print-multiarch 2>/dev/null)/openmpi/lib/openmpi3
COLLX_MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
COLLX_MPI_INC := $(patsubst -I%,%,$(filter -I%,$(COLLX_MPI_CFLAGS)))
# the internal headers next to the public ones (Debian's layout)
COLLX_CFLAGS := $(COLLX_MPI_CFLAGS) $(filter-out $(filter -I%,$(COLLX_MPI_CFLAGS)),\
	$(foreach d,$(COLLX_MPI_INC),$(if $(wildcard $(d)/openmpi/opal_config.h),-I$(d)/openmpi)))
COLLX_LIBS := $(shell $(MPICC) --showme:link 2>/dev/null) -lopen-pal

ALL_TARGETS += $(COLLX_SO)

# opal_config.h and friends use C99 with GNU extensions; the component keeps
# the project's warnings and exports nothing but the component structure.
$(COLLX_SO): $(COLLX_SRCS) $(COLLX_HDRS) $(LIBEXANET_SO) $(TOP)/lib/coll-exanet.mk
	@mkdir -p $(@D)
	@test -n "$(COLLX_MPI_CFLAGS)" && \
		for d in $(COLLX_MPI_INC); do test -f $$d/openmpi/ompi/mca/coll/coll.h && exit 0; done; \
		{ echo "coll-exanet: Open MPI's headers (libopenmpi-dev) missing (make deps)" >&2; exit 1; }
	$(CC) $(filter-out -std=c11,$(USER_CFLAGS)) -std=gnu11 $(COLLX_CFLAGS) -fPIC \
		-fvisibility=hidden -shared -o $@ $(COLLX_SRCS) $(USER_LDFLAGS) \
		$(LIBEXANET_LDLIBS) $(COLLX_LIBS)

.PHONY: coll-exanet install-coll-exanet
coll-exanet: $(COLLX_SO)

# make install-coll-exanet [DESTDIR=...] [OMPI_COMPDIR=...]
install-coll-exanet: $(COLLX_SO)
	install -d $(DESTDIR)$(OMPI_COMPDIR)
	install -m 0644 $(COLLX_SO) $(DESTDIR)$(OMPI_COMPDIR)/
