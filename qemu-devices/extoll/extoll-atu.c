/*
 * EXTOLL NIC: memory access of the device: DMA helpers, protection IDs
 * and the ATU (NLA translation).  See extoll-nic.c for the overview.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "hw/pci/pci.h"
#include "sysemu/dma.h"

#include "extoll-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* DMA helpers */

static bool ext_dma_rw(ExtollState *s, uint64_t addr, void *buf,
                       uint64_t len, DMADirection dir)
{
    if (fabric_nic_dma_rw(PCI_DEVICE(s), &extoll_dma_depth, addr, buf, len,
                          dir) != MEMTX_OK) {
        s->counters[EXTOLL_CNT_DMA_ERRORS]++;
        return false;
    }
    return true;
}

bool extoll_dma_read(ExtollState *s, uint64_t addr, void *buf, uint64_t len)
{
    return ext_dma_rw(s, addr, buf, len, DMA_DIRECTION_TO_DEVICE);
}

bool extoll_dma_write(ExtollState *s, uint64_t addr, const void *buf,
                      uint64_t len)
{
    return ext_dma_rw(s, addr, (void *)buf, len, DMA_DIRECTION_FROM_DEVICE);
}

bool extoll_read_u64(ExtollState *s, uint64_t addr, uint64_t *v)
{
    uint8_t b[8];

    if (!extoll_dma_read(s, addr, b, 8)) {
        return false;
    }
    *v = ldq_le_p(b);
    return true;
}

/* One store: status words and tail markers are polled and cleared by the
 * guest (see fabric_nic_dma_store()). */
