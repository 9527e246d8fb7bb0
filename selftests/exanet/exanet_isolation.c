// SPDX-License-Identifier: GPL-2.0
/*
 * Isolation between users and jobs on the fabric (tests.list: nodes = 2).
 *
 * On each node a victim process allocates NVMB mailboxes and registers a
 * buffer holding a known pattern; an attacker process on each node (so one
 * on the victim's node and one on the other node) then tries, against both
 * nodes:
 *   - packets to every mailbox index 0..63 (every other attempt at one of
 *     the victim's mailboxes);
 *   - RDMA writes and RDMA reads at every rank of the node except the
 *     attackers' own (every other attempt at the victim's rank), at the
 *     victim's buffer address;
 * EXA_ISO_ATTEMPTS (default 10000) attempts per kind, attacker and target
 * node.  Every attempt must be refused: NACK PDID / RDMA error PDID at the
 * victim's objects, NACK DISABLED / RDMA error REMOTE_CTX elsewhere, never
 * an ACK.  Afterwards the victim's mailboxes are empty (RX_COUNT 0), its
 * buffer is unchanged, nothing a refused read could have fetched reached
 * the attacker, and each node's hardware counters rose by exactly the
 * refusals aimed at it (rx_nack_pdid, rx_nack_disabled, RDMA rx_nack_pdid,
 * rx_nack_ctx; nothing delivered, no block written, no read served).
 *
 * Pairs (uapi/exa_domain.h): root vs nobody, two unbound users, two jobs of
 * one user bound to different job domains; positive controls: one user on
 * both sides (unbound), two users in one job domain: packets ACKed and
 * delivered, RDMA writes land, RDMA reads fetch the victim's data.
 */
#include "exa_rdma.h"
#include "../lib/exa_kid.h"

#define NVMB		4		/* victim mailboxes */
#define VSLOTS		1024
#define VBUF		(64u << 10)	/* victim buffer */
#define ABUF		(64u << 10)	/* attacker buffer */
#define VSEED		0x7a11
#define ASEED		0x0a77
#define CSEED		0xc000
#define WREG		(16u << 10)	/* control: bytes each sender writes */
#define WCHUNK		256
#define CTL_MSGS	200		/* control: messages per sender and node */
#define CTL_READS	16
#define MSG_LEN		32
#define JOB_A		0x123
#define JOB_B		0x124

enum { K_PKT, K_WR, K_RD, NK };
static const char *const kind_name[NK] = { "packets", "RDMA writes", "RDMA reads" };

struct vpub {
	int32_t err;
	uint32_t node, pdid, rank;	/* rank EXANET_RDMA_NO_RANK: no RDMA */
	uint32_t mbox[NVMB];
	uint8_t buf[EXANET_RADDR_WIRE_SIZE];
};

struct apub {
	int32_t err;
	uint32_t node, pdid, rank;
};

struct pub {
	struct vpub v;
	struct apub a;
};

/* test -> attacker */
struct order {
	struct pub all[2];
	uint32_t control;
	uint32_t attempts;	/* per kind and target node */
	uint32_t rdma;		/* every victim and attacker has a rank */
};

/* Outcomes of one kind of access against one node. */
struct kres {
	long att_v, ref_v;	/* at the victim's objects; refused with PDID */
	long att_o, ref_o;	/* elsewhere; refused as absent (DISABLED, REMOTE_CTX) */
	long ok, timeouts, other;
	uint64_t last_other;	/* raw status / error code of the last "other" */
};

struct ares {
	int32_t err;
	struct kres k[NK][2];
	long local_bad;		/* attack: first byte of our buffer that changed, -1 */
	long read_bad;		/* control: first byte read back wrong, -1 */
	int64_t ms;
};

struct vreport {
	int32_t err;
	uint32_t pending, rx_count, full_count, received, bad_msgs;
	uint32_t from[2];	/* intact messages per source node */
	long bad_untouched;	/* first byte outside the senders' regions that changed, -1 */
	long bad_written[2];	/* control: first wrong byte of sender s's region, -1 */
};

static long iso_attempts(void)
{
	const char *e = getenv("EXA_ISO_ATTEMPTS");
	long n = e ? strtol(e, NULL, 0) : 10000;

	return n > 0 ? n : 10000;
}

