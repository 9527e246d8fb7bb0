/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the parts of extoll-regtest share: extoll-dev.c drives the device
 * (setup, VELO, RMA, notifications) without the test harness;
 * extoll-regtest.c holds the cases and main(), with the protection-ID cases
 * (extoll-regtest-prot.h) and the retransmission-budget cases
 * (extoll-regtest-dead.h) in its translation unit: the harness keeps one
 * list of cases per translation unit.
 */
#ifndef EXTOLL_DEV_H
#define EXTOLL_DEV_H

#include "devmem.h"
#include "extoll_hw.h"

extern volatile uint8_t *bar0, *bar2, *bar3, *bar4; /* MMIO */
extern uint32_t node_id;
extern char dev[300];
extern volatile uint64_t *atu; /* DMA: the ATU table */
extern unsigned rma_stuck;     /* commands rma_post() could not post */

#define RING_SLOTS 32 /* one page */
#define NOTIQ_ENT 256 /* one page */

struct ep {
    int vpid;
    volatile uint8_t *ring;   /* DMA */
    volatile uint64_t *notiq; /* DMA */
    unsigned rd, nrd;
};

/* the VELO/RMA server of the 2-node checks */
#define SRV_VPID 3
#define PP 0x7e57 /* VELO and RMA protection ID of the server and of VPID 5 */

void vreg32(int v, int r, uint32_t val);
void ep_init(struct ep *e, int vpid, int phys);
uint64_t reg_prot(void *va, size_t len, unsigned first, int vpid, uint64_t perm,
                  unsigned prot);
uint64_t reg(void *va, size_t len, unsigned first, int vpid, uint64_t perm);
void atu_init(void);
int velo_send(int vpid, unsigned node, unsigned dv, unsigned tag,
              const void *buf, unsigned len);
uint64_t velo_recv(struct ep *e, void *buf, double tmo);
int velo_win_send(int vpid, uint64_t hdr, const void *buf, unsigned len,
                  int nowait);
void rma_post(int vpid, unsigned opts, uint64_t w0, uint64_t w1, uint64_t w2);
int noti_get(struct ep *e, uint64_t *w0, uint64_t *w1, double tmo);
void dump(const char *what, uint64_t w0, uint64_t w1);
bool noti_is(struct ep *e, const char *what, unsigned type, unsigned cmd,
             unsigned err, uint64_t w0x, unsigned size);
bool no_noti(struct ep *e, const char *what);
uint64_t cnt(unsigned i);
void set_prot(int vpid, unsigned velo, unsigned rma);
int all_bytes(const uint8_t *p, size_t n, uint8_t v);
double budget_s(unsigned n);
void settle(int v, double tmo);
void fuzz_mmio(long n);

#endif
