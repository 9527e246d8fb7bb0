// SPDX-License-Identifier: GPL-2.0
/*
 * fi_getinfo of both providers on the host, through Debian's libfabric:
 * libexanet-fi.so and libextoll-fi.so are loaded from build/lib
 * (FI_PROVIDER_PATH), their device probes pointed at /dev/null
 * (FI_EXANET_DEVICE, FI_EXTOLL_DEVICE; fi_getinfo opens nothing).  The
 * hints of GASNet-EX's ofi-conduit (FI_THREAD_DOMAIN and FI_THREAD_SAFE,
 * FI_AV_TABLE and FI_AV_MAP) and of Open MPI's btl ofi (one- and
 * two-sided) each get an answer from both providers that meets them
 * (selftests/lib/fi_hints.h); FI_ATOMIC is offered by both.
 */
#include <limits.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "../lib/kselftest_exa.h"
#include "../lib/fi_hints.h"

/* Point libfabric at build/lib (this program is build/host-tests/...). */
static void use_build_providers(struct __test_metadata *_metadata)
{
	char exe[PATH_MAX], dir[PATH_MAX + 8];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *build;

	ASSERT_LT(0, n);
	exe[n] = 0;
	build = dirname(dirname(exe));
	ASSERT_LT(strlen(build) + 5, sizeof(dir));
	strcpy(dir, build);
	strcat(dir, "/lib");	/* build/lib */
	if (access(dir, F_OK))
		SKIP_TEST("no %s", dir);
	setenv("FI_PROVIDER_PATH", dir, 1);
	setenv("FI_EXANET_DEVICE", "/dev/null", 1);
	setenv("FI_EXTOLL_DEVICE", "/dev/null", 1);
	unsetenv("FI_PROVIDER");
	unsetenv("FI_PROVIDER_PATH_EXCLUDE");
}

/* Which of the two providers answered hints with an entry that meets them
 * (bit 0 exanet, bit 1 extoll); logs an entry that does not. */
static int answered_by(struct __test_metadata *_metadata, const char *who, struct fi_info *hints)
{
	struct fi_info *info = NULL, *i;
	int ret, found = 0;

	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	if (ret)
		TH_LOG("%s: fi_getinfo: %s", who, fi_strerror(-ret));
	for (i = ret ? NULL : info; i; i = i->next) {
		const char *prov = i->fabric_attr->prov_name;
		int bit = !strcmp(prov, "exanet") ? 1 : !strcmp(prov, "extoll") ? 2 : 0;
		const char *why = fi_hints_unmet(hints, i);

		if (!bit)
			continue;	/* another provider of the host, or a utility one */
		if (why) {
			TH_LOG("%s: %s: %s", who, prov, why);
			continue;
		}
		if (strcmp(i->fabric_attr->name, prov))
			TH_LOG("%s: %s: fabric %s", who, prov, i->fabric_attr->name);
		else
			found |= bit;
	}
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return found;
}

TEST(gasnet_ofi_conduit_hints_answered_by_both)
{
	use_build_providers(_metadata);
	EXPECT_EQ(3, answered_by(_metadata, "GASNet domain/table",
				 gasnet_hints(FI_THREAD_DOMAIN, FI_AV_TABLE)));
	EXPECT_EQ(3, answered_by(_metadata, "GASNet safe/table",
				 gasnet_hints(FI_THREAD_SAFE, FI_AV_TABLE)));
	EXPECT_EQ(3, answered_by(_metadata, "GASNet domain/map",
				 gasnet_hints(FI_THREAD_DOMAIN, FI_AV_MAP)));
	EXPECT_EQ(3, answered_by(_metadata, "GASNet safe/map",
				 gasnet_hints(FI_THREAD_SAFE, FI_AV_MAP)));
}

TEST(ompi_btl_ofi_hints_answered_by_both)
{
	use_build_providers(_metadata);
	EXPECT_EQ(3, answered_by(_metadata, "btl ofi", ompi_btl_ofi_hints(0)));
	EXPECT_EQ(3, answered_by(_metadata, "btl ofi two-sided", ompi_btl_ofi_hints(1)));
}

