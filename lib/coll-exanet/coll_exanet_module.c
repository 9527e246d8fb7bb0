// SPDX-License-Identifier: MIT
/*
 * coll/exanet: the module of a communicator.
 *
 * comm_query (coll_exanet_component.c) only looks at the communicator
 * (intra, size) and at the per-process probe of the NI; everything that
 * needs the communicator's collectives happens on the first offloadable
 * call (mca_coll_exanet_setup):
 *
 *   1. allgather (with the saved fallback) every rank's node id and
 *      process name;
 *   2. the ranks of a node form its local set, the lowest is its leader;
 *      the leaders form the NI group: member rank = index of the node among
 *      the communicator's distinct nodes in order of first appearance;
 *   3. each leader opens the process-wide NI resources (device file, RDMA
 *      page, collective page; shared by all communicators, refcounted),
 *      registers its bounce buffers and creates the group;
 *   4. every rank contributes "my part worked" to a MIN-allreduce (again
 *      the fallback): if anything failed anywhere, the leaders undo their
 *      part and the communicator uses the fallback from then on.
 *
 * A communicator whose ranks all share one node has nothing to gain from
 * the NI: it falls back at step 2 (every rank sees the same node list).
 */
#include "coll_exanet.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/rte/rte.h"

/* ---------------------------------------------------------------- the NI */

static pthread_mutex_t ni_lock = PTHREAD_MUTEX_INITIALIZER;
static struct coll_exanet_ni *the_ni;

static void ni_close(struct coll_exanet_ni *ni)
{
	if (ni->coll)
		exanet_coll_close(ni->coll);
	if (ni->rdma)
		exanet_rdma_free(ni->rdma);
	if (ni->dev)
		exanet_close(ni->dev);
	free(ni);
}

/* A reference to the process's NI resources, opening them on first use.
 * 0 or a negative errno. */
static int ni_get(struct coll_exanet_ni **nip)
{
	mca_coll_exanet_state_t *c = &mca_coll_exanet_state;
	struct coll_exanet_ni *ni;
	int err = 0;

	pthread_mutex_lock(&ni_lock);
	if (the_ni) {
		the_ni->refcount++;
		*nip = the_ni;
		goto out;
	}
	ni = calloc(1, sizeof(*ni));
	if (!ni) {
		err = -ENOMEM;
		goto out;
	}
	err = exanet_open(c->device, &ni->dev);
	if (!err)
		err = exanet_rdma_alloc(ni->dev, &ni->rdma);
	if (!err)
		err = exanet_coll_open(ni->rdma, &ni->coll);
	if (err) {
		ni_close(ni);
		goto out;
	}
	ni->refcount = 1;
	the_ni = ni;
	*nip = ni;
	EXA_VERBOSE(10, "NI opened: RDMA page %u, DMA rank %u", exanet_rdma_page(ni->rdma),
		    exanet_rdma_rank(ni->rdma));
out:
	pthread_mutex_unlock(&ni_lock);
	return err;
}

static void ni_put(struct coll_exanet_ni *ni)
{
	pthread_mutex_lock(&ni_lock);
	if (ni == the_ni && --ni->refcount == 0) {
		the_ni = NULL;
		ni_close(ni);
		EXA_VERBOSE(10, "NI closed");
	}
	pthread_mutex_unlock(&ni_lock);
}

/* Component close: whatever is still open (a communicator never freed). */
void mca_coll_exanet_ni_release_all(void)
{
	pthread_mutex_lock(&ni_lock);
	if (the_ni) {
		ni_close(the_ni);
		the_ni = NULL;
	}
	pthread_mutex_unlock(&ni_lock);
}

/* ---------------------------------------------------------------- module */

/* The leader's NI state of a communicator (group, bounce buffers). */
static void leader_release(mca_coll_exanet_module_t *m)
{
	if (m->grp) {
		int err = exanet_coll_group_destroy(m->grp);

		if (err)
			EXA_VERBOSE(1, "exanet_coll_group_destroy: %s", strerror(-err));
		m->grp = NULL;
	}
	if (m->mr) {
		exanet_dereg_mr(m->mr);
		m->mr = NULL;
	}
	free(m->bounce);
	m->bounce = NULL;
	free(m->tmp);
	m->tmp = NULL;
	if (m->ni) {
		ni_put(m->ni);
		m->ni = NULL;
	}
}

