/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_fi: the MR cache: one registration with on-demand paging, and
 * never stale pages after munmap/mmap at the same address.
 *
 * Cases of the translation unit of exanet_fi.c: include it only there.
 */
#ifndef EXANET_FI_C
#error "exanet_fi-mrcache.h holds cases of exanet_fi.c: include it only there"
#endif

/* Whether on-demand registration works on this node (NI with interrupts). */
static int node_has_odp(void)
{
	struct exanet_dev *dev;
	struct exanet_mr *mr;
	static char page[4096] __attribute__((aligned(4096)));
	int ret;

	if (exanet_open(EXANET_DEFAULT_DEVICE, &dev))
		return -1;
	ret = exanet_reg_mr(dev, page, sizeof(page), EXANET_MR_REMOTE_READ | EXANET_MR_ON_DEMAND,
			    &mr);
	if (!ret)
		exanet_dereg_mr(mr);
	exanet_close(dev);
	return ret == 0;
}

/*
 * (a) 20 rendezvous messages from one buffer into one buffer: with
 * on-demand paging each side registers once (the provider's counters), the
 * other 19 are cache hits; without it (msix=off NIs) one registration per
 * message and nothing cached.  (b) Both buffers are unmapped and mapped
 * again at the same addresses with new contents: the next message (a cache
 * hit with on-demand paging) carries the new bytes into the new receive
 * pages, never the old ones.
 */
TEST_F_TIMEOUT(fi, mr_cache_registers_once_and_never_serves_stale_pages, 900)
{
	const size_t len = 4u << 20, n = 20;
	struct fi_exanet_mr_cache_stats st0, st1, st2;
	struct fi_exanet_ops_domain *xops = NULL;
	struct fi_cq_tagged_entry e;
	int odp = node_has_odp();
	uint8_t *buf, *again;
	size_t i;

	ASSERT_LE(0, odp);
	fi_open_all(_metadata, self, FI_AV_TABLE);
	ASSERT_EQ(0, fi_open_ops(&self->domain->fid, FI_EXANET_DOMAIN_OPS, 0, (void **)&xops,
				 NULL));
	ASSERT_EQ(sizeof(*xops), xops->size);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, xops->mr_cache_stats(self->domain, &st0));
	for (i = 0; i < n; i++) {
		uint64_t tag = 0x7000 + i;

		if (self->rank == 0) {
			fill(buf, len, tag);
			ASSERT_EQ(0, fi_tsend(self->ep, buf, len, NULL, self->peer, tag, NULL));
		} else {
			memset(buf, 0, len);
			ASSERT_EQ(0, fi_trecv(self->ep, buf, len, NULL, self->peer, tag, 0, NULL));
		}
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		if (self->rank == 1) {
			ASSERT_EQ(len, e.len);
			ASSERT_EQ(0, check_any(buf, len, tag));
		}
	}
	ASSERT_EQ(0, xops->mr_cache_stats(self->domain, &st1));
	TH_LOG("on-demand %d: %llu registrations, %llu hits, %llu misses for %zu messages", odp,
	       (unsigned long long)(st1.registrations - st0.registrations),
	       (unsigned long long)(st1.hits - st0.hits),
	       (unsigned long long)(st1.misses - st0.misses), n);
	if (odp) {
		EXPECT_EQ(1, st1.on_demand);
		EXPECT_EQ(1, st1.registrations - st0.registrations);
		EXPECT_EQ(n - 1, st1.hits - st0.hits);
		EXPECT_EQ(0, st1.deregistrations - st0.deregistrations);
		EXPECT_LE(1, st1.entries);
	} else {
		EXPECT_EQ(0, st1.on_demand);
		EXPECT_EQ(n, st1.registrations - st0.registrations);
		EXPECT_EQ(n, st1.deregistrations - st0.deregistrations);
		EXPECT_EQ(0, st1.entries);
	}
	OOB_SYNC(&self->oob);

	/* (b) free the memory and map new memory at the same address */
	ASSERT_EQ(0, munmap(buf, len));
	again = mmap(buf, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_EQ(buf, again);
	if (self->rank == 0) {
		fill(buf, len, 0x7fff);
		ASSERT_EQ(0, fi_tsend(self->ep, buf, len, NULL, self->peer, 0x7fff, NULL));
	} else {
		/* untouched new pages: the NI faults them in (zero until written) */
		ASSERT_EQ(0, fi_trecv(self->ep, buf, len, NULL, self->peer, 0x7fff, 0, NULL));
	}
	ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
	if (self->rank == 1) {
		ASSERT_EQ(len, e.len);
		ASSERT_EQ(0, check_any(buf, len, 0x7fff));
	}
	ASSERT_EQ(0, xops->mr_cache_stats(self->domain, &st2));
	if (odp)	/* served by the cached entry, through the new pages */
		EXPECT_EQ(st1.registrations, st2.registrations);
	OOB_SYNC(&self->oob);
	ASSERT_EQ(0, munmap(buf, len));
}