/* ------------------------------------------------------------ victim */

static int victim_fn(struct kid_io *io)
{
	struct exanet_mbox *mb[NVMB];
	struct exanet_dev *dev = NULL;
	struct exanet_mr *mr = NULL;
	uint8_t *buf = map_anon(VBUF);
	struct vreport r;
	struct vpub me;
	uint32_t control;
	int err, k;

	memset(&me, 0, sizeof(me));
	me.rank = EXANET_RDMA_NO_RANK;
	err = buf ? exanet_open(NULL, &dev) : -ENOMEM;
	for (k = 0; !err && k < NVMB; k++) {
		err = exanet_mbox_alloc(dev, VSLOTS, &mb[k]);
		if (!err)
			me.mbox[k] = exanet_mbox_id(mb[k]);
	}
	if (!err) {
		me.node = exanet_node_id(dev);
		me.pdid = exanet_pdid(dev);
		rpat_fill(buf, VBUF, VSEED);
		err = exanet_reg_mr(dev, buf, VBUF, 0, &mr);
		if (!err) {
			struct exanet_raddr ra;

			exanet_mr_raddr(mr, buf, &ra);
			exanet_raddr_encode(&ra, me.buf);
			me.rank = mr->rank;
		} else if (err == -ENODEV) {
			err = 0;	/* no RDMA on this node: packets only */
		}
	}
	me.err = err;
	if (kid_write(io->wr, &me, sizeof(me)) || err)
		return 1;

	if (kid_read(io->rd, &control, sizeof(control)))
		return 2;
	memset(&r, 0, sizeof(r));
	r.bad_untouched = r.bad_written[0] = r.bad_written[1] = -1;
	for (k = 0; k < NVMB; k++) {
		uint8_t m[EXANET_MAX_PAYLOAD];
		struct exanet_msg_info info;
		ssize_t n;

		r.pending += exanet_mbox_pending(mb[k]);
		r.rx_count += exanet_mbox_rx_count(mb[k]);
		r.full_count += exanet_mbox_full_count(mb[k]);
		while ((n = exanet_recv(mb[k], m, sizeof(m), &info)) > 0) {
			uint32_t src, seq;

			r.received++;
			if (n != MSG_LEN || exa_parse_msg(m, (size_t)n, &src, &seq) ||
			    src != info.src_node || src > 1)
				r.bad_msgs++;
			else
				r.from[src]++;
		}
		if (n < 0)
			r.bad_msgs++;
	}
	for (k = 0; control && k < 2; k++)
		r.bad_written[k] = rpat_check(buf + k * (VBUF / 2), WREG, CSEED + k);
	for (size_t i = 0; i < VBUF; i++) {
		if (control && i % (VBUF / 2) < WREG)
			continue;	/* a sender's region */
		if (buf[i] != rpat_byte(VSEED, i)) {
			r.bad_untouched = (long)i;
			break;
		}
	}
	if (kid_write(io->wr, &r, sizeof(r)))
		return 3;
	kid_read(io->rd, &control, sizeof(control));	/* EOF: the test is done */
	return 0;
}

/* ---------------------------------------------------------- attacker */

static int is_victim_mbox(const struct vpub *v, uint32_t m)
{
	for (int k = 0; k < NVMB; k++)
		if (v->mbox[k] == m)
			return 1;
	return 0;
}

static void packets(struct exanet_pkt *pkt, const struct order *o, uint32_t me,
		    struct ares *res)
{
	uint8_t msg[MSG_LEN];
	long seq = 0;

	for (int t = 0; t < 2; t++) {
		const struct vpub *v = &o->all[t].v;
		struct kres *k = &res->k[K_PKT][t];
		long n = o->control ? CTL_MSGS : o->attempts;

		for (long i = 0; i < n; i++) {
			uint32_t mbox = (i & 1) && !o->control ? (uint32_t)(i / 2) % 64 :
					v->mbox[(i / 2) % NVMB];
			int at_v = is_victim_mbox(v, mbox);
			uint64_t st = 0;
			int err;

			exa_make_msg(msg, sizeof(msg), me, (uint32_t)seq++);
			err = exanet_send_wait(pkt, v->node, mbox, msg, sizeof(msg), 10 * SEC, &st);
			if (at_v)
				k->att_v++;
			else
				k->att_o++;
			if (!err)
				k->ok++;
			else if (EXANET_ST_STATE(st) == EXANET_CHAN_NACK && at_v &&
				 EXANET_ST_REASON(st) == EXANET_NACK_PDID)
				k->ref_v++;
			else if (EXANET_ST_STATE(st) == EXANET_CHAN_NACK && !at_v &&
				 EXANET_ST_REASON(st) == EXANET_NACK_DISABLED)
				k->ref_o++;
			else if (err == -ETIMEDOUT || err == -EINPROGRESS)
				k->timeouts++;
			else
				k->other++, k->last_other = st;
		}
	}
}

