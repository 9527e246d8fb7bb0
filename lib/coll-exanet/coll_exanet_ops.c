// SPDX-License-Identifier: MIT
/*
 * coll/exanet: MPI_Allreduce and MPI_Barrier.
 *
 * Per chunk of at most coll_exanet_chunk_size bytes (the leader's
 * registered bounce buffers):
 *
 *   non-leader: send its part to the node's leader, receive the result;
 *   leader:     receive every local part, reduce them in comm rank order
 *               (acc = own part; acc = part(local[1]) op acc; ...: MPI's
 *               own reduction kernels, MPI_Reduce_local, on the fixed-size
 *               type of the NI type), run the
 *               allreduce of acc on the NI among the leaders, send the
 *               result to the local ranks.
 *
 * Every rank of a node so gets the bytes its leader got from the NI, and
 * the NI gives the same bytes to every leader: the result is bitwise the
 * same on every rank (for floating point too).  The messages go through
 * the PML on the communicator with the base collective tags, as Open MPI's
 * own algorithms do.  A leader whose NI operation fails prints one line,
 * sends an empty message (instead of the result) to its local ranks so
 * that nobody waits for it, and every rank of the node returns
 * MPI_ERR_INTERN.  A barrier is a count-0 allreduce (a 1-byte "done"
 * message on the node).
 */
#include "coll_exanet.h"

#include <errno.h>
#include <string.h>

#include "exa_clock.h"

#include "opal/runtime/opal_progress.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"

/* ---------------------------------------------------------------- mapping */

enum { K_SINT, K_UINT, K_FLOAT };

int mca_coll_exanet_map(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
			unsigned int *ni_dtype, unsigned int *ni_op, size_t *esize)
{
	static const struct {
		struct ompi_datatype_t *dt;
		int kind;
	} types[] = {
		{ MPI_INT, K_SINT }, { MPI_INT32_T, K_SINT }, { MPI_LONG, K_SINT },
		{ MPI_LONG_LONG, K_SINT }, { MPI_INT64_T, K_SINT },
		{ MPI_UNSIGNED, K_UINT }, { MPI_UINT32_T, K_UINT }, { MPI_UNSIGNED_LONG, K_UINT },
		{ MPI_UNSIGNED_LONG_LONG, K_UINT }, { MPI_UINT64_T, K_UINT },
		{ MPI_FLOAT, K_FLOAT }, { MPI_DOUBLE, K_FLOAT },
	};
	size_t size = 0;
	int kind = -1;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (dtype == types[i].dt) {
			kind = types[i].kind;
			break;
		}
	if (kind < 0 || ompi_datatype_type_size(dtype, &size) != OMPI_SUCCESS)
		return -1;
	switch (kind) {
	case K_SINT:
		if (size == 4)
			*ni_dtype = EXANET_COLL_INT32;
		else if (size == 8)
			*ni_dtype = EXANET_COLL_INT64;
		else
			return -1;
		break;
	case K_UINT:
		if (size == 4)
			*ni_dtype = EXANET_COLL_UINT32;
		else if (size == 8)
			*ni_dtype = EXANET_COLL_UINT64;
		else
			return -1;
		break;
	default:
		if (size == 4)
			*ni_dtype = EXANET_COLL_FLOAT;
		else if (size == 8)
			*ni_dtype = EXANET_COLL_DOUBLE;
		else
			return -1;
		break;
	}
	if (op == MPI_SUM)
		*ni_op = EXANET_COLL_SUM;
	else if (op == MPI_MIN)
		*ni_op = EXANET_COLL_MIN;
	else if (op == MPI_MAX)
		*ni_op = EXANET_COLL_MAX;
	else if (kind != K_FLOAT && op == MPI_BAND)
		*ni_op = EXANET_COLL_BAND;
	else if (kind != K_FLOAT && op == MPI_BOR)
		*ni_op = EXANET_COLL_BOR;
	else if (kind != K_FLOAT && op == MPI_BXOR)
		*ni_op = EXANET_COLL_BXOR;
	else
		return -1;
	*esize = size;
	return 0;
}

/* ---------------------------------------------------------------- the NI */

/* One allreduce among the leaders: 0 or a negative errno (said). */
static int ni_allreduce(mca_coll_exanet_module_t *m, struct ompi_communicator_t *comm,
			const void *src, void *dst, size_t n, unsigned int nd, unsigned int no)
{
	int timeout = mca_coll_exanet_state.timeout;
	int64_t deadline = timeout > 0 ? exa_clock_ns() + (int64_t)timeout * 1000000000 : 0;
	uint64_t status = 0;
	int err;

	err = exanet_coll_start(m->grp, src, dst, n, nd, no, NULL, ++m->tag);
	if (err) {
		opal_output(0, "coll_exanet: %s: starting an allreduce of %zu elements on the NI "
			    "failed: %s", comm->c_name, n, strerror(-err));
		return err;
	}
	while ((err = exanet_coll_poll(m->grp, &status)) == -EINPROGRESS) {
		opal_progress();
		if (deadline && exa_clock_ns() > deadline) {
			opal_output(0, "coll_exanet: %s: allreduce of %zu elements on the NI took "
				    "more than %d s (coll_exanet_timeout)", comm->c_name, n, timeout);
			return -ETIMEDOUT;
		}
	}
	if (err) {
		opal_output(0, "coll_exanet: %s: allreduce of %zu elements on the NI failed: %s (%s)",
			    comm->c_name, n, strerror(-err),
			    exanet_coll_error_str(EXANET_COLL_ST_ERROR(status)));
		return err;
	}
	return 0;
}

