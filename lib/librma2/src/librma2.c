// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * librma2: see include/rma2.h and Documentation/extoll/librma2.md.
 *
 * Hot paths (posting, notification probe/free) make no system calls: a
 * command is three 64-bit stores to the connection's requester page plus a
 * store fence; a notification is present when word1 of the queue entry at
 * the read index is non-zero; freeing zeroes it and publishes the read
 * index lazily (every RMA2_RP_LAZYNESS entries).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "extoll.h"
#include "extoll_hw.h"
#include "rma2_int.h"
#include "exa_cpu.h"
#include "exa_wait.h"
#include "exa_env.h"

#define EXPORT __attribute__((visibility("default")))

static int port_ok(RMA2_Port p)
{
	return p && p->magic == RMA2_PORT_MAGIC;
}

static int handle_ok(RMA2_Port p, RMA2_Handle h)
{
	return h && h->magic == RMA2_CONN_MAGIC && h->port == p;
}

/* ------------------------------------------------------------ endpoint */

static RMA2_ERROR port_init_common(RMA2_Endpoint *p)
{
	p->magic = RMA2_PORT_MAGIC;
	p->replay = RMA2_REPLAY_ALL;
	p->node_num = RMA2_NODES;
	p->proc_num = RMA2_VPIDS;
	if (pthread_mutex_init(&p->post_lock, NULL))
		return RMA2_ERR_ERROR;
	if (extoll2_construct_list(&p->desc_pool, sizeof(RMA2_Descriptor), 16,
				   RMA2_POOL_GROW, RMA2_POOL_GROW))
		goto err_mutex;
	if (extoll2_construct_list(&p->region_pool, sizeof(RMA2_Region), 16,
				   RMA2_POOL_GROW, RMA2_POOL_GROW))
		goto err_desc;
	return RMA2_SUCCESS;
err_desc:
	extoll2_destruct_list(&p->desc_pool);
err_mutex:
	pthread_mutex_destroy(&p->post_lock);
	return RMA2_ERR_NO_MEM;
}

RMA2_ERROR rma2__open_fake(RMA2_Port *port, RMA2_Nodeid node, RMA2_VPID vpid,
			   void *req_pages, size_t stride, RMA2_Notification *queue,
			   uint32_t entries, volatile uint64_t *rp_word)
{
	RMA2_Endpoint *p;
	RMA2_ERROR rc;

	if (!port || !req_pages || stride < 24 || !queue || entries == 0 || !rp_word)
		return RMA2_ERR_INV_VALUE;
	p = calloc(1, sizeof(*p));
	if (!p)
		return RMA2_ERR_NO_MEM;
	p->fd = -1;
	p->fake = 1;
	p->node = node;
	p->vpid = vpid;
	p->req_base = req_pages;
	p->req_stride = stride;
	p->queue = queue;
	p->q_entries = entries;
	p->q_bytes = entries * (uint32_t)sizeof(RMA2_Notification);
	p->q_seg = RMA2_DEFAULT_SEGMENT_BYTES;
	p->rp_word = rp_word;
	rc = port_init_common(p);
	if (rc) {
		free(p);
		return rc;
	}
	*port = p;
	return RMA2_SUCCESS;
}

static RMA2_ERROR errno_open(int e)
{
	if (e == ENOENT || e == ENODEV || e == ENXIO)
		return RMA2_ERR_NO_DEVICE;
	/* every VPID taken, the user's share taken, the rdma cgroup's limit */
	if (e == EBUSY || e == ENOSPC || e == EDQUOT || e == EAGAIN)
		return RMA2_ERR_PORTS_USED;
	return RMA2_ERR_FD;
}

/*
 * Does the NI write notifications into our queue by itself
 * (EXTOLL_RMA_FEATURES)?  Then an empty queue is mostly looked at in
 * memory only (rma2_noti.c).
 */
static void read_direct(RMA2_Endpoint *p)
{
	p->direct = !!(*(const volatile uint64_t *)(p->req_base + EXTOLL_RMA_FEATURES) &
		       EXTOLL_RMA_F_DIRECT);
	p->spin_probes = exa_env_u32("RMA2_DIRECT_SPIN_PROBES", RMA2_DIRECT_SPIN_PROBES);
	/* RMA2_DIRECT_POLL=0: read NOTI_COUNT on every empty probe (comparisons) */
	if (exa_env_off("RMA2_DIRECT_POLL"))
		p->direct = 0;
}