bool extoll_write_u64(ExtollState *s, uint64_t addr, uint64_t v)
{
    if (fabric_nic_dma_store(PCI_DEVICE(s), &extoll_dma_depth, addr, v, 8)
        != MEMTX_OK) {
        s->counters[EXTOLL_CNT_DMA_ERRORS]++;
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Protection IDs */

/* Protection ID of a DATA packet */
uint16_t extoll_pkt_prot(const uint8_t *b)
{
    return lduw_le_p(b + D_PROT);
}

/*
 * A packet for local VPID dvpid refused because its protection ID differs
 * from the one of the VPID part it is for (counted once per refused VELO
 * message, RMA command or response).
 */
void extoll_prot_refused(ExtollState *s, const char *what, uint32_t node,
                         unsigned svpid, unsigned dvpid, unsigned prot,
                         unsigned expected)
{
    s->counters[EXTOLL_CNT_PROT_REFUSED]++;
    EXTOLL_GUEST_ERR(extoll_err_prot, "%s from node %u VPID %u to VPID %u "
                     "refused: protection ID 0x%04x, VPID has 0x%04x",
                     what, node, svpid, dvpid, prot, expected);
}

/* ------------------------------------------------------------------ */
/* ATU */

/*
 * Translate [addr, addr + len) for VPID vpid and protection ID prot with
 * permission perm (EXTOLL_ATU_READ / _WRITE).  te = NLA addressing, else
 * bus addresses.  prot is the ID of the access: the packet's for remote
 * addresses, the posting VPID's RMA_PROT for local ones.  Returns a GArray
 * of ExtSeg, or NULL on a fault.  The ATU entries are read EXT_ATU_BATCH at
 * a time.
 */
#define EXT_ATU_BATCH 64

/*
 * A valid entry the model read: into the translation cache peers read for
 * direct puts and gets (extoll-rma-direct.c), unless it is there already.
 */
static void ext_atu_fill(ExtollState *s, uint64_t idx, uint64_t e)
{
    uint64_t ram;

    if (!fabric_nic_direct_on(&s->nic) ||
        fabric_direct_xlat_cached(s->nic.dd, idx)) {
        return;
    }
    if (fabric_nic_direct_translate(PCI_DEVICE(s), EXTOLL_ATU_ADDR(e),
                                    FABRIC_DIRECT_PAGE, &ram)) {
        fabric_direct_xlat_fill(s->nic.dd, idx, ram, EXTOLL_ATU_VPID(e),
                                e & (EXTOLL_ATU_READ | EXTOLL_ATU_WRITE),
                                EXTOLL_ATU_PROT(e));
    }
}

/*
 * The driver cleared entries and reads a BAR0 register (uapi/extoll_hw.h,
 * section 7): no access that starts later may use them, peers' neither.
 */
void extoll_atu_fence(ExtollState *s)
{
    if (fabric_direct_xlat_fence(s->nic.dd)) {
        trace_extoll_atu_fence(s->nic.node_id);
    }
}

GArray *extoll_translate(ExtollState *s, unsigned vpid, unsigned prot,
                         bool te, uint64_t addr, uint32_t len,
                         uint64_t perm)
{
    GArray *a = g_array_new(false, false, sizeof(ExtSeg));
    uint64_t ent[EXT_ATU_BATCH], first = 0, cnt = 0;

    if (len == 0) {
        return a;
    }
    if (addr + len < addr) {
        goto fault;
    }
    if (!te) {
        ExtSeg sg = { .bus = addr, .len = len };

        g_array_append_val(a, sg);
        return a;
    }
    while (len) {
        uint64_t idx = addr >> 12, e;
        uint32_t off = addr & 0xfff, n = MIN(len, 4096 - off);

        if (!s->atu_entries || idx >= s->atu_entries) {
            goto fault;
        }
        if (idx < first || idx >= first + cnt) {
            cnt = MIN(MIN((off + (uint64_t)len + 4095) >> 12, EXT_ATU_BATCH),
                      s->atu_entries - idx);
            first = idx;
            if (!extoll_dma_read(s, s->atu_base + 8 * idx, ent, 8 * cnt)) {
                goto fault;
            }
        }
        e = le64_to_cpu(ent[idx - first]);
        if (e & EXTOLL_ATU_VALID) {
            ext_atu_fill(s, idx, e);
        }
        if (!(e & EXTOLL_ATU_VALID) || (e & perm) != perm ||
            EXTOLL_ATU_VPID(e) != vpid) {
            goto fault;
        }
        if (EXTOLL_ATU_PROT(e) != prot) {
            s->counters[EXTOLL_CNT_PROT_REFUSED]++;
            EXTOLL_GUEST_ERR(extoll_err_atu_prot, "ATU entry %" PRIu64
                             " (VPID %u) refused: protection ID 0x%04x, "
                             "entry has 0x%04x", idx, vpid, prot,
                             (unsigned)EXTOLL_ATU_PROT(e));
            goto fault;
        }
        ExtSeg sg = { .bus = EXTOLL_ATU_ADDR(e) + off, .len = n };
        ExtSeg *last = a->len ? &g_array_index(a, ExtSeg, a->len - 1) : NULL;

        if (last && last->bus + last->len == sg.bus) {
            last->len += n;
        } else {
            g_array_append_val(a, sg);
        }
        addr += n;
        len -= n;
    }
    return a;
fault:
    s->counters[EXTOLL_CNT_ATU_FAULTS]++;
    g_array_free(a, true);
    return NULL;
}

bool extoll_mem_rw(ExtollState *s, unsigned vpid, unsigned prot, bool te,
                   uint64_t addr, void *buf, uint32_t len, bool write)
{
    GArray *a = extoll_translate(s, vpid, prot, te, addr, len,
                                 write ? EXTOLL_ATU_WRITE : EXTOLL_ATU_READ);
    uint8_t *p = buf;
    bool ok = true;

    if (!a) {
        return false;
    }
    for (unsigned i = 0; i < a->len && ok; i++) {
        ExtSeg *sg = &g_array_index(a, ExtSeg, i);
        bool last = i + 1 == a->len;

        if (!write) {
            ok = extoll_dma_read(s, sg->bus, p, sg->len);
        } else if (last && sg->len > 8) {
            /*
             * The last quadword becomes visible only after everything
             * below it (clients poll a tail flag at the end of a put).
             */
            ok = extoll_dma_write(s, sg->bus, p, sg->len - 8);
            ok = ok && extoll_write_u64(s, sg->bus + sg->len - 8,
                                        ldq_le_p(p + sg->len - 8));
        } else {
            if (last) {
                /* the last segment after everything below it, as above */
                smp_wmb();
            }
            ok = extoll_dma_write(s, sg->bus, p, sg->len);
        }
        p += sg->len;
    }
    g_array_free(a, true);
    return ok;
}
