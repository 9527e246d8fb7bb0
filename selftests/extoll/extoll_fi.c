// SPDX-License-Identifier: GPL-2.0
/*
 * The libfabric provider "extoll" (libextoll-fi.so: the provider engine of
 * lib/fi-providers over VELO and RMA, Documentation/extoll/libfabric.md) on
 * two nodes with the EXTOLL NIC (tests.list: nodes = 2): discovery through
 * Debian's libfabric and refused hints, tagged and untagged messages of
 * eager and rendezvous sizes (0 B .. 16 MiB, every byte checked, nothing
 * written past the end), FI_RMA writes and reads (a 9 MiB one: two RMA
 * commands), bad keys and unregistered addresses refused (error completion
 * or -FI_EINVAL, the target's memory unchanged) and Debian's fi_pingpong.
 * The fixture and helpers are selftests/lib/fi_test.h, the cases both
 * providers run selftests/lib/fi_cases.h (shared with exanet_fi).
 */
#include <rdma/fi_rma.h>

#include "extoll_test.h"

#define FI_TEST_PROV "extoll"
#define FI_TEST_DEVICE "/dev/extoll/rma2"
#define EXANET_DEV "/dev/exanet0"	/* the other NIC of the extoll clusters */

#include "../lib/fi_test.h"
#include "../lib/fi_hints.h"

#define SYNC(o) ASSERT_EQ(0, oob_barrier(o))

TEST(fi_info_lists_extoll_rdm_msg_tagged_rma_atomic_and_refuses_the_rest)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL, *i;

	if (access(FI_TEST_DEVICE, F_OK))
		SKIP_TEST("no " FI_TEST_DEVICE);
	ASSERT_NE(NULL, hints);
	hints->caps = FI_TAGGED | FI_MSG | FI_RMA | FI_ATOMIC;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	/* refused: collectives (and FI_ATOMIC without the mr_mode: below) */
	info = fi_test_discovery(_metadata, hints, FI_TAGGED | FI_MSG | FI_RMA | FI_ATOMIC,
				 FI_TAGGED | FI_COLLECTIVE);
	for (i = info; i; i = i->next) {
		EXPECT_STREQ(FI_TEST_PROV, i->fabric_attr->name);
		EXPECT_STREQ("extoll0", i->domain_attr->name);
		EXPECT_EQ(FI_ATOMIC, i->caps & FI_ATOMIC);
		EXPECT_EQ(FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED,
			  i->domain_attr->mr_mode);
	}
	fi_freeinfo(info);
	/* atomics need provider keys and virtual addresses, like RMA */
	hints = fi_allocinfo();
	ASSERT_NE(NULL, hints);
	hints->fabric_attr->prov_name = strdup(FI_TEST_PROV);
	hints->caps = FI_ATOMIC;
	info = NULL;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	/* more than the limits: an inject size of 4096 */
	hints = fi_allocinfo();
	ASSERT_NE(NULL, hints);
	hints->fabric_attr->prov_name = strdup(FI_TEST_PROV);
	hints->tx_attr->inject_size = 4096;
	info = NULL;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
}

/* Which of exanet (1) and extoll (2) answered hints in a way that meets them. */
static int answered_by(struct __test_metadata *_metadata, const char *who, struct fi_info *hints)
{
	struct fi_info *info = NULL, *i;
	int found = 0;

	if (!hints || fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info))
		info = NULL;
	for (i = info; i; i = i->next) {
		const char *prov = i->fabric_attr->prov_name, *why = fi_hints_unmet(hints, i);
		int bit = !strcmp(prov, "exanet") ? 1 : !strcmp(prov, FI_TEST_PROV) ? 2 : 0;

		if (bit && why)
			TH_LOG("%s: %s: %s", who, prov, why);
		else
			found |= bit;
	}
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return found;
}

/*
 * The nodes carry both NICs: the hints of GASNet-EX's ofi-conduit and of
 * Open MPI's btl ofi (selftests/lib/fi_hints.h) are answered by both
 * providers, with entries that meet them (also a host test:
 * test_xfi_getinfo).
 */
TEST(gasnet_and_ompi_btl_ofi_hints_answered_by_both_providers)
{
	if (access(FI_TEST_DEVICE, F_OK) || access(EXANET_DEV, F_OK))
		SKIP_TEST("needs both " FI_TEST_DEVICE " and " EXANET_DEV);
	EXPECT_EQ(3, answered_by(_metadata, "GASNet", gasnet_hints(FI_THREAD_DOMAIN, FI_AV_TABLE)));
	EXPECT_EQ(3, answered_by(_metadata, "GASNet", gasnet_hints(FI_THREAD_SAFE, FI_AV_MAP)));
	EXPECT_EQ(3, answered_by(_metadata, "btl ofi", ompi_btl_ofi_hints(0)));
	EXPECT_EQ(3, answered_by(_metadata, "btl ofi", ompi_btl_ofi_hints(1)));
}

TEST_F_TIMEOUT(fi, tagged_sizes_0_to_1MiB_both_ways, 600)
{
	fi_test_tagged_sizes(_metadata, self);
}

