// SPDX-License-Identifier: MIT
/* Wire format of the exanet libfabric provider (see xfi_proto.h). */
#include <string.h>

#include "xfi_proto.h"

_Static_assert(sizeof(struct xfi_hdr) == 8, "header layout");
_Static_assert(sizeof(struct xfi_start) == 24, "START layout");
_Static_assert(sizeof(struct xfi_short) == 16, "SHORT layout");
_Static_assert(XFI_SHORT_FLAGS << XFI_SHORT_FLAG_SHIFT <= 0xff, "SHORT flags");
_Static_assert(sizeof(struct xfi_addr) == 8, "address layout");
_Static_assert(sizeof(struct xfi_rndv) == 24, "rendezvous layout");
_Static_assert(sizeof(struct xfi_fin) == 24, "FIN layout");
_Static_assert(XFI_START_SIZE + 8 + sizeof(struct xfi_rndv) <= XFI_PKT_MAX, "RTS fits");
_Static_assert(sizeof(struct xfi_atomic_req) == 32, "atomic request layout");
_Static_assert(sizeof(struct xfi_atomic_resp) == 16, "atomic answer layout");
_Static_assert(XFI_ATOMIC_RESP_SIZE + XFI_ATOMIC_DATA_MAX <= XFI_PKT_MAX, "fetched values fit");
_Static_assert(XFI_ATOMIC_DATA_MAX / 1 <= 255, "count fits its byte");

/* Payload bytes a START packet carries for a message of len bytes. */
static size_t xfi_start_payload(uint32_t len, uint32_t flags)
{
	size_t n = xfi_start_capacity(flags);

	if (flags & XFI_START_RNDV)
		return sizeof(struct xfi_rndv);
	return len < n ? len : n;
}

/* The CQ data word at off if flags has XFI_START_DATA (START and SHORT):
 * the offset after it. */
static size_t xfi_put_data(uint8_t *pkt, size_t off, uint32_t flags, uint64_t data)
{
	if (!(flags & XFI_START_DATA))
		return off;
	memcpy(pkt + off, &data, 8);
	return off + 8;
}

/* Read it back (0 without the flag): the offset after it, 0 if the packet
 * is too short to hold it. */
static size_t xfi_get_data(const uint8_t *pkt, size_t pkt_len, size_t off, uint32_t flags,
			   uint64_t *data)
{
	*data = 0;
	if (!(flags & XFI_START_DATA))
		return off;
	if (pkt_len < off + 8)
		return 0;
	memcpy(data, pkt + off, 8);
	return off + 8;
}

int xfi_parse_hdr(const uint8_t *pkt, size_t pkt_len, struct xfi_hdr *hdr)
{
	unsigned int type, flags;

	if (!pkt || pkt_len < XFI_HDR_SIZE || pkt_len > XFI_PKT_MAX)
		return -1;
	memcpy(hdr, pkt, sizeof(*hdr));
	if (hdr->src_mbox >= XFI_MBOX_LIMIT)
		return -1;
	type = hdr->type & XFI_PKT_TYPE_MASK;
	if (type < XFI_PKT_START || type >= XFI_PKT_TYPE_END)
		return -1;
	flags = hdr->type >> XFI_SHORT_FLAG_SHIFT;
	if (flags && (type != XFI_PKT_SHORT || (flags & ~(unsigned int)XFI_SHORT_FLAGS)))
		return -1;
	return type;
}

int xfi_parse_short(const uint8_t *pkt, size_t pkt_len, uint64_t max_len,
		    struct xfi_start_info *out)
{
	struct xfi_short sh;
	size_t off;
	uint32_t flags;

	if (pkt_len < XFI_SHORT_SIZE || pkt_len > XFI_PKT_MAX)
		return -1;
	memcpy(&sh, pkt, sizeof(sh));
	flags = (uint32_t)sh.hdr.type >> XFI_SHORT_FLAG_SHIFT;
	if ((sh.hdr.type & XFI_PKT_TYPE_MASK) != XFI_PKT_SHORT ||
	    (flags & ~(uint32_t)XFI_SHORT_FLAGS))
		return -1;	/* never a rendezvous: no struct xfi_rndv here */
	off = xfi_get_data(pkt, pkt_len, XFI_SHORT_SIZE, flags, &out->data);
	if (!off || pkt_len - off > max_len)
		return -1;
	out->tag = sh.tag;
	out->len = (uint32_t)(pkt_len - off);
	out->flags = flags;
	out->payload = pkt + off;
	out->payload_len = pkt_len - off;
	return 0;
}

