// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the fabric transport: the shared-memory bulk and packet
 * rings.
 */
#include "fabric_fixture.h"

/* ------------------------------------------------------------------ */
/* Bulk path */

struct bulk_log {
    uint32_t count, bad, corrupt, next_seq, src;
    uint64_t bytes;
    uint8_t type;
    bool check_order;
};

/* hdr = u32 seq; data bytes derived from seq */
static void bulk_cb(void *opaque, uint32_t src, uint8_t type, const void *hdr,
                    size_t hlen, const void *data, size_t dlen, bool ok)
{
    struct bulk_log *l = opaque;
    const uint8_t *d = data;
    uint32_t seq;

    l->count++;
    l->src = src;
    l->type = type;
    l->bytes += dlen;
    if (!ok) {
        l->corrupt++;
        return;
    }
    if (hlen != 4) {
        l->bad++;
        return;
    }
    memcpy(&seq, hdr, 4);
    if (l->check_order && seq != l->next_seq) {
        l->bad++;
    }
    l->next_seq = seq + 1;
    for (size_t i = 0; i < dlen; i += 61) {
        if (d[i] != (uint8_t)(seq * 7 + i)) {
            l->bad++;
            break;
        }
    }
}

static int bulk_put(struct fabric *f, uint32_t dst, uint32_t seq, size_t dlen)
{
    int err;
    uint8_t *p = fabric_bulk_reserve(f, dst, 4, dlen, &err);

    if (!p) {
        return err;
    }
    memcpy(p, &seq, 4);
    for (size_t i = 0; i < dlen; i++) {
        p[4 + i] = (uint8_t)(seq * 7 + i);
    }
    return fabric_bulk_commit(f, 9);
}

/* Take doorbells, then records, until nothing moves. */
static void bulk_drain_all(struct fabric *f, struct bulk_log *l)
{
    for (int idle = 0; idle < 3;) {
        int n;

        wait_rx(f, idle ? 5 : 0);
        n = fabric_poll_rx(f, 64, NULL, NULL);
        n += fabric_poll_bulk(f, 64, bulk_cb, l);
        idle = n ? 0 : idle + 1;
    }
}

TEST_F(fabric, bulk_checksum_detects_bit_flips)
{
    uint8_t buf[1000];
    uint64_t c;

    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (uint8_t)(i * 13);
    }
    c = fabric_csum(buf, sizeof(buf));
    for (size_t bit = 0; bit < sizeof(buf) * 8; bit += 7) {
        buf[bit / 8] ^= 1u << (bit % 8);
        ASSERT_NE(c, fabric_csum(buf, sizeof(buf))) TH_LOG("bit %zu", bit);
        buf[bit / 8] ^= 1u << (bit % 8);
    }
    ASSERT_EQ(c, fabric_csum(buf, sizeof(buf)));
    ASSERT_NE(c, fabric_csum(buf, 999));
}

TEST_F(fabric, bulk_delivery_order_and_doorbells)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct bulk_log l = {.check_order = true};
    struct fabric_stats st;
    int err = 0;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    /* argument checks */
    ASSERT_EQ(NULL, fabric_bulk_reserve(a, 2, 4, 4, &err));
    ASSERT_EQ(-EINVAL, err);
    ASSERT_EQ(NULL,
              fabric_bulk_reserve(a, 1, 4, FABRIC_BULK_MAX_DATA + 1, &err));
    ASSERT_EQ(-EINVAL, err);
    ASSERT_EQ(-EINVAL, fabric_bulk_send(a, 1, 0, "x", 1, NULL, 0));
    ASSERT_EQ(-EINVAL, fabric_send(a, 1, FABRIC_TYPE_BULK, "x", 1));
    /* 200 records of assorted sizes, interleaved sends and drains */
    for (uint32_t i = 0; i < 200; i++) {
        ASSERT_EQ(FABRIC_SENT, bulk_put(a, 1, i, (i * 977) % 20000))
        TH_LOG("record %u", i);
        if (i % 50 == 49) {
            bulk_drain_all(b, &l);
        }
    }
    bulk_drain_all(b, &l);
    fabric_get_stats(a, &st);
    TH_LOG("bulk: %u records, %u bad, doorbells %llu", l.count, l.bad,
           (unsigned long long)st.tx_bulk_doorbells);
    ASSERT_EQ(200, l.count);
    ASSERT_EQ(0, l.bad);
    ASSERT_EQ(0, l.corrupt);
    ASSERT_EQ(0, l.src);
    ASSERT_EQ(9, l.type);
    ASSERT_LE(1, st.tx_bulk_doorbells);
    ASSERT_GT(50, st.tx_bulk_doorbells);
    fabric_close(a);
    fabric_close(b);
}