static void classify_rdma(struct kres *k, int at_v, int ret, const struct exanet_rdma_notif *rec)
{
	if (at_v)
		k->att_v++;
	else
		k->att_o++;
	if (!ret)
		k->ok++;
	else if (at_v && rec->error == EXANET_RDMA_E_PDID)
		k->ref_v++;
	else if (!at_v && rec->error == EXANET_RDMA_E_REMOTE_CTX)
		k->ref_o++;
	else if (ret == -ETIMEDOUT || rec->error == EXANET_RDMA_E_TIMEOUT)
		k->timeouts++;
	else
		k->other++, k->last_other = rec->error | (uint64_t)(uint32_t)ret << 32;
}

static void rdma_attack(struct rnode *n, const struct order *o, struct ares *res)
{
	for (int t = 0; t < 2; t++) {
		const struct vpub *v = &o->all[t].v;
		uint32_t others[EXANET_RDMA_NUM_RANKS], nothers = 0;
		struct exanet_raddr base;

		exanet_raddr_decode(v->buf, &base);
		for (uint32_t r = 0; r < EXANET_RDMA_NUM_RANKS; r++)
			if (r != v->rank && r != o->all[t].a.rank)	/* not ours to attack */
				others[nothers++] = r;
		for (int rd = 0; rd < 2; rd++) {
			struct kres *k = &res->k[rd ? K_RD : K_WR][t];

			for (long i = 0; i < (long)o->attempts; i++) {
				int at_v = !(i & 1);
				size_t off = (size_t)(i * 64) % (VBUF - 16384);
				size_t len = i % 16 == 15 ? 16384 : 64;	/* one block either way */
				struct exanet_raddr ra = {
					.node = v->node,
					.rank = at_v ? v->rank : others[(i / 2) % nothers],
					.va = base.va + off,
				};
				struct exanet_rdma_notif rec = { 0 };
				int ret;

				ret = post_and_wait(n, rd, rd ? EXANET_RDMA_RCHAN(0) : EXANET_RDMA_WCHAN(0),
						    n->buf + off, &ra, len, 0, (uint64_t)i, 10 * SEC,
						    &rec);
				classify_rdma(k, at_v, ret, &rec);
			}
		}
	}
	res->local_bad = rpat_check(n->buf, ABUF, ASEED);
}

/* Control: write our region of each victim's buffer, read a part nobody writes. */
static void rdma_control(struct rnode *n, const struct order *o, uint32_t me,
			 struct ares *res)
{
	rpat_fill(n->buf, WREG, CSEED + me);
	for (int t = 0; t < 2; t++) {
		const struct vpub *v = &o->all[t].v;
		size_t region = (size_t)me * (VBUF / 2);
		struct exanet_raddr base;

		exanet_raddr_decode(v->buf, &base);
		for (size_t j = 0; j < WREG / WCHUNK; j++) {
			struct exanet_raddr ra = { v->node, v->rank, base.va + region + j * WCHUNK };
			struct exanet_rdma_notif rec = { 0 };
			int ret = post_and_wait(n, 0, EXANET_RDMA_WCHAN(0), n->buf + j * WCHUNK, &ra,
						WCHUNK, 0, j, 10 * SEC, &rec);

			classify_rdma(&res->k[K_WR][t], 1, ret, &rec);
		}
		for (size_t j = 0; j < CTL_READS; j++) {
			size_t chunk = WREG / CTL_READS, voff = region + WREG + j * chunk;
			struct exanet_raddr ra = { v->node, v->rank, base.va + voff };
			struct exanet_rdma_notif rec = { 0 };
			uint8_t *dst = n->buf + WREG + j * chunk;
			int ret;

			memset(dst, 0, chunk);
			ret = post_and_wait(n, 1, EXANET_RDMA_RCHAN(0), dst, &ra, chunk, 0, j,
					    10 * SEC, &rec);
			classify_rdma(&res->k[K_RD][t], 1, ret, &rec);
			for (size_t i = 0; i < chunk && res->read_bad < 0; i++)
				if (dst[i] != rpat_byte(VSEED, voff + i))
					res->read_bad = (long)(voff + i);
		}
	}
}