int xfi_parse_start(const uint8_t *pkt, size_t pkt_len, uint64_t max_len,
		    struct xfi_start_info *out)
{
	struct xfi_start st;
	size_t off, expect;

	if (pkt_len < XFI_START_SIZE || pkt_len > XFI_PKT_MAX)
		return -1;
	memcpy(&st, pkt, sizeof(st));
	if (st.flags & ~(uint32_t)XFI_START_FLAGS || st.len > max_len)
		return -1;
	off = xfi_get_data(pkt, pkt_len, XFI_START_SIZE, st.flags, &out->data);
	if (!off)
		return -1;
	if ((st.flags & XFI_START_RNDV) && (st.len == 0 || (st.flags & XFI_START_DC)))
		return -1;	/* a rendezvous ends with its own FIN */
	if ((st.flags & XFI_START_RMA_DATA) &&
	    (st.len || (st.flags & ~(uint32_t)XFI_START_RMA_DATA) != XFI_START_DATA))
		return -1;	/* data and nothing else */
	expect = xfi_start_payload(st.len, st.flags);
	if (pkt_len - off != expect)
		return -1;
	if (st.flags & XFI_START_RNDV)
		memcpy(&out->rndv, pkt + off, sizeof(out->rndv));
	out->tag = st.tag;
	out->len = st.len;
	out->flags = st.flags;
	out->payload = pkt + off;
	out->payload_len = expect;
	return 0;
}

int xfi_parse_cont(size_t pkt_len, uint64_t remaining)
{
	uint64_t expect = remaining < XFI_CONT_PAYLOAD ? remaining : XFI_CONT_PAYLOAD;

	if (remaining == 0 || pkt_len < XFI_HDR_SIZE || pkt_len > XFI_PKT_MAX ||
	    pkt_len - XFI_HDR_SIZE != expect)
		return -1;
	return (int)expect;
}

size_t xfi_build_start(uint8_t *pkt, const struct xfi_hdr *hdr, uint64_t tag,
		       uint32_t len, uint32_t flags, uint64_t data, const uint8_t *src,
		       size_t *payload_len)
{
	struct xfi_start st = { .hdr = *hdr, .tag = tag, .len = len, .flags = flags };
	size_t off, n = xfi_start_payload(len, flags);

	st.hdr.type = XFI_PKT_START;
	memcpy(pkt, &st, sizeof(st));
	off = xfi_put_data(pkt, XFI_START_SIZE, flags, data);
	if (n)
		memcpy(pkt + off, src, n);
	*payload_len = (flags & XFI_START_RNDV) ? len : n;
	return off + n;
}

size_t xfi_build_short(uint8_t *pkt, const struct xfi_hdr *hdr, uint64_t tag,
		       uint32_t len, uint32_t flags, uint64_t data, const uint8_t *src)
{
	struct xfi_short sh = { .hdr = *hdr, .tag = tag };
	size_t off;

	flags &= XFI_SHORT_FLAGS;
	sh.hdr.type = (uint8_t)(XFI_PKT_SHORT | flags << XFI_SHORT_FLAG_SHIFT);
	memcpy(pkt, &sh, sizeof(sh));
	off = xfi_put_data(pkt, XFI_SHORT_SIZE, flags, data);
	if (len)
		memcpy(pkt + off, src, len);
	return off + len;
}

size_t xfi_build_fin(uint8_t *pkt, const struct xfi_hdr *hdr, uint64_t cookie, int32_t status)
{
	struct xfi_fin f = { .hdr = *hdr, .cookie = cookie, .status = status };

	f.hdr.type = XFI_PKT_FIN;
	memcpy(pkt, &f, sizeof(f));
	return sizeof(f);
}

