/*
 * EXTOLL NIC: the RMA unit: origin side (commands of the requester
 * pages), target side (puts, notification puts, gets, locks) and the
 * replies.  See extoll-nic.c for the overview.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/bswap.h"

#include "extoll-int.h"
#include "trace.h"

/* Notification mode bits from requester page options */
unsigned extoll_noti_mode(unsigned opts)
{
    return ((opts & EXTOLL_RMA_OPT_IRQ) ? EXTOLL_NOTI_MODE_IRQ : 0) |
           ((opts & EXTOLL_RMA_OPT_TE) ? EXTOLL_NOTI_MODE_TE : 0);
}

/* ------------------------------------------------------------------ */
/* RMA: origin side */

/*
 * Command slots of the VPID.  A count read here is a promise the library
 * spends without reading again, so it depends only on the VPID's own
 * commands: when the device-wide transmit queues are full, accepted
 * commands wait in v->cmdq instead of being refused.
 */
uint32_t extoll_rma_free(ExtVpid *v)
{
    uint32_t used = v->rma_pending + g_queue_get_length(&v->cmdq);

    if (!extoll_rma_on(v) || used >= EXTOLL_RMA_CMDQ_DEPTH) {
        return 0;
    }
    return EXTOLL_RMA_CMDQ_DEPTH - used;
}

/* last-fragment offset for a transfer of len bytes */
uint32_t extoll_last_off(uint32_t len)
{
    return len ? (len - 1) / EXTOLL_RMA_FRAG_SIZE * EXTOLL_RMA_FRAG_SIZE : 0;
}

static void ext_req_error(ExtollState *s, ExtVpid *v, unsigned cmd,
                          unsigned node, unsigned dvpid, unsigned opts,
                          uint64_t w0)
{
    extoll_noti_post(s, v, w0,
                     EXTOLL_NOTI_W1(0, dvpid, node, EXTOLL_NOTI_REQUESTER, cmd,
                                    extoll_noti_mode(opts),
                                    EXTOLL_NOTI_ERR_REQ));
}

/*
 * Runs a command of VPID vi taken from requester page opts while the
 * VPID's RMA_PROT was prot: every packet of the command carries prot, and
 * local addresses are translated with it.
 */
