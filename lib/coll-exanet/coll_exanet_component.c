// SPDX-License-Identifier: MIT
/*
 * coll/exanet: the component Open MPI loads (registers the MCA parameters,
 * probes the NI once per process, makes a module with the operations for
 * each communicator it takes, prints the statistics at MPI_Finalize).
 * What the module and the operations read lives in coll_exanet_state.c.
 */
#include "coll_exanet.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "ompi/mca/rte/rte.h"

const char *mca_coll_exanet_component_version_string =
	"ExaNet collective offload (coll/exanet) for Open MPI " OMPI_VERSION;

static int coll_exanet_register(void);
static int coll_exanet_open(void);
static int coll_exanet_close(void);
static int coll_exanet_init_query(bool enable_progress_threads, bool enable_mpi_threads);
static mca_coll_base_module_t *coll_exanet_comm_query(struct ompi_communicator_t *comm,
						      int *priority);

mca_coll_base_component_2_0_0_t mca_coll_exanet_component = {
	.collm_version = {
		MCA_COLL_BASE_VERSION_2_0_0,
		.mca_component_name = "exanet",
		MCA_BASE_MAKE_VERSION(component, 1, 0, 0),
		.mca_open_component = coll_exanet_open,
		.mca_close_component = coll_exanet_close,
		.mca_register_component_params = coll_exanet_register,
	},
	.collm_data = {
		MCA_BASE_METADATA_PARAM_NONE
	},
	.collm_init_query = coll_exanet_init_query,
	.collm_comm_query = coll_exanet_comm_query,
};

static int coll_exanet_register(void)
{
	mca_coll_exanet_state_t *c = &mca_coll_exanet_state;
	mca_base_component_t *v = &mca_coll_exanet_component.collm_version;

	c->priority = 90;
	(void)mca_base_component_var_register(v, "priority",
		"Priority of the exanet coll component (90: above tuned); negative: never used",
		MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
		MCA_BASE_VAR_SCOPE_READONLY, &c->priority);
	c->verbose = 0;
	(void)mca_base_component_var_register(v, "verbose",
		"Verbosity of the exanet coll component (0: errors only, 10: set-up, 20: every call)",
		MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
		MCA_BASE_VAR_SCOPE_LOCAL, &c->verbose);
	c->min_ranks = 2;
	(void)mca_base_component_var_register(v, "min_ranks",
		"Communicators with fewer ranks are left to the other components",
		MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
		MCA_BASE_VAR_SCOPE_READONLY, &c->min_ranks);
	c->chunk_size = EXANET_COLL_MAX_LEN;
	(void)mca_base_component_var_register(v, "chunk_size",
		"Bytes per NI operation (the registered bounce buffers; longer vectors go in "
		"chunks); 64 .. 1048576",
		MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
		MCA_BASE_VAR_SCOPE_READONLY, &c->chunk_size);
	c->max_bytes = COLL_EXANET_MAX_BYTES;
	(void)mca_base_component_var_register(v, "max_bytes",
		"Allreduces of more bytes (count x datatype size) go to the next component, "
		"which is faster from there on the emulated nodes; 0: no limit",
		MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
		MCA_BASE_VAR_SCOPE_READONLY, &c->max_bytes);
	c->timeout = 0;
	(void)mca_base_component_var_register(v, "timeout",
		"Seconds an NI operation may take before the call fails with MPI_ERR_INTERN "
		"(0: as long as the NI says it is in progress)",
		MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
		MCA_BASE_VAR_SCOPE_READONLY, &c->timeout);
	c->stats = false;
	(void)mca_base_component_var_register(v, "stats",
		"Print \"coll_exanet: N offloaded ops\" per process at MPI_Finalize "
		"(also with COLL_EXANET_STATS=1 in the environment)",
		MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9,
		MCA_BASE_VAR_SCOPE_LOCAL, &c->stats);
	c->device = NULL;
	(void)mca_base_component_var_register(v, "device",
		"ExaNet device file (default " EXANET_DEFAULT_DEVICE ")",
		MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_9,
		MCA_BASE_VAR_SCOPE_READONLY, &c->device);
	return OMPI_SUCCESS;
}

static int coll_exanet_open(void)
{
	mca_coll_exanet_state_t *c = &mca_coll_exanet_state;
	const char *env = getenv("COLL_EXANET_STATS");

	c->output = opal_output_open(NULL);
	opal_output_set_verbosity(c->output, c->verbose);
	if (env && *env && strcmp(env, "0"))
		c->stats = true;
	if (c->chunk_size < 64)
		c->chunk_size = 64;
	if (c->chunk_size > (int)EXANET_COLL_MAX_LEN)
		c->chunk_size = EXANET_COLL_MAX_LEN;
	c->probe = -1;
	c->n_offloaded = c->n_fallback = c->n_setup_failed = 0;
	return OMPI_SUCCESS;
}