int xfi_parse_fin(const uint8_t *pkt, size_t pkt_len, uint64_t *cookie, int32_t *status)
{
	struct xfi_fin f;

	if (pkt_len != sizeof(f))
		return -1;
	memcpy(&f, pkt, sizeof(f));
	if (f.status < 0 || f.reserved)
		return -1;
	*cookie = f.cookie;
	*status = f.status;
	return 0;
}

size_t xfi_build_cont(uint8_t *pkt, const struct xfi_hdr *hdr, const uint8_t *src,
		      uint64_t remaining, size_t *payload_len)
{
	struct xfi_hdr h = *hdr;
	size_t n = remaining < XFI_CONT_PAYLOAD ? (size_t)remaining : XFI_CONT_PAYLOAD;

	h.type = XFI_PKT_CONT;
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + XFI_HDR_SIZE, src, n);
	*payload_len = n;
	return XFI_HDR_SIZE + n;
}

size_t xfi_build_ping(uint8_t *pkt, const struct xfi_hdr *hdr)
{
	struct xfi_hdr h = *hdr;

	h.type = XFI_PKT_PING;
	memcpy(pkt, &h, sizeof(h));
	return sizeof(h);
}

int xfi_parse_ping(size_t pkt_len)
{
	return pkt_len == XFI_HDR_SIZE ? 0 : -1;
}

size_t xfi_build_reset(uint8_t *pkt, const struct xfi_hdr *hdr, uint16_t stream_epoch)
{
	struct xfi_reset r = { .hdr = *hdr, .stream_epoch = stream_epoch };

	r.hdr.type = XFI_PKT_RESET;
	memcpy(pkt, &r, sizeof(r));
	return sizeof(r);
}

int xfi_parse_reset(const uint8_t *pkt, size_t pkt_len, uint16_t *stream_epoch)
{
	struct xfi_reset r;

	if (pkt_len != sizeof(r))
		return -1;
	memcpy(&r, pkt, sizeof(r));
	if (r.reserved[0] || r.reserved[1] || r.reserved[2])
		return -1;
	*stream_epoch = r.stream_epoch;
	return 0;
}

int xfi_addr_check(const struct xfi_addr *a, int any_mbox)
{
	if (a->magic != XFI_ADDR_MAGIC || a->version != XFI_ADDR_VERSION ||
	    a->node >= XFI_NODE_LIMIT ||
	    (a->mbox >= XFI_MBOX_LIMIT && !(any_mbox && a->mbox == XFI_MBOX_ANY)))
		return -1;
	return 0;
}

int xfi_addr_from(const void *buf, size_t len, int any_mbox, struct xfi_addr *a)
{
	if (!buf || len != sizeof(*a))
		return -1;
	memcpy(a, buf, sizeof(*a));
	return xfi_addr_check(a, any_mbox);
}

/* ---- FI_ATOMIC ---- */

size_t xfi_atomic_dt_size(unsigned int datatype)
{
	/* FI_INT8, FI_UINT8, ... FI_UINT64, FI_FLOAT, FI_DOUBLE */
	static const uint8_t size[XFI_ADT_LIMIT] = { 1, 1, 2, 2, 4, 4, 8, 8, 4, 8 };

	return datatype < XFI_ADT_LIMIT ? size[datatype] : 0;
}

size_t xfi_atomic_max_count(unsigned int op, unsigned int datatype)
{
	size_t size = xfi_atomic_dt_size(datatype);

	if (!size || op >= XFI_AOP_LIMIT)
		return 0;
	return XFI_ATOMIC_DATA_MAX / (op >= XFI_AOP_CSWAP ? 2 : 1) / size;
}

/* Operand and compare bytes of a request. */
static size_t xfi_atomic_data_len(unsigned int op, size_t count, size_t size)
{
	if (op == XFI_AOP_ATOMIC_READ)
		return 0;
	return count * size * (op >= XFI_AOP_CSWAP ? 2 : 1);
}

