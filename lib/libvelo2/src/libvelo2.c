// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libvelo2: see include/velo2.h and Documentation/extoll/libvelo2.md.
 *
 * Send (uapi/extoll_hw.h section 3): with a send window (the driver says
 * so in VELO2_IOCG_GET_INFO; page 1 of the mapping), the payload is
 * stored to the window (plain memory) and the header word
 * (VELO2_REQUEST_HEADER) to EXTOLL_VELO_WIN_SEND of the requester page:
 * one device access per message.  Without one, the payload quadwords and
 * the header word are stored to the requester page and the device sends
 * the message once all of them are stored.  Each message takes one
 * credit: the library keeps a local count and re-reads EXTOLL_VELO_CREDITS
 * only when it reaches 0 (a message stored without credit would be
 * dropped).  Receive (section 4): the mailbox is a ring of slots; a slot is
 * present when its status word (last quadword) is non-zero; the consumer
 * copies the payload and zeroes the status word.  Neither path makes a
 * system call.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "extoll.h"
#include "extoll_hw.h"
#include "velo2_int.h"
#include "exa_cpu.h"
#include "exa_wait.h"
#include "exa_env.h"

#define EXPORT __attribute__((visibility("default")))

static int port_open(const velo2_port_t *p)
{
	return p && p->map && p->mbox && p->nslots && p->slot_size > 8;
}

static void read_env(velo2_port_t *p)
{
	if (exa_env_on("VELO2_SEND_NONBLOCK"))
		p->flags |= VELO2_PORT_NONBLOCK;
	p->spin_probes = exa_env_u32("VELO2_DIRECT_SPIN_PROBES", VELO2_DIRECT_SPIN_PROBES);
	/* VELO2_DIRECT_POLL=0: poll the NI on every empty probe (comparisons) */
	if (exa_env_off("VELO2_DIRECT_POLL"))
		p->flags &= ~VELO2_PORT_DIRECT;
	/* VELO2_SEND_WINDOW=0: the per-quadword path (comparisons) */
	if (exa_env_off("VELO2_SEND_WINDOW"))
		p->flags &= ~VELO2_PORT_WINDOW;
}

void velo2__use_window_fake(velo2_port_t *port, volatile uint64_t *win)
{
	port->state_page = win;
	port->flags |= VELO2_PORT_WINDOW;
}

velo2_ret_t velo2__open_fake(velo2_port_t *port, uint32_t node, uint32_t vpid,
			     volatile uint64_t *req_page, volatile uint64_t *state_page,
			     volatile void *mbox, uint32_t nslots, uint32_t slot_size,
			     volatile uint64_t *rp_word)
{
	if (!port || !req_page || !state_page || !mbox || !rp_word || nslots < 4 ||
	    (slot_size != 64 && slot_size != 128))
		return VELO2_RET_ERROR;
	memset(port, 0, sizeof(*port));
	port->fd = -1;
	port->flags = VELO2_PORT_FAKE;
	port->nodeid = node;
	port->vpid = vpid;
	port->req_page = req_page;
	port->state_page = state_page;
	port->mbox = mbox;
	port->nslots = nslots;
	port->slot_size = slot_size;
	port->rp_word = rp_word;
	port->map = (void *)(uintptr_t)req_page;
	read_env(port);
	return VELO2_RET_SUCCESS;
}