static void ext_rma_exec(ExtollState *s, unsigned vi, unsigned opts,
                         const uint64_t *w, uint16_t prot)
{
    ExtVpid *v = &s->vpid[vi];
    uint64_t w0 = w[0], w1 = w[1], w2 = w[2];
    unsigned cmd = EXTOLL_RMA_W0_CMD(w0), node = EXTOLL_RMA_W0_NODE(w0);
    unsigned dv = EXTOLL_RMA_W0_VPID(w0), spec = EXTOLL_RMA_W0_SPEC(w0);
    unsigned mod = EXTOLL_RMA_W0_MOD(w0), count = EXTOLL_RMA_W0_COUNT(w0);
    bool te = opts & EXTOLL_RMA_OPT_TE;
    unsigned mode = extoll_noti_mode(opts);
    uint16_t tag;
    ExtPeer *p;
    ExtPkt *k;
    uint8_t *d;

    if ((w0 & 3) != EXTOLL_RMA_W0_MAGIC || (opts & EXTOLL_RMA_OPT_RRA) ||
        (!te && !(v->ctrl & EXTOLL_VPID_RMA_PHYS)) ||
        (mod & (EXTOLL_MOD_MC | EXTOLL_MOD_ERA | EXTOLL_MOD_EWA))) {
        p = NULL;
    } else {
        p = extoll_peer(s, node);
    }
    if (!p) {
        ext_req_error(s, v, cmd, node, dv, opts, 0);
        return;
    }
    /* every command below that is queued is answered: followed by tag */
    tag = p->next_tag++;
    switch (cmd) {
    case EXTOLL_CMD_BT_PUT:
    case EXTOLL_CMD_QW_PUT: {
        uint32_t size = count + 1, lo = extoll_last_off(size);
        ExtXfer x = {
            .kind = K_PUT, .svpid = vi, .dvpid = dv, .gen = v->rma_gen,
            .prot = prot, .tag = tag, .cmd = cmd, .spec = spec, .mode = opts,
            .addr = w2, .echo = w1,
        };
        ExtSrc src = { .vpid = vi, .prot = prot, .te = te, .addr = w1 };
        ExtDirectCmd dc = {
            .vi = vi, .dv = dv, .cmd = cmd, .spec = spec, .opts = opts,
            .prot = prot, .laddr = w1, .raddr = w2, .size = size,
        };

        if (!(cmd == EXTOLL_CMD_QW_PUT && (size & 7)) &&
            extoll_rma_direct(s, p, &dc)) {
            return;
        }
        if ((cmd == EXTOLL_CMD_QW_PUT && (size & 7)) ||
            !extoll_xfer_queue(s, p, &x, &src, size)) {
            ext_req_error(s, v, cmd, node, dv, opts, w1);
            return;
        }
        v->rma_pending++;
        extoll_wait_add(s, p, vi, prot, tag, w1 + lo,
                        EXTOLL_NOTI_W1(size - lo - 1, dv, node,
                                       EXTOLL_NOTI_REQUESTER, cmd, mode, 0));
        return;
    }
    case EXTOLL_CMD_IMM_PUT: {
        ExtXfer x = {
            .kind = K_PUT, .svpid = vi, .dvpid = dv, .gen = v->rma_gen,
            .prot = prot, .tag = tag, .cmd = cmd, .spec = spec, .mode = opts,
            .addr = w1, .echo = w2,
        };
        uint8_t imm[8];
        ExtSrc src = { .buf = imm };
        ExtDirectCmd dc = {
            .vi = vi, .dv = dv, .cmd = cmd, .spec = spec, .opts = opts,
            .prot = prot, .laddr = w2, .raddr = w1, .size = (count & 7) + 1,
            .imm = imm,
        };

        stq_le_p(imm, w2);
        if (extoll_rma_direct(s, p, &dc)) {
            return;
        }
        extoll_xfer_queue(s, p, &x, &src, (count & 7) + 1);
        v->rma_pending++;
        extoll_wait_add(s, p, vi, prot, tag, w2,
                        EXTOLL_NOTI_W1(count & 7, dv, node,
                                       EXTOLL_NOTI_REQUESTER, cmd, mode, 0));
        return;
    }
    case EXTOLL_CMD_NOTI_PUT: {
        ExtDirectCmd dc = {
            .vi = vi, .dv = dv, .cmd = cmd, .spec = spec, .opts = opts,
            .prot = prot, .laddr = w1, .size = count & 0xff,
        };

        if (extoll_rma_direct_notiput(s, p, &dc)) {
            return;
        }
        d = extoll_pkt_new(s, p, &k, K_NOTIPUT, vi, dv, v->rma_gen, prot, tag,
                           N_END);
        d[N_CLASS] = count & 0xff;
        d[N_SPEC] = spec;
        d[N_MODE] = opts;
        stq_le_p(d + N_PAYLOAD, w1);
        extoll_pkt_queue(s, p, k);
        v->rma_pending++;
        extoll_wait_add(s, p, vi, prot, tag, w1,
                        EXTOLL_NOTI_W1(count & 0xff, dv, node,
                                       EXTOLL_NOTI_REQUESTER, cmd, mode, 0));
        return;
    }
    case EXTOLL_CMD_BT_GET:
    case EXTOLL_CMD_QW_GET: {
        uint32_t size = count + 1, lo = extoll_last_off(size);

        if (cmd == EXTOLL_CMD_QW_GET && (size & 7)) {
            ext_req_error(s, v, cmd, node, dv, opts, w2);
            return;
        }
        ExtDirectCmd dc = {
            .vi = vi, .dv = dv, .cmd = cmd, .spec = spec, .opts = opts,
            .prot = prot, .laddr = w2, .raddr = w1, .size = size,
        };
        if (extoll_rma_direct(s, p, &dc)) {
            return;
        }
        /* the local destination must be writable for us, checked up front */
        GArray *a = extoll_translate(s, vi, prot, te, w2, size,
                                     EXTOLL_ATU_WRITE);
        if (!a) {
            ext_req_error(s, v, cmd, node, dv, opts, w2);
            return;
        }
        g_array_free(a, true);
        d = extoll_pkt_new(s, p, &k, K_GETREQ, vi, dv, v->rma_gen, prot, tag,
                           G_END);
        d[G_CMD] = cmd;
        d[G_SPEC] = spec;
        d[G_MODE] = opts;
        stq_le_p(d + G_RADDR, w1);
        stq_le_p(d + G_WADDR, w2);
        stl_le_p(d + G_SIZE, size);
        extoll_pkt_queue(s, p, k);
        v->rma_pending++;
        /*
         * A failure after the requester notification: the same one again,
         * with the error (the completer notification never comes).
         */
        extoll_wait_add(s, p, vi, prot, tag, w2 + lo,
                        EXTOLL_NOTI_W1(size - lo - 1, dv, node,
                                       EXTOLL_NOTI_REQUESTER, cmd, mode, 0));
        if (spec & EXTOLL_NOTI_REQUESTER) {
            extoll_noti_post(s, v, w2 + lo,
                             EXTOLL_NOTI_W1(size - lo - 1, dv, node,
                                            EXTOLL_NOTI_REQUESTER, cmd, mode,
                                            0));
        }
        return;
    }
    case EXTOLL_CMD_LOCK_REQ: {
        uint32_t num = w1 & 0xffffff, cmp = w1 >> 32;
        uint64_t word0 = EXTOLL_LOCK_W0(num, 0, cmp);

        if (num >= EXTOLL_RMA_LOCKS) {
            ext_req_error(s, v, cmd, node, dv, opts, word0);
            return;
        }
        d = extoll_pkt_new(s, p, &k, K_LOCKREQ, vi, dv, v->rma_gen, prot, tag,
                           L_END);
        d[L_SPEC] = spec;
        d[L_MODE] = opts;
        d[L_UNIT] = count & 1;
        stl_le_p(d + L_NUM, num);
        stl_le_p(d + L_CMP, cmp);
        stl_le_p(d + L_ADD, w2 >> 32);
        extoll_pkt_queue(s, p, k);
        v->rma_pending++;
        extoll_wait_add(s, p, vi, prot, tag, word0,
                        EXTOLL_NOTI_W1(0, dv, node, EXTOLL_NOTI_REQUESTER, cmd,
                                       mode, 0));
        if (spec & EXTOLL_NOTI_REQUESTER) {
            extoll_noti_post(s, v, word0,
                             EXTOLL_NOTI_W1(0, dv, node, EXTOLL_NOTI_REQUESTER,
                                            cmd, mode, 0));
        }
        return;
    }
    default:    /* invalid codes */
        ext_req_error(s, v, cmd, node, dv, opts, w1);
        return;
    }
}

