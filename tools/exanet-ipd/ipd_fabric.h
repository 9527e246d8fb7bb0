/* SPDX-License-Identifier: MIT */
/*
 * exanet-ipd: data path and peer protocol: ipd_peer.c (peers, handshakes,
 * credits), ipd_tx.c (TUN -> batches -> RDMA writes), ipd_rx.c (receive
 * rings -> TUN), ipd_live.c (heartbeats, tick, the kernel path's peers).
 */
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

/* Between the parts of the data path */
/* ipd_peer.c */
void ipd_tx_drop(struct ipd *d, struct peer *p);
int ipd_rx_ring_new(struct ipd *d, struct peer *p);
void ipd_peer_drop_conn(struct ipd *d, struct peer *p);
void ipd_send_offer(struct ipd *d, struct peer *p);
void ipd_send_need_ring(struct ipd *d, struct peer *p);
void ipd_peer_update(struct ipd *d, struct peer *p);
void ipd_peer_connect(struct ipd *d, struct peer *p);
void ipd_send_probe(struct ipd *d, struct peer *p);
int ipd_send_msg(struct ipd *d, struct peer *p, struct ipd_msg *m);
void ipd_send_credit(struct ipd *d, struct peer *p);
void ipd_maybe_credit(struct ipd *d, struct peer *p);
/* ipd_tx.c */
void ipd_comp_check_stale(struct ipd *d);
bool ipd_peer_sendable(const struct peer *p);
int ipd_tun_write(struct ipd *d, const struct ipd_rec_hdr *h, const uint8_t *pkt);

#endif