size_t xfi_build_atomic_req(uint8_t *pkt, const struct xfi_hdr *hdr,
			    const struct xfi_atomic_info *a)
{
	struct xfi_atomic_req r = {
		.hdr = *hdr, .addr = a->addr, .key = a->key, .cookie = a->cookie,
		.op = (uint8_t)a->op, .datatype = (uint8_t)a->datatype,
		.count = (uint8_t)a->count, .flags = (uint8_t)a->flags,
	};
	size_t n = a->count * a->size, off = XFI_ATOMIC_REQ_SIZE;

	r.hdr.type = XFI_PKT_ATOMIC;
	memcpy(pkt, &r, sizeof(r));
	if (a->op != XFI_AOP_ATOMIC_READ) {
		memcpy(pkt + off, a->operand, n);
		off += n;
	}
	if (a->op >= XFI_AOP_CSWAP) {
		memcpy(pkt + off, a->compare, n);
		off += n;
	}
	return off;
}

int xfi_parse_atomic_req(const uint8_t *pkt, size_t pkt_len, struct xfi_atomic_info *out)
{
	struct xfi_atomic_req r;
	size_t size;

	if (pkt_len < XFI_ATOMIC_REQ_SIZE || pkt_len > XFI_PKT_MAX)
		return -1;
	memcpy(&r, pkt, sizeof(r));
	size = xfi_atomic_dt_size(r.datatype);
	if (!size || r.op >= XFI_AOP_LIMIT || r.flags & ~XFI_ATOMIC_FETCH || !r.count ||
	    r.count > xfi_atomic_max_count(r.op, r.datatype) ||
	    pkt_len - XFI_ATOMIC_REQ_SIZE != xfi_atomic_data_len(r.op, r.count, size))
		return -1;
	if ((r.op >= XFI_AOP_CSWAP || r.op == XFI_AOP_ATOMIC_READ) && !(r.flags & XFI_ATOMIC_FETCH))
		return -1;
	out->addr = r.addr;
	out->key = r.key;
	out->cookie = r.cookie;
	out->op = r.op;
	out->datatype = r.datatype;
	out->count = r.count;
	out->flags = r.flags;
	out->size = size;
	out->operand = r.op == XFI_AOP_ATOMIC_READ ? NULL : pkt + XFI_ATOMIC_REQ_SIZE;
	out->compare = r.op >= XFI_AOP_CSWAP ? pkt + XFI_ATOMIC_REQ_SIZE + r.count * size : NULL;
	return 0;
}

size_t xfi_build_atomic_resp(uint8_t *pkt, const struct xfi_hdr *hdr, uint32_t cookie,
			     int32_t status, const uint8_t *data, size_t len)
{
	struct xfi_atomic_resp r = { .hdr = *hdr, .cookie = cookie, .status = status };

	r.hdr.type = XFI_PKT_ATOMIC_RESP;
	memcpy(pkt, &r, sizeof(r));
	if (len)
		memcpy(pkt + sizeof(r), data, len);
	return sizeof(r) + len;
}

int xfi_parse_atomic_resp(const uint8_t *pkt, size_t pkt_len, uint32_t *cookie,
			  int32_t *status, const uint8_t **data, size_t *len)
{
	struct xfi_atomic_resp r;

	if (pkt_len < XFI_ATOMIC_RESP_SIZE || pkt_len - XFI_ATOMIC_RESP_SIZE > XFI_ATOMIC_DATA_MAX)
		return -1;
	memcpy(&r, pkt, sizeof(r));
	if (r.status < 0 || (r.status && pkt_len != XFI_ATOMIC_RESP_SIZE))
		return -1;
	*cookie = r.cookie;
	*status = r.status;
	*data = pkt + XFI_ATOMIC_RESP_SIZE;
	*len = pkt_len - XFI_ATOMIC_RESP_SIZE;
	return 0;
}

size_t xfi_build_prebuilt(uint8_t *pkt, const struct xfi_hdr *hdr, const uint8_t *prebuilt,
			  size_t len)
{
	struct xfi_hdr h = *hdr;

	h.type = prebuilt[0];
	memcpy(pkt, prebuilt, len);
	memcpy(pkt, &h, sizeof(h));
	return len;
}