static int attacker_fn(struct kid_io *io)
{
	struct exanet_pkt *pkt = NULL;
	struct rnode n;
	struct order o;
	struct ares res;
	struct apub me;
	int err;

	memset(&n, 0, sizeof(n));
	memset(&me, 0, sizeof(me));
	me.rank = EXANET_RDMA_NO_RANK;
	n.len = ABUF;
	n.buf = map_anon(ABUF);
	n.rec = map_anon(4096);
	err = n.buf && n.rec ? exanet_open(NULL, &n.dev) : -ENOMEM;
	if (!err)
		err = exanet_pkt_alloc(n.dev, &pkt);
	if (!err) {
		me.node = exanet_node_id(n.dev);
		me.pdid = exanet_pdid(n.dev);
		rpat_fill(n.buf, ABUF, ASEED);
		err = exanet_reg_mr(n.dev, n.buf, ABUF, 0, &n.mr);
		if (!err)
			err = exanet_reg_mr(n.dev, n.rec, 4096, 0, &n.mr_rec);
		if (!err)
			err = exanet_rdma_alloc(n.dev, &n.rdma);
		if (!err)
			me.rank = n.mr->rank;
		else if (err == -ENODEV)
			err = 0;
	}
	me.err = err;
	if (kid_write(io->wr, &me, sizeof(me)) || err)
		return 1;
	if (kid_read(io->rd, &o, sizeof(o)))
		return 2;

	memset(&res, 0, sizeof(res));
	res.local_bad = res.read_bad = -1;
	res.ms = exa_now_ms();
	packets(pkt, &o, me.node, &res);
	if (o.rdma && o.control)
		rdma_control(&n, &o, me.node, &res);
	else if (o.rdma)
		rdma_attack(&n, &o, &res);
	res.ms = exa_now_ms() - res.ms;
	if (kid_write(io->wr, &res, sizeof(res)))
		return 3;
	kid_read(io->rd, &o, 1);	/* EOF: the test is done */
	return 0;
}

/* ------------------------------------------------------------- driver */

struct scen {
	uid_t vuid, auid;
	uint32_t vpdid, apdid;	/* job domains, 0 = unbound */
	int control;
};

/* Counters of this node that the refusals (or deliveries) move. */
enum { C_NACK_PDID, C_NACK_DISABLED, C_DELIVERED, C_RETX,
       R_NACK_PDID, R_NACK_CTX, R_BLOCKS, R_SERVED, R_RETX, NCTR };
static const struct { const char *file, *name; } ctr_def[NCTR] = {
	[C_NACK_PDID]		= { "counters", "rx_nack_pdid" },
	[C_NACK_DISABLED]	= { "counters", "rx_nack_disabled" },
	[C_DELIVERED]		= { "counters", "rx_delivered" },
	[C_RETX]		= { "counters", "tx_retransmits" },
	[R_NACK_PDID]		= { "rdma_counters", "rx_nack_pdid" },
	[R_NACK_CTX]		= { "rdma_counters", "rx_nack_ctx" },
	[R_BLOCKS]		= { "rdma_counters", "rx_blocks" },
	[R_SERVED]		= { "rdma_counters", "reads_served" },
	[R_RETX]		= { "rdma_counters", "tx_retransmits" },
};

static void read_ctrs(long long *c, int rdma)
{
	char path[128];

	for (int i = 0; i < NCTR; i++) {
		if (!rdma && !strcmp(ctr_def[i].file, "rdma_counters")) {
			c[i] = 0;
			continue;
		}
		snprintf(path, sizeof(path), EXANET_SYSFS "%s", ctr_def[i].file);
		c[i] = counter_in(path, ctr_def[i].name);
	}
}

