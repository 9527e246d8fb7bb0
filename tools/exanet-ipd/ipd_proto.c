// SPDX-License-Identifier: MIT
/* exanet-ipd wire formats: see ipd_proto.h. */
#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "exa_endian.h"
#include "ipd_proto.h"

/* ---------------------------------------------------------- helpers */

uint32_t ipd_crc32(const void *buf, size_t len)
{
	return (uint32_t)crc32(0, buf, (uInt)len);
}

uint16_t ipd_csum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t sum = 0;

	while (len > 1) {
		sum += (uint32_t)(p[0] << 8 | p[1]);
		p += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;	/* host order value of the big-endian checksum */
}

/* ------------------------------------------------------- heartbeats */

/*
 *  0 magic  4 version  5 flags  6 size(16)  8 node  12 mbox  16 incarnation(64)
 * 24 ipv4  28 mtu  32 seq  36 num_nodes  40 crc32 of bytes 0..39
 */
void ipd_hb_encode(const struct ipd_hb *hb, uint8_t out[IPD_HB_WIRE_SIZE])
{
	memset(out, 0, IPD_HB_WIRE_SIZE);
	exa_put_le32(out, IPD_HB_MAGIC);
	out[4] = IPD_HB_VERSION;
	out[5] = hb->flags;
	exa_put_le16(out + 6, IPD_HB_WIRE_SIZE);
	exa_put_le32(out + 8, hb->node);
	exa_put_le32(out + 12, hb->mbox);
	exa_put_le64(out + 16, hb->incarnation);
	memcpy(out + 24, &hb->ipv4, 4);		/* already network order */
	exa_put_le32(out + 28, hb->mtu);
	exa_put_le32(out + 32, hb->seq);
	exa_put_le32(out + 36, hb->num_nodes);
	exa_put_le32(out + 40, ipd_crc32(out, 40));
}

int ipd_hb_decode(const void *buf, size_t len, struct ipd_hb *hb)
{
	const uint8_t *p = buf;

	if (!buf || len != IPD_HB_WIRE_SIZE || exa_get_le32(p) != IPD_HB_MAGIC ||
	    p[4] != IPD_HB_VERSION || exa_get_le16(p + 6) != IPD_HB_WIRE_SIZE ||
	    exa_get_le32(p + 40) != ipd_crc32(p, 40) || (p[5] & ~IPD_HB_F_LEAVING))
		return -EBADMSG;
	memset(hb, 0, sizeof(*hb));
	hb->flags = p[5];
	hb->node = exa_get_le32(p + 8);
	hb->mbox = exa_get_le32(p + 12);
	hb->incarnation = exa_get_le64(p + 16);
	memcpy(&hb->ipv4, p + 24, 4);
	hb->mtu = exa_get_le32(p + 28);
	hb->seq = exa_get_le32(p + 32);
	hb->num_nodes = exa_get_le32(p + 36);
	if (!hb->incarnation || hb->mbox >= 64 || hb->mtu < IPD_MTU_MIN || hb->mtu > IPD_MTU_MAX)
		return -EBADMSG;
	return 0;
}

/* --------------------------------------------------------- messages */

/*
 *  0 type  1 version  2 ring_order  3 src_mbox  4 src_cookie  8 dst_cookie
 * 12 src_incarnation  20 dst_incarnation  28 body
 */
#define MSG_HDR 28
static const size_t msg_len[] = {
	[IPD_MSG_OFFER] = MSG_HDR + 36,	/* MSG_HDR + 32 before the kernel path */
	[IPD_MSG_ACCEPT] = MSG_HDR + 16,
	[IPD_MSG_CREDIT] = MSG_HDR + 12,
	[IPD_MSG_BYE] = MSG_HDR,
	[IPD_MSG_NEED_RING] = MSG_HDR,
	[IPD_MSG_PROBE] = MSG_HDR,
};