/* Device path: uapi/extoll.h (ioctls, mmap layout). */
static RMA2_ERROR dev_open(RMA2_Endpoint **out)
{
	struct rma2_ioc_info info;
	RMA2_Endpoint *p;
	RMA2_ERROR rc;
	uint64_t qsize = 0;
	void *m;
	int fd;

	*out = NULL;
	fd = open(EXTOLL_DEV_RMA2, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno_open(errno);
	memset(&info, 0, sizeof(info));
	if (ioctl(fd, RMA2_IOCTL_GET_INFO, &info)) {
		rc = RMA2_ERR_IOCTL;
		goto err_fd;
	}
	if (info.abi_version != EXTOLL_ABI_VERSION || info.noti_size != sizeof(RMA2_Notification)) {
		rc = RMA2_ERR_INVALID_VERSION;
		goto err_fd;
	}
	/* library default queue (spec 2.6); keep the driver's if refused */
	(void)ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SEGMENT_SIZE, (unsigned long)RMA2_DEFAULT_SEGMENT_BYTES);
	(void)ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SIZE, (unsigned long)RMA2_DEFAULT_QUEUE_BYTES);
	if (ioctl(fd, RMA2_IOCTL_GET_NOTIQ_SIZE, &qsize) || qsize < 16 * sizeof(RMA2_Notification) ||
	    qsize > 0xffffffffull) {
		rc = RMA2_ERR_IOCTL;
		goto err_fd;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		rc = RMA2_ERR_NO_MEM;
		goto err_fd;
	}
	p->fd = fd;
	p->node = (RMA2_Nodeid)info.nodeid;
	p->vpid = (RMA2_VPID)info.vpid;
	p->node_num = info.max_nodes ? info.max_nodes : RMA2_NODES;
	p->proc_num = info.max_vpids ? info.max_vpids : RMA2_VPIDS;
	p->q_bytes = (uint32_t)qsize;
	p->q_seg = RMA2_DEFAULT_SEGMENT_BYTES;
	/* 32 requester pages + the state page */
	p->req_map_len = RMA2_MMAP_REQ_SIZE + EXTOLL_PAGE_SIZE;
	m = mmap(NULL, p->req_map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)info.req_offset);
	if (m == MAP_FAILED) {
		rc = RMA2_ERR_MMAP;
		goto err_free;
	}
	p->req_map = m;
	p->req_base = m;
	p->req_stride = EXTOLL_PAGE_SIZE;
	p->q_map_len = RMA2_MMAP_NOTIQ_LEN(qsize);
	m = mmap(NULL, p->q_map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)info.notiq_offset);
	if (m == MAP_FAILED) {
		rc = RMA2_ERR_MMAP;
		goto err_req;
	}
	p->q_map = m;
	p->rp_word = m;
	p->queue = (volatile RMA2_Notification *)((uint8_t *)m + EXTOLL_PAGE_SIZE);
	p->q_entries = (uint32_t)(qsize / sizeof(RMA2_Notification));
	read_direct(p);
	rc = port_init_common(p);
	if (rc)
		goto err_q;
	*out = p;
	return RMA2_SUCCESS;
err_q:
	munmap(p->q_map, p->q_map_len);
err_req:
	munmap(p->req_map, p->req_map_len);
err_free:
	free(p);
err_fd:
	close(fd);
	return rc;
}