/* All three words of a command were stored on requester page 'opts'. */
void extoll_rma_cmd(ExtollState *s, unsigned vi, unsigned opts)
{
    ExtVpid *v = &s->vpid[vi];
    ExtCmd *c;

    v->rma_mask[opts] = 0;
    if (!extoll_rma_free(v)) {
        trace_extoll_rma_cmd_drop(s->nic.node_id, vi);
        v->rma_drops++;
        s->counters[EXTOLL_CNT_RMA_CMD_DROPPED]++;
        return;
    }
    s->counters[EXTOLL_CNT_RMA_CMDS]++;
    trace_extoll_rma_cmd(s->nic.node_id, vi,
                         EXTOLL_RMA_W0_CMD(v->rma_cmd[opts][0]),
                         EXTOLL_RMA_W0_NODE(v->rma_cmd[opts][0]),
                         EXTOLL_RMA_W0_VPID(v->rma_cmd[opts][0]),
                         !(g_queue_is_empty(&v->cmdq) &&
                           s->txq_bytes < EXT_TXQ_BYTES_MAX));
    if (g_queue_is_empty(&v->cmdq) && s->txq_bytes < EXT_TXQ_BYTES_MAX) {
        ext_rma_exec(s, vi, opts, v->rma_cmd[opts], v->rma_prot);
        return;
    }
    c = g_new(ExtCmd, 1);
    memcpy(c->w, v->rma_cmd[opts], sizeof(c->w));
    c->opts = opts;
    c->prot = v->rma_prot;
    g_queue_push_tail(&v->cmdq, c);
    s->cmdq_len++;
}

