/* SPDX-License-Identifier: GPL-2.0 */
/* Common includes and helpers of the ExaNet in-VM selftests. */
#ifndef EXA_TEST_H
#define EXA_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <libexanet.h>

#include "../lib/kselftest_exa.h"
#include "../lib/oob.h"
#include "../lib/exa_util.h"

#define MS (1000000LL)		/* ns */
#define SEC (1000000000LL)

/* Connect the ranks for the current test (session = test index). */
#define OOB_UP(o)							\
	do {								\
		int __err = oob_init((o), (unsigned int)ksft_case_index(_metadata), 60000); \
		if (__err)						\
			TH_LOG("oob_init (rank %s): %s", getenv("EXA_RANK") ? \
			       getenv("EXA_RANK") : "0", strerror(-__err)); \
		ASSERT_EQ(0, __err);					\
	} while (0)

#define OOB_SYNC(o) ASSERT_EQ(0, oob_barrier(o))

/* Open /dev/exanet0 or skip the test when there is no device. */
#define OPEN_DEV_OR_SKIP(devp)						\
	do {								\
		int __err = exanet_open(NULL, (devp));			\
		if (__err == -ENOENT)					\
			SKIP_TEST("no " EXANET_DEFAULT_DEVICE);		\
		ASSERT_EQ(0, __err);					\
	} while (0)

struct endpoint_addr {
	uint32_t node;
	uint32_t mbox;
};

#endif
