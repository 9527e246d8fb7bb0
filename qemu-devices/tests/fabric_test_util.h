/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host unit tests of the fabric transport (qemu-devices/common/fabric.c):
 * several endpoints live in one process, in a temporary directory per test
 * case; output is TAP from the kernel's kselftest harness
 * (selftests/README.md).  fabric_test_util.c holds the shared helpers, outside
 * the harness (which may be included by one file per program only);
 * fabric_fixture.h the fixture of every case; each test_fabric*.c is one
 * program.
 */
#ifndef FABRIC_TEST_UTIL_H
#define FABRIC_TEST_UTIL_H

#include "fabric.h"
#include "fabric-torus.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* per test case, so a failed case cannot leak into the next */
extern char topdir[64];
extern char tmpdir[96];

struct watch_log {
    int on, off;
    int fds[8];
    int nfds;
};

struct rx_log {
    uint32_t count;
    uint32_t next_seq; /* expected sequence (order check) */
    uint32_t bad;      /* content or order errors */
    uint32_t src;
    uint8_t type;
};

void diag(const char *fmt, ...);
void watch_cb(void *opaque, int fd, bool want);
struct fabric *open_cfg(const struct fabric_config *cfg);
struct fabric *open_node(uint32_t node, uint32_t nodes, uint32_t drop,
                         uint32_t corrupt, uint64_t seed, uint32_t max_queue,
                         struct watch_log *w);
size_t make_payload(uint8_t *buf, uint32_t seq, size_t len);
void rx_cb(void *opaque, uint32_t src, uint8_t type, const void *payload,
           size_t len);
int drain(struct fabric *f, struct rx_log *l);
void wait_rx(struct fabric *f, int ms);
struct fabric *open_ring_node(uint32_t node, uint32_t nodes, uint32_t drop,
                              uint32_t corrupt, uint64_t seed);
void ring_drain_all(struct fabric *f, struct rx_log *l);

#endif