/* Deferred commands, one per VPID in turn, while the queues have room. */
void extoll_cmdq_bh(void *opaque)
{
    ExtollState *s = opaque;
    bool ran = true;

    while (ran && s->cmdq_len && s->txq_bytes < EXT_TXQ_BYTES_MAX) {
        ran = false;
        for (unsigned i = 0; i < EXTOLL_NUM_VPIDS &&
                             s->txq_bytes < EXT_TXQ_BYTES_MAX; i++) {
            ExtCmd *c = g_queue_pop_head(&s->vpid[i].cmdq);

            if (c) {
                s->cmdq_len--;
                ext_rma_exec(s, i, c->opts, c->w, c->prot);
                g_free(c);
                ran = true;
            }
        }
    }
}

void extoll_cmdq_clear(ExtollState *s, ExtVpid *v)
{
    ExtCmd *c;

    while ((c = g_queue_pop_head(&v->cmdq))) {
        s->cmdq_len--;
        g_free(c);
    }
}

/* ------------------------------------------------------------------ */
/* RMA: target side and replies */

/*
 * Target: may the RMA request b for local VPID v (enabled) be executed?
 * Counts and logs a refusal.
 */
static bool ext_rma_prot_ok(ExtollState *s, ExtPeer *p, const uint8_t *b,
                            ExtVpid *v, const char *what)
{
    if (extoll_pkt_prot(b) == v->rma_prot) {
        return true;
    }
    extoll_prot_refused(s, what, p->node, b[D_SVPID], b[D_DVPID],
                        extoll_pkt_prot(b), v->rma_prot);
    return false;
}

/* Answers the put-like command of packet b with K_DONE (see R_*). */
static void ext_send_done(ExtollState *s, ExtPeer *p, const uint8_t *b,
                          unsigned cmd, unsigned spec, unsigned mode,
                          uint64_t echo, uint32_t sizef, unsigned err)
{
    ExtPkt *k;
    uint8_t *d = extoll_pkt_new(s, p, &k, K_DONE, b[D_DVPID], b[D_SVPID],
                                b[D_GEN], extoll_pkt_prot(b),
                                lduw_le_p(b + D_TAG), R_END);

    d[R_CMD] = cmd;
    d[R_SPEC] = spec;
    d[R_MODE] = mode;
    d[R_ERR] = err;
    stq_le_p(d + R_ECHO, echo);
    stl_le_p(d + R_SIZE, sizef);
    extoll_pkt_queue(s, p, k);
}

/*
 * Payload length of a K_PUT / K_GETRSP packet (at most EXT_CHUNK) and
 * where it is; false if malformed.
 */
static bool ext_frag_len(ExtollState *s, const uint8_t *b, size_t len,
                         ExtRxData *rd, uint32_t *n)
{
    if (len >= P_DATA) {
        if (!rd->data) {
            rd->data = b + P_DATA;
            rd->dlen = len - P_DATA;
        }
        *n = ldl_le_p(b + P_LEN);
        if (*n <= EXT_CHUNK && rd->dlen >= *n) {
            return true;
        }
    }
    s->counters[EXTOLL_CNT_FABRIC_BAD]++;
    return false;
}