/* The atomic ordering and limits GASNet/MPI see are the same in both. */
TEST(both_offer_the_same_atomics)
{
	struct fi_info *h, *info = NULL, *i;
	uint64_t order = FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR |
		FI_ORDER_ATOMIC_WAW;
	int found = 0;

	use_build_providers(_metadata);
	h = ompi_btl_ofi_hints(0);
	ASSERT_NE(NULL, h);
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
	for (i = info; i; i = i->next) {
		if (strcmp(i->fabric_attr->prov_name, "exanet") &&
		    strcmp(i->fabric_attr->prov_name, "extoll"))
			continue;
		found++;
		EXPECT_EQ(FI_ATOMIC, i->caps & FI_ATOMIC);
		EXPECT_EQ(order, i->tx_attr->msg_order & order);
		EXPECT_EQ(32u, i->ep_attr->max_order_waw_size);
		EXPECT_EQ(1u, i->tx_attr->rma_iov_limit);
	}
	EXPECT_EQ(2, found);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

/* max_msg_size of the first fi_info entry of provider prov (0: none). */
static size_t max_msg_size_of(const char *prov)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	size_t size = 0;

	if (!hints)
		return 0;
	hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_RDM;
	if (!fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info) && info)
		size = info->ep_attr->max_msg_size;
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return size;
}

static int has_param(struct fi_param *params, int count, const char *name)
{
	for (int i = 0; i < count; i++)
		if (!strcmp(params[i].name, name))
			return 1;
	return 0;
}

/*
 * Each provider defines the parameters it honours and no other (extoll
 * has no mailbox size and no MR cache); a value out of range keeps the
 * default, one in range is used (max_msg_size shows in fi_info).
 */
TEST(parameters_are_the_ones_honoured_and_checked)
{
	struct fi_param *params = NULL;
	int count = 0;

	use_build_providers(_metadata);
	setenv("FI_EXANET_MAX_MSG_SIZE", "0", 1);		/* out of range */
	setenv("FI_EXTOLL_MAX_MSG_SIZE", "1048576", 1);		/* 1 MiB */
	EXPECT_EQ(64u << 20, max_msg_size_of("exanet"));
	EXPECT_EQ(1u << 20, max_msg_size_of("extoll"));
	ASSERT_EQ(0, fi_getparams(&params, &count));
	EXPECT_TRUE(has_param(params, count, "FI_EXANET_MBOX_SLOTS"));
	EXPECT_TRUE(has_param(params, count, "FI_EXANET_MR_CACHE_SIZE"));
	EXPECT_TRUE(has_param(params, count, "FI_EXTOLL_PROBE_MS"));
	EXPECT_FALSE(has_param(params, count, "FI_EXTOLL_MBOX_SLOTS"));
	EXPECT_FALSE(has_param(params, count, "FI_EXTOLL_MR_CACHE_SIZE"));
	fi_freeparams(params);
}

/* The first entry of provider prov for these arguments (NULL: none). */
static struct fi_info *first_of(const char *prov, const char *node, uint64_t flags,
				struct fi_info *hints)
{
	struct fi_info *info = NULL, *i, *mine = NULL;

	hints->fabric_attr->prov_name = strdup(prov);
	if (!fi_getinfo(FI_VERSION(1, 17), node, NULL, flags, hints, &info))
		for (i = info; i && !mine; i = i->next)
			if (!strcmp(i->fabric_attr->prov_name, prov))
				mine = fi_dupinfo(i);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return mine;
}

/* node and mailbox of a provider address (struct xfi_addr, 8 bytes) */
static void addr_parts(const void *a, uint32_t *node, uint8_t *mbox)
{
	memcpy(node, a, 4);
	memcpy(mbox, (const uint8_t *)a + 4, 1);
}

/* What each provider must answer alike: the cases below run once per provider. */
FIXTURE(provider) {
	int unused;
};

FIXTURE_VARIANT(provider) {
	const char *name;
	const char *other;	/* the other provider, whose addresses are not ours */
};

