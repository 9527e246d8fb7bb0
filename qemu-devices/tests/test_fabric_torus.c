// SPDX-License-Identifier: GPL-2.0
/* Host unit tests of the fabric transport: the 3D torus (shapes, routes, link model). */
#include "fabric_fixture.h"

/* ------------------------------------------------------------------ */
/* The torus (fabric-torus.h) */

static bool t_torus_shapes(void)
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
        CHECK(d[0] == want[i].x && d[1] == want[i].y && d[2] == want[i].z);
    }
    CHECK(fabric_torus_parse("2x2x2", 8, d, err, sizeof(err)) == 0);
    CHECK(d[0] == 2 && d[1] == 2 && d[2] == 2);
    CHECK(fabric_torus_parse("4x1x2", 8, d, err, sizeof(err)) == 0);
    CHECK(fabric_torus_parse("3x3x3", 8, d, err, sizeof(err)) == -EINVAL);
    CHECK(strstr(err, "27 nodes"));
    CHECK(fabric_torus_parse("2x2", 4, d, err, sizeof(err)) == -EINVAL);
    CHECK(fabric_torus_parse("0x8x1", 8, d, err, sizeof(err)) == -EINVAL);
    CHECK(fabric_torus_parse("2x2x2x", 8, d, err, sizeof(err)) == -EINVAL);
    CHECK(fabric_torus_parse("-2x-2x2", 8, d, err, sizeof(err)) == -EINVAL);
    CHECK(fabric_torus_parse("256x1x1", 256, d, err, sizeof(err)) == -EINVAL);
    CHECK(fabric_port_parse("x+") == EXA_PORT_XP &&
          fabric_port_parse("z-") == EXA_PORT_ZM);
    CHECK(fabric_port_parse("w+") == -1 && fabric_port_parse("x") == -1);
    return true;
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

static unsigned route_hops(struct fabric *f, uint32_t dst, bool *detour,
                           enum fabric_route_fate *fate)
{
    struct fabric_route_result r;

    fabric_torus_route(fabric_torus(f), dst, 64, &r);
    *detour = r.detour;
    *fate = r.fate;
    return r.hops;
}