EXPORT RMA2_ERROR rma2_open(RMA2_Port *port)
{
	RMA2_Endpoint *p;
	RMA2_ERROR rc;

	if (!port)
		return RMA2_ERR_INV_VALUE;
	*port = NULL;
	rc = dev_open(&p);
	if (rc)
		return rc;
	*port = p;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_close(RMA2_Port port)
{
	RMA2_ERROR rc = RMA2_SUCCESS;
	struct RMA2_Connection_s *c, *n;

	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	rma2_replay_buffer_drain(port);
	for (c = port->conns; c; c = n) {
		n = c->next;
		c->magic = 0;
		free(c);
	}
	if (!port->fake) {
		if (port->q_map)
			munmap(port->q_map, port->q_map_len);
		if (port->req_map)
			munmap(port->req_map, port->req_map_len);
		if (close(port->fd))
			rc = RMA2_ERR_ERROR;
	}
	extoll2_destruct_list(&port->region_pool);
	extoll2_destruct_list(&port->desc_pool);
	pthread_mutex_destroy(&port->post_lock);
	port->magic = 0;
	free(port);
	return rc;
}

EXPORT RMA2_ERROR rma2_connect(RMA2_Port hport, RMA2_Nodeid dest_node, RMA2_VPID dest_vpid,
			       RMA2_Connection_Options options, RMA2_Handle *handle)
{
	struct RMA2_Connection_s *c;

	if (!port_ok(hport))
		return RMA2_ERR_INV_PORT;
	if (!handle)
		return RMA2_ERR_INV_VALUE;
	if ((uint32_t)options > 31)
		return RMA2_ERR_INV_VALUE;
	if (dest_node >= 0xfffe || dest_vpid >= RMA2_VPIDS)
		return RMA2_ERR_INV_VALUE;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RMA2_ERR_NO_MEM;
	c->magic = RMA2_CONN_MAGIC;
	c->port = hport;
	c->node = dest_node;
	c->vpid = dest_vpid;
	c->options = (uint32_t)options;
	c->page = (volatile uint64_t *)(hport->req_base + hport->req_stride * c->options);
	pthread_mutex_lock(&hport->post_lock);
	c->next = hport->conns;
	hport->conns = c;
	pthread_mutex_unlock(&hport->post_lock);
	*handle = c;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_disconnect(RMA2_Port port, RMA2_Handle handle)
{
	struct RMA2_Connection_s **pp;

	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!handle_ok(port, handle))
		return RMA2_ERR_INV_HANDLE;
	if (port->replay & RMA2_REPLAY_CLOSE)
		rma2_replay_buffer_drain(port);
	pthread_mutex_lock(&port->post_lock);
	for (pp = &port->conns; *pp; pp = &(*pp)->next) {
		if (*pp == handle) {
			*pp = handle->next;
			break;
		}
	}
	pthread_mutex_unlock(&port->post_lock);
	handle->magic = 0;
	free(handle);
	return RMA2_SUCCESS;
}

EXPORT RMA2_Nodeid rma2_handle_get_node(RMA2_Handle handle)
{
	if (!handle || handle->magic != RMA2_CONN_MAGIC)
		return (RMA2_Nodeid)RMA2_ERR_ERROR;
	return handle->node;
}

EXPORT RMA2_VPID rma2_handle_get_vpid(RMA2_Handle handle)
{
	if (!handle || handle->magic != RMA2_CONN_MAGIC)
		return (RMA2_VPID)RMA2_ERR_ERROR;
	return handle->vpid;
}

/* Re-queried from the driver on every call (as the original does). */
EXPORT RMA2_Nodeid rma2_get_nodeid(RMA2_Port port)
{
	uint64_t v;

	if (!port_ok(port))
		return (RMA2_Nodeid)RMA2_ERR_ERROR;
	if (port->fake)
		return port->node;
	if (ioctl(port->fd, RMA2_IOCTL_GET_NODEID, &v))
		return (RMA2_Nodeid)RMA2_ERR_ERROR;
	return (RMA2_Nodeid)v;
}

EXPORT RMA2_VPID rma2_get_vpid(RMA2_Port port)
{
	if (!port_ok(port))
		return (RMA2_VPID)RMA2_ERR_ERROR;
	return port->vpid;
}

/* Original quirk kept: 65536 truncated to RMA2_Nodeid is 0. */
EXPORT RMA2_Nodeid rma2_get_node_num(RMA2_Port port)
{
	if (!port_ok(port))
		return (RMA2_Nodeid)RMA2_ERR_ERROR;
	return (RMA2_Nodeid)port->node_num;
}

EXPORT RMA2_VPID rma2_get_proc_num(RMA2_Port port)
{
	if (!port_ok(port))
		return (RMA2_VPID)RMA2_ERR_ERROR;
	return (RMA2_VPID)port->proc_num;
}

/* ------------------------------------------------------------ posting */

static uint64_t word0(RMA2_Handle h, uint32_t cmd, uint32_t spec, uint32_t mod, uint64_t count)
{
	return RMA2_W0_VALID | ((uint64_t)(cmd & 0xf) << RMA2_W0_CMD_SHIFT) |
	       ((uint64_t)(h->vpid & 0xff) << RMA2_W0_VPID_SHIFT) |
	       ((uint64_t)h->node << RMA2_W0_NODE_SHIFT) |
	       ((uint64_t)(spec & 7) << RMA2_W0_SPEC_SHIFT) |
	       ((uint64_t)(mod & 0xf) << RMA2_W0_MOD_SHIFT) |
	       ((count & RMA2_W0_COUNT_MASK) << RMA2_W0_COUNT_SHIFT);
}

/*
 * A command stored while the device has no free command slot would be
 * dropped: keep a local credit count, re-read EXTOLL_RMA_CMD_FREE when it
 * runs out and wait (back-pressure, never an error: spec 2.7).
 */
static void get_credit(RMA2_Port port)
{
	const volatile uint64_t *cf;
	struct exa_wait wait;
	uint64_t c;

	if (port->credits) {
		port->credits--;
		return;
	}
	cf = (const volatile uint64_t *)(port->req_base + RMA2_CMD_FREE_OFF);
	exa_wait_init(&wait, EXA_WAIT_NO_LIMIT);
	while (!(c = *cf))
		exa_wait_poll(&wait);
	exa_wait_done(&wait);
	port->credits = (c > 0xffffffffu ? 0xffffffffu : (uint32_t)c) - 1;
}

static void issue(RMA2_Port port, RMA2_Handle h, uint64_t w0, uint64_t w1, uint64_t w2)
{
	volatile uint64_t *page;

	pthread_mutex_lock(&port->post_lock);
	get_credit(port);
	__atomic_store_n(&port->last_to_self, h->node == port->node, __ATOMIC_RELAXED);
	page = h->page;
	page[0] = w0;
	page[1] = w1;
	page[2] = w2;
	store_fence();
	pthread_mutex_unlock(&port->post_lock);
}

static RMA2_ERROR check_common(RMA2_Port port, RMA2_Handle handle, RMA2_Notification_Spec spec,
			       RMA2_Command_Modifier mod)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!handle_ok(port, handle))
		return RMA2_ERR_INV_HANDLE;
	if ((uint32_t)spec > 7 || (uint32_t)mod > 15)
		return RMA2_ERR_WRONG_ARG;
	return RMA2_SUCCESS;
}

