/*
 * ExaNet NI model, the collective unit: the kernel's group registers, the
 * collective pages (BAR5) and the unit's life cycle.  Part of
 * exanet-coll.c (private header exanet-coll-int.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "qemu/queue.h"
#include "hw/pci/pci.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet_coll.h"
#include "exanet-int.h"
#include "exanet-rdma-int.h"
#include "fabric-park.h"
#include "trace.h"
#include "exanet-coll-int.h"

/* ------------------------------------------------------------------ */
/* Groups: privileged registers */

static void coll_group_disable(CollGroup *g)
{
    ExanetColl *c = g->c;

    if (g->state == EXANET_COLL_ONGOING) {
        coll_finish(g, EXANET_COLL_E_ABORTED);
    }
    if (!QTAILQ_EMPTY(&g->sends)) {
        /* Partners of a finished operation may still need them. */
        while (!QTAILQ_EMPTY(&g->sends)) {
            CollSend *s = QTAILQ_FIRST(&g->sends);

            QTAILQ_REMOVE(&g->sends, s, link);
            QTAILQ_INSERT_TAIL(&c->orphans, s, link);
        }
        fabric_nic_timer_arm(c->timer, &c->due,
                             (int64_t)c->r->retx_us * SCALE_US);
    }
    coll_drop_state(g, true);
    g->enabled = false;
    g->due = 0;
}

static void coll_group_enable(CollGroup *g)
{
    coll_group_disable(g);
    if (!g->size || g->myrank >= g->size || g->page >= EXANET_RDMA_PAGES ||
        g->members[g->myrank] != g->c->r->node_id) {
        EXANET_GUEST_ERR(exanet_err_coll_group, "group %u: bad group "
                         "(size %u rank %u page %u)", g->idx, g->size,
                         g->myrank, g->page);
        return;
    }
    coll_plan(g);
    g->seq = 0;
    g->state = EXANET_COLL_IDLE;
    g->err = 0;
    g->failed = false;
    g->enabled = true;
    memset(g->desc, 0, sizeof(g->desc));
}

bool exanet_coll_ctrl_owns(hwaddr off)
{
    return off >= EXANET_REG_COLL_CAPS && off < 0x4000;
}

uint32_t exanet_coll_ctrl_read(ExanetColl *c, hwaddr off)
{
    CollGroup *g = &c->g[c->sel];

    if (off >= EXANET_REG_COLL_COUNTER(0) &&
        off < EXANET_REG_COLL_COUNTER(EXANET_COLL_NUM_COUNTERS)) {
        uint64_t v = c->cnt[(off - EXANET_REG_COLL_COUNTER(0)) / 8];

        return fabric_nic_reg_part(v, off, 4);
    }
    switch (off) {
    case EXANET_REG_COLL_CAPS:
        return EXANET_COLL_GROUPS | EXANET_COLL_MAX_MEMBERS << 8;
    case EXANET_REG_COLL_SEL:
        return c->sel;
    case EXANET_REG_COLL_G_CTRL:
        return g->enabled;
    case EXANET_REG_COLL_G_PDID:
        return g->pdid;
    case EXANET_REG_COLL_G_PAGE:
        return g->page;
    case EXANET_REG_COLL_G_KEY:
        return g->key;
    case EXANET_REG_COLL_G_SIZE:
        return g->size;
    case EXANET_REG_COLL_G_MYRANK:
        return g->myrank;
    case EXANET_REG_COLL_G_MIDX:
        return g->midx;
    case EXANET_REG_COLL_G_MNODE:
        return g->midx < EXANET_COLL_MAX_MEMBERS ? g->members[g->midx] : 0;
    case EXANET_REG_COLL_G_STATE:
        return g->state;
    }
    return 0;
}

void exanet_coll_ctrl_write(ExanetColl *c, hwaddr off, uint32_t val)
{
    CollGroup *g = &c->g[c->sel];

    if (off == EXANET_REG_COLL_SEL) {
        if (val < EXANET_COLL_GROUPS) {
            c->sel = val;
            return;
        }
    } else if (off == EXANET_REG_COLL_G_CTRL) {
        if (val & EXANET_COLL_G_ENABLE) {
            coll_group_enable(g);
        } else {
            coll_group_disable(g);
        }
        return;
    } else if (g->enabled) {
        /* fall through to the error: an enabled group is frozen */
    } else {
        switch (off) {
        case EXANET_REG_COLL_G_PDID:
            g->pdid = val & EXANET_PDID_MAX;
            return;
        case EXANET_REG_COLL_G_PAGE:
            g->page = val;
            return;
        case EXANET_REG_COLL_G_KEY:
            g->key = val;
            return;
        case EXANET_REG_COLL_G_SIZE:
            g->size = MIN(val, EXANET_COLL_MAX_MEMBERS);
            return;
        case EXANET_REG_COLL_G_MYRANK:
            g->myrank = val;
            return;
        case EXANET_REG_COLL_G_MIDX:
            g->midx = val;
            return;
        case EXANET_REG_COLL_G_MNODE:
            if (g->midx < EXANET_COLL_MAX_MEMBERS) {
                g->members[g->midx++] = val;
                return;
            }
            break;
        }
    }
    EXANET_GUEST_ERR(exanet_err_coll_reg, "refused write 0x%x to collective "
                     "register 0x%" HWADDR_PRIx, val, off);
}