/* Dimension-order hops on 2x2x2 and 3x3x3, detours, no route, a dead node. */
static bool t_torus_routes(void)
{
    struct fabric *f[27] = {0};
    struct fabric_port_info pi;
    enum fabric_route_fate fate;
    bool det;

    for (uint32_t i = 0; i < 8; i++) {
        CHECK((f[i] = open_torus_node(i, 8, 2, 2, 2, 0, 0)));
    }
    /* node 0 (0,0,0): 1 -> 1 hop, 3 (1,1,0) -> 2, 7 (1,1,1) -> 3 */
    for (uint32_t a = 0; a < 8; a++) {
        for (uint32_t b = 0; b < 8; b++) {
            unsigned want = __builtin_popcount(a ^ b);

            CHECK(fabric_torus_distance(fabric_torus(f[a]), a, b) == want);
            if (a != b) {
                CHECK(route_hops(f[a], b, &det, &fate) == want && !det &&
                      fate == FABRIC_ROUTE_OK);
            }
        }
    }
    /* size 2: x+ and x- of node 0 both lead to node 1, over two cables */
    CHECK(fabric_torus_neighbour(fabric_torus(f[0]), 0, EXA_PORT_XP) == 1);
    CHECK(fabric_torus_neighbour(fabric_torus(f[0]), 0, EXA_PORT_XM) == 1);
    /* x+ down: the x- cable; both down: around through y (3 hops) */
    CHECK(fabric_torus_set_port(fabric_torus(f[0]), EXA_PORT_XP, false, 0, 0, 0,
                                0) == 0);
    CHECK(route_hops(f[0], 1, &det, &fate) == 1 && det &&
          fate == FABRIC_ROUTE_OK);
    /* the far end's view: node 1's x- is the same cable, down too */
    fabric_torus_port_info(fabric_torus(f[1]), EXA_PORT_XM, &pi);
    CHECK((pi.state & EXA_PORT_USED) && (pi.state & EXA_PORT_ADMIN_UP) &&
          !(pi.state & EXA_PORT_UP) && pi.peer == 0);
    CHECK(fabric_torus_set_port(fabric_torus(f[1]), EXA_PORT_XP, false, 0, 0, 0,
                                0) == 0);
    CHECK(route_hops(f[0], 1, &det, &fate) == 3 && det);
    fabric_torus_port_info(fabric_torus(f[0]), EXA_PORT_XP, &pi);
    CHECK(pi.counters[EXA_PORT_CNT_DETOURED] >= 2 &&
          pi.counters[EXA_PORT_CNT_DOWN_EVENTS] == 1);
    /* node 1 cut off: every path gone */
    for (unsigned p = EXA_PORT_YP; p < EXA_NUM_PORTS; p++) {
        CHECK(fabric_torus_set_port(fabric_torus(f[1]), p, false, 0, 0, 0, 0) ==
              0);
    }
    CHECK(route_hops(f[0], 1, &det, &fate) == 0 && fate == FABRIC_ROUTE_NONE);
    /* a sent packet then fails at once and counts */
    {
        uint8_t buf[8] = {0};
        struct fabric_stats st;

        CHECK(fabric_send(f[0], 1, 1, buf, sizeof(buf)) == -EHOSTUNREACH);
        fabric_get_stats(f[0], &st);
        CHECK(st.tx_no_route == 1);
    }
    for (unsigned p = 0; p < EXA_NUM_PORTS; p++) {
        CHECK(fabric_torus_set_port(fabric_torus(f[0]), p, true, 0, 0, 0, 0) ==
              0);
        CHECK(fabric_torus_set_port(fabric_torus(f[1]), p, true, 0, 0, 0, 0) ==
              0);
    }
    CHECK(route_hops(f[0], 1, &det, &fate) == 1 && !det);
    /* a node that stops takes its cables down: 0 -> 3 avoids node 1 */
    fabric_close(f[1]);
    f[1] = NULL;
    CHECK(route_hops(f[0], 3, &det, &fate) == 2 && det &&
          fate == FABRIC_ROUTE_OK);
    for (uint32_t i = 0; i < 8; i++) {
        fabric_close(f[i]);
    }

    /* 3x3x3: the longest dimension-order route is 3 hops; x then y then z */
    for (uint32_t i = 0; i < 27; i++) {
        CHECK((f[i] = open_torus_node(i, 27, 3, 3, 3, 0, 0)));
    }
    CHECK(route_hops(f[0], 26, &det, &fate) == 3);
    CHECK(route_hops(f[13], 0, &det, &fate) == 3);
    CHECK(route_hops(f[0], 2, &det, &fate) == 1); /* x- wraps around */
    {
        struct fabric_port_info xm;

        fabric_torus_port_info(fabric_torus(f[0]), EXA_PORT_XM, &xm);
        /* 0 -> 2 and 0 -> 26 (2,2,2): x the short way is x- */
        CHECK(xm.peer == 2 && xm.counters[EXA_PORT_CNT_PACKETS] == 2);
    }
    /*
     * The answer of a read node 0 does in node 1's memory travels 1 -> 0:
     * routed by node 0 from 1, it is counted on node 1's x- (not on any
     * cable of node 0), and goes around it when it is down.
     */
    {
        struct fabric_route_result r;
        struct fabric_port_info before, after, own;

        fabric_torus_port_info(fabric_torus(f[1]), EXA_PORT_XM, &before);
        fabric_torus_route_from(fabric_torus(f[0]), 1, 0, 4096, &r);
        fabric_torus_port_info(fabric_torus(f[1]), EXA_PORT_XM, &after);
        fabric_torus_port_info(fabric_torus(f[0]), EXA_PORT_XP, &own);
        CHECK(r.hops == 1 && !r.detour && r.fate == FABRIC_ROUTE_OK);
        CHECK(after.counters[EXA_PORT_CNT_PACKETS] ==
                  before.counters[EXA_PORT_CNT_PACKETS] + 1 &&
              after.counters[EXA_PORT_CNT_BYTES] ==
                  before.counters[EXA_PORT_CNT_BYTES] + 4096);
        CHECK(own.counters[EXA_PORT_CNT_PACKETS] == 0);
        CHECK(fabric_torus_set_port(fabric_torus(f[1]), EXA_PORT_XM, false, 0,
                                    0, 0, 0) == 0);
        fabric_torus_route_from(fabric_torus(f[0]), 1, 0, 64, &r);
        fabric_torus_port_info(fabric_torus(f[1]), EXA_PORT_XM, &after);
        CHECK(r.detour && r.hops > 1 &&
              after.counters[EXA_PORT_CNT_DETOURED] ==
                  before.counters[EXA_PORT_CNT_DETOURED] + 1);
    }
    for (uint32_t i = 0; i < 27; i++) {
        fabric_close(f[i]);
    }
    return true;
}

