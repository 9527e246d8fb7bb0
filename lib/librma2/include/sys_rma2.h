/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sys_rma2.h - system-level types of librma2 (included by rma2.h).
 *
 * The endpoint and connection objects are opaque: clients only hold
 * RMA2_Port / RMA2_Handle pointers.  RMA2_Notification (16 bytes, packed)
 * and RMA2_Descriptor (64 bytes) have the exact layout of the original.
 */
#ifndef SYS_RMA2_H
#define SYS_RMA2_H

#include <stdint.h>
#include <arch_define.h>
#include <extoll2_list.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t RMA2_Nodeid;	/* 0xffff, 0xfffe reserved */
typedef uint16_t RMA2_VPID;	/* 0xffff, 0xfffe reserved; hardware field 8 bits */
typedef uint64_t RMA2_NLA;	/* network logical address */
typedef uint8_t RMA2_Class;	/* notification-put class; 0xff, 0xfe reserved */

typedef struct RMA2_Connection_s RMA2_Connection;
typedef struct RMA2_Endpoint_s RMA2_Endpoint;
typedef RMA2_Connection *RMA2_Handle;
typedef RMA2_Endpoint *RMA2_Port;

/* Notification queue entry: exactly 16 bytes (see rma2.h for decoders). */
#pragma pack(push, 1)
typedef struct {
	union {
		uint64_t value;
	} word0;
	union {
		uint64_t value;
	} word1;
} RMA2_Notification;
#pragma pack(pop)

/* Command descriptor: 64 bytes; fill only with rma2_desc_set_*(). */
typedef struct {
	extoll_list_head_t list;	/* pool linkage */
	RMA2_Handle handle;		/* connection the descriptor was built for */
	uint64_t reserved0;
	uint64_t value[3];		/* the three command words */
	uint64_t reserved1;
} RMA2_Descriptor;

/* Lazy read-pointer write-back threshold (entries). */
#define RMA2_RP_LAZYNESS 32
/* Requester pages (connection-option combinations) per endpoint. */
#define RMA2_REQUESTER_PAGES 32
/* Maximum bytes per put/get command (23-bit size - 1 field). */
#define RMA2_MAX_SIZE 8388608U
/* Node ids / VPIDs reported by the driver. */
#define RMA2_NODES 65536
#define RMA2_VPIDS 256

#ifdef __cplusplus
}
#endif

#endif /* SYS_RMA2_H */
