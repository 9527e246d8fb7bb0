// SPDX-License-Identifier: MIT
/*
 * The provider's NIC backend for EXTOLL (xfi_nic.h): packets are VELO
 * messages (libvelo2) into the peer endpoint's VELO ring, RDMA is RMA puts
 * and gets (librma2) between ATU-registered memory.
 *
 * - An endpoint is a VELO port; its mailbox id is the VELO VPID (< 64: the
 *   engine's peer keys have 6 bits for it).  Ports are opened with
 *   VELO2_SEND_NONBLOCK=1 unless the environment says otherwise: a send
 *   without credit returns "try again" (-ENOBUFS on the channel, the engine
 *   sends again) instead of waiting in the library while the peer may be
 *   waiting for us.  A VELO send is complete when velo2_send returns.
 * - A domain has one RMA port (its own VPID): registrations belong to it,
 *   and RDMA targets are (node, RMA VPID, NLA).  The NIC translates NLAs
 *   through the ATU and checks the protection ID of the port (the opener's
 *   protection domain) against the target VPID's: a foreign or unregistered
 *   NLA fails the operation (error notification), memory is not touched.
 * - FI_RMA keys: RMA VPID in bits 0-7 and, in bits 8-55, the 48-bit
 *   two's complement of NLA - virtual address of the registration, so
 *   NLA = va + offset for any va inside it (FI_MR_VIRT_ADDR).  Two
 *   registrations of a domain can share a key (same offset); the key and
 *   an address inside one name it (disjoint NLAs), which is how the
 *   engine's atomics find their target (xfi_mr_find).
 * - RDMA completion: puts ask for the requester notification (written once
 *   the target has all data), gets for the completer notification (data
 *   landed here); errors always come as requester notifications.  A
 *   notification names the peer and the local NLA of the last fragment:
 *   it completes one chunk (<= 8 MiB) of the oldest slot it fits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rma2.h>
#include <velo2.h>

#include "xfi_nic.h"

#define XFI_EXT_CHUNK		(8u << 20)	/* largest RMA command */
#define XFI_EXT_SLOTS		64		/* RDMA operations in flight */
#define XFI_EXT_CONN_BUCKETS	64
#define XFI_EXT_MBOX_LIMIT	64		/* VELO VPIDs the keys can carry */
#define XFI_EXT_KEY_BITS	48

/* A cached connection (VELO or RMA) to (node, vpid). */
struct xfi_ext_conn {
	struct xfi_ext_conn *next;
	uint32_t id;			/* node << 8 | vpid */
	velo2_connection_t velo;	/* VELO: connected */
	RMA2_Handle rma;		/* RMA: connected */
};

struct xfi_nic {
	RMA2_Port port;
	uint32_t node, vpid;
	struct xfi_ext_conn *rma_conns[XFI_EXT_CONN_BUCKETS];
};

struct xfi_nic_ep {
	velo2_port_t port;
	int chan[XFI_NIC_CHANNELS];	/* outcome of the last send */
	struct xfi_ext_conn *conns[XFI_EXT_CONN_BUCKETS];
};

struct xfi_ext_mr {
	struct xfi_nic_mr mr;
	struct xfi_nic *nic;
	RMA2_Region *region;
};

struct xfi_ext_slot {
	int busy;
	int draining;			/* abandoned: freed by its last notification */
	int is_read;
	uint64_t seq;			/* post order: the oldest match wins */
	uint32_t node, vpid;
	uint64_t lo, hi;		/* local NLAs */
	unsigned int pending;		/* chunks without their notification */
	int err;
};

struct xfi_nic_rdma {
	struct xfi_nic *nic;
	uint64_t seq;
	uint64_t stray;			/* notifications no slot waited for */
	struct xfi_ext_slot slots[XFI_EXT_SLOTS];
};

static struct xfi_ext_conn **xfi_ext_bucket(struct xfi_ext_conn **tab, uint32_t id)
{
	return &tab[(id ^ (id >> 8)) % XFI_EXT_CONN_BUCKETS];
}

