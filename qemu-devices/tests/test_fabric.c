// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the fabric transport: datagrams between endpoints (CRC,
 * faults, back-pressure, peers).
 */
#include "fabric_fixture.h"

/* ------------------------------------------------------------------ */

/* The bitwise CRC-32 the fabric used before zlib's, as the reference. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t len)
{
    uint32_t crc = 0xffffffffu;

    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
        }
    }
    return ~crc;
}

TEST_F(fabric, crc32_known_vector)
{
    uint8_t buf[4100];
    uint32_t x = 12345;

    ASSERT_EQ(0xcbf43926u, fabric_crc32(0, "123456789", 9));
    /* chaining */
    ASSERT_EQ(0xcbf43926u,
              fabric_crc32(fabric_crc32(0, "1234", 4), "56789", 5));
    /* every length up to a page and a bit, and every split of 300 bytes */
    for (size_t i = 0; i < sizeof(buf); i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t len = 0; len <= sizeof(buf); len += len < 300 ? 1 : 97) {
        ASSERT_EQ(crc32_bitwise(buf, len), fabric_crc32(0, buf, len))
        TH_LOG("length %zu", len);
    }
    for (size_t cut = 0; cut <= 300; cut++) {
        ASSERT_EQ(crc32_bitwise(buf, 300),
                  fabric_crc32(fabric_crc32(0, buf, cut), buf + cut, 300 - cut))
        TH_LOG("split at %zu", cut);
    }
}

/*
 * Values the table-driven fabric_crc32 gave before it called zlib
 * (recorded from 56eabc8^ on the pattern below): packets of older builds
 * must still pass the check.
 */
static void fill_crc_pattern(uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (uint8_t)(i * 31 + (i >> 8) * 17 + 5);
    }
}

TEST(crc32_values_of_the_table_driven_one)
{
    static const struct {
        size_t start, len;
        uint32_t crc;
    } vec[] = {
        {0, 0, 0x00000000u},  {0, 1, 0xa2681b02u},  {0, 96, 0xad6d6f7eu},
        {0, 4096, 0xbae01c97u}, {1, 1, 0xee010b5cu}, {1, 96, 0xe29e4e03u},
        {1, 4096, 0x56ef5b91u}, {3, 1, 0x71beeff9u}, {3, 96, 0x9a6cafbcu},
        {3, 4096, 0x4dac31cbu},
    };
    static uint8_t buf[4096 + 8];
    uint32_t crc;

    fill_crc_pattern(buf, sizeof(buf));
    for (size_t i = 0; i < ARRAY_SIZE(vec); i++) {
        EXPECT_EQ(vec[i].crc,
                  fabric_crc32(0, buf + vec[i].start, vec[i].len)) {
            TH_LOG("start %zu length %zu", vec[i].start, vec[i].len);
        }
    }
    /* chained as the rings chain a record's header and its rest */
    crc = fabric_crc32(fabric_crc32(0, buf + 1, 40), buf + 41, 56);
    ASSERT_EQ(0xe29e4e03u, crc);
    crc = fabric_crc32(0, buf + 3, 7);
    crc = fabric_crc32(crc, buf + 10, 1000);
    ASSERT_EQ(0x4dac31cbu, fabric_crc32(crc, buf + 1010, 3089));
    /* any seed, and no bytes leave the seed as it is */
    ASSERT_EQ(0xd0db0a4fu, fabric_crc32(0xdeadbeefu, buf, 96));
    ASSERT_EQ(0x12345678u, fabric_crc32(0x12345678u, buf, 0));
}

/* The header's bytes as the encoder of byte shifts wrote them (fb4dae2) */
TEST(header_wire_layout)
{
    static const uint8_t wire[FABRIC_HDR_SIZE] = {
        0x45, 0x58, 0x46, 0x42, 0x01, 0x07, 0x02, 0x01, 0x06, 0x05,
        0x04, 0x03, 0x0d, 0x0c, 0x0b, 0x0a, 0xef, 0xbe, 0xad, 0xde,
    };
    const struct fabric_hdr h = {
        .magic = FABRIC_MAGIC, .version = 1, .type = 7, .length = 0x0102,
        .src = 0x03040506u, .dst = 0x0a0b0c0du, .crc = 0xdeadbeefu,
    };
    struct fabric_hdr back;
    uint8_t w[FABRIC_HDR_SIZE + 1];

    w[FABRIC_HDR_SIZE] = 0x5a;
    fabric_hdr_encode(w, &h);
    ASSERT_EQ(0, memcmp(w, wire, sizeof(wire)));
    ASSERT_EQ(0x5a, w[FABRIC_HDR_SIZE]); /* writes 20 bytes, no more */
    fabric_hdr_decode(&back, wire);
    ASSERT_EQ(h.magic, back.magic);
    ASSERT_EQ(h.version, back.version);
    ASSERT_EQ(h.type, back.type);
    ASSERT_EQ(h.length, back.length);
    ASSERT_EQ(h.src, back.src);
    ASSERT_EQ(h.dst, back.dst);
    ASSERT_EQ(h.crc, back.crc);
}

