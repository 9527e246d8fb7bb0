/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cases exanet_fi and extoll_fi both run, defined once: include after
 * fi_test.h at the place the cases should take in the program (the harness
 * runs them in definition order; the position only picks each case's OOB
 * port, the same on both nodes, so nothing else depends on it).  Their
 * bodies are in fi_cases-<concern>.h, included here: -xfer (messages),
 * -endpoints (what an endpoint is bound to), -close (when an operation is
 * done); a provider's own cases stay in its program.
 */
#ifndef FI_CASES_H
#define FI_CASES_H

#ifndef FI_TEST_H
#error "include fi_test.h before fi_cases.h"
#endif

#include "fi_cases-xfer.h"
#include "fi_cases-endpoints.h"
#include "fi_cases-close.h"

/* Above 1 MiB up to 16 MiB, both ways (fi_test_tagged_big opens the objects). */
TEST_F_TIMEOUT(fi, tagged_sizes_above_1MiB_to_16MiB_both_ways, 900)
{
	fi_test_tagged_big(_metadata, self);
}

/* FI_MULTI_RECV buffers as GASNet-EX posts them. */
TEST_F_TIMEOUT(fi, multi_recv_buffers_take_many_messages, 300)
{
	fi_test_multi_recv(_metadata, self);
}

/* GASNet-EX's two endpoints per process on one domain. */
TEST_F_TIMEOUT(fi, two_endpoints_per_process_share_a_domain, 300)
{
	fi_test_two_endpoints(_metadata, self);
}

/* FI_DELIVERY_COMPLETE sends complete only once the receiver's provider
 * has the message. */
TEST_F_TIMEOUT(fi, delivery_complete_waits_for_the_receiver, 120)
{
	fi_test_delivery_complete(_metadata, self);
}

/* Endpoints closed with RMA reads outstanding give the domain its RDMA
 * slots back: a fresh endpoint still does rendezvous and RMA. */
TEST_F_TIMEOUT(fi, early_close_gives_rdma_slots_back, 300)
{
	fi_test_early_close(_metadata, self);
}

/* fi_close() of an endpoint with an fi_read into the application's own
 * registration outstanding returns only once nothing more lands. */
TEST_F_TIMEOUT(fi, close_waits_for_reads_into_own_registrations, 300)
{
	fi_test_close_waits_for_reads(_metadata, self);
}

/* Injects beyond the NIC's credits, between plain sends: once, in order. */
TEST_F_TIMEOUT(fi, inject_flood_in_order_beyond_the_nic_credits, 300)
{
	fi_test_inject_flood(_metadata, self);
}

/* Counters count every completion, with or without CQ entries. */
TEST_F_TIMEOUT(fi, counters_count_sends_receives_and_rma, 300)
{
	fi_test_counters(_metadata, self);
}

/* Debian's fi_pingpong -p FI_TEST_PROV, msg and tagged, with data checks. */
TEST_F_TIMEOUT(fi, fi_pingpong_between_two_nodes, 600)
{
	fi_test_pingpong(_metadata, self);
}

#endif