EXPORT velo2_ret_t velo2_open(velo2_port_t *port)
{
	struct velo2_ioc_info info;
	void *map, *mbox;
	size_t mbox_len;
	int fd;

	if (!port)
		return VELO2_RET_ERROR;
	memset(port, 0, sizeof(*port));
	port->fd = -1;
	fd = open(EXTOLL_DEV_VELO2, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return VELO2_RET_ERR_FDOPEN;
	memset(&info, 0, sizeof(info));
	if (ioctl(fd, VELO2_IOCG_GET_INFO, &info) || info.abi_version != EXTOLL_ABI_VERSION ||
	    info.slot_size < 64 || info.slot_size > 4096 || info.mbox_size < info.slot_size * 4ull) {
		close(fd);
		return VELO2_RET_ERROR;
	}
	map = mmap(NULL, 2 * EXTOLL_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   (off_t)info.req_offset);
	if (map == MAP_FAILED) {
		close(fd);
		return VELO2_RET_ERR_MMAP;
	}
	mbox_len = VELO2_MMAP_MBOX_LEN(info.mbox_size);
	mbox = mmap(NULL, mbox_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)info.mbox_offset);
	if (mbox == MAP_FAILED) {
		munmap(map, 2 * EXTOLL_PAGE_SIZE);
		close(fd);
		return VELO2_RET_ERR_MMAP;
	}
	port->fd = fd;
	port->nodeid = info.nodeid;
	port->vpid = info.vpid;
	port->slot_size = info.slot_size;
	port->nslots = (uint32_t)(info.mbox_size / info.slot_size);
	port->req_page = map;
	port->state_page = (volatile uint64_t *)((uint8_t *)map + EXTOLL_PAGE_SIZE);
	port->rp_word = mbox;
	port->mbox = (volatile uint8_t *)mbox + EXTOLL_PAGE_SIZE;
	port->mbox_map = mbox;
	port->map_len = 2 * EXTOLL_PAGE_SIZE;
	port->mbox_map_len = mbox_len;
	port->map = map;
	if (info.flags & VELO2_INFO_SEND_WINDOW)
		port->flags |= VELO2_PORT_WINDOW;
	if (port->req_page[VELO2_FEATURES_OFF / 8] & VELO2_F_DIRECT)
		port->flags |= VELO2_PORT_DIRECT;
	read_env(port);
	return VELO2_RET_SUCCESS;
}

EXPORT velo2_ret_t velo2_close(velo2_port_t *port)
{
	velo2_ret_t rc = VELO2_RET_SUCCESS;

	if (!port || !port->map)
		return VELO2_RET_ERROR;
	if (!(port->flags & VELO2_PORT_FAKE)) {
		if (port->mbox_map)
			munmap(port->mbox_map, port->mbox_map_len);
		munmap(port->map, port->map_len);
		if (close(port->fd))
			rc = VELO2_RET_ERROR;
	}
	memset(port, 0, sizeof(*port));
	port->fd = -1;
	return rc;
}

EXPORT velo2_nodeid_t velo2_get_nodeid(velo2_port_t *port)
{
	return port_open(port) ? port->nodeid : (velo2_nodeid_t)-1;
}

EXPORT velo2_vpid_t velo2_get_vpid(velo2_port_t *port)
{
	return port_open(port) ? port->vpid : (velo2_vpid_t)-1;
}

EXPORT velo2_ret_t velo2_connect(velo2_port_t *port, velo2_connection_t *con,
				 velo2_nodeid_t nodeid, velo2_vpid_t vpid)
{
	if (!port_open(port) || !con)
		return VELO2_RET_ERROR;
	if (nodeid >= 0xfffe)
		return VELO2_RET_INVALID_NODE;
	if (vpid > 0xff)
		return VELO2_RET_INVALID_MBOX;
	memset(con, 0, sizeof(*con));
	con->dest.nodeid = (uint16_t)nodeid;
	con->dest.vpid = (uint8_t)vpid;
	con->port = port;
	con->header = (uint64_t)VELO2_ADDR_PACK(nodeid, vpid);
	con->state_map = port->state_page;
	return VELO2_RET_SUCCESS;
}

EXPORT velo2_ret_t velo2_disconnect(velo2_port_t *port, velo2_connection_t *con)
{
	if (!port || !con || (con->port && con->port != port))
		return VELO2_RET_ERROR;
	memset(con, 0, sizeof(*con));
	return VELO2_RET_SUCCESS;
}