FIXTURE_VARIANT_ADD(provider, exanet) {
	.name = "exanet",
	.other = "extoll",
};

FIXTURE_VARIANT_ADD(provider, extoll) {
	.name = "extoll",
	.other = "exanet",
};

FIXTURE_SETUP(provider)
{
	use_build_providers(_metadata);
}

FIXTURE_TEARDOWN(provider)
{
}

/*
 * fabtests' fi_getinfo_test: a node string of fi_av_straddr's form names
 * the destination (or, with FI_SOURCE, the source); anything else, or
 * another provider's form, is no address of this fabric.
 */
TEST_F(provider, node_strings_are_addresses_of_the_fabric)
{
	const char *prov = variant->name;
	char node[64], other[64];
	struct fi_info *fi;
	uint32_t n;
	uint8_t m;

	snprintf(node, sizeof(node), "%s://node5/mbox3", prov);
	fi = first_of(prov, node, 0, fi_allocinfo());
	ASSERT_NE(NULL, fi) TH_LOG("%s", node);
	ASSERT_EQ(8u, fi->dest_addrlen);
	addr_parts(fi->dest_addr, &n, &m);
	EXPECT_EQ(5u, n);
	EXPECT_EQ(3, m);
	fi_freeinfo(fi);

	snprintf(node, sizeof(node), "%s://node7", prov);
	fi = first_of(prov, node, FI_SOURCE, fi_allocinfo());
	ASSERT_NE(NULL, fi);
	ASSERT_EQ(8u, fi->src_addrlen);	/* any mailbox */
	addr_parts(fi->src_addr, &n, &m);
	EXPECT_EQ(7u, n);
	EXPECT_EQ(0xff, m);
	EXPECT_EQ(NULL, fi->dest_addr);
	fi_freeinfo(fi);

	snprintf(other, sizeof(other), "%s://node1", variant->other);
	EXPECT_EQ(NULL, first_of(prov, other, 0, fi_allocinfo()));
	EXPECT_EQ(NULL, first_of(prov, "10.42.0.2", 0, fi_allocinfo()));
	snprintf(node, sizeof(node), "%s://node5/mbox64", prov);
	EXPECT_EQ(NULL, first_of(prov, node, 0, fi_allocinfo()));
	snprintf(node, sizeof(node), "%s://node5x", prov);
	EXPECT_EQ(NULL, first_of(prov, node, 0, fi_allocinfo()));
}

/*
 * What fabtests' fi_getinfo_test checks of the attributes: domain
 * capabilities only in the domain's, no shared AVs, one range per memory
 * key, FI_MR_BASIC answered as FI_MR_BASIC.
 */
TEST_F(provider, attributes_as_fi_getinfo_3_places_them)
{
	const char *prov = variant->name;
	uint64_t domain_caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	struct fi_info *fi, *h;

	fi = first_of(prov, NULL, 0, fi_allocinfo());
	ASSERT_NE(NULL, fi);
	EXPECT_EQ(0u, fi->tx_attr->caps & domain_caps);
	EXPECT_EQ(0u, fi->rx_attr->caps & domain_caps);
	EXPECT_EQ(domain_caps, fi->domain_attr->caps);
	EXPECT_EQ(1u, fi->domain_attr->mr_iov_limit);
	fi_freeinfo(fi);

	h = fi_allocinfo();
	ASSERT_NE(NULL, h);
	h->domain_attr->caps = FI_SHARED_AV;
	EXPECT_EQ(NULL, first_of(prov, NULL, 0, h));

	h = fi_allocinfo();
	ASSERT_NE(NULL, h);
	h->caps = FI_RMA;
	h->domain_attr->mr_mode = FI_MR_BASIC;
	fi = first_of(prov, NULL, 0, h);
	ASSERT_NE(NULL, fi);
	EXPECT_EQ(FI_MR_BASIC, fi->domain_attr->mr_mode);
	fi_freeinfo(fi);
}

TEST_HARNESS_MAIN
