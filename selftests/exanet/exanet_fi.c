// SPDX-License-Identifier: GPL-2.0
/*
 * The libfabric provider "exanet" (lib/fi-providers) on two nodes
 * (tests.list: nodes = 2): discovery through Debian's libfabric,
 * tagged and untagged exchanges with every byte checked, out-of-order tag
 * matching, unexpected messages, a flood of 10000 unexpected messages,
 * truncation, FI_PEEK/FI_CLAIM, cancel, Debian's fi_pingpong; sizes up to
 * 16 MiB, capability negotiation, hundreds of outstanding operations, RMA
 * with invalid keys, a peer SIGKILLed in the middle of rendezvous transfers
 * (and a new incarnation of it reachable afterwards), and the MR cache.
 *
 * The node image installs the provider where libfabric finds it without
 * FI_PROVIDER_PATH (/usr/lib/x86_64-linux-gnu/libfabric/).
 *
 * One translation unit: the cases are in the headers this file includes
 * below, one concern each, in run order:
 *
 *   exanet_fi-getinfo.h   discovery and capability negotiation (no fixture)
 *   exanet_fi-xfer.h      tagged and untagged messages, tag matching,
 *                         unexpected messages, truncation, FI_PEEK/FI_CLAIM
 *                         and cancel, RMA with keys
 *   exanet_fi-datapath.h  no system call on the eager path, hundreds of
 *                         operations outstanding
 *   ../lib/fi_cases.h     the cases extoll_fi runs too
 *   exanet_fi-faults.h    RMA with invalid keys, a peer killed
 *                         mid-rendezvous and a new incarnation of it
 *   exanet_fi-mrcache.h   the MR cache
 */
#define EXANET_FI_C

#include <arpa/inet.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "exa_test.h"
#include "../../lib/fi-providers/fi_exanet.h"

#define FI_TEST_PROV "exanet"
#define FI_TEST_DEVICE EXANET_DEFAULT_DEVICE

#include "../lib/fi_test.h"

#include "exanet_fi-getinfo.h"
#include "exanet_fi-xfer.h"
#include "exanet_fi-datapath.h"
#include "../lib/fi_cases.h"
#include "exanet_fi-faults.h"
#include "exanet_fi-mrcache.h"

TEST_HARNESS_MAIN