/* fi_senddata / fi_recv (FI_MSG, remote CQ data) eager and rendezvous. */
TEST_F_TIMEOUT(fi, untagged_with_cq_data_eager_and_rendezvous, 300)
{
	static const size_t sizes[] = { 0, 1, 39, 40, 41, 256, 257, 4097, 65537, 1u << 20 };
	struct fi_cq_tagged_entry e;
	unsigned int k;

	fi_open_all(_metadata, self, FI_AV_MAP);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k];
		uint64_t data = 0xda7a0000ull + k;

		if (self->rank == 0) {
			fill(self->sbuf, len, data);
			ASSERT_EQ(0, fi_senddata(self->ep, self->sbuf, len, NULL, data, self->peer,
						 self->sbuf));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			EXPECT_EQ(FI_SEND | FI_MSG, e.flags & (FI_SEND | FI_MSG));
		} else {
			memset(self->rbuf, 0xee, MAX_SIZE + 64);
			ASSERT_EQ(0, fi_recv(self->ep, self->rbuf, MAX_SIZE, NULL, FI_ADDR_UNSPEC,
					     self->rbuf));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			EXPECT_EQ(FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA,
				  e.flags & (FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA));
			EXPECT_EQ(data, e.data);
			ASSERT_EQ(len, e.len);
			ASSERT_EQ(0, check(self->rbuf, len, data));
			ASSERT_EQ(0xee, self->rbuf[len]);
		}
	}
}

/*
 * FI_RMA: rank 0 writes into rank 1's registered buffer at an offset
 * (100000 bytes, then 9 MiB + 5: two RMA commands) and reads it back; then
 * a key with bits the provider never sets (-FI_EINVAL at once), a key of
 * another VPID and an address beyond the registration (error completions).
 * Rank 1's buffer must hold exactly the two writes.
 */
TEST_F_TIMEOUT(fi, rma_write_read_and_bad_keys, 600)
{
	static const size_t lens[] = { 100000, (9u << 20) + 5 };
	const size_t cap = 12u << 20, off = 4096 + 3;
	struct fi_window all[2];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;
	struct fid_mr *mr = NULL;
	uint8_t *win = malloc(cap), *src = malloc(cap), *back = malloc(cap);
	unsigned int k;
	size_t i;

	ASSERT_NE(NULL, win);
	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, back);
	fi_open_caps(_metadata, self, FI_AV_TABLE, FI_TAGGED | FI_MSG | FI_RMA);
	ASSERT_EQ(FI_RMA, self->info->caps & FI_RMA);
	memset(win, 0x5a, cap);
	fi_share_window(_metadata, self, win, cap, &mr, all);
	for (k = 0; k < 2; k++) {
		size_t len = lens[k];

		if (self->rank == 0) {
			fill(src, len, 0x77 + k);	/* unregistered: registered per operation */
			ASSERT_EQ(0, fi_write(self->ep, src, len, NULL, self->peer,
					      all[1].addr + off, all[1].key, src));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			EXPECT_EQ(FI_RMA | FI_WRITE, e.flags);
			EXPECT_EQ(src, e.op_context);
			memset(back, 0, len);
			ASSERT_EQ(0, fi_read(self->ep, back, len, NULL, self->peer,
					     all[1].addr + off, all[1].key, back));
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			EXPECT_EQ(FI_RMA | FI_READ, e.flags);
			ASSERT_EQ(0, check_any(back, len, 0x77 + k));
		}
		SYNC(&self->oob);
		if (self->rank == 1) {
			for (i = 0; i < off; i++)
				ASSERT_EQ(0x5a, win[i]);
			ASSERT_EQ(0, check_any(win + off, len, 0x77 + k));
			for (i = off + len; i < cap; i++)
				ASSERT_EQ(0x5a, win[i]);
			memset(win, 0x5a, cap);
		}
		SYNC(&self->oob);
	}
	if (self->rank == 0) {
		uint64_t other_vpid = (all[1].key & ~0xffull) | ((all[1].key + 1) & 0xff);

		fill(src, 1000, 0x99);
		/* not a key of this provider: refused before anything is sent */
		EXPECT_EQ(-FI_EINVAL, fi_write(self->ep, src, 1000, NULL, self->peer, all[1].addr,
					       all[1].key | (1ull << 60), NULL));
		/* another VPID of the target node */
		ASSERT_EQ(0, fi_write(self->ep, src, 1000, NULL, self->peer, all[1].addr,
				      other_vpid, NULL));
		EXPECT_GT(0, wait_comp(self->cq, &e, &ee));
		/* an address the target never registered */
		ASSERT_EQ(0, fi_write(self->ep, src, 1000, NULL, self->peer,
				      all[1].addr + cap + (64u << 20), all[1].key, NULL));
		EXPECT_GT(0, wait_comp(self->cq, &e, &ee));
		ASSERT_EQ(0, fi_read(self->ep, back, 1000, NULL, self->peer,
				     all[1].addr + cap + (64u << 20), all[1].key, NULL));
		EXPECT_GT(0, wait_comp(self->cq, &e, &ee));
	}
	SYNC(&self->oob);
	if (self->rank == 1)
		for (i = 0; i < cap; i++)
			ASSERT_EQ(0x5a, win[i]);
	SYNC(&self->oob);
	EXPECT_EQ(0, fi_close(&mr->fid));
	free(win);
	free(src);
	free(back);
}

/* the cases exanet_fi runs too */
#include "../lib/fi_cases.h"

TEST_HARNESS_MAIN
