// SPDX-License-Identifier: GPL-2.0
/*
 * The libfabric provider "exanet" (lib/libexanet-fi) on two nodes
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
 * This file: main; the cases are in exanet_fi2_*.c (the list: exanet_fi2.h).
 */
#include "exanet_fi2.h"

TEST_HARNESS_MAIN