/* The owner of RDMA page p lost it: its groups' operations end. */
void exanet_coll_page_disabled(ExanetColl *c, unsigned p)
{
    for (unsigned i = 0; i < EXANET_COLL_GROUPS; i++) {
        CollGroup *g = &c->g[i];

        if (g->enabled && g->page == p && g->state == EXANET_COLL_ONGOING) {
            coll_finish(g, EXANET_COLL_E_ABORTED);
        }
    }
}

/* ------------------------------------------------------------------ */
/* BAR5: collective pages */

static CollGroup *coll_slot(ExanetColl *c, hwaddr off)
{
    unsigned p = off / EXANET_COLL_PAGE_SIZE;
    unsigned s = (off % EXANET_COLL_PAGE_SIZE) / EXANET_COLL_SLOT_STRIDE;
    CollGroup *g;

    if (p >= EXANET_RDMA_PAGES || s >= EXANET_COLL_GROUPS ||
        exanet_dma_depth || !c->r->page[p].enabled) {
        return NULL;
    }
    g = &c->g[s];
    return g->enabled && g->page == p ? g : NULL;
}

static bool coll_group_finished(void *opaque)
{
    const CollGroup *g = opaque;

    return g->state != EXANET_COLL_ONGOING;
}

static uint64_t coll_bar_read(void *opaque, hwaddr off, unsigned size)
{
    ExanetColl *c = opaque;
    CollGroup *g = coll_slot(c, off);
    unsigned reg = off % EXANET_COLL_SLOT_STRIDE;
    uint64_t v;

    if (!g) {
        return 0;
    }
    switch (reg & ~7u) {
    case EXANET_COLL_S_STATUS:
        if (g->state == EXANET_COLL_ONGOING) {
            exanet_ni_poll(c->r->ni, coll_group_finished, g);
        }
        v = g->state | (uint64_t)g->err << 8 | (uint64_t)g->seq << 32;
        break;
    case EXANET_COLL_S_DONE_BLOCKS:
        v = g->bdone;
        break;
    default:
        return 0;
    }
    return fabric_nic_reg_part(v, reg, size);
}

static void coll_bar_write(void *opaque, hwaddr off, uint64_t val,
                           unsigned size)
{
    ExanetColl *c = opaque;
    CollGroup *g = coll_slot(c, off);
    unsigned reg = off % EXANET_COLL_SLOT_STRIDE;

    if (!g) {
        return;
    }
    fabric_nic_poll_found();    /* posting software does not wait */
    if (g->state == EXANET_COLL_ONGOING) {
        return;     /* the descriptor is frozen while in flight */
    }
    if (size == 8) {
        stq_le_p(g->desc + reg, val);
    } else {
        stl_le_p(g->desc + reg, val);
    }
    if (reg == EXANET_COLL_D_CTRL) {
        coll_trigger(g);
    }
}

static const MemoryRegionOps coll_bar_ops = {
    .read = coll_bar_read,
    .write = coll_bar_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

/* ------------------------------------------------------------------ */
/* Life cycle */

ExanetColl *exanet_coll_new(ExanetRdma *r, Object *owner)
{
    ExanetColl *c = g_new0(ExanetColl, 1);

    c->r = r;
    for (unsigned i = 0; i < EXANET_COLL_GROUPS; i++) {
        CollGroup *g = &c->g[i];

        g->c = c;
        g->idx = i;
        g->members = g_new0(uint32_t, EXANET_COLL_MAX_MEMBERS);
        QTAILQ_INIT(&g->sends);
        g->early = g_hash_table_new_full(g_direct_hash, g_direct_equal,
                                         NULL, g_free);
        g->timer = timer_new_ns(QEMU_CLOCK_REALTIME, coll_timer, g);
    }
    QTAILQ_INIT(&c->orphans);
    c->timer = timer_new_ns(QEMU_CLOCK_REALTIME, coll_orphan_timer, c);
    memory_region_init_io(&c->bar, owner, &coll_bar_ops, c, "exanet-coll",
                          EXANET_BAR_COLL_SIZE);
    fabric_nic_parkable(&c->bar);
    return c;
}

void exanet_coll_set_direct(ExanetColl *c, uint32_t members)
{
    c->direct_max = MIN(members, COLL_DIRECT_MAX_MEMBERS);
}

MemoryRegion *exanet_coll_bar(ExanetColl *c)
{
    return &c->bar;
}

void exanet_coll_reset(ExanetColl *c)
{
    for (unsigned i = 0; i < EXANET_COLL_GROUPS; i++) {
        CollGroup *g = &c->g[i];

        coll_group_disable(g);
        g->pdid = g->page = g->key = g->size = g->myrank = g->midx = 0;
        g->seq = 0;
        g->state = EXANET_COLL_IDLE;
        g->err = 0;
        g->failed = false;
        memset(g->members, 0, EXANET_COLL_MAX_MEMBERS * sizeof(uint32_t));
    }
    while (!QTAILQ_EMPTY(&c->orphans)) {
        CollSend *s = QTAILQ_FIRST(&c->orphans);

        QTAILQ_REMOVE(&c->orphans, s, link);
        g_free(s);
    }
    c->due = 0;
    c->sel = 0;
    memset(c->cnt, 0, sizeof(c->cnt));
}
