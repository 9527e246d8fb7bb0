// SPDX-License-Identifier: GPL-2.0
/* Host unit tests of the fabric transport: the shared-memory bulk and packet rings. */
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

/* ------------------------------------------------------------------ */
/* Packet rings (cfg.pkt_ring) */

/*
 * The first packet rings the doorbell that maps the ring; while the
 * receiver polls (disarmed) packets need no datagram; once it arms the
 * ring (about to sleep) the next packet rings again.
 */
static bool t_pkt_ring(void)
{
    struct fabric *a = open_ring_node(0, 2, 0, 0, 0);
    struct fabric *b = open_ring_node(1, 2, 0, 0, 0);
    struct fabric_stats sa, sb;
    struct rx_log l = {0};
    uint8_t buf[FABRIC_MAX_PAYLOAD];
    const uint32_t n = 3000;
    struct timespec t0, t1;
    uint64_t db, ms;

    CHECK(a && b);
    CHECK(fabric_send(a, 1, 7, buf, make_payload(buf, 0, 16)) == FABRIC_SENT);
    ring_drain_all(b, &l);
    CHECK(l.count == 1 && l.bad == 0 && l.src == 0 && l.type == 7);
    fabric_get_stats(a, &sa);
    CHECK(sa.tx_ring_doorbells == 1);
    db = sa.tx_ring_doorbells;

    /* the receiver polls: no doorbells, no system call on either side */
    CHECK(!fabric_pkt_pending(b, false));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint32_t i = 1; i <= n; i++) {
        size_t len =
            make_payload(buf, i, 4 + (i * 37) % (FABRIC_MAX_PAYLOAD - 4));

        CHECK(fabric_send(a, 1, 7, buf, len) == FABRIC_SENT);
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
    diag("%u packets in %llu ms, doorbells while polling: %llu", l.count,
         (unsigned long long)ms,
         (unsigned long long)(sa.tx_ring_doorbells - db));
    CHECK(l.count == n + 1 && l.bad == 0);
    /* only the periodic ones (every FABRIC_PKT_DB_NS) */
    CHECK(sa.tx_ring_doorbells - db <= 1 + ms * 1000000 / FABRIC_PKT_DB_NS);
    db = sa.tx_ring_doorbells;

    /* it arms before sleeping: the next packet rings */
    CHECK(!fabric_pkt_pending(b, true));
    CHECK(fabric_send(a, 1, 7, buf, make_payload(buf, n + 1, 64)) ==
          FABRIC_SENT);
    fabric_get_stats(a, &sa);
    CHECK(sa.tx_ring_doorbells == db + 1);
    CHECK(fabric_pkt_pending(b, true));
    wait_rx(b, 100);
    ring_drain_all(b, &l);
    CHECK(l.count == n + 2 && l.bad == 0);

    fabric_get_stats(a, &sa);
    fabric_get_stats(b, &sb);
    /* tx_packets counts the doorbell datagrams too */
    CHECK(sa.tx_ring_packets == n + 2);
    CHECK(sa.tx_packets == n + 2 + sa.tx_ring_doorbells);
    CHECK(sb.rx_packets == n + 2 && sb.rx_ring_packets == n + 2);
    CHECK(sb.rx_ring_maps == 1 && sb.rx_bad_crc == 0);
    /* zero-length packets are legal */
    CHECK(fabric_send(b, 0, 9, NULL, 0) == FABRIC_SENT);
    {
        struct rx_log z = {0};

        wait_rx(a, 100);
        CHECK(fabric_poll_rx(a, 8, rx_cb, &z) == 2); /* doorbell + packet */
        CHECK(z.count == 1 && z.src == 1 && z.type == 9);
    }
    fabric_close(a);
    fabric_close(b);
    return true;
}

/* Drop and corruption per packet as on datagrams: every fault is counted. */
static bool t_pkt_ring_faults(void)
{
    struct fabric *a = open_ring_node(0, 2, 50000, 50000, 11);
    struct fabric *b = open_ring_node(1, 2, 0, 0, 0);
    struct fabric_stats sa, sb;
    struct rx_log l = {0};
    uint8_t buf[256];
    const uint32_t n = 4000;

    CHECK(a && b);
    for (uint32_t i = 0; i < n; i++) {
        CHECK(fabric_send(a, 1, 3, buf, make_payload(buf, i, 8 + i % 200)) ==
              FABRIC_SENT);
        if (i % 64 == 63) {
            ring_drain_all(b, &l);
        }
    }
    ring_drain_all(b, &l);
    fabric_get_stats(a, &sa);
    fabric_get_stats(b, &sb);
    diag("dropped %llu corrupted %llu; delivered %u, bad crc %llu",
         (unsigned long long)sa.tx_inject_drop,
         (unsigned long long)sa.tx_inject_corrupt, l.count,
         (unsigned long long)sb.rx_bad_crc);
    CHECK(sa.tx_inject_drop > 0 && sa.tx_inject_corrupt > 0);
    CHECK(sb.rx_bad_crc == sa.tx_inject_corrupt);
    CHECK(l.count == n - sa.tx_inject_drop - sa.tx_inject_corrupt);
    CHECK(sb.rx_packets == l.count);
    fabric_close(a);
    fabric_close(b);
    return true;
}

