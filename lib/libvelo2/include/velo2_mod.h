/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * velo2_mod.h - VELO2 address and status-word macros (exact semantics of
 * the original driver-package header).  Independently includable and
 * idempotent.  'statusp' is a pointer to a 64-bit status word.
 */
#ifndef _VELO2_MOD_H_
#define _VELO2_MOD_H_

#define VELO2_ADDR_PACK(nodeid, vpid) \
	((((long)(vpid) & 0xffL) << 16) | ((long)(nodeid) & 0xffffL))
#define VELO2_ADDR_UNPACK(addr, node_id, vpid) \
	{ \
		(node_id) = (addr) & 0xffff; \
		(vpid) = ((addr) >> 16) & 0xff; \
	}
#define VELO2_MCADDR_PACK(mc_group) ((mc_group) | 0x10000000L)

#define VELO2_REQUEST_UPPERHEADER(mtt, tag, length) \
	((((long)(length) & 0x7fL) << 16) | (((long)(tag) & 0xffL) << 8) | ((long)(mtt) & 0x3L))
#define VELO2_REQUEST_HEADER(nodeid, vpid, mtt, tag, length) \
	(((unsigned long)VELO2_REQUEST_UPPERHEADER(mtt, tag, length) << 32) | \
	 (unsigned long)VELO2_ADDR_PACK(nodeid, vpid))

#define VELO2_STATUS_NODEID(statusp) ((*(statusp)) & 0xffff)
#define VELO2_STATUS_VPID(statusp) (((*(statusp)) >> 16) & 0xff)
#define VELO2_STATUS_SOURCEID(statusp) ((*(statusp)) & 0xffffff)
#define VELO2_STATUS_MTT(statusp) (((*(statusp)) >> 32) & 0x3)
#define VELO2_STATUS_TAG(statusp) (((*(statusp)) >> 40) & 0xff)
#define VELO2_STATUS_LENGTH(statusp) (((*(statusp)) >> 48) & 0x7f)
#define VELO2_STATUS_EOM(statusp) (((*(statusp)) >> 36) & 0x1)
#define VELO2_STATUS_ERR(statusp) (((*(statusp)) >> 37) & 0x1)

#endif /* _VELO2_MOD_H_ */