TEST_F(fabric, bulk_ring_full_and_wrap)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct bulk_log l = {.check_order = true};
    uint32_t sent = 0;
    int r, err = 0;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    /* Fill the ring without draining: -EAGAIN, nothing lost. */
    while ((r = bulk_put(a, 1, sent, 16384)) == FABRIC_SENT) {
        sent++;
    }
    ASSERT_EQ(-EAGAIN, r);
    ASSERT_LE(FABRIC_BULK_RING_SIZE / 16500, sent);
    ASSERT_GE(FABRIC_BULK_RING_SIZE / 16384, sent);
    bulk_drain_all(b, &l);
    ASSERT_EQ(sent, l.count);
    ASSERT_EQ(0, l.bad);
    /* Room again; a second reservation while one is open is refused. */
    ASSERT_NE(NULL, fabric_bulk_reserve(a, 1, 4, 100, &err));
    ASSERT_EQ(NULL, fabric_bulk_reserve(a, 1, 4, 100, &err));
    ASSERT_EQ(-EINVAL, err);
    fabric_bulk_cancel(a);
    for (uint32_t i = 0; i < 3 * sent; i++) { /* wraps several times */
        if (bulk_put(a, 1, sent + i, 12345) != FABRIC_SENT) {
            bulk_drain_all(b, &l), i--;
        }
    }
    bulk_drain_all(b, &l);
    TH_LOG("ring holds %u x 16 KiB records; total %u received", sent,
           l.count);
    ASSERT_EQ(4 * sent, l.count);
    ASSERT_EQ(0, l.bad);
    fabric_close(a);
    fabric_close(b);
}

TEST_F(fabric, bulk_fault_injection)
{
    struct fabric *a = open_node(0, 2, 100000, 100000, 3, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct bulk_log l = {0};
    struct fabric_stats sa, sb;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    for (uint32_t i = 0; i < 2000; i++) {
        if (bulk_put(a, 1, i, 4000) != FABRIC_SENT) {
            bulk_drain_all(b, &l), i--;
        }
    }
    bulk_drain_all(b, &l);
    fabric_get_stats(a, &sa);
    fabric_get_stats(b, &sb);
    TH_LOG("dropped %llu corrupted %llu; rx ok %u bad-data %llu bad-hdr %llu",
           (unsigned long long)sa.tx_bulk_inject_drop,
           (unsigned long long)sa.tx_bulk_inject_corrupt, l.count - l.corrupt,
           (unsigned long long)sb.rx_bulk_bad_data,
           (unsigned long long)sb.rx_bulk_bad_hdr);
    ASSERT_LT(100, sa.tx_bulk_inject_drop);
    ASSERT_GT(300, sa.tx_bulk_inject_drop);
    ASSERT_LT(100, sa.tx_bulk_inject_corrupt);
    /* Every corrupted record is caught: in the header or in the data. */
    ASSERT_EQ(sa.tx_bulk_inject_corrupt,
              sb.rx_bulk_bad_data + sb.rx_bulk_bad_hdr);
    ASSERT_LT(0, sb.rx_bulk_bad_data);
    ASSERT_EQ(2000 - sa.tx_bulk_inject_drop - sa.tx_bulk_inject_corrupt,
              l.count - l.corrupt);
    ASSERT_EQ(0, l.bad);
    fabric_close(a);
    fabric_close(b);
}

TEST_F(fabric, bulk_producer_and_consumer_restart)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct bulk_log l = {0};
    struct fabric_stats st;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    for (uint32_t i = 0; i < 10; i++) {
        bulk_put(a, 1, i, 1000);
    }
    bulk_drain_all(b, &l);
    /* producer restarts: new ring file, consumer remaps */
    fabric_close(a);
    a = open_node(0, 2, 0, 0, 0, 0, NULL);
    ASSERT_NE(NULL, a);
    for (uint32_t i = 0; i < 10; i++) {
        bulk_put(a, 1, i, 1000);
    }
    bulk_drain_all(b, &l);
    /* consumer restarts while records wait: it maps the ring again */
    fabric_close(b);
    b = open_node(1, 2, 0, 0, 0, 0, NULL);
    ASSERT_NE(NULL, b);
    usleep(FABRIC_BULK_DB_NS / 1000 + 1000);
    bulk_put(a, 1, 0, 1000); /* rings again after 10 ms */
    bulk_drain_all(b, &l);
    fabric_get_stats(b, &st);
    TH_LOG("received %u, maps %llu", l.count,
           (unsigned long long)st.rx_bulk_maps);
    ASSERT_EQ(21, l.count);
    ASSERT_EQ(0, l.bad);
    ASSERT_EQ(1, st.rx_bulk_maps);
    fabric_close(a);
    fabric_close(b);
}