/*
 * A node that is down loses the packet (-EHOSTUNREACH); a full ring (the
 * receiver does not drain) loses it too (-ENOBUFS); a receiver that
 * restarts while the ring is disarmed maps it at the periodic doorbell.
 */
static bool t_pkt_ring_peers(void)
{
    struct fabric *a = open_ring_node(0, 3, 0, 0, 0);
    struct fabric *c;
    struct fabric_stats sa;
    struct rx_log l = {0};
    uint8_t buf[64];
    uint32_t sent = 0;
    int r;

    CHECK(a);
    CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 0, 32)) == -EHOSTUNREACH);
    c = open_ring_node(2, 3, 0, 0, 0);
    CHECK(c);
    CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 0, 32)) == FABRIC_SENT);
    ring_drain_all(c, &l);
    CHECK(l.count == 1 && l.bad == 0);
    CHECK(!fabric_pkt_pending(c, false)); /* polling: no doorbells */

    /* restart: the new receiver has not mapped the ring */
    fabric_close(c);
    c = open_ring_node(2, 3, 0, 0, 0);
    CHECK(c);
    CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 1, 32)) == FABRIC_SENT);
    usleep(FABRIC_PKT_DB_NS / 1000 + 2000);
    CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 2, 32)) == FABRIC_SENT);
    l = (struct rx_log){.next_seq = 1};
    ring_drain_all(c, &l);
    CHECK(l.count == 2 && l.bad == 0);

    /* nobody drains: the ring fills, then packets are lost */
    do {
        r = fabric_send(a, 2, 1, buf, make_payload(buf, 3 + sent, 64));
        sent += r == FABRIC_SENT;
    } while (r == FABRIC_SENT && sent < 1000000);
    fabric_get_stats(a, &sa);
    diag("ring full after %u packets", sent);
    CHECK(r == -ENOBUFS && sa.tx_queue_full == 1);
    CHECK(sent >= FABRIC_PKT_RING_SIZE / 256);
    l = (struct rx_log){.next_seq = 3};
    ring_drain_all(c, &l);
    CHECK(l.count == sent && l.bad == 0);
    CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 3 + sent, 64)) ==
          FABRIC_SENT);
    fabric_get_stats(a, &sa);
    CHECK(sa.tx_no_peer == 1);
    fabric_close(c);
    fabric_close(a);
    return true;
}

static bool t_bulk_csum(void)
{
    uint8_t buf[1000];
    uint64_t c;

    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (uint8_t)(i * 13);
    }
    c = fabric_csum(buf, sizeof(buf));
    for (size_t bit = 0; bit < sizeof(buf) * 8; bit += 7) {
        buf[bit / 8] ^= 1u << (bit % 8);
        CHECK(fabric_csum(buf, sizeof(buf)) != c);
        buf[bit / 8] ^= 1u << (bit % 8);
    }
    CHECK(fabric_csum(buf, sizeof(buf)) == c);
    CHECK(fabric_csum(buf, 999) != c);
    return true;
}

static bool t_bulk_delivery(void)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct bulk_log l = {.check_order = true};
    struct fabric_stats st;
    int err;
    bool ok = false;

    if (!a || !b) {
        goto out;
    }
    /* argument checks */
    if (fabric_bulk_reserve(a, 2, 4, 4, &err) || err != -EINVAL) {
        goto out;
    }
    if (fabric_bulk_reserve(a, 1, 4, FABRIC_BULK_MAX_DATA + 1, &err) ||
        err != -EINVAL) {
        goto out;
    }
    if (fabric_bulk_send(a, 1, 0, "x", 1, NULL, 0) != -EINVAL ||
        fabric_send(a, 1, FABRIC_TYPE_BULK, "x", 1) != -EINVAL) {
        goto out;
    }
    /* 200 records of assorted sizes, interleaved sends and drains */
    for (uint32_t i = 0; i < 200; i++) {
        if (bulk_put(a, 1, i, (i * 977) % 20000) != FABRIC_SENT) {
            goto out;
        }
        if (i % 50 == 49) {
            bulk_drain_all(b, &l);
        }
    }
    bulk_drain_all(b, &l);
    fabric_get_stats(a, &st);
    diag("bulk: %u records, %u bad, doorbells %llu", l.count, l.bad,
         (unsigned long long)st.tx_bulk_doorbells);
    ok = l.count == 200 && l.bad == 0 && l.corrupt == 0 && l.src == 0 &&
         l.type == 9 && st.tx_bulk_doorbells >= 1 && st.tx_bulk_doorbells < 50;
