// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the fabric transport: the 3D torus (shapes, routes, link
 * model).
 */
#include "fabric_fixture.h"

/* ------------------------------------------------------------------ */
/* The torus (fabric-torus.h) */

TEST_F(fabric, torus_shapes_and_ports)
{
    uint32_t d[3];
    char err[160];
    static const struct {
        uint32_t n, x, y, z;
    } want[] = {
        {1, 1, 1, 1}, {2, 2, 1, 1},  {4, 2, 2, 1},  {6, 3, 2, 1},
        {8, 2, 2, 2}, {12, 3, 2, 2}, {27, 3, 3, 3}, {7, 7, 1, 1},
    };

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        fabric_torus_default_shape(want[i].n, d);
        ASSERT_EQ(want[i].x, d[0]) TH_LOG("%u nodes", want[i].n);
        ASSERT_EQ(want[i].y, d[1]) TH_LOG("%u nodes", want[i].n);
        ASSERT_EQ(want[i].z, d[2]) TH_LOG("%u nodes", want[i].n);
    }
    ASSERT_EQ(0, fabric_torus_parse("2x2x2", 8, d, err, sizeof(err)));
    ASSERT_EQ(2, d[0]);
    ASSERT_EQ(2, d[1]);
    ASSERT_EQ(2, d[2]);
    ASSERT_EQ(0, fabric_torus_parse("4x1x2", 8, d, err, sizeof(err)));
    ASSERT_EQ(-EINVAL, fabric_torus_parse("3x3x3", 8, d, err, sizeof(err)));
    ASSERT_NE(NULL, strstr(err, "27 nodes")) TH_LOG("error: %s", err);
    ASSERT_EQ(-EINVAL, fabric_torus_parse("2x2", 4, d, err, sizeof(err)));
    ASSERT_EQ(-EINVAL, fabric_torus_parse("0x8x1", 8, d, err, sizeof(err)));
    ASSERT_EQ(-EINVAL, fabric_torus_parse("2x2x2x", 8, d, err, sizeof(err)));
    ASSERT_EQ(-EINVAL, fabric_torus_parse("-2x-2x2", 8, d, err, sizeof(err)));
    ASSERT_EQ(-EINVAL,
              fabric_torus_parse("256x1x1", 256, d, err, sizeof(err)));
    ASSERT_EQ(EXA_PORT_XP, fabric_port_parse("x+"));
    ASSERT_EQ(EXA_PORT_ZM, fabric_port_parse("z-"));
    ASSERT_EQ(-1, fabric_port_parse("w+"));
    ASSERT_EQ(-1, fabric_port_parse("x"));
}

static struct fabric *open_torus_node(uint32_t node, uint32_t nodes, uint32_t x,
                                      uint32_t y, uint32_t z, uint32_t mbps,
                                      uint32_t ns)
{
    struct fabric_config cfg = {
        .dir = tmpdir,
        .node_id = node,
        .num_nodes = nodes,
        .pkt_ring = true,
        .dims = {x, y, z},
        .link_mbps = mbps,
        .link_ns = ns,
    };

    return open_cfg(&cfg);
}

/* The route of a 64-byte packet from f's node to dst (counted on its links) */
static struct fabric_route_result route(struct fabric *f, uint32_t dst)
{
    struct fabric_route_result r;

    fabric_torus_route(fabric_torus(f), dst, 64, &r);
    return r;
}

/* Sets port p of f's node up or down, no faults, no rate, no latency. */
static int set_port(struct fabric *f, unsigned p, bool up)
{
    return fabric_torus_set_port(fabric_torus(f), p, up, 0, 0, 0, 0);
}