static int coll_exanet_close(void)
{
	mca_coll_exanet_state_t *c = &mca_coll_exanet_state;

	if (c->stats)
		opal_output(0, "coll_exanet: %llu offloaded ops, %llu fallback calls, "
			    "%llu communicators fell back (rank %u, %s)",
			    (unsigned long long)c->n_offloaded, (unsigned long long)c->n_fallback,
			    (unsigned long long)c->n_setup_failed,
			    (unsigned int)OMPI_PROC_MY_NAME->vpid,
			    c->probe == 1 ? "NI present" : "no NI collective unit");
	/* communicators still holding the NI (none after MPI_Finalize
	 * released them, but be safe before the library is unloaded) */
	mca_coll_exanet_ni_release_all();
	if (c->output >= 0) {
		opal_output_close(c->output);
		c->output = -1;
	}
	return OMPI_SUCCESS;
}

/*
 * Once per process, from the first comm_query: is there a device, and does
 * its NI have a collective unit?  The test takes an RDMA page in a device
 * file of its own and closes that file again (a file holding a page holds
 * one of the node's DMA ranks); the leaders open theirs on first use.
 * Returns 1 (usable: the communicators are taken) or 0 (declined).
 *
 * A libexanet older than 1.3 has no collective calls: calling one would
 * end the process (lazy binding), so their presence is checked first.
 */
static int coll_exanet_probe(void)
{
	mca_coll_exanet_state_t *c = &mca_coll_exanet_state;
	struct exanet_dev *dev = NULL;
	struct exanet_rdma *rdma = NULL;
	struct exanet_coll *coll = NULL;
	struct exanet_info info;
	void *lib;
	int err;

	if (c->probe >= 0)
		return c->probe;
	c->probe = 0;
	lib = dlopen("libexanet.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!lib || !dlsym(lib, "exanet_coll_open") || !dlsym(lib, "exanet_coll_group_create") ||
	    !dlsym(lib, "exanet_coll_start") || !dlsym(lib, "exanet_coll_poll")) {
		EXA_VERBOSE(5, "libexanet has no collectives (older than 1.3): not used");
		if (lib)
			dlclose(lib);
		return 0;
	}
	dlclose(lib);	/* still loaded: we link it */

	err = exanet_open(c->device, &dev);
	if (err) {
		EXA_VERBOSE(5, "%s: %s: not used", c->device ? c->device : EXANET_DEFAULT_DEVICE,
			    strerror(-err));
		return 0;
	}
	err = exanet_query(dev, &info);
	if (err) {
		EXA_VERBOSE(1, "exanet_query: %s: not used", strerror(-err));
		exanet_close(dev);
		return 0;
	}
	c->node_id = info.node_id;
	err = exanet_rdma_alloc(dev, &rdma);
	if (err == -ENODEV) {
		EXA_VERBOSE(5, "the NI has no RDMA contexts: not used");
		exanet_close(dev);
		return 0;
	}
	if (err) {
		/* e.g. -EBUSY: every DMA rank of the node is taken right now.
		 * The leaders find out on first use (all ranks then agree to
		 * fall back if one of them fails). */
		EXA_VERBOSE(5, "probe: exanet_rdma_alloc: %s: deciding on first use",
			    strerror(-err));
		exanet_close(dev);
		c->probe = 1;
		return 1;
	}
	err = exanet_coll_open(rdma, &coll);
	if (err) {
		EXA_VERBOSE(5, "the NI has no collective unit (exanet_coll_open: %s): not used",
			    strerror(-err));
		exanet_rdma_free(rdma);
		exanet_close(dev);
		if (err == -ENODEV)
			return 0;
		c->probe = 1;	/* something transient: decide on first use */
		return 1;
	}
	exanet_coll_close(coll);
	exanet_rdma_free(rdma);
	exanet_close(dev);
	EXA_VERBOSE(10, "node %u: NI with a collective unit", c->node_id);
	c->probe = 1;
	return 1;
}

static int coll_exanet_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
	(void)enable_progress_threads;
	(void)enable_mpi_threads;
	return OMPI_SUCCESS;
}

static mca_coll_base_module_t *coll_exanet_comm_query(struct ompi_communicator_t *comm,
						      int *priority)
{
	mca_coll_exanet_state_t *c = &mca_coll_exanet_state;
	mca_coll_exanet_module_t *m;
	int size;

	if (c->priority < 0 || OMPI_COMM_IS_INTER(comm))
		return NULL;
	size = ompi_comm_size(comm);
	if (size < 2 || size < c->min_ranks)
		return NULL;
	if (!coll_exanet_probe())
		return NULL;
	m = OBJ_NEW(mca_coll_exanet_module_t);
	if (!m)
		return NULL;
	*priority = c->priority;
	m->super.coll_module_enable = mca_coll_exanet_module_enable;
	m->super.ft_event = NULL;
	m->super.coll_allreduce = mca_coll_exanet_allreduce;
	m->super.coll_barrier = mca_coll_exanet_barrier;
	EXA_VERBOSE(10, "taking %s (cid %u, %d ranks), priority %d", comm->c_name,
		    ompi_comm_get_cid(comm), size, c->priority);
	return &m->super;
}