size_t ipd_msg_encode(const struct ipd_msg *m, uint8_t out[IPD_MSG_MAX_SIZE])
{
	uint8_t *b = out + MSG_HDR;

	memset(out, 0, IPD_MSG_MAX_SIZE);
	if (m->type < IPD_MSG_OFFER || m->type > IPD_MSG_LAST)
		return 0;
	out[0] = m->type;
	out[1] = IPD_MSG_VERSION;
	out[2] = m->type == IPD_MSG_OFFER ? m->ring_order : 0;
	out[3] = m->src_mbox;
	exa_put_le32(out + 4, m->src_cookie);
	exa_put_le32(out + 8, m->dst_cookie);
	exa_put_le64(out + 12, m->src_incarnation);
	exa_put_le64(out + 20, m->dst_incarnation);
	switch (m->type) {
	case IPD_MSG_OFFER:
		memcpy(b, m->u.offer.ring, 16);
		memcpy(b + 16, &m->u.offer.ipv4, 4);
		exa_put_le32(b + 20, m->u.offer.mtu);
		exa_put_le64(b + 24, m->u.offer.t_ns);
		exa_put_le32(b + 32, m->u.offer.kmbox);
		break;
	case IPD_MSG_ACCEPT:
		exa_put_le64(b, m->u.accept.t_ns);
		memcpy(b + 8, &m->u.accept.ipv4, 4);
		exa_put_le32(b + 12, m->u.accept.mtu);
		break;
	case IPD_MSG_CREDIT:
		exa_put_le64(b, m->u.credit.cons_pos);
		exa_put_le32(b + 8, m->u.credit.cons_wseq);
		break;
	}
	return msg_len[m->type];
}

int ipd_msg_decode(const void *buf, size_t len, struct ipd_msg *m)
{
	const uint8_t *p = buf, *b = p + MSG_HDR;

	if (!buf || len < MSG_HDR || len > IPD_MSG_MAX_SIZE)
		return -EBADMSG;
	if (p[0] < IPD_MSG_OFFER || p[0] > IPD_MSG_LAST || p[1] != IPD_MSG_VERSION ||
	    (len != msg_len[p[0]] && !(p[0] == IPD_MSG_OFFER && len == MSG_HDR + 32)) ||
	    p[3] >= 64)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	m->type = p[0];
	m->ring_order = p[2];
	m->src_mbox = p[3];
	m->src_cookie = exa_get_le32(p + 4);
	m->dst_cookie = exa_get_le32(p + 8);
	m->src_incarnation = exa_get_le64(p + 12);
	m->dst_incarnation = exa_get_le64(p + 20);
	if (!m->src_incarnation || !m->dst_incarnation)
		return -EBADMSG;
	switch (m->type) {
	case IPD_MSG_OFFER:
		if (m->ring_order < IPD_RING_ORDER_MIN || m->ring_order > IPD_RING_ORDER_MAX ||
		    !m->src_cookie)
			return -EBADMSG;
		memcpy(m->u.offer.ring, b, 16);
		memcpy(&m->u.offer.ipv4, b + 16, 4);
		m->u.offer.mtu = exa_get_le32(b + 20);
		m->u.offer.t_ns = exa_get_le64(b + 24);
		m->u.offer.kmbox = len > MSG_HDR + 32 ? exa_get_le32(b + 32) : IPD_NO_KMBOX;
		if (m->u.offer.mtu < IPD_MTU_MIN || m->u.offer.mtu > IPD_MTU_MAX ||
		    (m->u.offer.kmbox >= 64 && m->u.offer.kmbox != IPD_NO_KMBOX))
			return -EBADMSG;
		break;
	case IPD_MSG_ACCEPT:
		m->u.accept.t_ns = exa_get_le64(b);
		memcpy(&m->u.accept.ipv4, b + 8, 4);
		m->u.accept.mtu = exa_get_le32(b + 12);
		if (!m->dst_cookie)
			return -EBADMSG;
		break;
	case IPD_MSG_CREDIT:
		m->u.credit.cons_pos = exa_get_le64(b);
		m->u.credit.cons_wseq = exa_get_le32(b + 8);
		if (!m->src_cookie)
			return -EBADMSG;
		break;
	default:
		break;
	}
	if (m->type != IPD_MSG_OFFER && p[2])
		return -EBADMSG;
	return 0;
}

/* ------------------------------------------------------------- ring */

int64_t ipd_batch_skip(uint64_t cons, uint64_t len, uint64_t ring_size)
{
	uint64_t off = cons % ring_size;

	if (!len || len % IPD_REC_ALIGN || len > ring_size || cons % IPD_REC_ALIGN)
		return -1;
	if (off + len <= ring_size)
		return 0;
	return (int64_t)(ring_size - off);
}

int ipd_ip_check(const uint8_t *pkt, size_t len)
{
	if (len < 20)
		return -EBADMSG;
	switch (pkt[0] >> 4) {
	case 4: {
		size_t ihl = (size_t)(pkt[0] & 0xf) * 4;
		size_t tot = (size_t)pkt[2] << 8 | pkt[3];

		if (ihl < 20 || ihl > len || tot != len)
			return -EBADMSG;
		return 0;
	}
	case 6:
		if (len < 40 || ((size_t)pkt[4] << 8 | pkt[5]) + 40 != len)
			return -EBADMSG;
		return 0;
	}
	return -EBADMSG;
}