/* What follows the base module: no previous layer, nothing set up yet. */
static void module_construct(mca_coll_exanet_module_t *m)
{
	size_t first = offsetof(mca_coll_exanet_module_t, prev_allreduce);

	memset((char *)m + first, 0, sizeof(*m) - first);
	m->mode = COLL_EXANET_LAZY;
}

/* Communicator destruction (the last reference to the module). */
static void module_destruct(mca_coll_exanet_module_t *m)
{
	leader_release(m);
	free(m->local);
	m->local = NULL;
	if (m->prev_allreduce_module)
		OBJ_RELEASE(m->prev_allreduce_module);
	if (m->prev_barrier_module)
		OBJ_RELEASE(m->prev_barrier_module);
	if (m->prev_allgather_module)
		OBJ_RELEASE(m->prev_allgather_module);
}

OBJ_CLASS_INSTANCE(mca_coll_exanet_module_t, mca_coll_base_module_t,
		   module_construct, module_destruct);

/* Save the layer below (the components enabled before this one, i.e. of
 * lower priority): the fallback, and the allgather/allreduce of the set-up. */
int mca_coll_exanet_module_enable(mca_coll_base_module_t *module,
				  struct ompi_communicator_t *comm)
{
	mca_coll_exanet_module_t *m = (mca_coll_exanet_module_t *)module;
	mca_coll_base_comm_coll_t *cc = comm->c_coll;

	if (!cc->coll_allreduce || !cc->coll_allreduce_module || !cc->coll_barrier ||
	    !cc->coll_barrier_module || !cc->coll_allgather || !cc->coll_allgather_module) {
		opal_output_verbose(1, mca_coll_exanet_state.output,
				    "coll:exanet: no allreduce/barrier/allgather below this "
				    "component on %s: not used", comm->c_name);
		return OMPI_ERROR;
	}
	m->prev_allreduce = cc->coll_allreduce;
	m->prev_allreduce_module = cc->coll_allreduce_module;
	OBJ_RETAIN(m->prev_allreduce_module);
	m->prev_barrier = cc->coll_barrier;
	m->prev_barrier_module = cc->coll_barrier_module;
	OBJ_RETAIN(m->prev_barrier_module);
	m->prev_allgather = cc->coll_allgather;
	m->prev_allgather_module = cc->coll_allgather_module;
	OBJ_RETAIN(m->prev_allgather_module);
	return OMPI_SUCCESS;
}

/* ---------------------------------------------------------------- set-up */

/* 32-bit FNV-1a over 32-bit words, then a final avalanche. */
static uint32_t hash_words(uint32_t h, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 4; b++) {
			h ^= (w[i] >> (8 * b)) & 0xff;
			h *= 16777619u;
		}
	return h;
}

static uint32_t hash_final(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h ? h : 1;
}

/* Per rank, from the set-up allgather. */
struct setup_rec {
	uint32_t node;
	uint32_t jobid;
	uint32_t vpid;
};

/* The leader's part of step 3: 0 or a negative errno (what failed is said
 * at verbose level 1; the communicator then falls back, which is legal). */
static int leader_setup(mca_coll_exanet_module_t *m, const uint32_t *nodes,
			uint32_t my_member)
{
	mca_coll_exanet_state_t *c = &mca_coll_exanet_state;
	const char *what;
	int err;

	m->chunk = (size_t)c->chunk_size;
	what = "opening the NI";
	err = ni_get(&m->ni);
	if (err)
		goto fail;
	what = "bounce buffers";
	err = posix_memalign(&m->bounce, 4096, 2 * m->chunk) ? -ENOMEM : 0;
	if (err) {
		m->bounce = NULL;
		goto fail;
	}
	memset(m->bounce, 0, 2 * m->chunk);	/* touch: pinned below anyway */
	if (m->nlocal > 1) {
		m->tmp = malloc((size_t)(m->nlocal - 1) * m->chunk);
		if (!m->tmp) {
			err = -ENOMEM;
			goto fail;
		}
	}
	what = "exanet_reg_mr";
	err = exanet_reg_mr(m->ni->dev, m->bounce, 2 * m->chunk, 0, &m->mr);
	if (err) {
		m->mr = NULL;
		goto fail;
	}
	what = "exanet_coll_group_create";
	err = exanet_coll_group_create(m->ni->coll, m->key, (uint32_t)m->nnodes, my_member,
				       nodes, &m->grp);
	if (err) {
		m->grp = NULL;
		goto fail;
	}
	EXA_VERBOSE(10, "group key %#x: member %u of %d, slot %u", m->key, my_member, m->nnodes,
		    exanet_coll_group_slot(m->grp));
	return 0;
fail:
	EXA_VERBOSE(1, "%s: %s: the communicator falls back to software", what, strerror(-err));
	leader_release(m);
	return err;
}