/*
 * A renewed ring starts empty: records written before fabric_bulk_renew()
 * never arrive, neither at a consumer that starts later nor at one that
 * has the old ring mapped.
 */
TEST_F(fabric, bulk_renew_abandons_unconsumed_records)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b;
    struct bulk_log l = {.check_order = true, .next_seq = 100};
    struct fabric_stats st;

    ASSERT_NE(NULL, a);
    /* node 1 is not running: records 0..9 wait, then are abandoned */
    for (uint32_t i = 0; i < 10; i++) {
        ASSERT_EQ(FABRIC_SENT, bulk_put(a, 1, i, 1000)) TH_LOG("record %u", i);
    }
    fabric_bulk_renew(a, 1);
    fabric_bulk_renew(a, 1); /* no ring: nothing to do */
    fabric_bulk_renew(a, 7); /* no such node */
    b = open_node(1, 2, 0, 0, 0, 0, NULL);
    ASSERT_NE(NULL, b);
    bulk_put(a, 1, 100, 1000); /* a fresh ring rings at once */
    bulk_put(a, 1, 101, 1000);
    bulk_drain_all(b, &l);
    ASSERT_EQ(2, l.count);
    ASSERT_EQ(0, l.bad);
    /* a consumer with the old ring mapped takes the new one instead */
    for (uint32_t i = 0; i < 5; i++) {
        bulk_put(a, 1, 200 + i, 1000);
    }
    fabric_bulk_renew(a, 1);
    bulk_put(a, 1, 102, 1000);
    bulk_put(a, 1, 103, 1000);
    bulk_drain_all(b, &l);
    fabric_get_stats(b, &st);
    TH_LOG("renewed: received %u (bad %u), maps %llu", l.count, l.bad,
           (unsigned long long)st.rx_bulk_maps);
    ASSERT_EQ(4, l.count);
    ASSERT_EQ(0, l.bad);
    ASSERT_EQ(2, st.rx_bulk_maps);
    fabric_close(a);
    fabric_close(b);
}

static void bulk_null_cb(void *opaque, uint32_t src, uint8_t type,
                         const void *hdr, size_t hlen, const void *data,
                         size_t dlen, bool ok)
{
    uint64_t *sum = opaque;

    (void)src;
    (void)type;
    (void)hdr;
    (void)hlen;
    if (ok && dlen) {
        *sum += ((const uint8_t *)data)[dlen - 1];
    }
}

/* Same-thread throughput of 16 KiB records (copy in + checksum + copy out). */
TEST_F(fabric, bulk_throughput)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    static uint8_t src[16384], dst[16384];
    uint64_t sum = 0, bytes = 0;
    struct timespec t0, t1;
    double s;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    memset(src, 0x5a, sizeof(src));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (bytes < (512u << 20)) {
        int err;
        uint8_t *p = fabric_bulk_reserve(a, 1, 64, sizeof(src), &err);

        if (!p) {
            fabric_poll_rx(b, 64, NULL, NULL);
            fabric_poll_bulk(b, 256, bulk_null_cb, &sum);
            continue;
        }
        memcpy(p + 64, src, sizeof(src));
        fabric_bulk_commit(a, 9);
        bytes += sizeof(src);
    }
    bulk_drain_all(b, &(struct bulk_log){0});
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    memcpy(dst, src, sizeof(dst));
    TH_LOG("bulk path, one thread: %.0f MB/s (16 KiB records)",
           bytes / s / 1e6);
    ASSERT_LT(0, sum);
    fabric_close(a);
    fabric_close(b);
}

/* ------------------------------------------------------------------ */
/* Packet rings (cfg.pkt_ring) */

/*
 * The first packet rings the doorbell that maps the ring; while the
 * receiver polls (disarmed) packets need no datagram; once it arms the
 * ring (about to sleep) the next packet rings again.
 */
