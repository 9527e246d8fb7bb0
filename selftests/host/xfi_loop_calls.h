/* SPDX-License-Identifier: MIT */
/*
 * What the engine asked of the loopback NIC (xfi_nic_loop.c), counted for
 * a host test that wants to see which calls reach the NIC when: the test
 * puts the address of its struct xfi_loop_calls (same process) into
 * XFI_LOOP_CALLS as "%p" (test_xfi_xfer.c, post_calls_only_queue).
 */
#ifndef XFI_LOOP_CALLS_H
#define XFI_LOOP_CALLS_H

struct xfi_loop_calls {
	unsigned long sends;		/* xfi_nic_send */
	unsigned long status_reads;	/* xfi_nic_chan_status */
	unsigned long deregs;		/* xfi_nic_dereg_mr */
};

#endif