/* Dimension-order hops on 2x2x2 and 3x3x3, detours, no route, a dead node. */
TEST_F(fabric, torus_routes_detours_dead_nodes)
{
    struct fabric *f[27] = {0};
    struct fabric_port_info pi;
    struct fabric_route_result r;
    const uint32_t port_state = EXA_PORT_USED | EXA_PORT_ADMIN_UP | EXA_PORT_UP;

    for (uint32_t i = 0; i < 8; i++) {
        f[i] = open_torus_node(i, 8, 2, 2, 2, 0, 0);
        ASSERT_NE(NULL, f[i]);
    }
    /* node 0 (0,0,0): 1 -> 1 hop, 3 (1,1,0) -> 2, 7 (1,1,1) -> 3 */
    for (uint32_t a = 0; a < 8; a++) {
        for (uint32_t b = 0; b < 8; b++) {
            unsigned want = __builtin_popcount(a ^ b);

            ASSERT_EQ(want, fabric_torus_distance(fabric_torus(f[a]), a, b))
            TH_LOG("%u to %u", a, b);
            if (a == b) {
                continue;
            }
            r = route(f[a], b);
            ASSERT_EQ(want, r.hops) TH_LOG("%u to %u", a, b);
            ASSERT_FALSE(r.detour) TH_LOG("%u to %u", a, b);
            ASSERT_EQ(FABRIC_ROUTE_OK, r.fate) TH_LOG("%u to %u", a, b);
        }
    }
    /* size 2: x+ and x- of node 0 both lead to node 1, over two cables */
    ASSERT_EQ(1, fabric_torus_neighbour(fabric_torus(f[0]), 0, EXA_PORT_XP));
    ASSERT_EQ(1, fabric_torus_neighbour(fabric_torus(f[0]), 0, EXA_PORT_XM));
    /* x+ down: the x- cable; both down: around through y (3 hops) */
    ASSERT_EQ(0, set_port(f[0], EXA_PORT_XP, false));
    r = route(f[0], 1);
    ASSERT_EQ(1, r.hops);
    ASSERT_TRUE(r.detour);
    ASSERT_EQ(FABRIC_ROUTE_OK, r.fate);
    /* the far end's view: node 1's x- is the same cable, down too */
    fabric_torus_port_info(fabric_torus(f[1]), EXA_PORT_XM, &pi);
    ASSERT_EQ(EXA_PORT_USED | EXA_PORT_ADMIN_UP, pi.state & port_state);
    ASSERT_EQ(0, pi.peer);
    ASSERT_EQ(0, set_port(f[1], EXA_PORT_XP, false));
    r = route(f[0], 1);
    ASSERT_EQ(3, r.hops);
    ASSERT_TRUE(r.detour);
    fabric_torus_port_info(fabric_torus(f[0]), EXA_PORT_XP, &pi);
    ASSERT_LE(2, pi.counters[EXA_PORT_CNT_DETOURED]);
    ASSERT_EQ(1, pi.counters[EXA_PORT_CNT_DOWN_EVENTS]);
    /* node 1 cut off: every path gone */
    for (unsigned p = EXA_PORT_YP; p < EXA_NUM_PORTS; p++) {
        ASSERT_EQ(0, set_port(f[1], p, false)) TH_LOG("port %u", p);
    }
    r = route(f[0], 1);
    ASSERT_EQ(0, r.hops);
    ASSERT_EQ(FABRIC_ROUTE_NONE, r.fate);
    /* a sent packet then fails at once and counts */
    {
        uint8_t buf[8] = {0};
        struct fabric_stats st;

        ASSERT_EQ(-EHOSTUNREACH, fabric_send(f[0], 1, 1, buf, sizeof(buf)));
        fabric_get_stats(f[0], &st);
        ASSERT_EQ(1, st.tx_no_route);
    }
    for (unsigned p = 0; p < EXA_NUM_PORTS; p++) {
        ASSERT_EQ(0, set_port(f[0], p, true)) TH_LOG("port %u", p);
        ASSERT_EQ(0, set_port(f[1], p, true)) TH_LOG("port %u", p);
    }
    r = route(f[0], 1);
    ASSERT_EQ(1, r.hops);
    ASSERT_FALSE(r.detour);
    /* a node that stops takes its cables down: 0 -> 3 avoids node 1 */
    fabric_close(f[1]);
    f[1] = NULL;
    r = route(f[0], 3);
    ASSERT_EQ(2, r.hops);
    ASSERT_TRUE(r.detour);
    ASSERT_EQ(FABRIC_ROUTE_OK, r.fate);
    for (uint32_t i = 0; i < 8; i++) {
        fabric_close(f[i]);
    }

    /* 3x3x3: the longest dimension-order route is 3 hops; x then y then z */
    for (uint32_t i = 0; i < 27; i++) {
        f[i] = open_torus_node(i, 27, 3, 3, 3, 0, 0);
        ASSERT_NE(NULL, f[i]);
    }
    ASSERT_EQ(3, route(f[0], 26).hops);
    ASSERT_EQ(3, route(f[13], 0).hops);
    ASSERT_EQ(1, route(f[0], 2).hops); /* x- wraps around */
    {
        struct fabric_port_info xm;

        fabric_torus_port_info(fabric_torus(f[0]), EXA_PORT_XM, &xm);
        /* 0 -> 2 and 0 -> 26 (2,2,2): x the short way is x- */
        ASSERT_EQ(2, xm.peer);
        ASSERT_EQ(2, xm.counters[EXA_PORT_CNT_PACKETS]);
    }
    /*
     * The answer of a read node 0 does in node 1's memory travels 1 -> 0:
     * routed by node 0 from 1, it is counted on node 1's x- (not on any
     * cable of node 0), and goes around it when it is down.
     */
    {
        struct fabric_port_info before, after, own;

        fabric_torus_port_info(fabric_torus(f[1]), EXA_PORT_XM, &before);
        fabric_torus_route_from(fabric_torus(f[0]), 1, 0, 4096, &r);
        fabric_torus_port_info(fabric_torus(f[1]), EXA_PORT_XM, &after);
        fabric_torus_port_info(fabric_torus(f[0]), EXA_PORT_XP, &own);
        ASSERT_EQ(1, r.hops);
        ASSERT_FALSE(r.detour);
        ASSERT_EQ(FABRIC_ROUTE_OK, r.fate);
        ASSERT_EQ(before.counters[EXA_PORT_CNT_PACKETS] + 1,
                  after.counters[EXA_PORT_CNT_PACKETS]);
        ASSERT_EQ(before.counters[EXA_PORT_CNT_BYTES] + 4096,
                  after.counters[EXA_PORT_CNT_BYTES]);
        ASSERT_EQ(0, own.counters[EXA_PORT_CNT_PACKETS]);
        ASSERT_EQ(0, set_port(f[1], EXA_PORT_XM, false));
        fabric_torus_route_from(fabric_torus(f[0]), 1, 0, 64, &r);
        fabric_torus_port_info(fabric_torus(f[1]), EXA_PORT_XM, &after);
        ASSERT_TRUE(r.detour);
        ASSERT_LT(1, r.hops);
        ASSERT_EQ(before.counters[EXA_PORT_CNT_DETOURED] + 1,
                  after.counters[EXA_PORT_CNT_DETOURED]);
    }
    for (uint32_t i = 0; i < 27; i++) {
        fabric_close(f[i]);
    }
}

