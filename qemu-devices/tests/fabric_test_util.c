// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the host unit tests of the fabric transport (test_fabric*.c) share:
 * endpoints opened in a per-case directory and a receive log.
 */
#include "fabric_test_util.h"

char topdir[64];
char tmpdir[96];

/* A "# " line from a helper without the case's _metadata (no TH_LOG()). */
void diag(const char *fmt, ...)
{
    va_list ap;

    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* ------------------------------------------------------------------ */

void watch_cb(void *opaque, int fd, bool want)
{
    struct watch_log *w = opaque;

    if (want) {
        w->on++;
        if (w->nfds < 8) {
            w->fds[w->nfds++] = fd;
        }
    } else {
        w->off++;
        for (int i = 0; i < w->nfds; i++) {
            if (w->fds[i] == fd) {
                w->fds[i] = w->fds[--w->nfds];
            }
        }
    }
}

struct fabric *open_cfg(const struct fabric_config *cfg)
{
    struct fabric *f = NULL;
    char err[256];
    int r = fabric_open(&f, cfg, err, sizeof(err));

    if (r < 0) {
        diag("fabric_open(node %u%s): %d %s", cfg->node_id,
             cfg->pkt_ring ? ", pkt_ring" : "", r, err);
    }
    return f;
}

/* Node `node` of `nodes` in the case's directory, with these faults. */
static struct fabric_config node_config(uint32_t node, uint32_t nodes,
                                        uint32_t drop, uint32_t corrupt,
                                        uint64_t seed)
{
    return (struct fabric_config){
        .dir = tmpdir,
        .node_id = node,
        .num_nodes = nodes,
        .drop_ppm = drop,
        .corrupt_ppm = corrupt,
        .seed = seed,
    };
}

struct fabric *open_node(uint32_t node, uint32_t nodes, uint32_t drop,
                         uint32_t corrupt, uint64_t seed, uint32_t max_queue,
                         struct watch_log *w)
{
    struct fabric_config cfg = node_config(node, nodes, drop, corrupt, seed);

    cfg.max_queue = max_queue;
    cfg.watch = w ? watch_cb : NULL;
    cfg.watch_opaque = w;
    return open_cfg(&cfg);
}

/* Payload: u32 sequence, then bytes derived from it. */
size_t make_payload(uint8_t *buf, uint32_t seq, size_t len)
{
    memcpy(buf, &seq, 4);
    for (size_t i = 4; i < len; i++) {
        buf[i] = (uint8_t)(seq * 31 + i);
    }
    return len;
}

void rx_cb(void *opaque, uint32_t src, uint8_t type, const void *payload,
           size_t len)
{
    struct rx_log *l = opaque;
    const uint8_t *p = payload;
    uint32_t seq;

    l->count++;
    l->src = src;
    l->type = type;
    if (len < 4) {
        l->bad++;
        return;
    }
    memcpy(&seq, p, 4);
    if (seq != l->next_seq) {
        l->bad++;
    }
    l->next_seq = seq + 1;
    for (size_t i = 4; i < len; i++) {
        if (p[i] != (uint8_t)(seq * 31 + i)) {
            l->bad++;
            break;
        }
    }
}

int drain(struct fabric *f, struct rx_log *l)
{
    int total = 0, n;

    while ((n = fabric_poll_rx(f, 64, rx_cb, l)) > 0) {
        total += n;
    }
    return total;
}

/* Wait (bounded) until the rx socket has data. */
void wait_rx(struct fabric *f, int ms)
{
    struct pollfd p = {.fd = fabric_rx_fd(f), .events = POLLIN};

    poll(&p, 1, ms);
}

/* A node whose packets go over the packet rings (cfg.pkt_ring). */
struct fabric *open_ring_node(uint32_t node, uint32_t nodes, uint32_t drop,
                              uint32_t corrupt, uint64_t seed)
{
    struct fabric_config cfg = node_config(node, nodes, drop, corrupt, seed);

    cfg.pkt_ring = true;
    return open_cfg(&cfg);
}

/* Datagrams (doorbells) and ring records until nothing moves. */
void ring_drain_all(struct fabric *f, struct rx_log *l)
{
    for (int idle = 0; idle < 3;) {
        wait_rx(f, idle ? 5 : 0);
        idle = fabric_poll_rx(f, 64, rx_cb, l) ? 0 : idle + 1;
    }
}