static struct xfi_ext_conn *xfi_ext_find(struct xfi_ext_conn **tab, uint32_t id)
{
	struct xfi_ext_conn *c;

	for (c = *xfi_ext_bucket(tab, id); c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void xfi_ext_add(struct xfi_ext_conn **tab, struct xfi_ext_conn *c)
{
	struct xfi_ext_conn **b = xfi_ext_bucket(tab, c->id);

	c->next = *b;
	*b = c;
}

static void xfi_ext_free_all(struct xfi_ext_conn **tab)
{
	unsigned int i;

	for (i = 0; i < XFI_EXT_CONN_BUCKETS; i++) {
		while (tab[i]) {
			struct xfi_ext_conn *c = tab[i];

			tab[i] = c->next;
			free(c);
		}
	}
}

int xfi_nic_open(const char *path, struct xfi_nic **nicp)
{
	struct xfi_nic *nic = calloc(1, sizeof(*nic));
	RMA2_ERROR rc;

	(void)path;	/* librma2 opens /dev/extoll/rma2 */
	if (!nic)
		return -ENOMEM;
	rc = rma2_open(&nic->port);
	if (rc != RMA2_SUCCESS) {
		free(nic);
		return rc == RMA2_ERR_NO_DEVICE ? -ENODEV :
			rc == RMA2_ERR_PORTS_USED ? -EBUSY :
			rc == RMA2_ERR_NO_MEM ? -ENOMEM : -EIO;
	}
	nic->node = rma2_get_nodeid(nic->port);
	nic->vpid = rma2_get_vpid(nic->port);
	*nicp = nic;
	return 0;
}

void xfi_nic_close(struct xfi_nic *nic)
{
	xfi_ext_free_all(nic->rma_conns);	/* rma2_close frees the handles */
	rma2_close(nic->port);
	free(nic);
}

uint32_t xfi_nic_node_id(const struct xfi_nic *nic)
{
	return nic->node;
}

int xfi_nic_ep_open(struct xfi_nic *nic, unsigned int slots, struct xfi_nic_ep **epp)
{
	struct xfi_nic_ep *ep = calloc(1, sizeof(*ep));
	velo2_ret_t rc;

	(void)nic;
	(void)slots;	/* the ring has the driver's size */
	if (!ep)
		return -ENOMEM;
	/* see the top: the engine resends what the NIC cannot take yet */
	setenv("VELO2_SEND_NONBLOCK", "1", 0);
	rc = velo2_open(&ep->port);
	if (rc != VELO2_RET_SUCCESS) {
		free(ep);
		return rc == VELO2_RET_ERR_FDOPEN ? -ENODEV : -EIO;
	}
	if (velo2_get_vpid(&ep->port) >= XFI_EXT_MBOX_LIMIT) {
		velo2_close(&ep->port);
		free(ep);
		return -ENOSPC;
	}
	*epp = ep;
	return 0;
}

void xfi_nic_ep_close(struct xfi_nic_ep *ep)
{
	xfi_ext_free_all(ep->conns);
	velo2_close(&ep->port);
	free(ep);
}

uint32_t xfi_nic_ep_mbox(const struct xfi_nic_ep *ep)
{
	return velo2_get_vpid((velo2_port_t *)&ep->port);
}

int xfi_nic_send(struct xfi_nic_ep *ep, unsigned int chan, uint32_t node, uint32_t mbox,
		 const void *pkt, size_t len)
{
	uint32_t id = node << 8 | mbox;
	struct xfi_ext_conn *c;
	velo2_ret_t rc;

	if (chan >= XFI_NIC_CHANNELS || len > VELO2_MAX_MSG_SIZE || node >= 0xfffe ||
	    mbox >= XFI_EXT_MBOX_LIMIT)
		return -EINVAL;
	c = xfi_ext_find(ep->conns, id);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		c->id = id;
		if (velo2_connect(&ep->port, &c->velo, node, mbox) != VELO2_RET_SUCCESS) {
			free(c);
			return -EINVAL;
		}
		xfi_ext_add(ep->conns, c);
	}
	rc = velo2_send(&c->velo, pkt, (uint32_t)len, 0, 0);
	if (rc == VELO2_RET_SUCCESS)
		ep->chan[chan] = 0;
	else if (rc == VELO2_RET_TRY_AGAIN)
		ep->chan[chan] = -ENOBUFS;	/* no credit: nothing sent */
	else
		return -EIO;
	return 0;
}

int xfi_nic_chan_status(struct xfi_nic_ep *ep, unsigned int chan)
{
	return chan < XFI_NIC_CHANNELS ? ep->chan[chan] : -EINVAL;
}

ssize_t xfi_nic_recv(struct xfi_nic_ep *ep, void *buf, size_t len, uint32_t *src_node)
{
	uint8_t msg[VELO2_MAX_MSG_SIZE];
	uint32_t n = 0, src = 0;
	velo2_ret_t rc = velo2_probe_recv(&ep->port, msg, sizeof(msg), &n, &src, NULL, NULL);

	if (rc == VELO2_RET_NO_MSG)
		return 0;
	if (rc == VELO2_RET_INV_MSG)
		return -EIO;	/* the NIC flagged it: consumed */
	if (rc != VELO2_RET_SUCCESS)
		return -EIO;
	if (n > len)
		return -EIO;	/* longer than any packet of ours: consumed, dropped */
	memcpy(buf, msg, n);
	*src_node = src & 0xffff;
	return n;
}

/* ---- registrations ---- */

static uint64_t xfi_ext_nla(const RMA2_Region *r, const void *va)
{
	return r->nla + ((uintptr_t)va - (uintptr_t)r->start);
}

int xfi_nic_reg_mr(struct xfi_nic *nic, void *addr, size_t len, uint32_t access,
		   struct xfi_nic_mr **mrp)
{
	struct xfi_ext_mr *m;
	uint64_t delta;
	RMA2_ERROR rc;

