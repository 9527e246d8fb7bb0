/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Why a request was refused, for the next person who has to find out
 * without rebuilding: every refusal a user request or a packet can reach
 * logs one line through these helpers (or exanet_dbg(), extoll_dbg(),
 * which wrap them).  Debug level only, under dynamic debug
 * ("module exa_core +p", "module exanet +p", "module extoll +p"), so a
 * user who is refused in a loop cannot flood the log.  The line starts
 * with the device and the function that refused.  Failed allocations
 * without __GFP_NOWARN are not logged again: the allocator reports them.
 */
#ifndef _EXA_DBG_H
#define _EXA_DBG_H

#include <linux/device.h>
#include <linux/printk.h>

#define exa_dbg(dev, fmt, ...)						\
	dev_dbg(dev, "%s: " fmt, __func__, ##__VA_ARGS__)

/* The same for code that has no device at hand (user memory pinning). */
#define exa_pr_dbg(fmt, ...)						\
	pr_debug("%s: " fmt, __func__, ##__VA_ARGS__)

#endif /* _EXA_DBG_H */