TEST_F(fabric, pkt_ring_delivery_and_doorbells)
{
    struct fabric *a = open_ring_node(0, 2, 0, 0, 0);
    struct fabric *b = open_ring_node(1, 2, 0, 0, 0);
    struct fabric_stats sa, sb;
    struct rx_log l = {0}, z = {0};
    uint8_t buf[FABRIC_MAX_PAYLOAD];
    const uint32_t n = 3000;
    struct timespec t0, t1;
    uint64_t db, ms;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    ASSERT_EQ(FABRIC_SENT, fabric_send(a, 1, 7, buf, make_payload(buf, 0, 16)));
    ring_drain_all(b, &l);
    ASSERT_EQ(1, l.count);
    ASSERT_EQ(0, l.bad);
    ASSERT_EQ(0, l.src);
    ASSERT_EQ(7, l.type);
    fabric_get_stats(a, &sa);
    ASSERT_EQ(1, sa.tx_ring_doorbells);
    db = sa.tx_ring_doorbells;

    /* the receiver polls: no doorbells, no system call on either side */
    ASSERT_FALSE(fabric_pkt_pending(b, false));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint32_t i = 1; i <= n; i++) {
        size_t len =
            make_payload(buf, i, 4 + (i * 37) % (FABRIC_MAX_PAYLOAD - 4));

        ASSERT_EQ(FABRIC_SENT, fabric_send(a, 1, 7, buf, len))
        TH_LOG("packet %u", i);
        if (i % 16 == 0) {
            fabric_poll_pkts(b, 64, rx_cb, &l);
        }
    }
    while (fabric_poll_pkts(b, 64, rx_cb, &l) > 0) {
        /* drain */
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    fabric_get_stats(a, &sa);
    TH_LOG("%u packets in %llu ms, doorbells while polling: %llu", l.count,
           (unsigned long long)ms,
           (unsigned long long)(sa.tx_ring_doorbells - db));
    ASSERT_EQ(n + 1, l.count);
    ASSERT_EQ(0, l.bad);
    /* only the periodic ones (every FABRIC_PKT_DB_NS) */
    ASSERT_GE(1 + ms * 1000000 / FABRIC_PKT_DB_NS, sa.tx_ring_doorbells - db);
    db = sa.tx_ring_doorbells;

    /* it arms before sleeping: the next packet rings */
    ASSERT_FALSE(fabric_pkt_pending(b, true));
    ASSERT_EQ(FABRIC_SENT,
              fabric_send(a, 1, 7, buf, make_payload(buf, n + 1, 64)));
    fabric_get_stats(a, &sa);
    ASSERT_EQ(db + 1, sa.tx_ring_doorbells);
    ASSERT_TRUE(fabric_pkt_pending(b, true));
    wait_rx(b, 100);
    ring_drain_all(b, &l);
    ASSERT_EQ(n + 2, l.count);
    ASSERT_EQ(0, l.bad);

    fabric_get_stats(a, &sa);
    fabric_get_stats(b, &sb);
    /* tx_packets counts the doorbell datagrams too */
    ASSERT_EQ(n + 2, sa.tx_ring_packets);
    ASSERT_EQ(n + 2 + sa.tx_ring_doorbells, sa.tx_packets);
    ASSERT_EQ(n + 2, sb.rx_packets);
    ASSERT_EQ(n + 2, sb.rx_ring_packets);
    ASSERT_EQ(1, sb.rx_ring_maps);
    ASSERT_EQ(0, sb.rx_bad_crc);
    /* zero-length packets are legal */
    ASSERT_EQ(FABRIC_SENT, fabric_send(b, 0, 9, NULL, 0));
    wait_rx(a, 100);
    ASSERT_EQ(2, fabric_poll_rx(a, 8, rx_cb, &z)); /* doorbell + packet */
    ASSERT_EQ(1, z.count);
    ASSERT_EQ(1, z.src);
    ASSERT_EQ(9, z.type);
    fabric_close(a);
    fabric_close(b);
}