TEST_F(fabric, open_and_argument_validation)
{
    static uint8_t big[FABRIC_MAX_PAYLOAD + 1];
    struct fabric *a, *dup = NULL;
    struct fabric_config cfg = {.dir = tmpdir, .node_id = 3, .num_nodes = 3};
    char err[256];

    ASSERT_EQ(-EINVAL, fabric_open(&dup, &cfg, err, sizeof(err)));
    cfg.node_id = 0;
    cfg.num_nodes = 0;
    ASSERT_EQ(-EINVAL, fabric_open(&dup, &cfg, err, sizeof(err)));
    cfg.num_nodes = 2;
    cfg.drop_ppm = FABRIC_PPM + 1;
    ASSERT_EQ(-EINVAL, fabric_open(&dup, &cfg, err, sizeof(err)));
    cfg.drop_ppm = 0;
    cfg.dir = NULL;
    ASSERT_EQ(-EINVAL, fabric_open(&dup, &cfg, err, sizeof(err)));

    a = open_node(0, 2, 0, 0, 0, 0, NULL);
    ASSERT_NE(NULL, a);
    /* A second live node with the same id is refused. */
    cfg.dir = tmpdir;
    ASSERT_EQ(-EADDRINUSE, fabric_open(&dup, &cfg, err, sizeof(err)));
    ASSERT_EQ(NULL, dup);
    ASSERT_EQ(-EINVAL, fabric_send(a, 2, 1, "x", 1));
    ASSERT_EQ(-EINVAL, fabric_send(a, 1, 1, NULL, 5));
    ASSERT_EQ(-EINVAL, fabric_send(a, 1, 1, big, sizeof(big)));
    fabric_close(a);
    /* After close the node can be opened again. */
    a = open_node(0, 2, 0, 0, 0, 0, NULL);
    ASSERT_NE(NULL, a);
    fabric_close(a);
}

TEST_F(fabric, delivery_and_integrity)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct rx_log l = {0}, z = {0};
    struct fabric_stats sa, sb;
    uint8_t buf[FABRIC_MAX_PAYLOAD];
    const uint32_t n = 200;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    for (uint32_t i = 0; i < n; i++) {
        size_t len =
            make_payload(buf, i, 4 + (i * 37) % (FABRIC_MAX_PAYLOAD - 4));

        ASSERT_LE(0, fabric_send(a, 1, 7, buf, len));
        if (i % 8 == 7) { /* keep the receive queue short */
            wait_rx(b, 100);
            drain(b, &l);
            fabric_flush(a);
        }
    }
    for (int k = 0; k < 100 && l.count < n; k++) {
        fabric_flush(a);
        wait_rx(b, 10);
        drain(b, &l);
    }
    fabric_get_stats(a, &sa);
    fabric_get_stats(b, &sb);
    TH_LOG("delivered %u/%u, bad %u, queued %llu", l.count, n, l.bad,
           (unsigned long long)sa.tx_queued);
    ASSERT_EQ(n, l.count);
    ASSERT_EQ(0, l.bad);
    ASSERT_EQ(0, l.src);
    ASSERT_EQ(7, l.type);
    ASSERT_EQ(n, sa.tx_packets);
    ASSERT_EQ(n, sb.rx_packets);
    ASSERT_EQ(0, sb.rx_bad_crc);
    ASSERT_EQ(0, sb.rx_bad_length);
    /* Zero-length packets are legal. */
    ASSERT_EQ(FABRIC_SENT, fabric_send(b, 0, 9, NULL, 0));
    wait_rx(a, 100);
    ASSERT_EQ(1, fabric_poll_rx(a, 8, rx_cb, &z));
    ASSERT_EQ(1, z.count);
    ASSERT_EQ(1, z.src);
    ASSERT_EQ(9, z.type);
    fabric_close(a);
    fabric_close(b);
}