/* Writes a packet's payload unless its transfer failed (*err, sticky). */
static void ext_frag_store(ExtollState *s, unsigned vpid, bool te,
                           uint64_t addr, const uint8_t *b,
                           const ExtRxData *rd, uint32_t n, bool *err)
{
    if (*err) {
        return;
    }
    if (extoll_mem_rw(s, vpid, extoll_pkt_prot(b), te, addr, (void *)rd->data,
                      n, true)) {
        s->counters[EXTOLL_CNT_RMA_RX_BYTES] += n;
    } else {
        *err = true;
    }
}

bool extoll_put_rx(ExtollState *s, ExtPeer *p, const uint8_t *b, size_t len,
                   ExtRxData rd)
{
    unsigned dv = b[D_DVPID], flags, opts, cmd;
    uint32_t n, lo;
    uint64_t addr;
    bool te;
    ExtVpid *v;

    if (!ext_frag_len(s, b, len, &rd, &n)) {
        return true;
    }
    flags = b[P_FLAGS];
    opts = b[P_MODE];
    cmd = b[P_CMD];
    te = opts & EXTOLL_RMA_OPT_TE;
    addr = ldq_le_p(b + P_ADDR);
    if (flags & F_FIRST) {
        p->put_err = false;
    }
    v = dv < EXTOLL_NUM_VPIDS ? &s->vpid[dv] : NULL;
    if (!v || !extoll_rma_addr_ok(v, te) || (flags & F_ERR)) {
        p->put_err = true;  /* F_ERR: the origin could not read its source */
    } else if (!p->put_err && !ext_rma_prot_ok(s, p, b, v, "put")) {
        p->put_err = true;  /* sticky: counted once per command */
    }
    if ((flags & F_LAST) && !p->put_err &&
        (b[P_SPEC] & EXTOLL_NOTI_COMPLETER) && !extoll_noti_room(s, v)) {
        s->counters[EXTOLL_CNT_NOTI_FULL]++;
        extoll_nack_watch(s, p, dv, false);
        return false;   /* NACK: retried when the consumer made room */
    }
    ext_frag_store(s, dv, te, addr, b, &rd, n, &p->put_err);
    if (!(flags & F_LAST)) {
        return true;
    }
    /* notifications describe the last wire fragment of the transfer */
    lo = extoll_last_off(n);
    if (!p->put_err && (b[P_SPEC] & EXTOLL_NOTI_COMPLETER)) {
        extoll_noti_write(s, v, addr + lo,
                          EXTOLL_NOTI_W1(n - lo - 1, b[D_SVPID], p->node,
                                         EXTOLL_NOTI_COMPLETER, cmd,
                                         te ? EXTOLL_NOTI_MODE_TE : 0, 0));
    }
    ext_send_done(s, p, b, cmd, b[P_SPEC], opts, ldq_le_p(b + P_ECHO) + lo,
                  n - lo - 1, p->put_err ? EXTOLL_NOTI_ERR_CMPL : 0);
    return true;
}

bool extoll_notiput_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                       size_t len)
{
    unsigned dv = b[D_DVPID], cls, spec;
    uint64_t payload;
    ExtVpid *v;
    unsigned err = 0;

    if (len < N_END) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    cls = b[N_CLASS];
    spec = b[N_SPEC];
    payload = ldq_le_p(b + N_PAYLOAD);
    v = dv < EXTOLL_NUM_VPIDS ? &s->vpid[dv] : NULL;
    if (!v || !extoll_rma_on(v) ||
        !ext_rma_prot_ok(s, p, b, v, "notification put")) {
        err = EXTOLL_NOTI_ERR_CMPL;
    } else if (spec & EXTOLL_NOTI_COMPLETER) {
        if (!extoll_noti_try(s, v, payload,
                             EXTOLL_NOTI_W1(cls, b[D_SVPID], p->node,
                                            EXTOLL_NOTI_COMPLETER,
                                            EXTOLL_CMD_NOTI_PUT, 0, 0))) {
            extoll_nack_watch(s, p, dv, false);
            return false;
        }
    }
    ext_send_done(s, p, b, EXTOLL_CMD_NOTI_PUT, spec, b[N_MODE], payload,
                  cls, err);
    return true;
}