out:
    fabric_close(a);
    fabric_close(b);
    return ok;
}

static bool t_bulk_full(void)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct bulk_log l = {.check_order = true};
    uint32_t sent = 0;
    int r, err;
    bool ok = false;

    if (!a || !b) {
        goto out;
    }
    /* Fill the ring without draining: -EAGAIN, nothing lost. */
    while ((r = bulk_put(a, 1, sent, 16384)) == FABRIC_SENT) {
        sent++;
    }
    if (r != -EAGAIN || sent < FABRIC_BULK_RING_SIZE / 16500 ||
        sent > FABRIC_BULK_RING_SIZE / 16384) {
        goto out;
    }
    bulk_drain_all(b, &l);
    if (l.count != sent || l.bad) {
        goto out;
    }
    /* Room again; a second reservation while one is open is refused. */
    if (!fabric_bulk_reserve(a, 1, 4, 100, &err)) {
        goto out;
    }
    if (fabric_bulk_reserve(a, 1, 4, 100, &err) || err != -EINVAL) {
        goto out;
    }
    fabric_bulk_cancel(a);
    for (uint32_t i = 0; i < 3 * sent; i++) { /* wraps several times */
        if (bulk_put(a, 1, sent + i, 12345) != FABRIC_SENT) {
            bulk_drain_all(b, &l), i--;
        }
    }
    bulk_drain_all(b, &l);
    diag("ring holds %u x 16 KiB records; total %u received", sent, l.count);
    ok = l.count == 4 * sent && l.bad == 0;
out:
    fabric_close(a);
    fabric_close(b);
    return ok;
}

static bool t_bulk_faults(void)
{
    struct fabric *a = open_node(0, 2, 100000, 100000, 3, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct bulk_log l = {0};
    struct fabric_stats sa, sb;
    bool ok = false;

    if (!a || !b) {
        goto out;
    }
    for (uint32_t i = 0; i < 2000; i++) {
        if (bulk_put(a, 1, i, 4000) != FABRIC_SENT) {
            bulk_drain_all(b, &l), i--;
        }
    }
    bulk_drain_all(b, &l);
    fabric_get_stats(a, &sa);
    fabric_get_stats(b, &sb);
    diag("dropped %llu corrupted %llu; rx ok %u bad-data %llu bad-hdr %llu",
         (unsigned long long)sa.tx_bulk_inject_drop,
         (unsigned long long)sa.tx_bulk_inject_corrupt, l.count - l.corrupt,
         (unsigned long long)sb.rx_bulk_bad_data,
         (unsigned long long)sb.rx_bulk_bad_hdr);
    /* Every corrupted record is caught: in the header or in the data. */
    ok =
        sa.tx_bulk_inject_drop > 100 && sa.tx_bulk_inject_drop < 300 &&
        sa.tx_bulk_inject_corrupt > 100 &&
        sb.rx_bulk_bad_data + sb.rx_bulk_bad_hdr == sa.tx_bulk_inject_corrupt &&
        l.count - l.corrupt ==
            2000 - sa.tx_bulk_inject_drop - sa.tx_bulk_inject_corrupt &&
        l.bad == 0 && sb.rx_bulk_bad_data > 0;
out:
    fabric_close(a);
    fabric_close(b);
    return ok;
}

static bool t_bulk_restart(void)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    struct bulk_log l = {0};
    struct fabric_stats st;
    bool ok = false;

    if (!a || !b) {
        goto out;
    }
    for (uint32_t i = 0; i < 10; i++) {
        bulk_put(a, 1, i, 1000);
    }
    bulk_drain_all(b, &l);
    /* producer restarts: new ring file, consumer remaps */
    fabric_close(a);
    a = open_node(0, 2, 0, 0, 0, 0, NULL);
    for (uint32_t i = 0; i < 10; i++) {
        bulk_put(a, 1, i, 1000);
    }
    bulk_drain_all(b, &l);
    /* consumer restarts while records wait: it maps the ring again */
    fabric_close(b);
    b = open_node(1, 2, 0, 0, 0, 0, NULL);
    usleep(FABRIC_BULK_DB_NS / 1000 + 1000);
    bulk_put(a, 1, 0, 1000); /* rings again after 10 ms */
    bulk_drain_all(b, &l);
    fabric_get_stats(b, &st);
    diag("received %u, maps %llu", l.count,
         (unsigned long long)st.rx_bulk_maps);
    ok = l.count == 21 && l.bad == 0 && st.rx_bulk_maps == 1;
out:
    fabric_close(a);
    fabric_close(b);
    return ok;
}

