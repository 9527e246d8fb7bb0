/* SPDX-License-Identifier: MIT */
/*
 * coll/exanet: an out-of-tree Open MPI 4.1 "coll" component that runs
 * MPI_Allreduce and MPI_Barrier on the collective offload unit of the
 * ExaNet NI (uapi/exanet_coll.h, the collectives of libexanet 1.3).
 * Documentation/exanet/coll-exanet.md describes what it takes and when.
 *
 * Each file uses only those above it:
 *
 *   coll_exanet_state.c      what the others read: the MCA parameters, the
 *                            probe's outcome, this process's statistics
 *   coll_exanet_module.c     the module: enable (saves the fallback), the
 *                            lazy set-up on first use, destruction, the
 *                            process-wide device / RDMA page / collective page
 *   coll_exanet_ops.c        allreduce and barrier
 *   coll_exanet_component.c  the component Open MPI loads: registers the
 *                            parameters, probes the device, comm_query
 *                            (makes modules with the operations), statistics
 */
#ifndef COLL_EXANET_H
#define COLL_EXANET_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>

#include "mpi.h"
#include "opal/class/opal_object.h"
#include "opal/mca/mca.h"
#include "opal/util/output.h"
#include "ompi/constants.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"

#include <libexanet.h>

BEGIN_C_DECLS

/* ---- the component's state in this process (coll_exanet_state.c) ---- */

/*
 * coll_exanet_max_bytes: MPI_Allreduce on 4 emulated nodes was faster
 * offloaded up to 256 KiB and slower from 512 KiB (OSU, 512 KiB 7.6 ms
 * against 6.6 ms in software, 1 MiB 14.1 against 11.0 ms)
 */
#define COLL_EXANET_MAX_BYTES (256 * 1024)

typedef struct mca_coll_exanet_state_t {
	/* MCA parameters (registered by the component) */
	int priority;		/* coll_exanet_priority (90: above tuned) */
	int verbose;		/* coll_exanet_verbose */
	int min_ranks;		/* coll_exanet_min_ranks: smaller communicators declined */
	int chunk_size;		/* coll_exanet_chunk_size: bytes per NI operation */
	int max_bytes;		/* coll_exanet_max_bytes: longer allreduces to the others */
	int timeout;		/* coll_exanet_timeout: seconds per NI operation, 0 = none */
	bool stats;		/* coll_exanet_stats (or COLL_EXANET_STATS=1) */
	char *device;		/* coll_exanet_device: NULL = /dev/exanet0 */

	int output;		/* opal_output stream at coll_exanet_verbose */

	/* The per-process probe (first comm_query): -1 not yet, 0 no NI or no
	 * collective unit (every communicator declined), 1 usable */
	int probe;
	uint32_t node_id;

	/* statistics of this process */
	uint64_t n_offloaded;	/* operations that went through the exanet path */
	uint64_t n_fallback;	/* calls handed to the saved (fallback) module */
	uint64_t n_setup_failed;	/* communicators that fell back for good */
} mca_coll_exanet_state_t;

extern mca_coll_exanet_state_t mca_coll_exanet_state;

#define EXA_VERBOSE(level, ...) \
	opal_output_verbose((level), mca_coll_exanet_state.output, "coll:exanet: " __VA_ARGS__)

/* The component Open MPI finds by name (coll_exanet_component.c). */
OMPI_MODULE_DECLSPEC extern mca_coll_base_component_2_0_0_t mca_coll_exanet_component;

/* ---- per-process NI resources, shared by every communicator ---- */

/* The device file, its RDMA page and the collective page of that page:
 * opened by the first leader set-up, closed when the last module that
 * holds a reference goes. */
struct coll_exanet_ni {
	struct exanet_dev *dev;
	struct exanet_rdma *rdma;
	struct exanet_coll *coll;
	int refcount;
};

/* ---- module ---- */

enum coll_exanet_mode {
	COLL_EXANET_LAZY = 0,	/* not set up yet: first offloadable call does it */
	COLL_EXANET_OFFLOAD,	/* set up: offloadable calls use the NI */
	COLL_EXANET_FALLBACK,	/* decided (by every rank): software for good */
};

typedef struct mca_coll_exanet_module_t {
	mca_coll_base_module_t super;

	/* the previous layer, retained in module_enable */
	mca_coll_base_module_allreduce_fn_t prev_allreduce;
	mca_coll_base_module_t *prev_allreduce_module;
	mca_coll_base_module_barrier_fn_t prev_barrier;
	mca_coll_base_module_t *prev_barrier_module;
	mca_coll_base_module_allgather_fn_t prev_allgather;
	mca_coll_base_module_t *prev_allgather_module;

	enum coll_exanet_mode mode;

	/* the node-local set of this rank: comm ranks in increasing order,
	 * local[0] is the leader */
	int *local;
	int nlocal;
	bool leader;
	int nnodes;		/* distinct nodes of the communicator */
	uint32_t key;		/* the NI group's key */

	/* leaders only */
	struct coll_exanet_ni *ni;	/* reference held, or NULL */
	struct exanet_coll_group *grp;
	struct exanet_mr *mr;		/* registers bounce (2 * chunk bytes) */
	void *bounce;			/* src = bounce, dst = bounce + chunk */
	void *tmp;			/* (nlocal - 1) * chunk: local contributions */
	size_t chunk;			/* bytes per NI operation */
	uint64_t tag;			/* NI operation tag (counter) */
} mca_coll_exanet_module_t;

OBJ_CLASS_DECLARATION(mca_coll_exanet_module_t);

/* coll_exanet_module.c */
/* Save the layer below (coll_module_enable of every module). */
int mca_coll_exanet_module_enable(mca_coll_base_module_t *module,
				  struct ompi_communicator_t *comm);
int mca_coll_exanet_setup(mca_coll_exanet_module_t *m, struct ompi_communicator_t *comm);
void mca_coll_exanet_ni_release_all(void);

/* coll_exanet_ops.c */
int mca_coll_exanet_allreduce(const void *sbuf, void *rbuf, int count,
			      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
			      struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_exanet_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
/* EXANET_COLL_* of a (datatype, op) the NI can do, or -1 */
int mca_coll_exanet_map(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
			unsigned int *ni_dtype, unsigned int *ni_op, size_t *esize);

END_C_DECLS

#endif /* COLL_EXANET_H */
