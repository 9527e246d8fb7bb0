/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_fi: the provider as fi_getinfo lists it, and the capabilities
 * it negotiates (plain TEST()s: no fixture, no peer).
 *
 * Cases of the translation unit of exanet_fi.c: include it only there.
 */
#ifndef EXANET_FI_C
#error "exanet_fi-getinfo.h holds cases of exanet_fi.c: include it only there"
#endif

TEST(fi_info_lists_exanet_rdm_msg_tagged)
{
	struct fi_info *hints = fi_allocinfo();

	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	ASSERT_NE(NULL, hints);
	/* FI_ATOMIC without the mr_mode atomics need is refused */
	fi_freeinfo(fi_test_discovery(_metadata, hints, FI_TAGGED | FI_MSG, FI_ATOMIC));
}

/*
 * Capability negotiation: fi_getinfo without hints lists the provider with
 * everything it offers; hints it can meet are answered with what it gives
 * (no RMA asked: no RMA and no registration mode); what it does not offer
 * is refused with -FI_ENODATA.  Runs on a host too (FI_EXANET_DEVICE=/dev/null
 * FI_PROVIDER_PATH=build/lib).
 */
static int getinfo_ret(struct fi_info *hints)
{
	struct fi_info *info = NULL;
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);

	fi_freeinfo(info);
	return ret;
}

static struct fi_info *exanet_hints_caps(uint64_t caps)
{
	struct fi_info *h = fi_test_hints();

	if (h)
		h->caps = caps;
	return h;
}

TEST(fi_getinfo_negotiates_capabilities)
{
	struct fi_info *hints, *info = NULL, *i;
	int found = 0;

	if (access(EXANET_DEFAULT_DEVICE, F_OK) && !getenv("FI_EXANET_DEVICE"))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	/* no hints at all: every provider; ours with everything it offers */
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info));
	for (i = info; i; i = i->next) {
		if (strcmp(i->fabric_attr->prov_name, "exanet"))
			continue;
		found++;
		EXPECT_EQ(FI_EP_RDM, i->ep_attr->type);
		EXPECT_EQ(FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			  FI_REMOTE_READ | FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE,
			  i->caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_RECV | FI_READ |
				     FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |
				     FI_DIRECTED_RECV | FI_SOURCE));
		EXPECT_EQ(FI_MULTI_RECV, i->caps & FI_MULTI_RECV);
		EXPECT_EQ(FI_MULTI_RECV, i->rx_attr->caps & FI_MULTI_RECV);
		EXPECT_EQ(0, i->tx_attr->caps & FI_MULTI_RECV);
		/* atomics: done by the target's provider (exanet_fi_atomic) */
		EXPECT_EQ(FI_ATOMIC, i->caps & (FI_ATOMIC | FI_COLLECTIVE));
		EXPECT_EQ(FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED,
			  i->domain_attr->mr_mode);
		EXPECT_EQ(FI_PROGRESS_MANUAL, i->domain_attr->data_progress);
		EXPECT_EQ(FI_PROGRESS_MANUAL, i->domain_attr->control_progress);
		EXPECT_EQ(32, i->tx_attr->inject_size);
		EXPECT_EQ(64u << 20, i->ep_attr->max_msg_size);
		EXPECT_EQ(8, i->domain_attr->cq_data_size);
		EXPECT_EQ(0, i->mode);
	}
	fi_freeinfo(info);
	EXPECT_LT(0, found);

	/* tagged messages only: no RMA in the answer, no registration needed */
	hints = exanet_hints_caps(FI_TAGGED);
	ASSERT_NE(NULL, hints);
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
		FI_MR_PROV_KEY;
	info = NULL;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_TAGGED, info->caps & (FI_TAGGED | FI_MSG | FI_RMA));
	EXPECT_EQ(0, info->domain_attr->mr_mode);
	EXPECT_EQ(FI_AV_TABLE, info->domain_attr->av_type);
	fi_freeinfo(info);
	/* RMA with a registration mode that takes provider keys and VAs */
	hints->caps = FI_TAGGED | FI_RMA;
	info = NULL;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_RMA, info->caps & FI_RMA);
	EXPECT_EQ(FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED, info->domain_attr->mr_mode);
	fi_freeinfo(info);
	/* atomics with it too */
	hints->caps = FI_TAGGED | FI_ATOMIC;
	info = NULL;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_ATOMIC, info->caps & (FI_ATOMIC | FI_RMA));
	EXPECT_EQ(FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED, info->domain_attr->mr_mode);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	/* what GASNet-EX's ofi-conduit asks for (its documented requirements) */
	hints = exanet_hints_caps(FI_RMA | FI_MSG | FI_MULTI_RECV);
	ASSERT_NE(NULL, hints);
	hints->mode = FI_CONTEXT;
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	hints->rx_attr->op_flags = FI_MULTI_RECV;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED |
		FI_MR_ENDPOINT;
	info = NULL;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	EXPECT_EQ(FI_RMA | FI_MSG | FI_MULTI_RECV, info->caps & (FI_RMA | FI_MSG | FI_MULTI_RECV));
	EXPECT_EQ(FI_RM_ENABLED, info->domain_attr->resource_mgmt);
	EXPECT_EQ(FI_THREAD_DOMAIN, info->domain_attr->threading);
	EXPECT_EQ(0, info->mode);
	EXPECT_EQ(0, info->domain_attr->mr_mode & (FI_MR_LOCAL | FI_MR_ENDPOINT));
	fi_freeinfo(info);
	fi_freeinfo(hints);

	/* refused: what it does not offer */