/* Wait for a send credit; 0 = got one, -1 = none and non-blocking. */
static int get_credit(velo2_port_t *p)
{
	struct exa_wait wait;
	uint64_t c;

	if (p->credits)
		goto take;
	exa_wait_init(&wait, EXA_WAIT_NO_LIMIT);
	for (;;) {
		c = p->req_page[VELO2_CREDITS_OFF / 8];
		if (c) {
			p->credits = c > 0xffffffffu ? 0xffffffffu : (uint32_t)c;
			exa_wait_done(&wait);
			break;
		}
		if (p->flags & VELO2_PORT_NONBLOCK)
			return -1;
		exa_wait_poll(&wait);
	}
take:
	p->credits--;
	return 0;
}

EXPORT velo2_ret_t velo2_send(velo2_connection_t *con, const void *buf, uint32_t len,
			      uint8_t tag, uint8_t mtt)
{
	velo2_port_t *p;
	uint64_t q[VELO2_MAX_MSG_SIZE / 8];
	uint32_t i, nq;
	volatile uint64_t *page;

	if (!con || !con->state_map || !port_open(con->port))
		return VELO2_RET_ERROR;
	if (len > VELO2_MAX_MSG_SIZE || (len && !buf))
		return VELO2_RET_INV_MSG;
	if (mtt > 3)
		return VELO2_RET_INV_MTT;
	p = con->port;
	nq = (len + 7) / 8;
	if (nq)
		q[nq - 1] = 0;
	if (len)
		memcpy(q, buf, len);
	if (get_credit(p))
		return VELO2_RET_TRY_AGAIN;
	page = p->req_page;
	if (p->flags & VELO2_PORT_WINDOW) {
		volatile uint64_t *win = p->state_page;

		/* payload into the window (memory), then the doorbell: the
		 * device reads the window when the doorbell arrives */
		for (i = 0; i < nq; i++)
			win[i] = q[i];
		store_fence();
		page[VELO2_WIN_SEND_OFF / 8] = con->header |
			((uint64_t)VELO2_REQUEST_UPPERHEADER(mtt, tag, len) << 32);
		store_fence();
		return VELO2_RET_SUCCESS;
	}
	for (i = 0; i < nq; i++)
		page[1 + i] = q[i];
	page[0] = con->header | ((uint64_t)VELO2_REQUEST_UPPERHEADER(mtt, tag, len) << 32);
	store_fence();
	return VELO2_RET_SUCCESS;
}

static volatile uint64_t *slot_status(velo2_port_t *p, uint32_t slot)
{
	return (volatile uint64_t *)(p->mbox + (size_t)(slot % p->nslots) * p->slot_size +
				     p->slot_size - 8);
}

/*
 * An empty probe: poll the NI (an MMIO read) unless senders write into
 * the ring by themselves and the ring has been empty for fewer than
 * VELO2_DIRECT_SPIN_PROBES probes.  true: poll the NI.
 */
static int empty_probe_polls_ni(velo2_port_t *p)
{
	if (!(p->flags & VELO2_PORT_DIRECT))
		return 1;
	if (p->empty_polls >= p->spin_probes)
		return 1;
	p->empty_polls++;
	return 0;
}