/* A cable's drop and corruption, and its rate and latency on delivery. */
TEST_F(fabric, torus_link_faults_rate_latency)
{
    struct fabric *a = open_torus_node(0, 2, 2, 1, 1, 0, 0);
    struct fabric *b = open_torus_node(1, 2, 2, 1, 1, 0, 0);
    struct fabric_port_info pi;
    struct fabric_route_result r1, r2;
    struct fabric_stats sb;
    struct rx_log l = {0};
    uint8_t buf[1000];
    struct timespec ts;
    uint64_t t0;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    ASSERT_EQ(0, fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0,
                                       0, 1000000, 0));
    ASSERT_EQ(FABRIC_SENT, fabric_send(a, 1, 1, buf, make_payload(buf, 0, 32)));
    fabric_torus_port_info(fabric_torus(a), EXA_PORT_XP, &pi);
    ASSERT_EQ(1, pi.counters[EXA_PORT_CNT_DROPS]);
    ASSERT_EQ(1, pi.counters[EXA_PORT_CNT_RETRANS]);
    ASSERT_EQ(0, fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0,
                                       0, 0, 1000000));
    ASSERT_EQ(FABRIC_SENT, fabric_send(a, 1, 1, buf, make_payload(buf, 0, 32)));
    ring_drain_all(b, &l);
    fabric_get_stats(b, &sb);
    ASSERT_EQ(0, l.count);
    ASSERT_EQ(1, sb.rx_bad_crc);
    ASSERT_EQ(0, set_port(a, EXA_PORT_XP, true));
    ASSERT_EQ(-EINVAL, fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP,
                                             true, 0, 0, 1, 1000001));
    ASSERT_EQ(-EINVAL, set_port(a, 6, true));

    /* 8 Mb/s = one byte per us: 1000 bytes take 1 ms each, back to back */
    ASSERT_EQ(0, fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 8,
                                       0, 0, 0));
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = ts.tv_sec * 1000000000ull + ts.tv_nsec;
    fabric_torus_route(fabric_torus(a), 1, 1000, &r1);
    fabric_torus_route(fabric_torus(a), 1, 1000, &r2);
    ASSERT_LE(t0 + 1000000, r1.due_ns);
    ASSERT_LE(r1.due_ns + 1000000, r2.due_ns);
    ASSERT_GT(t0 + 2500000, r2.due_ns);
    ASSERT_TRUE(fabric_torus_booked(fabric_torus(a), 1, 500000));
    ASSERT_FALSE(fabric_torus_booked(fabric_torus(a), 1, 10000000));
    fabric_torus_port_info(fabric_torus(a), EXA_PORT_XP, &pi);
    ASSERT_EQ(2000000, pi.counters[EXA_PORT_CNT_BUSY_NS]);

    /* 20 ms of latency: the record waits on the ring until it is due */
    ASSERT_EQ(0, fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0,
                                       20000000, 0, 0));
    l = (struct rx_log){0};
    ASSERT_EQ(FABRIC_SENT, fabric_send(a, 1, 1, buf, make_payload(buf, 0, 32)));
    wait_rx(b, 5);
    fabric_poll_rx(b, 16, rx_cb, &l);
    ASSERT_EQ(0, l.count);
    ASSERT_FALSE(fabric_pkt_pending(b, false));
    ASSERT_LT(0, fabric_next_due(b));
    usleep(25000);
    ASSERT_EQ(1, fabric_poll_pkts(b, 16, rx_cb, &l));
    ASSERT_EQ(1, l.count);
    ASSERT_EQ(0, l.bad);
    ASSERT_EQ(1, fabric_rx_hops(b));
    fabric_get_stats(b, &sb);
    ASSERT_EQ(1, sb.rx_hops[1]);
    fabric_close(a);
    fabric_close(b);
}

TEST_HARNESS_MAIN
