// SPDX-License-Identifier: GPL-2.0
/*
 * The NI's collective (allreduce) unit through libexanet (collectives 1.3,
 * uapi/exanet_coll.h), on every node that runs the program (tests.list: 1,
 * 2, 3 and 4 nodes, and 4 on a lossy fabric).  Results are compared bit
 * for bit with selftests/lib/coll_ref.h, the unit's combining order
 * (recursive doubling with fold-in / fold-out), on every member; floating
 * point sums also against a long double sum with a tolerance, and every
 * member's result hash against the others'.  Groups of all nodes, sub-sets
 * (3 of 4: fold-in and fold-out; a pair {1, 3}), members in reverse order,
 * two groups at once, several members on one node (loopback groups, which
 * give a 1-node run real work), barriers, refused arguments, error
 * completions (unregistered memory, members that disagree, a member that
 * leaves) and the unit's counters (sysfs, skipped when absent).
 *
 * Skips when the node has no RDMA contexts or exanet_coll_open() returns
 * -ENODEV (no collective unit).
 *
 * One translation unit: the fixture and helpers are in coll_test.h, the
 * cases in the headers this file includes below, one concern each, in run
 * order:
 *
 *   exanet_coll-data.h     every op x dtype x length, in place, the
 *                          completion record
 *   exanet_coll-groups.h   sub-groups, two groups at once, members on one
 *                          node, another job domain, the barrier
 *   exanet_coll-refused.h  bad arguments, group slots, unregistered
 *                          memory, a start while one is in flight
 *   exanet_coll-members.h  members that disagree or leave
 *   exanet_coll-limits.h   the longest operation, the unit's counters
 */
#define EXANET_COLL_C

#include "coll_test.h"

#include "exanet_coll-data.h"
#include "exanet_coll-groups.h"
#include "exanet_coll-refused.h"
#include "exanet_coll-members.h"
#include "exanet_coll-limits.h"

TEST_HARNESS_MAIN
