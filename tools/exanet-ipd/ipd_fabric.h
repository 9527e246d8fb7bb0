/* SPDX-License-Identifier: MIT */
/* exanet-ipd: data path and peer protocol (ipd_fabric.c). */
#ifndef IPD_FABRIC_H
#define IPD_FABRIC_H

#include "ipd.h"

const char *ipd_state_name(enum peer_state s);
struct peer *ipd_peer_get(struct ipd *d, uint32_t node);
struct peer *ipd_peer_by_ip(struct ipd *d, uint32_t ip);
void ipd_peer_down(struct ipd *d, struct peer *p, const char *why);

int ipd_mbox_poll(struct ipd *d);	/* handshake and credit messages */
void ipd_ctl_poll(struct ipd *d);	/* packetizer channels in flight */
int ipd_comp_poll(struct ipd *d);	/* RDMA write completions */
int ipd_rx_poll_all(struct ipd *d);	/* receive rings -> TUN */
int ipd_tun_rx(struct ipd *d);		/* TUN -> open batches */
int ipd_tx_flush(struct ipd *d);	/* post open batches */
bool ipd_tx_pending(const struct ipd *d);
void ipd_tick(struct ipd *d);		/* heartbeats, timeouts, retries */
void ipd_goodbye(struct ipd *d);
void ipd_kpath_sync(struct ipd *d);	/* the driver's list of peers */

#endif