/* Raw datagrams with broken headers are dropped and counted. */
TEST_F(fabric, bad_crc_magic_version_length_addr_dropped)
{
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct fabric_hdr h;
    struct fabric_stats st;
    struct rx_log l = {0};
    uint8_t pkt[FABRIC_HDR_SIZE + 16];
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

    ASSERT_NE(NULL, b);
    ASSERT_LE(0, fd);
    fabric_sock_path(sa.sun_path, sizeof(sa.sun_path), tmpdir, 1);

#define SEND_RAW(len)                                                         \
    ASSERT_EQ((ssize_t)(len),                                                 \
              sendto(fd, pkt, (len), 0, (struct sockaddr *)&sa, sizeof(sa)))

    /* build a valid packet */
    h = (struct fabric_hdr){.magic = FABRIC_MAGIC,
                            .version = FABRIC_VERSION,
                            .type = 1,
                            .length = 16,
                            .src = 0,
                            .dst = 1};
    make_payload(pkt + FABRIC_HDR_SIZE, 0, 16);
#define SEAL()                                     \
    do {                                           \
        h.crc = 0;                                 \
        fabric_hdr_encode(pkt, &h);                \
        h.crc = fabric_crc32(0, pkt, sizeof(pkt)); \
        fabric_hdr_encode(pkt, &h);                \
    } while (0)

    SEAL();
    pkt[FABRIC_HDR_SIZE + 5] ^= 0x10; /* payload bit flip */
    SEND_RAW(sizeof(pkt));
    pkt[FABRIC_HDR_SIZE + 5] ^= 0x10;
    SEAL();
    pkt[16] ^= 1; /* crc field itself */
    SEND_RAW(sizeof(pkt));
    h.magic = 0xdeadbeef;
    SEAL();
    SEND_RAW(sizeof(pkt));
    h.magic = FABRIC_MAGIC;
    h.version = 9;
    SEAL();
    SEND_RAW(sizeof(pkt));
    h.version = FABRIC_VERSION;
    h.length = 15;
    SEAL();
    SEND_RAW(sizeof(pkt)); /* length mismatch */
    h.length = 16;
    SEND_RAW(7); /* runt */
    h.dst = 0;
    SEAL();
    SEND_RAW(sizeof(pkt)); /* not for us */
    h.dst = 1;
    h.src = 5;
    SEAL();
    SEND_RAW(sizeof(pkt)); /* no such source */
    h.src = 0;
    SEAL();
    SEND_RAW(sizeof(pkt)); /* finally a good one */

    wait_rx(b, 100);
    ASSERT_EQ(9, drain(b, &l));
    fabric_get_stats(b, &st);
    ASSERT_EQ(2, st.rx_bad_crc);
    ASSERT_EQ(1, st.rx_bad_magic);
    ASSERT_EQ(1, st.rx_bad_version);
    ASSERT_EQ(2, st.rx_bad_length);
    ASSERT_EQ(2, st.rx_bad_addr);
    ASSERT_EQ(1, st.rx_packets);
    ASSERT_EQ(1, l.count);
    ASSERT_EQ(0, l.bad);
    close(fd);
    fabric_close(b);
}

struct fi_result {
    uint64_t drops, corrupts, delivered, detected;
};