/* Drop and corruption per packet as on datagrams: every fault is counted. */
TEST_F(fabric, pkt_ring_fault_injection)
{
    struct fabric *a = open_ring_node(0, 2, 50000, 50000, 11);
    struct fabric *b = open_ring_node(1, 2, 0, 0, 0);
    struct fabric_stats sa, sb;
    struct rx_log l = {0};
    uint8_t buf[256];
    const uint32_t n = 4000;

    ASSERT_NE(NULL, a);
    ASSERT_NE(NULL, b);
    for (uint32_t i = 0; i < n; i++) {
        ASSERT_EQ(FABRIC_SENT,
                  fabric_send(a, 1, 3, buf, make_payload(buf, i, 8 + i % 200)))
        TH_LOG("packet %u", i);
        if (i % 64 == 63) {
            ring_drain_all(b, &l);
        }
    }
    ring_drain_all(b, &l);
    fabric_get_stats(a, &sa);
    fabric_get_stats(b, &sb);
    TH_LOG("dropped %llu corrupted %llu; delivered %u, bad crc %llu",
           (unsigned long long)sa.tx_inject_drop,
           (unsigned long long)sa.tx_inject_corrupt, l.count,
           (unsigned long long)sb.rx_bad_crc);
    ASSERT_LT(0, sa.tx_inject_drop);
    ASSERT_LT(0, sa.tx_inject_corrupt);
    ASSERT_EQ(sa.tx_inject_corrupt, sb.rx_bad_crc);
    ASSERT_EQ(n - sa.tx_inject_drop - sa.tx_inject_corrupt, l.count);
    ASSERT_EQ(l.count, sb.rx_packets);
    fabric_close(a);
    fabric_close(b);
}

/*
 * A node that is down loses the packet (-EHOSTUNREACH); a full ring (the
 * receiver does not drain) loses it too (-ENOBUFS); a receiver that
 * restarts while the ring is disarmed maps it at the periodic doorbell.
 */
TEST_F(fabric, pkt_ring_missing_full_and_restart)
{
    struct fabric *a = open_ring_node(0, 3, 0, 0, 0);
    struct fabric *c;
    struct fabric_stats sa;
    struct rx_log l = {0};
    uint8_t buf[64];
    uint32_t sent = 0;
    int r;

    ASSERT_NE(NULL, a);
    ASSERT_EQ(-EHOSTUNREACH,
              fabric_send(a, 2, 1, buf, make_payload(buf, 0, 32)));
    c = open_ring_node(2, 3, 0, 0, 0);
    ASSERT_NE(NULL, c);
    ASSERT_EQ(FABRIC_SENT, fabric_send(a, 2, 1, buf, make_payload(buf, 0, 32)));
    ring_drain_all(c, &l);
    ASSERT_EQ(1, l.count);
    ASSERT_EQ(0, l.bad);
    ASSERT_FALSE(fabric_pkt_pending(c, false)); /* polling: no doorbells */

    /* restart: the new receiver has not mapped the ring */
    fabric_close(c);
    c = open_ring_node(2, 3, 0, 0, 0);
    ASSERT_NE(NULL, c);
    ASSERT_EQ(FABRIC_SENT, fabric_send(a, 2, 1, buf, make_payload(buf, 1, 32)));
    usleep(FABRIC_PKT_DB_NS / 1000 + 2000);
    ASSERT_EQ(FABRIC_SENT, fabric_send(a, 2, 1, buf, make_payload(buf, 2, 32)));
    l = (struct rx_log){.next_seq = 1};
    ring_drain_all(c, &l);
    ASSERT_EQ(2, l.count);
    ASSERT_EQ(0, l.bad);

    /* nobody drains: the ring fills, then packets are lost */
    do {
        r = fabric_send(a, 2, 1, buf, make_payload(buf, 3 + sent, 64));
        sent += r == FABRIC_SENT;
    } while (r == FABRIC_SENT && sent < 1000000);
    fabric_get_stats(a, &sa);
    TH_LOG("ring full after %u packets", sent);
    ASSERT_EQ(-ENOBUFS, r);
    ASSERT_EQ(1, sa.tx_queue_full);
    ASSERT_LE(FABRIC_PKT_RING_SIZE / 256, sent);
    l = (struct rx_log){.next_seq = 3};
    ring_drain_all(c, &l);
    ASSERT_EQ(sent, l.count);
    ASSERT_EQ(0, l.bad);
    ASSERT_EQ(FABRIC_SENT,
              fabric_send(a, 2, 1, buf, make_payload(buf, 3 + sent, 64)));
    fabric_get_stats(a, &sa);
    ASSERT_EQ(1, sa.tx_no_peer);
    fabric_close(c);
    fabric_close(a);
}

TEST_HARNESS_MAIN