#define REFUSED(setup) do {						\
		hints = exanet_hints_caps(FI_TAGGED | FI_MSG);		\
		ASSERT_NE(NULL, hints);					\
		setup;							\
		int _r = getinfo_ret(hints);				\
		if (_r != -FI_ENODATA)					\
			TH_LOG("%s: %d", #setup, _r);			\
		EXPECT_EQ(-FI_ENODATA, _r);				\
		fi_freeinfo(hints);					\
	} while (0)
	REFUSED(hints->ep_attr->type = FI_EP_MSG);
	REFUSED(hints->ep_attr->type = FI_EP_DGRAM);
	/* atomics need provider keys and virtual addresses, like RMA (the
	 * hints here leave mr_mode 0) */
	REFUSED(hints->caps |= FI_ATOMIC);
	REFUSED(hints->caps = FI_ATOMIC);
	REFUSED(hints->caps |= FI_COLLECTIVE);
	/* RMA needs provider keys and virtual addresses */
	REFUSED(hints->caps |= FI_RMA; hints->domain_attr->mr_mode = FI_MR_LOCAL);
	REFUSED(hints->caps |= FI_RMA; hints->domain_attr->mr_mode = FI_MR_SCALABLE);
	REFUSED(hints->caps |= FI_RMA;
		hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED);
	REFUSED(hints->domain_attr->data_progress = FI_PROGRESS_AUTO);
	REFUSED(hints->domain_attr->control_progress = FI_PROGRESS_AUTO);
	REFUSED(hints->addr_format = FI_SOCKADDR_IN);
	REFUSED(hints->tx_attr->inject_size = 4096);
	REFUSED(hints->tx_attr->iov_limit = 64);
	REFUSED(hints->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW);
	REFUSED(hints->ep_attr->max_msg_size = 1ull << 30);
	REFUSED(hints->ep_attr->tx_ctx_cnt = 4);
	REFUSED(hints->domain_attr->cq_data_size = 16);
	REFUSED(free(hints->fabric_attr->name); hints->fabric_attr->name = strdup("verbs"));
#undef REFUSED
	/* and an API version the provider does not speak */
	hints = exanet_hints_caps(FI_TAGGED);
	ASSERT_NE(NULL, hints);
	info = NULL;
	EXPECT_NE(0, fi_getinfo(FI_VERSION(1, 4), NULL, NULL, 0, hints, &info));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