static RMA2_ERROR post_rw(RMA2_Port port, RMA2_Handle handle, uint32_t cmd, uint64_t local,
			  uint32_t size, RMA2_NLA remote, RMA2_Notification_Spec spec,
			  RMA2_Command_Modifier mod)
{
	RMA2_ERROR rc = check_common(port, handle, spec, mod);
	int is_get = cmd == RMA2_BT_GET || cmd == RMA2_QW_GET;

	if (rc)
		return rc;
	if (size == 0 || size > RMA2_MAX_SIZE)
		return RMA2_ERR_WRONG_ARG;
	if ((cmd == RMA2_QW_PUT || cmd == RMA2_QW_GET) &&
	    ((size & 7) || (local & 7) || (remote & 7)))
		return RMA2_ERR_WRONG_ARG;
	/* put: read local, write remote; get: read remote, write local */
	issue(port, handle, word0(handle, cmd, (uint32_t)spec, (uint32_t)mod, size - 1u),
	      is_get ? remote : local, is_get ? local : remote);
	return RMA2_SUCCESS;
}

static RMA2_ERROR region_local(RMA2_Region *r, uint32_t off, uint64_t *nla)
{
	if (!r)
		return RMA2_ERR_INV_VALUE;
	*nla = (uint64_t)r->nla + r->offset + off;
	return RMA2_SUCCESS;
}

#define POST_REGION(name, cmd)							\
EXPORT RMA2_ERROR name(RMA2_Port port, RMA2_Handle handle, RMA2_Region *src_region,	\
		       uint32_t src_offset, uint32_t size, RMA2_NLA dest_address,	\
		       RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier)	\
{										\
	uint64_t local;								\
	RMA2_ERROR rc = check_common(port, handle, spec, modifier);		\
	if (rc)									\
		return rc;							\
	rc = region_local(src_region, src_offset, &local);			\
	if (rc)									\
		return rc;							\
	return post_rw(port, handle, cmd, local, size, dest_address, spec, modifier); \
}
#define POST_DIRECT(name, cmd)							\
EXPORT RMA2_ERROR name(RMA2_Port port, RMA2_Handle handle, RMA2_NLA src,		\
		       uint32_t size, RMA2_NLA dest_address,			\
		       RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier)	\
{										\
	return post_rw(port, handle, cmd, src, size, dest_address, spec, modifier); \
}