	if (access & XFI_NIC_MR_ON_DEMAND)
		return -EOPNOTSUPP;	/* the ATU maps pinned pages only */
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	rc = rma2_register(nic->port, addr, len, &m->region);
	if (rc != RMA2_SUCCESS) {
		free(m);
		return rc == RMA2_ERR_NO_MEM || rc == RMA2_ERR_ATU ? -ENOMEM :
			rc == RMA2_ERR_INV_VALUE ? -EINVAL : -EFAULT;
	}
	m->nic = nic;
	m->mr.addr = addr;
	m->mr.len = len;
	m->mr.hw = m->region;
	delta = xfi_ext_nla(m->region, addr) - (uintptr_t)addr;
	m->mr.key = (delta & ((1ull << XFI_EXT_KEY_BITS) - 1)) << 8 | (nic->vpid & 0xff);
	*mrp = &m->mr;
	return 0;
}

void xfi_nic_dereg_mr(struct xfi_nic_mr *mr)
{
	struct xfi_ext_mr *m = (struct xfi_ext_mr *)mr;

	rma2_unregister(m->nic->port, m->region);
	free(m);
}

void xfi_nic_mr_remote(const struct xfi_nic_mr *mr, const void *buf, uint32_t *node,
		       uint32_t *rank, uint64_t *raddr)
{
	const struct xfi_ext_mr *m = (const struct xfi_ext_mr *)mr;

	*node = m->nic->node;
	*rank = m->nic->vpid;
	*raddr = xfi_ext_nla(m->region, buf);
}

int xfi_nic_key_raddr(uint64_t key, uint64_t va, uint32_t *rank, uint64_t *raddr)
{
	uint64_t delta = (key >> 8) & ((1ull << XFI_EXT_KEY_BITS) - 1);

	if (key >> (8 + XFI_EXT_KEY_BITS))
		return -EINVAL;		/* not a key of ours */
	if (delta & (1ull << (XFI_EXT_KEY_BITS - 1)))
		delta |= ~((1ull << XFI_EXT_KEY_BITS) - 1);	/* sign */
	*rank = (uint32_t)(key & 0xff);
	*raddr = va + delta;
	return 0;
}

/* ---- RDMA: puts and gets ---- */

int xfi_nic_rdma_alloc(struct xfi_nic *nic, struct xfi_nic_rdma **rdmap)
{
	struct xfi_nic_rdma *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->nic = nic;
	*rdmap = r;
	return 0;
}

void xfi_nic_rdma_free(struct xfi_nic_rdma *rdma)
{
	free(rdma);
}

static RMA2_Handle xfi_ext_rma_conn(struct xfi_nic *nic, uint32_t node, uint32_t vpid)
{
	uint32_t id = node << 8 | vpid;
	struct xfi_ext_conn *c = xfi_ext_find(nic->rma_conns, id);

	if (c)
		return c->rma;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->id = id;
	if (rma2_connect(nic->port, (RMA2_Nodeid)node, (RMA2_VPID)vpid, RMA2_CONN_DEFAULT,
			 &c->rma) != RMA2_SUCCESS) {
		free(c);
		return NULL;
	}
	xfi_ext_add(nic->rma_conns, c);
	return c->rma;
}

static int xfi_ext_noti_drain(struct xfi_nic_rdma *rdma);

static struct xfi_ext_slot *xfi_ext_free_slot(struct xfi_nic_rdma *rdma)
{
	unsigned int i;