int mca_coll_exanet_setup(mca_coll_exanet_module_t *m, struct ompi_communicator_t *comm)
{
	mca_coll_exanet_state_t *c = &mca_coll_exanet_state;
	int size = ompi_comm_size(comm), me = ompi_comm_rank(comm);
	struct setup_rec mine, *all = NULL;
	uint32_t *nodes = NULL, *words = NULL, my_member = 0, h;
	int rc, ok = 1, nn = 0;

	all = calloc((size_t)size, sizeof(*all));
	nodes = calloc((size_t)size, sizeof(*nodes));
	words = calloc((size_t)size * 2 + 3, sizeof(*words));
	free(m->local);
	m->local = calloc((size_t)size, sizeof(*m->local));
	if (!all || !nodes || !words || !m->local) {
		rc = OMPI_ERR_OUT_OF_RESOURCE;
		goto out;
	}
	/* 1. who is where */
	mine.node = c->node_id;
	mine.jobid = (uint32_t)OMPI_PROC_MY_NAME->jobid;
	mine.vpid = (uint32_t)OMPI_PROC_MY_NAME->vpid;
	rc = m->prev_allgather(&mine, 3, MPI_UINT32_T, all, 3, MPI_UINT32_T, comm,
			       m->prev_allgather_module);
	if (rc != MPI_SUCCESS)
		goto out;

	/* 2. the local set, the leader, the nodes in order of first appearance */
	m->nlocal = 0;
	for (int r = 0; r < size; r++) {
		int k;

		if (all[r].node == mine.node)
			m->local[m->nlocal++] = r;
		for (k = 0; k < nn; k++)
			if (nodes[k] == all[r].node)
				break;
		if (k == nn)
			nodes[nn++] = all[r].node;
		if (all[r].node == mine.node)
			my_member = (uint32_t)k;
	}
	m->nnodes = nn;
	m->leader = m->local[0] == me;
	if (nn < 2 || nn > EXANET_COLL_MAX_MEMBERS) {
		EXA_VERBOSE(10, "%s: %d node(s): the other components do it", comm->c_name, nn);
		m->mode = COLL_EXANET_FALLBACK;
		rc = MPI_SUCCESS;
		goto out;
	}

	/* The key: the same on every member, different for every live
	 * communicator of the job on a node.  The context id alone is not
	 * enough (the two halves of an MPI_Comm_split get the same one), with
	 * the exact membership (job and rank of every process) it is. */
	words[0] = ompi_comm_get_cid(comm);
	words[1] = mine.jobid;
	words[2] = (uint32_t)size;
	for (int r = 0; r < size; r++) {
		words[3 + 2 * r] = all[r].jobid;
		words[4 + 2 * r] = all[r].vpid;
	}
	h = hash_words(2166136261u, words, (size_t)size * 2 + 3);
	m->key = hash_final(h);

	/* 3. the leaders' NI state */
	if (m->leader && leader_setup(m, nodes, my_member))
		ok = 0;

	/* 4. everyone agrees, or everyone falls back */
	rc = m->prev_allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm,
			       m->prev_allreduce_module);
	if (rc != MPI_SUCCESS) {
		leader_release(m);
		goto out;
	}
	if (!ok) {
		leader_release(m);
		m->mode = COLL_EXANET_FALLBACK;
		c->n_setup_failed++;
		EXA_VERBOSE(1, "%s: NI set-up failed on some leader: software from now on",
			    comm->c_name);
	} else {
		m->mode = COLL_EXANET_OFFLOAD;
		EXA_VERBOSE(10, "%s: offload on %d nodes, %d local rank(s), %s, key %#x",
			    comm->c_name, nn, m->nlocal, m->leader ? "leader" : "not leader",
			    m->key);
	}
out:
	free(all);
	free(nodes);
	free(words);
	return rc;
}