POST_REGION(rma2_post_put_bt, RMA2_BT_PUT)
POST_REGION(rma2_post_put_qw, RMA2_QW_PUT)
POST_REGION(rma2_post_get_bt, RMA2_BT_GET)
POST_REGION(rma2_post_get_qw, RMA2_QW_GET)
POST_DIRECT(rma2_post_put_bt_direct, RMA2_BT_PUT)
POST_DIRECT(rma2_post_put_qw_direct, RMA2_QW_PUT)
POST_DIRECT(rma2_post_get_bt_direct, RMA2_BT_GET)
POST_DIRECT(rma2_post_get_qw_direct, RMA2_QW_GET)

EXPORT RMA2_ERROR rma2_post_lock(RMA2_Port port, RMA2_Handle handle, uint32_t target,
				 uint32_t lock_number, int32_t cmp_value, int32_t add_value,
				 RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier)
{
	RMA2_Descriptor d;
	RMA2_ERROR rc = check_common(port, handle, spec, modifier);

	if (rc)
		return rc;
	if (target > 1 || lock_number > 0xffffff)
		return RMA2_ERR_WRONG_ARG;
	rma2_desc_set_lock(&d, handle, spec, modifier, (uint8_t)target, lock_number,
			   (uint32_t)cmp_value, (uint32_t)add_value);
	issue(port, handle, d.value[0], d.value[1], d.value[2]);
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_post_notification(RMA2_Port port, RMA2_Handle handle, RMA2_Class mclass,
					 uint64_t value, RMA2_Notification_Spec spec,
					 RMA2_Command_Modifier modifier)
{
	RMA2_ERROR rc = check_common(port, handle, spec, modifier);

	if (rc)
		return rc;
	issue(port, handle, word0(handle, RMA2_NOTIFICATION_PUT, (uint32_t)spec,
				  (uint32_t)modifier, mclass), value, 0);
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_post_immediate_put(RMA2_Port port, RMA2_Handle handle, uint32_t count,
					  uint64_t value, RMA2_NLA dest_address,
					  RMA2_Notification_Spec spec,
					  RMA2_Command_Modifier modifier)
{
	RMA2_ERROR rc = check_common(port, handle, spec, modifier);

	if (rc)
		return rc;
	if (count == 0 || count > 8)
		return RMA2_ERR_WRONG_ARG;
	issue(port, handle, word0(handle, RMA2_IMMEDIATE_PUT, (uint32_t)spec,
				  (uint32_t)modifier, count - 1u), dest_address, value);
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_post_descriptor(RMA2_Port port, RMA2_Handle handle, RMA2_Descriptor *desc)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!handle_ok(port, handle))
		return RMA2_ERR_INV_HANDLE;
	if (!desc)
		return RMA2_ERR_INV_VALUE;
	/* The command word decides everything, even invalid command codes:
	 * the device answers those with an error notification. */
	issue(port, handle, desc->value[0] | RMA2_W0_VALID, desc->value[1], desc->value[2]);
	return RMA2_SUCCESS;
}

/* ------------------------------------------------------------ descriptors */

EXPORT RMA2_ERROR rma2_desc_alloc(RMA2_Port port, RMA2_Descriptor **desc)
{
	RMA2_Descriptor *d;

	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!desc)
		return RMA2_ERR_INV_VALUE;
	pthread_mutex_lock(&port->post_lock);
	d = extoll2_list_get(&port->desc_pool);
	pthread_mutex_unlock(&port->post_lock);
	if (!d)
		return RMA2_ERR_NO_DESC_MEM;
	*desc = d;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_desc_free(RMA2_Port port, RMA2_Descriptor *desc)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!desc)
		return RMA2_ERR_INV_VALUE;
	pthread_mutex_lock(&port->post_lock);
	extoll2_list_put(&port->desc_pool, desc);
	pthread_mutex_unlock(&port->post_lock);
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_desc_query_free(RMA2_Port port, int *num)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!num)
		return RMA2_ERR_INV_VALUE;
	*num = (int)extoll2_list_free_count(&port->desc_pool);
	return RMA2_SUCCESS;
}

