/* SPDX-License-Identifier: MIT */
/*
 * What the operation files of exa_fuzz share (fuzz_ops.c: values, the
 * file table, the driver; fuzz_ioctl.c, fuzz_map.c, fuzz_netlink.c: one
 * surface each).  Every operation draws from r and acts on p; it returns 1
 * if the call succeeded.
 */
#ifndef EXA_FUZZ_OPS_H
#define EXA_FUZZ_OPS_H

#include <stdint.h>

#include "fuzz.h"

/* Values: interesting integers, powers of two, domains, nodes, addresses. */
uint64_t rv_u64(struct frng *r);
uint32_t rv_pow2(struct frng *r, unsigned int lo_shift, unsigned int hi_shift);
uint32_t rv_domain(struct frng *r);
uint32_t rv_node(struct frng *r);
uint64_t rv_buf_addr(struct fz_proc *p, struct frng *r, unsigned int align);
uint64_t rv_addr(struct fz_proc *p, struct frng *r, unsigned int align);
uint64_t rv_len(struct frng *r, int wild);
int rv_id(struct fz_proc *p, struct frng *r, uint32_t *out);

/* What the drivers handed out, for later operations. */
void remember_id(struct fz_proc *p, uint32_t id);
void remember_off(struct fz_proc *p, int dev, uint64_t off, uint64_t len);
void remember_nla(struct fz_proc *p, uint64_t nla, uint64_t size);

/* The worker's last operation, for the failure report. */
void note(struct fz_proc *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A descriptor of the file table and its device, or -1. */
int pick_file(struct fz_proc *p, struct frng *r, int *dev);

int op_ioctl(struct fz_proc *p, struct frng *r);
int op_mmap(struct fz_proc *p, struct frng *r);
int op_munmap(struct fz_proc *p, struct frng *r);
int op_mprotect(struct fz_proc *p, struct frng *r);
int op_mremap(struct fz_proc *p, struct frng *r);
int op_mmio(struct fz_proc *p, struct frng *r);
int op_setup(struct fz_proc *p, struct frng *r);
int op_netlink(struct fz_proc *p, struct frng *r);

#endif
