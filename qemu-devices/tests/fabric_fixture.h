/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fixture of the fabric host tests (fabric_test_util.h); one include
 * per program.
 */
#ifndef FABRIC_FIXTURE_H
#define FABRIC_FIXTURE_H

#include "fabric_test_util.h"
#include "kselftest_exa.h"

/* Every case runs in its own directory, which must be empty at its end. */
FIXTURE(fabric)
{
    int unused;
};

FIXTURE_SETUP(fabric)
{
    snprintf(topdir, sizeof(topdir), "/tmp/test_fabric.XXXXXX");
    ASSERT_NE(NULL, mkdtemp(topdir));
    snprintf(tmpdir, sizeof(tmpdir), "%s/sockets", topdir);
}

FIXTURE_TEARDOWN(fabric)
{
    if (!_metadata->passed) {
        TH_LOG("sockets of the failed case left in %s", topdir);
        return;
    }
    /* sockets are unlinked by fabric_close(): the dir must be empty */
    if (rmdir(tmpdir) < 0 && errno != ENOENT) {
        TH_LOG("leftover files in %s", tmpdir);
        _metadata->passed = 0;
        return;
    }
    rmdir(topdir);
}

#endif