static void desc_head(RMA2_Descriptor *d, RMA2_Handle h, uint32_t cmd, uint32_t spec,
		      uint32_t mod, uint64_t count)
{
	d->handle = h;
	if (h && h->magic == RMA2_CONN_MAGIC)
		d->value[0] = word0(h, cmd, spec, mod, count);
	else
		d->value[0] = RMA2_W0_VALID | ((uint64_t)(cmd & 0xf) << RMA2_W0_CMD_SHIFT) |
			      ((uint64_t)(spec & 7) << RMA2_W0_SPEC_SHIFT) |
			      ((uint64_t)(mod & 0xf) << RMA2_W0_MOD_SHIFT) |
			      ((count & RMA2_W0_COUNT_MASK) << RMA2_W0_COUNT_SHIFT);
}

EXPORT RMA2_ERROR rma2_desc_set_put_get(RMA2_Descriptor *desc, RMA2_Handle handle,
					RMA2_Command command, uint32_t count,
					RMA2_Notification_Spec noti, RMA2_Command_Modifier modifier,
					uint64_t read_address, uint64_t write_address)
{
	if (!desc)
		return RMA2_ERR_INV_VALUE;
	desc_head(desc, handle, (uint32_t)command, (uint32_t)noti, (uint32_t)modifier,
		  (uint64_t)count - 1u);
	desc->value[1] = read_address;
	desc->value[2] = write_address;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_desc_set_immediate_put(RMA2_Descriptor *desc, RMA2_Handle handle,
					      RMA2_Notification_Spec noti,
					      RMA2_Command_Modifier modifier, uint32_t count,
					      uint64_t write_address, uint64_t value)
{
	if (!desc)
		return RMA2_ERR_INV_VALUE;
	desc_head(desc, handle, RMA2_IMMEDIATE_PUT, (uint32_t)noti, (uint32_t)modifier,
		  ((uint64_t)count - 1u) & 7u);
	desc->value[1] = write_address;
	desc->value[2] = value;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_desc_set_noti_put(RMA2_Descriptor *desc, RMA2_Handle handle,
					 RMA2_Notification_Spec noti,
					 RMA2_Command_Modifier modifier, RMA2_Class mclass,
					 uint64_t value)
{
	if (!desc)
		return RMA2_ERR_INV_VALUE;
	desc_head(desc, handle, RMA2_NOTIFICATION_PUT, (uint32_t)noti, (uint32_t)modifier, mclass);
	desc->value[1] = value;
	desc->value[2] = 0;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_desc_set_lock(RMA2_Descriptor *desc, RMA2_Handle handle,
				     RMA2_Notification_Spec noti, RMA2_Command_Modifier modifier,
				     uint8_t type, uint32_t lock_number, uint32_t compare,
				     uint32_t add_value)
{
	if (!desc)
		return RMA2_ERR_INV_VALUE;
	desc_head(desc, handle, RMA2_LOCK_REQ, (uint32_t)noti, (uint32_t)modifier, type & 1u);
	desc->value[1] = ((uint64_t)compare << 32) | (lock_number & 0xffffffu);
	desc->value[2] = (uint64_t)add_value << 32;
	return RMA2_SUCCESS;
}

/* Not implemented in the original; here: re-target a notification-put
 * descriptor's class and payload. */
EXPORT RMA2_ERROR rma2_desc_set_notification_value(RMA2_Descriptor *desc, RMA2_Class mclass,
						   uint64_t value)
{
	if (!desc)
		return RMA2_ERR_INV_VALUE;
	if (((desc->value[0] >> RMA2_W0_CMD_SHIFT) & 0xf) != RMA2_NOTIFICATION_PUT)
		return RMA2_ERR_WRONG_CMD;
	desc->value[0] &= ~(RMA2_W0_COUNT_MASK << RMA2_W0_COUNT_SHIFT);
	desc->value[0] |= (uint64_t)mclass << RMA2_W0_COUNT_SHIFT;
	desc->value[1] = value;
	return RMA2_SUCCESS;
}