/* ---------------------------------------------------------------- a chunk */

static char done_byte = 1;

/* Non-leader: send n elements from src to the leader, receive the result
 * into dst (barrier: n = 0, a 1-byte "done").  src == dst (in place): the
 * receive is posted once the send is complete. */
static int chunk_member(mca_coll_exanet_module_t *m, struct ompi_communicator_t *comm,
			const char *src, char *dst, size_t bytes, bool barrier, int tag)
{
	int leader = m->local[0], rc;
	size_t expect = barrier ? 1 : bytes;
	ompi_request_t *rq[2];
	ompi_status_public_t st[2];
	char scratch;
	void *rbuf = barrier ? (void *)&scratch : (void *)dst;

	if (src == dst && !barrier) {
		rc = MCA_PML_CALL(send(src, bytes, MPI_BYTE, leader, tag,
				       MCA_PML_BASE_SEND_STANDARD, comm));
		if (rc != MPI_SUCCESS)
			return rc;
		rc = MCA_PML_CALL(recv(rbuf, expect, MPI_BYTE, leader, tag, comm, &st[0]));
		if (rc != MPI_SUCCESS)
			return rc;
	} else {
		rc = MCA_PML_CALL(irecv(rbuf, expect, MPI_BYTE, leader, tag, comm, &rq[0]));
		if (rc != MPI_SUCCESS)
			return rc;
		rc = MCA_PML_CALL(isend(src, bytes, MPI_BYTE, leader, tag,
					MCA_PML_BASE_SEND_STANDARD, comm, &rq[1]));
		if (rc != MPI_SUCCESS) {
			ompi_request_cancel(rq[0]);
			ompi_request_wait(&rq[0], MPI_STATUS_IGNORE);
			return rc;
		}
		rc = ompi_request_wait_all(2, rq, st);
		if (rc != MPI_SUCCESS)
			return rc;
	}
	/* an empty message instead of the result: the leader's NI failed */
	if (st[0]._ucount != expect)
		return MPI_ERR_INTERN;
	return MPI_SUCCESS;
}

/* The datatype of the node-local reduction: the fixed-size type of the NI
 * type, so that the node computes what the NI computes.  (Open MPI 4.1.4's
 * own MIN/MAX kernels of MPI_UNSIGNED_LONG compare as signed long; those of
 * MPI_UINT64_T are right.) */
static struct ompi_datatype_t *local_type(unsigned int nd, struct ompi_datatype_t *dtype)
{
	switch (nd) {
	case EXANET_COLL_INT32: return MPI_INT32_T;
	case EXANET_COLL_UINT32: return MPI_UINT32_T;
	case EXANET_COLL_INT64: return MPI_INT64_T;
	case EXANET_COLL_UINT64: return MPI_UINT64_T;
	case EXANET_COLL_FLOAT: return MPI_FLOAT;
	case EXANET_COLL_DOUBLE: return MPI_DOUBLE;
	default: return dtype;
	}
}