static void log_kres(struct __test_metadata *_metadata, int kind, uint32_t from, uint32_t to,
		     const struct kres *k, int control)
{
	(void)_metadata;
	if (control)
		TH_LOG("%s node %u -> node %u: %ld attempts at the victim: %ld succeeded, "
		       "%ld refused, %ld timeouts, %ld other", kind_name[kind], from, to,
		       k->att_v, k->ok, k->att_v - k->ok - k->timeouts - k->other,
		       k->timeouts, k->other);
	else
		TH_LOG("%s node %u -> node %u: %ld attempts: %ld %s, %ld refused PDID at the "
		       "victim's %s (of %ld), %ld refused %s elsewhere (of %ld), %ld timeouts, "
		       "%ld other%s", kind_name[kind], from, to, k->att_v + k->att_o, k->ok,
		       kind == K_PKT ? "ACK" : "DONE", k->ref_v,
		       kind == K_PKT ? "mailboxes" : "rank", k->att_v, k->ref_o,
		       kind == K_PKT ? "DISABLED" : "REMOTE_CTX", k->att_o, k->timeouts, k->other,
		       k->other ? " (see last_other)" : "");
	if (k->other)
		TH_LOG("  last unexpected outcome: %#llx", (unsigned long long)k->last_other);
}

static void run_scen(struct __test_metadata *_metadata, const struct scen *sc)
{
	struct kid victim = { 0 }, attacker = { 0 };
	long long c0[NCTR], c1[NCTR];
	struct pub me, all[2];
	struct ares res, allres[2];
	long long retx, allretx[2];
	struct vreport vr;
	struct order o;
	struct oob oob;
	uint32_t control = (uint32_t)sc->control, node;
	int rdma, err;

	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	OOB_UP(&oob);
	if (oob.nnodes != 2)
		SKIP_TEST("needs 2 ranks, have %d", oob.nnodes);

	memset(&me, 0, sizeof(me));
	err = kid_spawn(&victim, sc->vpdid, sc->vuid, victim_fn, NULL);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, kid_read_tmo(victim.rd, &me.v, sizeof(me.v), 60000));
	if (me.v.err)
		TH_LOG("victim (uid %u) setup: %s", sc->vuid, strerror(-me.v.err));
	ASSERT_EQ(0, me.v.err);
	err = kid_spawn(&attacker, sc->apdid, sc->auid, attacker_fn, NULL);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, kid_read_tmo(attacker.rd, &me.a, sizeof(me.a), 60000));
	if (me.a.err)
		TH_LOG("attacker (uid %u) setup: %s", sc->auid, strerror(-me.a.err));
	ASSERT_EQ(0, me.a.err);
	node = me.v.node;

	/* the domain model: user domains unless bound, job domains when bound */
	EXPECT_EQ(kid_domain(sc->vuid, sc->vpdid), me.v.pdid);
	EXPECT_EQ(kid_domain(sc->auid, sc->apdid), me.a.pdid);
	if (sc->control) {
		ASSERT_EQ(me.v.pdid, me.a.pdid);
	} else {
		ASSERT_NE(me.v.pdid, me.a.pdid);
	}

	rdma = me.v.rank != EXANET_RDMA_NO_RANK && me.a.rank != EXANET_RDMA_NO_RANK;
	read_ctrs(c0, rdma);
	ASSERT_EQ(0, oob_allgather(&oob, &me, all, sizeof(me)));
	rdma = all[0].v.rank != EXANET_RDMA_NO_RANK && all[1].v.rank != EXANET_RDMA_NO_RANK &&
	       all[0].a.rank != EXANET_RDMA_NO_RANK && all[1].a.rank != EXANET_RDMA_NO_RANK;
	if (!rdma)
		TH_LOG("no RDMA ranks on every node: packets only");
	if (oob.rank == 0)
		TH_LOG("victim uid %u domain %#x, attacker uid %u domain %#x%s", sc->vuid,
		       me.v.pdid, sc->auid, me.a.pdid,
		       sc->control ? " (same domain: positive control)" : "");

	/* go */
	memset(&o, 0, sizeof(o));
	memcpy(o.all, all, sizeof(all));
	o.control = (uint32_t)sc->control;
	o.attempts = (uint32_t)iso_attempts();
	o.rdma = (uint32_t)rdma;
	ASSERT_EQ(0, oob_barrier(&oob));
	ASSERT_EQ(0, kid_write(attacker.wr, &o, sizeof(o)));
	err = kid_read_tmo(attacker.rd, &res, sizeof(res), 250000);
	if (err)
		TH_LOG("attacker: %s (status %d)", strerror(-err), exa_poll_child(attacker.pid, 0));
	ASSERT_EQ(0, err);
	TH_LOG("node %u attacker done in %lld ms", node, (long long)res.ms);
	ASSERT_EQ(0, oob_barrier(&oob));	/* every access of both attackers is over */
	read_ctrs(c1, rdma);
	ASSERT_EQ(0, kid_write(victim.wr, &control, sizeof(control)));
	ASSERT_EQ(0, kid_read_tmo(victim.rd, &vr, sizeof(vr), 60000));
	ASSERT_EQ(0, oob_allgather(&oob, &res, allres, sizeof(res)));
	/* retransmissions by either node (of packets or RDMA blocks) while it ran */
	retx = c1[C_RETX] - c0[C_RETX] + c1[R_RETX] - c0[R_RETX];
	ASSERT_EQ(0, oob_allgather(&oob, &retx, allretx, sizeof(retx)));

	for (int kind = 0; kind < NK; kind++) {
		if (kind != K_PKT && !rdma)
			continue;
		for (int t = 0; t < 2; t++) {
			const struct kres *k = &res.k[kind][t];

			log_kres(_metadata, kind, node, all[t].v.node, k, sc->control);
			EXPECT_EQ(0, k->timeouts);
			EXPECT_EQ(0, k->other);
			if (sc->control) {
				EXPECT_LT(0, k->att_v);
				EXPECT_EQ(k->att_v, k->ok);
			} else {
				EXPECT_LE(iso_attempts(), k->att_v + k->att_o);
				EXPECT_EQ(0, k->ok);
				EXPECT_EQ(k->att_v, k->ref_v);
				EXPECT_EQ(k->att_o, k->ref_o);
				EXPECT_LT(0, k->att_v);
				EXPECT_LT(0, k->att_o);
			}
		}
	}

	/* the victim on this node */
	TH_LOG("victim on node %u: %u messages received (%u from node 0, %u from node 1, %u bad), "
	       "RX_COUNT %u, FULL_COUNT %u; buffer: first changed byte outside the senders' "
	       "regions %ld, first wrong byte in them %ld / %ld", node, vr.received, vr.from[0],
	       vr.from[1], vr.bad_msgs, vr.rx_count, vr.full_count, vr.bad_untouched,
	       vr.bad_written[0], vr.bad_written[1]);
	EXPECT_EQ(0, vr.bad_msgs);
	EXPECT_EQ(0, vr.full_count);
	EXPECT_EQ(-1, vr.bad_untouched);
	if (sc->control) {
		/* exactly what was ACKed, from each node */
		for (int s = 0; s < 2; s++) {
			EXPECT_EQ(allres[s].k[K_PKT][oob.rank].ok, vr.from[s]);
			if (rdma)
				EXPECT_EQ(-1, vr.bad_written[s]);
		}
		EXPECT_EQ(vr.received, vr.rx_count);
		EXPECT_EQ(-1, res.read_bad);
	} else {
		EXPECT_EQ(0, vr.received);
		EXPECT_EQ(0, vr.pending);
		EXPECT_EQ(0, vr.rx_count);
		EXPECT_EQ(-1, res.local_bad);
	}

	/* this node's counters against what both attackers aimed at it */
	{
		long long want[NCTR] = { 0 }, d[NCTR];
		int t = oob.rank;

		for (int s = 0; s < 2; s++) {
			const struct ares *r = &allres[s];

			want[C_NACK_PDID] += r->k[K_PKT][t].ref_v;
			want[C_NACK_DISABLED] += r->k[K_PKT][t].ref_o;
			want[C_DELIVERED] += r->k[K_PKT][t].ok;
			want[R_NACK_PDID] += r->k[K_WR][t].ref_v + r->k[K_RD][t].ref_v;
			want[R_NACK_CTX] += r->k[K_WR][t].ref_o + r->k[K_RD][t].ref_o;
			want[R_BLOCKS] += r->k[K_WR][t].ok;
			want[R_SERVED] += r->k[K_RD][t].ok;
		}
		for (int i = 0; i < NCTR; i++)
			d[i] = c1[i] - c0[i];
		if (allretx[0] || allretx[1])
			TH_LOG("retransmissions during the run: %lld + %lld", allretx[0], allretx[1]);
		TH_LOG("node %u counters: rx_nack_pdid +%lld (refusals aimed here %lld), "
		       "rx_nack_disabled +%lld (%lld), rx_delivered +%lld (%lld)", node,
		       d[C_NACK_PDID], want[C_NACK_PDID], d[C_NACK_DISABLED], want[C_NACK_DISABLED],
		       d[C_DELIVERED], want[C_DELIVERED]);
		if (rdma)
			TH_LOG("node %u RDMA counters: rx_nack_pdid +%lld (%lld), rx_nack_ctx +%lld "
			       "(%lld), rx_blocks +%lld (writes %lld), reads_served +%lld (%lld)",
			       node, d[R_NACK_PDID], want[R_NACK_PDID], d[R_NACK_CTX],
			       want[R_NACK_CTX], d[R_BLOCKS], want[R_BLOCKS], d[R_SERVED],
			       want[R_SERVED]);
		/*
		 * Exact on a fabric that lost nothing; a retransmitted packet or
		 * block is refused (and counted) again, so with retransmissions
		 * (even a lossless emulated fabric has a few under load) at
		 * least the refusals and at most that many more.
		 */
		for (int i = 0; i < NCTR; i++) {
			if (i == C_RETX || i == R_RETX || (!rdma && i >= R_NACK_PDID))
				continue;
			if (i == R_BLOCKS && sc->control) {
				EXPECT_LE(want[i], d[i]);	/* reads' blocks land here too */
			} else if (allretx[0] || allretx[1]) {
				EXPECT_LE(want[i], d[i]);
				EXPECT_GE(want[i] + allretx[0] + allretx[1], d[i]);
			} else {
				EXPECT_EQ(want[i], d[i]);
			}
		}
		if (!sc->control) {
			EXPECT_EQ(0, d[C_DELIVERED]);
			EXPECT_EQ(0, d[R_BLOCKS]);
			EXPECT_EQ(0, d[R_SERVED]);
			EXPECT_LT(0, d[C_NACK_PDID]);
			if (rdma)
				EXPECT_LT(0, d[R_NACK_PDID]);
		} else {
			EXPECT_EQ(0, d[C_NACK_PDID]);
			EXPECT_EQ(0, d[R_NACK_PDID]);
		}
	}

	ASSERT_EQ(0, oob_barrier(&oob));
	EXPECT_EQ(0, kid_finish(&attacker, 20000));
	EXPECT_EQ(0, kid_finish(&victim, 20000));
	oob_fini(&oob);
}