/*
 * A renewed ring starts empty: records written before fabric_bulk_renew()
 * never arrive, neither at a consumer that starts later nor at one that
 * has the old ring mapped.
 */
static bool t_bulk_renew(void)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b = NULL;
    struct bulk_log l = {.check_order = true, .next_seq = 100};
    struct fabric_stats st;
    bool ok = false;

    if (!a) {
        goto out;
    }
    /* node 1 is not running: records 0..9 wait, then are abandoned */
    for (uint32_t i = 0; i < 10; i++) {
        if (bulk_put(a, 1, i, 1000) != FABRIC_SENT) {
            goto out;
        }
    }
    fabric_bulk_renew(a, 1);
    fabric_bulk_renew(a, 1); /* no ring: nothing to do */
    fabric_bulk_renew(a, 7); /* no such node */
    b = open_node(1, 2, 0, 0, 0, 0, NULL);
    if (!b) {
        goto out;
    }
    bulk_put(a, 1, 100, 1000); /* a fresh ring rings at once */
    bulk_put(a, 1, 101, 1000);
    bulk_drain_all(b, &l);
    if (l.count != 2 || l.bad) {
        goto out;
    }
    /* a consumer with the old ring mapped takes the new one instead */
    for (uint32_t i = 0; i < 5; i++) {
        bulk_put(a, 1, 200 + i, 1000);
    }
    fabric_bulk_renew(a, 1);
    bulk_put(a, 1, 102, 1000);
    bulk_put(a, 1, 103, 1000);
    bulk_drain_all(b, &l);
    fabric_get_stats(b, &st);
    diag("renewed: received %u (bad %u), maps %llu", l.count, l.bad,
         (unsigned long long)st.rx_bulk_maps);
    ok = l.count == 4 && l.bad == 0 && st.rx_bulk_maps == 2;
out:
    fabric_close(a);
    fabric_close(b);
    return ok;
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
static bool t_bulk_throughput(void)
{
    struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
    struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
    static uint8_t src[16384], dst[16384];
    uint64_t sum = 0, bytes = 0;
    struct timespec t0, t1;
    double s;
    bool ok = false;

    if (!a || !b) {
        goto out;
    }
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
    diag("bulk path, one thread: %.0f MB/s (16 KiB records)", bytes / s / 1e6);
    ok = sum > 0;
out:
    fabric_close(a);
    fabric_close(b);
    return ok;
}

TEST_F(fabric, bulk_checksum_detects_bit_flips)
{
    ASSERT_TRUE(t_bulk_csum());
}

TEST_F(fabric, bulk_delivery_order_and_doorbells)
{
    ASSERT_TRUE(t_bulk_delivery());
}

TEST_F(fabric, bulk_ring_full_and_wrap)
{
    ASSERT_TRUE(t_bulk_full());
}

TEST_F(fabric, bulk_fault_injection)
{
    ASSERT_TRUE(t_bulk_faults());
}

TEST_F(fabric, bulk_producer_and_consumer_restart)
{
    ASSERT_TRUE(t_bulk_restart());
}

TEST_F(fabric, bulk_renew_abandons_unconsumed_records)
{
    ASSERT_TRUE(t_bulk_renew());
}

TEST_F(fabric, bulk_throughput)
{
    ASSERT_TRUE(t_bulk_throughput());
}

TEST_F(fabric, pkt_ring_delivery_and_doorbells)
{
    ASSERT_TRUE(t_pkt_ring());
}

TEST_F(fabric, pkt_ring_fault_injection)
{
    ASSERT_TRUE(t_pkt_ring_faults());
}

TEST_F(fabric, pkt_ring_missing_full_and_restart)
{
    ASSERT_TRUE(t_pkt_ring_peers());
}

TEST_HARNESS_MAIN
