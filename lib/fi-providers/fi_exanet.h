/* SPDX-License-Identifier: MIT */
/*
 * Provider-specific operations of the libfabric provider "exanet", opened
 * with fi_open_ops() on a domain:
 *
 *	struct fi_exanet_ops_domain *ops;
 *	fi_open_ops(&domain->fid, FI_EXANET_DOMAIN_OPS, 0, (void **)&ops, NULL);
 *	ops->mr_cache_stats(domain, &stats);
 *
 * Counters of the domain's MR cache (Documentation/exanet/libfabric.md).
 */
#ifndef FI_EXANET_H
#define FI_EXANET_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/fi_domain.h>

#define FI_EXANET_DOMAIN_OPS "exanet_domain_ops_v1"

struct fi_exanet_mr_cache_stats {
	uint64_t hits;		/* rendezvous buffers found registered */
	uint64_t misses;	/* looked up and not found */
	uint64_t registrations;	/* kernel registrations made for rendezvous (cached or not) */
	uint64_t deregistrations;
	uint64_t evictions;	/* cached entries dropped to make room */
	uint64_t entries;	/* cached now */
	int32_t on_demand;	/* 1: cached on-demand registrations; 0: pinned per message; -1: not tried yet */
	uint32_t reserved;
	uint64_t stream_resets;	/* streams to peers restarted after a failure (all endpoints) */
};

struct fi_exanet_ops_domain {
	size_t size;
	int (*mr_cache_stats)(struct fid_domain *domain, struct fi_exanet_mr_cache_stats *out);
};

#endif