/* Leader: gather and reduce the local parts, the NI, hand out the result. */
static int chunk_leader(mca_coll_exanet_module_t *m, struct ompi_communicator_t *comm,
			const char *src, char *dst, size_t n, size_t esize,
			struct ompi_datatype_t *dtype, struct ompi_op_t *op,
			unsigned int nd, unsigned int no, bool barrier, int tag)
{
	size_t bytes = n * esize;
	int nrem = m->nlocal - 1, rc = MPI_SUCCESS, err;
	char *acc = m->bounce, *res = (char *)m->bounce + m->chunk;
	ompi_request_t *rqs[64], **rq = rqs;

	if (nrem > (int)(sizeof(rqs) / sizeof(rqs[0]))) {
		rq = malloc(sizeof(*rq) * (size_t)nrem);
		if (!rq)
			return OMPI_ERR_OUT_OF_RESOURCE;
	}
	for (int i = 0; i < nrem; i++) {
		rc = MCA_PML_CALL(irecv((char *)m->tmp + (size_t)i * m->chunk, bytes, MPI_BYTE,
					m->local[i + 1], tag, comm, &rq[i]));
		if (rc != MPI_SUCCESS) {
			for (int j = 0; j < i; j++) {
				ompi_request_cancel(rq[j]);
				ompi_request_wait(&rq[j], MPI_STATUS_IGNORE);
			}
			goto out;
		}
	}
	if (bytes)
		memcpy(acc, src, bytes);
	if (nrem) {
		rc = ompi_request_wait_all(nrem, rq, MPI_STATUSES_IGNORE);
		if (rc != MPI_SUCCESS)
			goto out;
	}
	/* the node's part, in comm rank order of the local ranks */
	if (!barrier)
		for (int i = 0; i < nrem; i++)
			PMPI_Reduce_local((char *)m->tmp + (size_t)i * m->chunk, acc, (int)n,
					  local_type(nd, dtype), op);

	err = ni_allreduce(m, comm, acc, res, n, nd, no);
	if (err) {
		/* tell the local ranks: an empty message instead of the result */
		for (int i = 0; i < nrem; i++)
			MCA_PML_CALL(send(&done_byte, 0, MPI_BYTE, m->local[i + 1], tag,
					  MCA_PML_BASE_SEND_STANDARD, comm));
		rc = MPI_ERR_INTERN;
		goto out;
	}
	if (bytes)
		memcpy(dst, res, bytes);
	for (int i = 0; i < nrem; i++) {
		rc = MCA_PML_CALL(isend(barrier ? &done_byte : dst, barrier ? 1 : bytes, MPI_BYTE,
					m->local[i + 1], tag, MCA_PML_BASE_SEND_STANDARD, comm,
					&rq[i]));
		if (rc != MPI_SUCCESS) {
			if (i)
				ompi_request_wait_all(i, rq, MPI_STATUSES_IGNORE);
			goto out;
		}
	}
	if (nrem)
		rc = ompi_request_wait_all(nrem, rq, MPI_STATUSES_IGNORE);
out:
	if (rq != rqs)
		free(rq);
	return rc;
}

/* The whole vector, chunk by chunk (count 0: one barrier round). */
static int exanet_run(mca_coll_exanet_module_t *m, struct ompi_communicator_t *comm,
		      const char *src, char *dst, size_t count, size_t esize,
		      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
		      unsigned int nd, unsigned int no, bool barrier, int tag)
{
	size_t per = (size_t)mca_coll_exanet_state.chunk_size / (esize ? esize : 1);
	size_t off = 0;
	int rc;

	do {
		size_t n = count - off < per ? count - off : per;

		if (m->leader)
			rc = chunk_leader(m, comm, src + off * esize, dst + off * esize, n, esize,
					  dtype, op, nd, no, barrier, tag);
		else
			rc = chunk_member(m, comm, src + off * esize, dst + off * esize,
					  n * esize, barrier, tag);
		if (rc != MPI_SUCCESS)
			return rc;
		off += n;
	} while (off < count);
	mca_coll_exanet_state.n_offloaded++;
	return MPI_SUCCESS;
}

/* ---------------------------------------------------------------- entry points */

int mca_coll_exanet_allreduce(const void *sbuf, void *rbuf, int count,
			      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
			      struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
	mca_coll_exanet_module_t *m = (mca_coll_exanet_module_t *)module;
	unsigned int nd, no;
	size_t esize;
	int rc;

	if (count <= 0)
		return MPI_SUCCESS;
	if (m->mode == COLL_EXANET_FALLBACK || mca_coll_exanet_map(dtype, op, &nd, &no, &esize))
		goto fallback;
	/* the same on every rank: count and datatype are */
	if (mca_coll_exanet_state.max_bytes > 0 &&
	    (size_t)count * esize > (size_t)mca_coll_exanet_state.max_bytes)
		goto fallback;
	if (m->mode == COLL_EXANET_LAZY) {
		rc = mca_coll_exanet_setup(m, comm);
		if (rc != MPI_SUCCESS)
			return rc;
		if (m->mode != COLL_EXANET_OFFLOAD)
			goto fallback;
	}
	if (sbuf == MPI_IN_PLACE)
		sbuf = rbuf;
	opal_output_verbose(20, mca_coll_exanet_state.output,
			    "coll:exanet: %s: allreduce of %d x %s on the NI", comm->c_name, count,
			    dtype->name);
	return exanet_run(m, comm, sbuf, rbuf, (size_t)count, esize, dtype, op, nd, no, false,
			  MCA_COLL_BASE_TAG_ALLREDUCE);
fallback:
	mca_coll_exanet_state.n_fallback++;
	return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module);
}

int mca_coll_exanet_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
	mca_coll_exanet_module_t *m = (mca_coll_exanet_module_t *)module;
	int rc;

	if (m->mode == COLL_EXANET_LAZY) {
		rc = mca_coll_exanet_setup(m, comm);
		if (rc != MPI_SUCCESS)
			return rc;
	}
	if (m->mode != COLL_EXANET_OFFLOAD) {
		mca_coll_exanet_state.n_fallback++;
		return m->prev_barrier(comm, m->prev_barrier_module);
	}
	return exanet_run(m, comm, NULL, NULL, 0, 0, MPI_BYTE, MPI_OP_NULL,
			  EXANET_COLL_INT32, EXANET_COLL_SUM, true, MCA_COLL_BASE_TAG_BARRIER);
}
