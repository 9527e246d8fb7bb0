/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the parts of extoll-regtest share: extoll-regtest.c (setup, VELO,
 * RMA, loopback checks, two nodes, fuzzing, main), extoll-regtest-prot.c
 * (protection IDs), extoll-regtest-dead.c (retransmission budget).
 */
#ifndef EXTOLL_REGTEST_H
#define EXTOLL_REGTEST_H

#include "devtest.h"
#include "extoll_hw.h"

extern volatile uint8_t *bar0, *bar2, *bar3, *bar4; /* MMIO */
extern uint32_t node_id;
extern char dev[300];
extern volatile uint64_t *atu; /* DMA: the ATU table */

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

/* extoll-regtest.c */
void vreg32(int v, int r, uint32_t val);
void ep_init(struct ep *e, int vpid, int phys);
uint64_t reg_prot(void *va, size_t len, unsigned first, int vpid, uint64_t perm,
                  unsigned prot);
uint64_t reg(void *va, size_t len, unsigned first, int vpid, uint64_t perm);
void atu_init(void);
int velo_send(int vpid, unsigned node, unsigned dv, unsigned tag,
              const void *buf, unsigned len);
uint64_t velo_recv(struct ep *e, void *buf, double tmo);
void rma_post(int vpid, unsigned opts, uint64_t w0, uint64_t w1, uint64_t w2);
int noti_get(struct ep *e, uint64_t *w0, uint64_t *w1, double tmo);
void dump(const char *what, uint64_t w0, uint64_t w1);
int expect_noti(struct ep *e, const char *what, unsigned type, unsigned cmd,
                unsigned err, uint64_t w0x, unsigned size, uint64_t *w0o);
void serve(int secs);
void ping(unsigned node, int n);

/* extoll-regtest-prot.c */
uint64_t cnt(unsigned i);
void set_prot(int vpid, unsigned velo, unsigned rma);
void expect_no_noti(struct ep *e, const char *what);
int all_bytes(const uint8_t *p, size_t n, uint8_t v);
void prot_test(void);

/* extoll-regtest-dead.c */
void dead_test(unsigned dead, unsigned want_max);
void revive(unsigned node);

#endif
