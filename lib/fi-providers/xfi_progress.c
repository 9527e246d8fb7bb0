// SPDX-License-Identifier: MIT
/*
 * Manual progress, run by every CQ read, counter read or wait and by
 * FI_PEEK: it calls each part of an endpoint in turn (channel outcomes,
 * the mailbox, probes of silent receivers, rendezvous reads, RMA, the
 * transmit queue, the finished sends), and those write the completions:
 * posting calls only queue and hand packets to the NIC.  No part calls it.
 */
#include "xfi.h"

void xfi_ep_progress(struct xfi_ep *ep)
{
	if (!ep->enabled)
		return;
	/* the tests inline: a poll that finds nothing calls little else */
	if (ep->chans_busy)
		xfi_tx_reap(ep);
	xfi_rx_poll(ep);
	if (ep->rndv_wait.head)
		xfi_probe_peers(ep);
	if (ep->rndv_rx.head)
		xfi_rndv_progress(ep);
	if (ep->rma_ops.head)
		xfi_rma_progress(ep);
	if (ep->txq.head)
		xfi_tx_fill(ep);
	if (ep->tx_done.head || ep->fast_done_count)
		xfi_tx_complete_done(ep);
}

void xfi_domain_progress(struct xfi_domain *dom)
{
	struct xfi_ep *ep;

	for (ep = dom->eps; ep; ep = ep->dom_next)
		xfi_ep_progress(ep);
}