/*
 * Origin: the answer b (at least min bytes) finishes one of our commands.
 * Returns its VPID, or NULL when the packet is malformed, the command was
 * reported failed already, or the command's owner is gone (a new owner of
 * the VPID has another generation or another protection ID).
 */
static ExtVpid *ext_command_finished(ExtollState *s, ExtPeer *p,
                                     const uint8_t *b, size_t len, size_t min)
{
    unsigned dv = b[D_DVPID];
    ExtVpid *v;

    if (len < min || dv >= EXTOLL_NUM_VPIDS) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return NULL;
    }
    if (!extoll_wait_answered(s, p, b, true)) {
        return NULL;    /* the command was reported failed */
    }
    v = &s->vpid[dv];
    if (!extoll_rma_on(v) || b[D_GEN] != v->rma_gen) {
        return NULL;
    }
    if (v->rma_pending) {
        v->rma_pending--;
    }
    if (extoll_pkt_prot(b) != v->rma_prot) {
        /* finished, but the part has another ID now: nothing reported */
        extoll_prot_refused(s, b[D_KIND] == K_DONE ? "completion" :
                            "lock response", p->node, b[D_SVPID], dv,
                            extoll_pkt_prot(b), v->rma_prot);
        return NULL;
    }
    return v;
}

/* Origin: a put-like command finished at the target. */
bool extoll_done_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                    size_t len)
{
    ExtVpid *v = ext_command_finished(s, p, b, len, R_END);

    if (!v) {
        return true;
    }
    if ((b[R_SPEC] & EXTOLL_NOTI_REQUESTER) || b[R_ERR]) {
        extoll_noti_post(s, v, ldq_le_p(b + R_ECHO),
                         EXTOLL_NOTI_W1(ldl_le_p(b + R_SIZE), b[D_SVPID],
                                        p->node, EXTOLL_NOTI_REQUESTER,
                                        b[R_CMD], extoll_noti_mode(b[R_MODE]),
                                        b[R_ERR]));
    }
    return true;
}

/* Target: read and answer a get. */
bool extoll_getreq_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                      size_t len)
{
    unsigned dv = b[D_DVPID], cmd, spec, opts;
    uint32_t size, lo;
    uint64_t raddr, waddr;
    bool te, ok = false;
    ExtVpid *v;
    ExtXfer x;
    ExtSrc src;

    if (len < G_END) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    cmd = b[G_CMD];
    spec = b[G_SPEC];
    opts = b[G_MODE];
    te = opts & EXTOLL_RMA_OPT_TE;
    raddr = ldq_le_p(b + G_RADDR);
    waddr = ldq_le_p(b + G_WADDR);
    size = ldl_le_p(b + G_SIZE);
    if (size == 0 || size > EXTOLL_RMA_MAX_SIZE) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    lo = extoll_last_off(size);
    x = (ExtXfer) {
        .kind = K_GETRSP, .svpid = dv, .dvpid = b[D_SVPID], .gen = b[D_GEN],
        .prot = extoll_pkt_prot(b), .tag = lduw_le_p(b + D_TAG), .cmd = cmd,
        .spec = spec, .mode = opts, .addr = waddr, .echo = raddr,
    };
    src = (ExtSrc) {
        .vpid = dv, .prot = extoll_pkt_prot(b), .te = te, .addr = raddr,
    };
    v = dv < EXTOLL_NUM_VPIDS ? &s->vpid[dv] : NULL;
    if (v && extoll_rma_addr_ok(v, te) &&
        ext_rma_prot_ok(s, p, b, v, "get")) {
        if (s->txq_bytes >= EXT_TXQ_BYTES_MAX) {
            return false;   /* back-pressure */
        }
        if ((spec & EXTOLL_NOTI_RESPONDER) &&
            (!g_queue_is_empty(&v->backlog) || !extoll_noti_room(s, v))) {
            extoll_nack_watch(s, p, dv, false);
            return false;
        }
        ok = extoll_xfer_queue(s, p, &x, &src, size);
    }
    if (!ok) {
        /* one empty fragment: the size of the last one in echo */
        x.flags = F_ERR;
        x.addr = waddr + lo;
        x.echo = size - lo;
        extoll_xfer_queue(s, p, &x, &src, 0);
        return true;
    }
    if (spec & EXTOLL_NOTI_RESPONDER) {
        extoll_noti_write(s, v, raddr + lo,
                          EXTOLL_NOTI_W1(size - lo - 1, b[D_SVPID], p->node,
                                         EXTOLL_NOTI_RESPONDER, cmd,
                                         te ? EXTOLL_NOTI_MODE_TE : 0, 0));
    }
    return true;
}

