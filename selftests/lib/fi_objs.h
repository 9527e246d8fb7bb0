/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One libfabric endpoint with its fabric, domain, AV and CQ, opened and
 * closed the way the in-VM provider tests do it (the fixture of
 * fi_test.h, exanet_fi_atomic's fixture).
 */
#ifndef FI_OBJS_H
#define FI_OBJS_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "kselftest_exa.h"

/* fi_getinfo(hints) (hints freed), fabric, domain, an AV of av_type, a
 * tagged CQ and an enabled endpoint bound to both. */
static inline void fi_test_open_objs(struct __test_metadata *_metadata, struct fi_info *hints,
				     enum fi_av_type av_type, struct fi_info **info,
				     struct fid_fabric **fabric, struct fid_domain **domain,
				     struct fid_av **av, struct fid_cq **cq, struct fid_ep **ep)
{
	struct fi_av_attr av_attr = { .type = av_type };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE };
	unsigned long long caps;
	int ret;

	ASSERT_NE(NULL, hints);
	caps = hints->caps;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, info);
	fi_freeinfo(hints);
	if (ret)
		TH_LOG("fi_getinfo (caps %#llx): %s", caps, fi_strerror(-ret));
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, fi_fabric((*info)->fabric_attr, fabric, NULL));
	ASSERT_EQ(0, fi_domain(*fabric, *info, domain, NULL));
	ASSERT_EQ(0, fi_av_open(*domain, &av_attr, av, NULL));
	ASSERT_EQ(0, fi_cq_open(*domain, &cq_attr, cq, NULL));
	ASSERT_EQ(0, fi_endpoint(*domain, *info, ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(*ep, &(*av)->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(*ep));
}

/* Close what fi_test_open_objs opened (NULL: not opened). */
static inline void fi_test_close_objs(struct fi_info *info, struct fid_fabric *fabric,
				      struct fid_domain *domain, struct fid_av *av,
				      struct fid_cq *cq, struct fid_ep *ep)
{
	if (ep)
		fi_close(&ep->fid);
	if (cq)
		fi_close(&cq->fid);
	if (av)
		fi_close(&av->fid);
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	if (info)
		fi_freeinfo(info);
}

#endif