/* 4000 packets with 10% dropped and 5% corrupted by seed: what arrived. */
static void run_faults(struct __test_metadata *_metadata, uint64_t seed,
                       struct fi_result *res)
{
    struct fabric *a = open_node(0, 2, 100000, 50000, seed, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct fabric_stats sa, sb;
    uint8_t buf[64];
    const uint32_t n = 4000;
    struct rx_log l = {0};

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    for (uint32_t i = 0; i < n; i++) {
        ASSERT_LE(0, fabric_send(a, 1, 1, buf,
                                 make_payload(buf, i, sizeof(buf))));
        if (i % 8 == 7) {
            drain(b, &l);
            fabric_flush(a);
        }
    }
    for (int k = 0; k < 100 && fabric_queued(a); k++) {
        fabric_flush(a);
        wait_rx(b, 10);
        drain(b, &l);
    }
    wait_rx(b, 10);
    drain(b, &l);
    fabric_get_stats(a, &sa);
    fabric_get_stats(b, &sb);
    res->drops = sa.tx_inject_drop;
    res->corrupts = sa.tx_inject_corrupt;
    res->delivered = sb.rx_packets;
    res->detected = sb.rx_bad_crc + sb.rx_bad_magic + sb.rx_bad_version +
                    sb.rx_bad_length + sb.rx_bad_addr;
    TH_LOG("seed %llu: %llu dropped, %llu corrupted, %llu detected, %llu "
           "delivered",
           (unsigned long long)seed, (unsigned long long)res->drops,
           (unsigned long long)res->corrupts,
           (unsigned long long)res->detected,
           (unsigned long long)res->delivered);
    fabric_close(a);
    fabric_close(b);
    /* roughly 10% dropped, 5% of the rest corrupted */
    ASSERT_LT(n / 20, res->drops);
    ASSERT_GT(n / 5, res->drops);
    ASSERT_LT(n / 50, res->corrupts);
    ASSERT_GT(n / 10, res->corrupts);
    /* every corruption is caught, everything else arrives */
    ASSERT_EQ(res->corrupts, res->detected);
    ASSERT_EQ(n - res->drops - res->corrupts, res->delivered);
}

TEST_F(fabric, fault_injection_counts_and_seed)
{
    struct fi_result r1, r2, r3;

    run_faults(_metadata, 42, &r1);
    run_faults(_metadata, 42, &r2);
    run_faults(_metadata, 7, &r3);
    /* same seed, same faults */
    ASSERT_EQ(r1.drops, r2.drops);
    ASSERT_EQ(r1.corrupts, r2.corrupts);
    /* another seed, other faults */
    ASSERT_TRUE(r1.drops != r3.drops || r1.corrupts != r3.corrupts)
    TH_LOG("seeds 42 and 7 both: %llu dropped, %llu corrupted",
           (unsigned long long)r1.drops, (unsigned long long)r1.corrupts);
}

/* Fill the receiver without draining: the sender queues, nothing is lost. */
TEST_F(fabric, backpressure_queue_keeps_order)
{
    struct watch_log w = {0};
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, &w);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct rx_log l = {0};
    struct fabric_stats sa;
    uint8_t buf[256];
    const uint32_t n = 3000;
    uint32_t queued_ret = 0;
    struct pollfd p;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    for (uint32_t i = 0; i < n; i++) {
        int r = fabric_send(a, 1, 2, buf, make_payload(buf, i, sizeof(buf)));

        ASSERT_TRUE(r == FABRIC_SENT || r == FABRIC_QUEUED)
        TH_LOG("send %u: %d", i, r);
        queued_ret += r == FABRIC_QUEUED;
    }
    TH_LOG("%u of %u sends queued, %zu still queued", queued_ret, n,
           fabric_queued(a));
    ASSERT_LT(0, queued_ret);
    ASSERT_LT(0, fabric_queued(a));
    ASSERT_LE(1, w.on);
    ASSERT_EQ(1, w.nfds);
    /* The watched socket must not be writable while b is full. */
    p = (struct pollfd){.fd = w.fds[0], .events = POLLOUT};
    ASSERT_EQ(0, poll(&p, 1, 0));
    /* Now drain, flushing when the watched socket says so. */
    for (int k = 0; k < 100000 && l.count < n; k++) {
        drain(b, &l);
        if (w.nfds) {
            p = (struct pollfd){.fd = w.fds[0], .events = POLLOUT};
            if (poll(&p, 1, 10) > 0) {
                fabric_flush(a);
            }
        }
    }
    fabric_get_stats(a, &sa);
    TH_LOG("received %u, bad/out of order %u", l.count, l.bad);
    ASSERT_EQ(n, l.count);
    ASSERT_EQ(0, l.bad);
    ASSERT_EQ(0, fabric_queued(a));
    ASSERT_EQ(0, w.nfds);
    ASSERT_EQ(w.on, w.off);
    ASSERT_EQ(n, sa.tx_packets);
    ASSERT_EQ(0, sa.tx_queue_full);
    fabric_close(a);
    fabric_close(b);
}

/* A bounded queue: past max_queue the packet is reported lost. */
TEST_F(fabric, bounded_queue_reports_loss)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 16, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct fabric_stats sa;
    uint8_t buf[64] = {0};
    int r = 0, enobufs = 0;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    for (int i = 0; i < 2000 && enobufs < 5; i++) {
        r = fabric_send(a, 1, 2, buf, sizeof(buf));
        if (r == -ENOBUFS) {
            enobufs++;
        } else {
            ASSERT_LE(0, r);
        }
    }
    fabric_get_stats(a, &sa);
    ASSERT_EQ(5, enobufs);
    ASSERT_EQ(16, fabric_queued(a));
    ASSERT_EQ(5, sa.tx_queue_full);
    /* Closing with a full queue must not leak or crash (valgrind-clean). */
    fabric_close(a);
    fabric_close(b);
}

