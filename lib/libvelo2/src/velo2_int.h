/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libvelo2 internals (not installed). */
#ifndef VELO2_INT_H
#define VELO2_INT_H

#include "velo2.h"

#define VELO2_DEV_PATH "/dev/extoll/velo2"
#define VELO2_STATUS_EOM_BIT (1ull << 36)
#define VELO2_STATUS_ERR_BIT (1ull << 37)
#define VELO2_PORT_FAKE 1u
#define VELO2_PORT_NONBLOCK 2u	/* send returns VELO2_RET_TRY_AGAIN without credit */
#define VELO2_PORT_WINDOW 4u	/* send through the send window (state page) */
#define VELO2_CREDITS_OFF 0x800	/* EXTOLL_VELO_CREDITS in the requester page */
#define VELO2_WIN_SEND_OFF 0x400	/* EXTOLL_VELO_WIN_SEND in the requester page */
#define VELO2_POLL_SLOTS 16	/* a busy consumer polls the NI every this many slots */
#define VELO2_FEATURES_OFF 0x810	/* EXTOLL_VELO_FEATURES in the requester page */
#define VELO2_F_DIRECT 0x1		/* EXTOLL_VELO_F_DIRECT */
#define VELO2_PORT_DIRECT 8u	/* senders write into the ring: poll memory only */
/*
 * With direct delivery an empty ring is polled in memory only for this
 * many probes in a row; then each empty probe
 * also reads EXTOLL_VELO_CREDITS, the NI poll that lets the emulated node
 * give its host CPU away while it waits (poll parking) and delivers what
 * took the rings (faults, a ring that was full).  A count, not a clock:
 * the receive path reads no clock (it runs under seccomp strict mode,
 * where even the TSC faults).  4096: the lowest 8 B ping-pong latency of
 * 512, 4096 and 65536 (Documentation/extoll/libvelo2.md).
 */
#define VELO2_DIRECT_SPIN_PROBES 4096u

/*
 * Host tests: a port over caller memory.  req_page (4 KiB) receives the
 * header word and payload quadwords of each send (at offset 0) and holds
 * the device's credit count at VELO2_CREDITS_OFF; mbox holds
 * nslots slots of slot_size bytes (64 or 128): per slot slot_size-8 payload
 * bytes then the status word; a message takes ceil(len/(slot_size-8))
 * slots (at least one), every slot carries the status, the last one EOM.
 */
/*
 * Host tests: send through a send window (payload stored to win, the
 * header to VELO2_WIN_SEND_OFF of req_page) as with a device that has one.
 */
void velo2__use_window_fake(velo2_port_t *port, volatile uint64_t *win);

velo2_ret_t velo2__open_fake(velo2_port_t *port, uint32_t node, uint32_t vpid,
			     volatile uint64_t *req_page, volatile uint64_t *state_page,
			     volatile void *mbox, uint32_t nslots, uint32_t slot_size,
			     volatile uint64_t *rp_word);

#endif
