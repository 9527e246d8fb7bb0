/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of the exanet_fi2 program share: the fixture "fi" of
 * selftests/lib/fi_test.h for the provider "exanet".  The program, one
 * concern per file, its cases running in the order of the files on the
 * link line (selftests/build.mk; selftests/lib/kselftest_split.h):
 *
 *   exanet_fi2.c           main
 *   exanet_fi2_getinfo.c   discovery and capability negotiation (no fixture)
 *   exanet_fi2_xfer.c      tagged and untagged messages, tag matching,
 *                          unexpected messages, truncation, FI_PEEK/FI_CLAIM
 *                          and cancel, RMA with keys
 *   exanet_fi2_datapath.c  no system call on the eager path, hundreds of
 *                          operations outstanding
 *   exanet_fi2_shared.c    the cases extoll_fi runs too (fi_cases.h)
 *   exanet_fi2_faults.c    RMA with invalid keys, a peer killed
 *                          mid-rendezvous and a new incarnation of it
 *   exanet_fi2_mrcache.c   the MR cache
 */
#ifndef EXANET_FI2_H
#define EXANET_FI2_H

#include <arpa/inet.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "../lib/kselftest_split.h"
#include "exa_test.h"
#include "../../lib/libexanet-fi/fi_exanet.h"

#define FI_TEST_PROV "exanet"
#define FI_TEST_DEVICE EXANET_DEFAULT_DEVICE

#include "../lib/fi_test.h"

#endif /* EXANET_FI2_H */