/* Missing peer = packet lost; a peer that comes (back) is reached. */
TEST_F(fabric, missing_peer_and_reconnect)
{
    struct fabric *a = open_node(0, 3, 0, 0, 0, 0, NULL);
    struct fabric *c;
    struct fabric_stats sa;
    struct rx_log l = {0};
    uint8_t buf[32];

    ASSERT_NE(NULL, a);
    ASSERT_EQ(-EHOSTUNREACH,
              fabric_send(a, 2, 1, buf, make_payload(buf, 0, 32)));
    c = open_node(2, 3, 0, 0, 0, 0, NULL);
    ASSERT_NE(NULL, c);
    ASSERT_EQ(FABRIC_SENT, fabric_send(a, 2, 1, buf, make_payload(buf, 0, 32)));
    wait_rx(c, 100);
    ASSERT_EQ(1, drain(c, &l));
    ASSERT_EQ(0, l.bad);
    /* node goes down after we connected to it */
    fabric_close(c);
    ASSERT_EQ(-EHOSTUNREACH,
              fabric_send(a, 2, 1, buf, make_payload(buf, 1, 32)));
    /* and comes back: we reconnect to the new socket */
    c = open_node(2, 3, 0, 0, 0, 0, NULL);
    ASSERT_NE(NULL, c);
    l = (struct rx_log){.next_seq = 2};
    ASSERT_EQ(FABRIC_SENT, fabric_send(a, 2, 1, buf, make_payload(buf, 2, 32)));
    wait_rx(c, 100);
    ASSERT_EQ(1, drain(c, &l));
    ASSERT_EQ(0, l.bad);
    fabric_get_stats(a, &sa);
    ASSERT_EQ(2, sa.tx_no_peer);
    ASSERT_EQ(2, sa.tx_packets);
    fabric_close(c);
    fabric_close(a);
}

/* Three nodes, everybody to everybody (including to itself). */
static void rx_multi(void *opaque, uint32_t src, uint8_t type,
                     const void *payload, size_t len)
{
    struct rx_log *per_src = opaque;

    if (src > 2 || type != src) {
        per_src[0].bad++;
        return;
    }
    rx_cb(&per_src[src], src, type, payload, len);
}

TEST_F(fabric, three_nodes_all_to_all)
{
    struct fabric *f[3];
    struct rx_log l[3][3];
    uint8_t buf[64];
    const uint32_t n = 50;

    memset(l, 0, sizeof(l));
    for (int i = 0; i < 3; i++) {
        f[i] = open_node(i, 3, 0, 0, 0, 0, NULL);
        ASSERT_NE(NULL, f[i]);
    }
    for (uint32_t k = 0; k < n; k++) {
        for (int s = 0; s < 3; s++) {
            for (int d = 0; d < 3; d++) {
                ASSERT_LE(0, fabric_send(f[s], d, s, buf,
                                         make_payload(buf, k, 8 + k % 50)));
            }
        }
        for (int d = 0; d < 3; d++) {
            fabric_poll_rx(f[d], 64, rx_multi, l[d]);
        }
    }
    for (int round = 0; round < 200; round++) {
        bool done = true;

        for (int d = 0; d < 3; d++) {
            for (int s = 0; s < 3; s++) {
                fabric_flush(f[s]);
            }
            wait_rx(f[d], 1);
            fabric_poll_rx(f[d], 64, rx_multi, l[d]);
        }
        for (int d = 0; d < 3; d++) {
            for (int s = 0; s < 3; s++) {
                if (l[d][s].count < n) {
                    done = false;
                }
            }
        }
        if (done) {
            break;
        }
    }
    for (int d = 0; d < 3; d++) {
        for (int s = 0; s < 3; s++) {
            ASSERT_EQ(n, l[d][s].count) TH_LOG("%d to %d", s, d);
            ASSERT_EQ(0, l[d][s].bad) TH_LOG("%d to %d", s, d);
        }
    }
    for (int i = 0; i < 3; i++) {
        fabric_close(f[i]);
    }
}

TEST_HARNESS_MAIN