	for (i = 0; i < XFI_EXT_SLOTS; i++)
		if (!rdma->slots[i].busy)
			return &rdma->slots[i];
	return NULL;
}

int xfi_nic_rdma_post(struct xfi_nic_rdma *rdma, int is_read, void *buf,
		      const struct xfi_nic_mr *lmr, uint32_t node, uint32_t rank, uint64_t raddr,
		      size_t len)
{
	const struct xfi_ext_mr *m = (const struct xfi_ext_mr *)lmr;
	struct xfi_ext_slot *s = NULL;
	RMA2_Handle h;
	uint64_t nla, off;

	if (!m || !len || len > XFI_NIC_RDMA_MAX_LEN || node >= 0xfffe || rank > 0xff ||
	    (uintptr_t)buf < (uintptr_t)m->region->start ||
	    (uintptr_t)buf + len > (uintptr_t)m->region->start + m->region->size)
		return -EINVAL;
	s = xfi_ext_free_slot(rdma);
	if (!s && xfi_ext_noti_drain(rdma))	/* a draining slot may be free now */
		s = xfi_ext_free_slot(rdma);
	if (!s)
		return -EAGAIN;
	h = xfi_ext_rma_conn(rdma->nic, node, rank);
	if (!h)
		return -EINVAL;
	nla = xfi_ext_nla(m->region, buf);
	memset(s, 0, sizeof(*s));
	for (off = 0; off < len; off += XFI_EXT_CHUNK) {
		uint32_t n = len - off < XFI_EXT_CHUNK ? (uint32_t)(len - off) : XFI_EXT_CHUNK;
		RMA2_ERROR rc = is_read ?
			rma2_post_get_bt_direct(rdma->nic->port, h, nla + off, n, raddr + off,
						RMA2_COMPLETER_NOTIFICATION, RMA2_CMD_DEFAULT) :
			rma2_post_put_bt_direct(rdma->nic->port, h, nla + off, n, raddr + off,
						RMA2_REQUESTER_NOTIFICATION, RMA2_CMD_DEFAULT);

		if (rc != RMA2_SUCCESS) {
			if (!off)
				return -EINVAL;
			s->err = -EIO;	/* the chunks posted still complete */
			break;
		}
		s->pending++;
	}
	s->busy = 1;
	s->is_read = is_read;
	s->seq = ++rdma->seq;
	s->node = node;
	s->vpid = rank;
	s->lo = nla;
	s->hi = nla + len;
	return (int)(s - rdma->slots);
}

static int xfi_ext_noti_errno(uint8_t err)
{
	/* REQ: refused before sending or the target did not answer; RESP/CMPL:
	 * the target refused (protection ID, ATU: not registered there) */
	return (err & (RMA2_ERROR_RESP | RMA2_ERROR_CMPL)) ? -EACCES : -EIO;
}

static void xfi_ext_noti(struct xfi_nic_rdma *rdma, RMA2_Notification *n)
{
	RMA2_Command cmd = rma2_noti_get_cmd(n);
	uint64_t a = rma2_noti_get_local_address(n);
	uint32_t node = rma2_noti_get_remote_nodeid(n), vpid = rma2_noti_get_remote_vpid(n);
	uint8_t err = rma2_noti_get_error(n);
	int is_read = cmd == RMA2_BT_GET || cmd == RMA2_QW_GET || cmd == RMA2_GET_BT_RSP ||
		cmd == RMA2_GET_QW_RSP;
	struct xfi_ext_slot *best = NULL;
	unsigned int i;

	if (!is_read && cmd != RMA2_BT_PUT && cmd != RMA2_QW_PUT) {
		rdma->stray++;
		return;
	}
	/* a get's requester notification comes only with an error */
	if (is_read && (cmd == RMA2_BT_GET || cmd == RMA2_QW_GET) && !err) {
		rdma->stray++;
		return;
	}
	for (i = 0; i < XFI_EXT_SLOTS; i++) {
		struct xfi_ext_slot *s = &rdma->slots[i];

		if (s->busy && s->pending && s->is_read == is_read && s->node == node &&
		    s->vpid == vpid && a >= s->lo && a < s->hi && (!best || s->seq < best->seq))
			best = s;
	}
	if (!best) {
		rdma->stray++;
		return;
	}
	best->pending--;
	if (err && !best->err)
		best->err = xfi_ext_noti_errno(err);
	if (best->draining && !best->pending)
		best->busy = 0;
}

/* Take every notification queued on the port; nonzero if there was one. */
static int xfi_ext_noti_drain(struct xfi_nic_rdma *rdma)
{
	RMA2_Notification *n;
	int any = 0;

	while (rma2_noti_probe(rdma->nic->port, &n) == RMA2_SUCCESS) {
		xfi_ext_noti(rdma, n);
		rma2_noti_free(rdma->nic->port, n);
		any = 1;
	}
	return any;
}

int xfi_nic_rdma_poll(struct xfi_nic_rdma *rdma, unsigned int slot)
{
	struct xfi_ext_slot *s;

	if (slot >= XFI_EXT_SLOTS || !rdma->slots[slot].busy || rdma->slots[slot].draining)
		return -EINVAL;
	xfi_ext_noti_drain(rdma);
	s = &rdma->slots[slot];
	if (s->pending)
		return -EINPROGRESS;
	s->busy = 0;
	return s->err;
}

/*
 * A slot whose chunks all have their notification is free at once.  One
 * still waiting is not reused before they arrive: the RMA unit may still be
 * moving data for it (the owner dropped the registration of the buffer, so
 * a get response then ends with an error notification rather than in memory
 * the application got back), and a late notification must not count for a
 * new operation on the same slot.  Its last notification frees it
 * (xfi_ext_noti()), taken by any later poll, or by a post finding no slot.
 */
void xfi_nic_rdma_abandon(struct xfi_nic_rdma *rdma, unsigned int slot)
{
	struct xfi_ext_slot *s;

	if (slot >= XFI_EXT_SLOTS || !rdma->slots[slot].busy)
		return;
	s = &rdma->slots[slot];
	if (s->pending)
		s->draining = 1;
	else
		s->busy = 0;
}