/* The longest plain TEST() of this file may take 300 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300

TEST(root_victim_nobody_attacker_refused)
{
	run_scen(_metadata, &(struct scen){ .vuid = 0, .auid = UID_NOBODY });
}

TEST(two_unbound_users_refused)
{
	run_scen(_metadata, &(struct scen){ .vuid = UID_USER, .auid = UID_NOBODY });
}

TEST(two_jobs_of_one_user_refused)
{
	run_scen(_metadata, &(struct scen){ .vuid = UID_USER, .vpdid = JOB_A,
					    .auid = UID_USER, .apdid = JOB_B });
}

TEST(job_and_unbound_process_of_one_user_refused)
{
	run_scen(_metadata, &(struct scen){ .vuid = UID_USER, .auid = UID_USER,
					    .apdid = JOB_A });
}

TEST(control_same_user_unbound_delivers)
{
	run_scen(_metadata, &(struct scen){ .vuid = UID_NOBODY, .auid = UID_NOBODY,
					    .control = 1 });
}

TEST(control_same_job_domain_delivers)
{
	run_scen(_metadata, &(struct scen){ .vuid = UID_USER, .vpdid = JOB_A,
					    .auid = UID_NOBODY, .apdid = JOB_A, .control = 1 });
}

TEST_HARNESS_MAIN