static velo2_ret_t try_recv(velo2_port_t *p, void *buf, uint32_t buflen, uint32_t *len,
			    uint32_t *srcid, uint8_t *tag, uint8_t *mtt)
{
	uint64_t st, last;
	uint32_t mlen, per = p->slot_size - 8, n, i, done;
	velo2_ret_t rc = VELO2_RET_SUCCESS;

	st = __atomic_load_n(slot_status(p, p->rd), __ATOMIC_ACQUIRE);
	if (!st) {
		/* Empty: reading CREDITS is the poll the NI answers by
		 * delivering what waits (the emulated NI does it in the
		 * polling CPU); then look once more. */
		if (!empty_probe_polls_ni(p))
			return VELO2_RET_NO_MSG;
		(void)p->req_page[VELO2_CREDITS_OFF / 8];
		p->since_poll = 0;
		st = __atomic_load_n(slot_status(p, p->rd), __ATOMIC_ACQUIRE);
		if (!st)
			return VELO2_RET_NO_MSG;
	}
	p->empty_polls = 0;
	mlen = (uint32_t)VELO2_STATUS_LENGTH(&st);
	n = mlen ? (mlen + per - 1) / per : 1;
	last = n > 1 ? __atomic_load_n(slot_status(p, p->rd + n - 1), __ATOMIC_ACQUIRE) : st;
	if (!last)
		return VELO2_RET_NO_MSG;	/* rest of the message not written yet */
	if (st & VELO2_STATUS_ERR_BIT)
		rc = VELO2_RET_INV_MSG;		/* consumed */
	else if (mlen > buflen || (mlen && !buf))
		return VELO2_RET_INV_MSG;	/* not consumed */
	if (rc == VELO2_RET_SUCCESS) {
		for (i = 0, done = 0; i < n && done < mlen; i++) {
			uint32_t chunk = mlen - done < per ? mlen - done : per;
			const volatile uint8_t *src = p->mbox +
				(size_t)((p->rd + i) % p->nslots) * p->slot_size;

			memcpy((uint8_t *)buf + done, (const void *)src, chunk);
			done += chunk;
		}
		if (len)
			*len = mlen;
		if (srcid)
			*srcid = (uint32_t)VELO2_STATUS_SOURCEID(&st);
		if (tag)
			*tag = (uint8_t)VELO2_STATUS_TAG(&st);
		if (mtt)
			*mtt = (uint8_t)VELO2_STATUS_MTT(&st);
	}
	for (i = 0; i < n; i++)
		__atomic_store_n(slot_status(p, p->rd + i), 0, __ATOMIC_RELEASE);
	p->rd = (p->rd + n) % p->nslots;
	/*
	 * A consumer that keeps finding messages never reads CREDITS, so
	 * the emulated NI (which delivers in the polling CPU) would hold
	 * the next ones back until the ring is empty: poll it every
	 * VELO2_POLL_SLOTS slots, so delivery (and the ACKs that return the
	 * senders' credits) overlaps with consumption.
	 */
	p->since_poll += n;
	if (p->since_poll >= VELO2_POLL_SLOTS && !(p->flags & VELO2_PORT_DIRECT)) {
		(void)p->req_page[VELO2_CREDITS_OFF / 8];
		p->since_poll = 0;
	}
	p->unpublished += n;
	if (p->unpublished >= 32) {
		__atomic_store_n(p->rp_word, (uint64_t)p->rd, __ATOMIC_RELEASE);
		p->unpublished = 0;
	}
	return rc;
}

EXPORT velo2_ret_t velo2_probe_recv(velo2_port_t *port, void *buf, uint32_t buflen,
				    uint32_t *len, uint32_t *srcid, uint8_t *tag, uint8_t *mtt)
{
	if (!port_open(port))
		return VELO2_RET_ERROR;
	return try_recv(port, buf, buflen, len, srcid, tag, mtt);
}

EXPORT velo2_ret_t velo2_recv(velo2_port_t *port, void *buf, uint32_t buflen, uint32_t *len,
			      uint32_t *srcid, uint8_t *tag, uint8_t *mtt)
{
	struct exa_wait wait;
	velo2_ret_t rc;

	if (!port_open(port))
		return VELO2_RET_ERROR;
	exa_wait_init(&wait, EXA_WAIT_NO_LIMIT);
	while ((rc = try_recv(port, buf, buflen, len, srcid, tag, mtt)) == VELO2_RET_NO_MSG)
		exa_wait_poll(&wait);
	exa_wait_done(&wait);
	return rc;
}