/*
 * Target: fetch-compare-and-add on a lock of the destination VPID (spec
 * 2.6): if the value is <= compare (signed), add and succeed; else fail.
 * The answer carries the value after the operation.
 */
bool extoll_lockreq_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                       size_t len)
{
    unsigned dv = b[D_DVPID], spec, opts, result = 0, err = 0;
    uint32_t num, value = 0;
    ExtVpid *v;
    ExtPkt *k;
    uint8_t *d;

    if (len < L_END) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    spec = b[L_SPEC];
    opts = b[L_MODE];
    num = ldl_le_p(b + L_NUM);
    v = dv < EXTOLL_NUM_VPIDS ? &s->vpid[dv] : NULL;
    if (!v || !extoll_rma_on(v) || !ext_rma_prot_ok(s, p, b, v, "lock") ||
        num >= EXTOLL_RMA_LOCKS || b[L_UNIT] > 1) {
        err = EXTOLL_NOTI_ERR_RESP;
    } else {
        int32_t *lock;

        if ((spec & EXTOLL_NOTI_RESPONDER) &&
            (!g_queue_is_empty(&v->backlog) || !extoll_noti_room(s, v))) {
            s->counters[EXTOLL_CNT_NOTI_FULL]++;
            extoll_nack_watch(s, p, dv, false);
            return false;   /* retried; the lock is untouched */
        }
        if (!v->locks) {
            v->locks = g_new0(int32_t, 2 * EXTOLL_RMA_LOCKS);
        }
        lock = &v->locks[b[L_UNIT] * EXTOLL_RMA_LOCKS + num];
        if (*lock <= (int32_t)ldl_le_p(b + L_CMP)) {
            *lock = (int32_t)((uint32_t)*lock + ldl_le_p(b + L_ADD));
            result = 1;
        }
        value = (uint32_t)*lock;
        if (spec & EXTOLL_NOTI_RESPONDER) {
            extoll_noti_write(s, v, EXTOLL_LOCK_W0(num, result, value),
                              EXTOLL_NOTI_W1(0, b[D_SVPID], p->node,
                                             EXTOLL_NOTI_RESPONDER,
                                             EXTOLL_CMD_LOCK_REQ,
                                             extoll_noti_mode(opts), 0));
        }
    }
    d = extoll_pkt_new(s, p, &k, K_LOCKRSP, dv, b[D_SVPID], b[D_GEN],
                       extoll_pkt_prot(b), lduw_le_p(b + D_TAG), L_END);
    d[L_SPEC] = spec;
    d[L_MODE] = opts;
    d[L_UNIT] = b[L_UNIT];
    d[L_ERR] = err;
    stl_le_p(d + L_NUM, num);
    stl_le_p(d + L_CMP, result);
    stl_le_p(d + L_ADD, value);
    extoll_pkt_queue(s, p, k);
    return true;
}