/* A cable's drop and corruption, and its rate and latency on delivery. */
static bool t_torus_link_model(void)
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

    CHECK(a && b);
    CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0, 0,
                                1000000, 0) == 0);
    CHECK(fabric_send(a, 1, 1, buf, make_payload(buf, 0, 32)) == FABRIC_SENT);
    fabric_torus_port_info(fabric_torus(a), EXA_PORT_XP, &pi);
    CHECK(pi.counters[EXA_PORT_CNT_DROPS] == 1 &&
          pi.counters[EXA_PORT_CNT_RETRANS] == 1);
    CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0, 0, 0,
                                1000000) == 0);
    CHECK(fabric_send(a, 1, 1, buf, make_payload(buf, 0, 32)) == FABRIC_SENT);
    ring_drain_all(b, &l);
    fabric_get_stats(b, &sb);
    CHECK(l.count == 0 && sb.rx_bad_crc == 1);
    CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0, 0, 0,
                                0) == 0);
    CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0, 0, 1,
                                1000001) == -EINVAL);
    CHECK(fabric_torus_set_port(fabric_torus(a), 6, true, 0, 0, 0, 0) ==
          -EINVAL);

    /* 8 Mb/s = one byte per us: 1000 bytes take 1 ms each, back to back */
    CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 8, 0, 0,
                                0) == 0);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = ts.tv_sec * 1000000000ull + ts.tv_nsec;
    fabric_torus_route(fabric_torus(a), 1, 1000, &r1);
    fabric_torus_route(fabric_torus(a), 1, 1000, &r2);
    CHECK(r1.due_ns >= t0 + 1000000 && r2.due_ns >= r1.due_ns + 1000000);
    CHECK(r2.due_ns < t0 + 2500000);
    CHECK(fabric_torus_booked(fabric_torus(a), 1, 500000));
    CHECK(!fabric_torus_booked(fabric_torus(a), 1, 10000000));
    fabric_torus_port_info(fabric_torus(a), EXA_PORT_XP, &pi);
    CHECK(pi.counters[EXA_PORT_CNT_BUSY_NS] == 2000000);

    /* 20 ms of latency: the record waits on the ring until it is due */
    CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0, 20000000,
                                0, 0) == 0);
    l = (struct rx_log){0};
    CHECK(fabric_send(a, 1, 1, buf, make_payload(buf, 0, 32)) == FABRIC_SENT);
    wait_rx(b, 5);
    fabric_poll_rx(b, 16, rx_cb, &l);
    CHECK(l.count == 0);
    CHECK(!fabric_pkt_pending(b, false) && fabric_next_due(b) > 0);
    usleep(25000);
    CHECK(fabric_poll_pkts(b, 16, rx_cb, &l) == 1 && l.count == 1 && !l.bad);
    CHECK(fabric_rx_hops(b) == 1);
    fabric_get_stats(b, &sb);
    CHECK(sb.rx_hops[1] == 1);
    fabric_close(a);
    fabric_close(b);
    return true;
}

TEST_F(fabric, torus_shapes_and_ports)
{
    ASSERT_TRUE(t_torus_shapes());
}

TEST_F(fabric, torus_routes_detours_dead_nodes)
{
    ASSERT_TRUE(t_torus_routes());
}

TEST_F(fabric, torus_link_faults_rate_latency)
{
    ASSERT_TRUE(t_torus_link_model());
}

TEST_HARNESS_MAIN