void ipd_rec_put(uint8_t *at, uint32_t len, uint32_t seq)
{
	struct ipd_rec_hdr h = { .len = len, .type = IPD_REC_IP, .seq = seq };

	memcpy(at, &h, sizeof(h));
}

void ipd_rec_put_hdr(uint8_t *at, const struct ipd_rec_hdr *h)
{
	struct ipd_rec_hdr c = *h;

	c.type = IPD_REC_IP;
	memcpy(at, &c, sizeof(c));
}

int ipd_rec_check(const struct ipd_rec_hdr *h, size_t room, uint32_t mtu)
{
	if (h->type != IPD_REC_IP || (h->flags & ~IPD_REC_F_CSUM) || !h->len || h->len > mtu ||
	    ipd_rec_size(h->len) > room)
		return -EBADMSG;
	if (h->flags & IPD_REC_F_CSUM) {
		/* the checksum field lies in the packet, after the IP header */
		if (h->csum_start < 20 || (uint32_t)h->csum_start + h->csum_offset + 2 > h->len)
			return -EBADMSG;
	} else if (h->csum_start || h->csum_offset) {
		return -EBADMSG;
	}
	return 0;
}

int ipd_batch_parse(const uint8_t *batch, size_t len, uint32_t mtu, uint32_t *seq,
		    void (*deliver)(void *arg, const struct ipd_rec_hdr *h, const uint8_t *pkt),
		    void *arg)
{
	size_t off = 0;
	int n = 0;

	if (len % IPD_REC_ALIGN)
		return -EBADMSG;
	while (off < len) {
		struct ipd_rec_hdr h;

		if (len - off < IPD_REC_HDR)
			return -EBADMSG;
		memcpy(&h, batch + off, sizeof(h));
		if (h.seq != *seq || ipd_rec_check(&h, len - off, mtu))
			return -EBADMSG;
		if (ipd_ip_check(batch + off + IPD_REC_HDR, h.len))
			return -EBADMSG;
		deliver(arg, &h, batch + off + IPD_REC_HDR);
		(*seq)++;
		off += ipd_rec_size(h.len);
		n++;
	}
	return n;
}

/* ------------------------------------------------------------- ICMP */

size_t ipd_icmp_unreach(uint8_t *out, size_t outlen, uint32_t from, const uint8_t *orig,
			size_t orig_len, uint8_t code)
{
	size_t ihl, quote, tot;
	uint16_t c;

	if (outlen < 576 || orig_len < 20 || (orig[0] >> 4) != 4)
		return 0;
	ihl = (size_t)(orig[0] & 0xf) * 4;
	if (ihl < 20 || ihl > orig_len)
		return 0;
	/* not for fragments other than the first */
	if ((orig[6] & 0x1f) || orig[7])
		return 0;
	/* never about an ICMP error */
	if (orig[9] == 1 && orig_len >= ihl + 1) {
		uint8_t t = orig[ihl];

		if (t != 0 && t != 8 && t != 13 && t != 14 && t != 15 && t != 16)
			return 0;
	}
	/* not to broadcast/multicast/unspecified sources */
	if (orig[12] >= 224 || (orig[12] | orig[13] | orig[14] | orig[15]) == 0 ||
	    (orig[12] & orig[13] & orig[14] & orig[15]) == 0xff)
		return 0;
	quote = ihl + 8 < orig_len ? ihl + 8 : orig_len;
	tot = 20 + 8 + quote;
	memset(out, 0, tot);
	out[0] = 0x45;
	out[2] = (uint8_t)(tot >> 8);
	out[3] = (uint8_t)tot;
	out[8] = 64;		/* TTL */
	out[9] = 1;		/* ICMP */
	memcpy(out + 12, &from, 4);
	memcpy(out + 16, orig + 12, 4);	/* back to the original source */
	c = ipd_csum(out, 20);
	out[10] = (uint8_t)(c >> 8);
	out[11] = (uint8_t)c;
	out[20] = 3;
	out[21] = code;
	memcpy(out + 28, orig, quote);
	c = ipd_csum(out + 20, 8 + quote);
	out[22] = (uint8_t)(c >> 8);
	out[23] = (uint8_t)c;
	return tot;
}