/* Origin: the result of our lock command. */
bool extoll_lockrsp_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                       size_t len)
{
    ExtVpid *v = ext_command_finished(s, p, b, len, L_END);
    uint64_t word0;

    if (!v) {
        return true;
    }
    word0 = EXTOLL_LOCK_W0(ldl_le_p(b + L_NUM), ldl_le_p(b + L_CMP),
                           ldl_le_p(b + L_ADD));
    if (b[L_ERR]) {
        /* like a failed get: the origin always learns of the error */
        extoll_noti_post(s, v, word0,
                         EXTOLL_NOTI_W1(0, b[D_SVPID], p->node,
                                        EXTOLL_NOTI_REQUESTER,
                                        EXTOLL_CMD_LOCK_REQ,
                                        extoll_noti_mode(b[L_MODE]), b[L_ERR]));
    } else if (b[L_SPEC] & EXTOLL_NOTI_COMPLETER) {
        extoll_noti_post(s, v, word0,
                         EXTOLL_NOTI_W1(0, b[D_SVPID], p->node,
                                        EXTOLL_NOTI_COMPLETER,
                                        EXTOLL_CMD_LOCK_RSP,
                                        extoll_noti_mode(b[L_MODE]), 0));
    }
    return true;
}

/* Origin: data of our get arrives. */
bool extoll_getrsp_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                      size_t len, ExtRxData rd)
{
    unsigned dv = b[D_DVPID], flags, opts, cmd, spec;
    uint32_t n, lo;
    uint64_t addr;
    ExtVpid *v;
    bool te;

    if (!ext_frag_len(s, b, len, &rd, &n)) {
        return true;
    }
    if (dv >= EXTOLL_NUM_VPIDS) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    v = &s->vpid[dv];
    flags = b[P_FLAGS];
    opts = b[P_MODE];
    cmd = b[P_CMD];
    spec = b[P_SPEC];
    te = opts & EXTOLL_RMA_OPT_TE;
    addr = ldq_le_p(b + P_ADDR);
    if (!extoll_wait_answered(s, p, b, flags & F_LAST)) {
        return true;    /* the get was reported failed: nothing is written */
    }
    if (!extoll_rma_on(v) || b[D_GEN] != v->rma_gen) {
        return true;    /* owner gone: nothing is written */
    }
    if (extoll_pkt_prot(b) != v->rma_prot) {
        /* the part has another ID now: nothing is written or reported */
        if (flags & F_FIRST) {
            extoll_prot_refused(s, "get response", p->node, b[D_SVPID], dv,
                                extoll_pkt_prot(b), v->rma_prot);
        }
        if ((flags & F_LAST) && v->rma_pending) {
            v->rma_pending--;
        }
        return true;
    }
    if (flags & F_FIRST) {
        p->rsp_err = false;
    }
    if (flags & F_ERR) {
        if (v->rma_pending) {
            v->rma_pending--;
        }
        extoll_noti_post(s, v, addr,
                         EXTOLL_NOTI_W1(ldq_le_p(b + P_ECHO) - 1, b[D_SVPID],
                                        p->node, EXTOLL_NOTI_REQUESTER, cmd,
                                        extoll_noti_mode(opts),
                                        EXTOLL_NOTI_ERR_RESP));
        return true;
    }
    ext_frag_store(s, dv, te, addr, b, &rd, n, &p->rsp_err);
    if (!(flags & F_LAST)) {
        return true;
    }
    if (v->rma_pending) {
        v->rma_pending--;
    }
    lo = extoll_last_off(n);
    if ((spec & EXTOLL_NOTI_COMPLETER) || p->rsp_err) {
        extoll_noti_post(s, v, addr + lo,
                         EXTOLL_NOTI_W1(n ? n - lo - 1 : 0, b[D_SVPID], p->node,
                                        EXTOLL_NOTI_COMPLETER,
                                        cmd == EXTOLL_CMD_QW_GET ?
                                        EXTOLL_CMD_GET_QW_RSP :
                                        EXTOLL_CMD_GET_BT_RSP,
                                        extoll_noti_mode(opts),
                                        p->rsp_err ? EXTOLL_NOTI_ERR_CMPL : 0));
    }
    return true;
}
