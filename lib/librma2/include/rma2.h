/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rma2.h - librma2: user-level access to the RMA2 unit of the (emulated)
 * EXTOLL NIC.  Source compatible with the original EXTOLL librma2; see
 * Documentation/extoll/librma2.md for semantics, error codes and what is not
 * implemented.
 */
#ifndef LIBRMA2_H
#define LIBRMA2_H

/* Clients rely on these being available through rma2.h. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include <sys_rma2.h>
#include <rma2_region.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	RMA2_SUCCESS = 0,
	RMA2_ERR_ERROR = -1,
	RMA2_ERR_INV_HANDLE = -2,
	RMA2_ERR_INV_PORT = -3,
	RMA2_ERR_INV_VALUE = -4,
	RMA2_ERR_NO_ROUTE = -5,
	RMA2_ERR_PORTS_USED = -6,
	RMA2_ERR_NO_MEM = -7,
	RMA2_NO_NOTI = -9,
	RMA2_ERR_POLL_EXCEEDED = -10,
	RMA2_ERR_WRONG_ARG = -11,
	RMA2_ERR_NOT_YET = -12,
	RMA2_ERR_NO_DESC_MEM = -13,
	RMA2_ERR_NO_MATCH = -15,
	RMA2_ERR_WRONG_CMD = -16,
	RMA2_ERR_NO_DEVICE = -17,
	RMA2_ERR_NO_CONNECT = -18,
	RMA2_ERR_INVALID_VERSION = -22,
	RMA2_ERR_IOCTL = -23,
	RMA2_ERR_MMAP = -24,
	RMA2_ERR_FD = -25,
	RMA2_ERR_MAP = -26,
	RMA2_ERR_DOUBLE_MAP = 27,
	RMA2_ERR_NO_TABLE = 28,
	RMA2_ERR_NOT_FREE = 29,
	RMA2_ERR_PART = 30,
	RMA2_ERR_ATU = 31,
	RMA2_ERR_MLOCKLIMIT = 32
} RMA2_ERROR;

typedef enum {
	RMA2_NO_NOTIFICATION = 0,
	RMA2_REQUESTER_NOTIFICATION = 1,
	RMA2_RESPONDER_NOTIFICATION = 2,
	RMA2_COMPLETER_NOTIFICATION = 4,
	RMA2_REQCOMPL_NOTIFICATION = 5,
	RMA2_RESPCOMPL_NOTIFICATION = 6,
	RMA2_ALL_NOTIFICATIONS = 7
} RMA2_Notification_Spec;

typedef enum {
	RMA2_CONN_PHYSICAL = 0,
	RMA2_CONN_TC0 = 0,
	RMA2_CONN_TC1 = 1,
	RMA2_CONN_TC2 = 2,
	RMA2_CONN_TC3 = 3,
	RMA2_CONN_RRA = 4,
	RMA2_CONN_IRQ = 8,
	RMA2_CONN_TE = 16,
	RMA2_CONN_DEFAULT = 16
} RMA2_Connection_Options;

typedef enum {
	RMA2_BT_GET = 0,
	RMA2_QW_GET = 1,
	RMA2_BT_PUT = 2,
	RMA2_QW_PUT = 3,
	RMA2_NOTIFICATION_PUT = 5,
	RMA2_IMMEDIATE_PUT = 6,
	RMA2_PUTS = 7,
	RMA2_GET_BT_RSP = 10,
	RMA2_GET_QW_RSP = 11,
	RMA2_LOCK_REQ = 12,
	RMA2_LOCK_RSP = 13,
	RMA2_GETS = 14,
	RMA2_ANY = 15
} RMA2_Command;

typedef enum {
	RMA2_CMD_DEFAULT = 0,
	RMA2_CMD_MC = 1,
	RMA2_CMD_NTR = 2,
	RMA2_CMD_ERA = 4,
	RMA2_CMD_EWA = 8
} RMA2_Command_Modifier;

typedef enum {
	RMA2_NOTI_RRA = 1,
	RMA2_NOTI_IRQ = 2,
	RMA2_NOTI_TE = 4,
	RMA2_NOTI_EWA = 8,
	RMA2_NOTI_NTR = 16,
	RMA2_NOTI_ERA = 32
} RMA2_Notification_Modifier;

typedef enum {
	RMA2_ERROR_REQ = 1,
	RMA2_ERROR_RESP = 2,
	RMA2_ERROR_CMPL = 4
} RMA2_Notification_Error;

typedef enum {
	RMA2_REPLAY_MANUAL = 0,
	RMA2_REPLAY_POST = 1,
	RMA2_REPLAY_NOTI = 2,
	RMA2_REPLAY_CLOSE = 4,
	RMA2_REPLAY_ALL = 7
} RMA2_Replay_Buffer_Mode;

/* Exported constants (linkable objects, defined in the library). */
extern const RMA2_Class RMA2_CLASS_ANY;		/* 0xff */
extern const RMA2_Nodeid RMA2_NODEID_ANY;	/* 0xffff */
extern const RMA2_VPID RMA2_VPID_ANY;		/* 0xffff */
extern const uint32_t RMA2_LOCK_ANY;		/* 0xffffffff */
extern const RMA2_NLA RMA2_ANY_NLA;		/* 0xffffffffffffffff */
extern const uint32_t RMA2_DEFAULT_FLAG;	/* 0 */
extern const uint32_t RMA2_BLOCK_FLAG;		/* 1 */
extern const uint32_t RMA2_MATCH_LAST_NLA_FLAG;	/* 2 */

/* Endpoints, connections, identity */
RMA2_ERROR rma2_open(RMA2_Port *port);
RMA2_ERROR rma2_close(RMA2_Port port);
RMA2_ERROR rma2_connect(RMA2_Port hport, RMA2_Nodeid dest_node, RMA2_VPID dest_vpid,
			RMA2_Connection_Options options, RMA2_Handle *handle);
RMA2_ERROR rma2_disconnect(RMA2_Port port, RMA2_Handle handle);
RMA2_Nodeid rma2_handle_get_node(RMA2_Handle handle);
RMA2_VPID rma2_handle_get_vpid(RMA2_Handle handle);
RMA2_Nodeid rma2_get_nodeid(RMA2_Port port);
RMA2_VPID rma2_get_vpid(RMA2_Port port);
RMA2_Nodeid rma2_get_node_num(RMA2_Port port);
RMA2_VPID rma2_get_proc_num(RMA2_Port port);

/* Command posting (non-blocking; completion via notifications) */
RMA2_ERROR rma2_post_put_bt(RMA2_Port port, RMA2_Handle handle, RMA2_Region *src_region,
			    uint32_t src_offset, uint32_t size, RMA2_NLA dest_address,
			    RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_put_bt_direct(RMA2_Port port, RMA2_Handle handle, RMA2_NLA src,
				   uint32_t size, RMA2_NLA dest_address,
				   RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_put_qw(RMA2_Port port, RMA2_Handle handle, RMA2_Region *src_region,
			    uint32_t src_offset, uint32_t size, RMA2_NLA dest_address,
			    RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_put_qw_direct(RMA2_Port port, RMA2_Handle handle, RMA2_NLA src,
				   uint32_t size, RMA2_NLA dest_address,
				   RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_get_bt(RMA2_Port port, RMA2_Handle handle, RMA2_Region *src_region,
			    uint32_t src_offset, uint32_t size, RMA2_NLA dest_address,
			    RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_get_bt_direct(RMA2_Port port, RMA2_Handle handle, RMA2_NLA src,
				   uint32_t size, RMA2_NLA dest_address,
				   RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_get_qw(RMA2_Port port, RMA2_Handle handle, RMA2_Region *src_region,
			    uint32_t src_offset, uint32_t size, RMA2_NLA dest_address,
			    RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_get_qw_direct(RMA2_Port port, RMA2_Handle handle, RMA2_NLA src,
				   uint32_t size, RMA2_NLA dest_address,
				   RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_lock(RMA2_Port port, RMA2_Handle handle, uint32_t target,
			  uint32_t lock_number, int32_t cmp_value, int32_t add_value,
			  RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_notification(RMA2_Port port, RMA2_Handle handle, RMA2_Class mclass,
				  uint64_t value, RMA2_Notification_Spec spec,
				  RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_immediate_put(RMA2_Port port, RMA2_Handle handle, uint32_t count,
				   uint64_t value, RMA2_NLA dest_address,
				   RMA2_Notification_Spec spec, RMA2_Command_Modifier modifier);
RMA2_ERROR rma2_post_descriptor(RMA2_Port port, RMA2_Handle handle, RMA2_Descriptor *desc);

/* Descriptors */
RMA2_ERROR rma2_desc_alloc(RMA2_Port port, RMA2_Descriptor **desc);
RMA2_ERROR rma2_desc_free(RMA2_Port port, RMA2_Descriptor *desc);
RMA2_ERROR rma2_desc_query_free(RMA2_Port port, int *num);
RMA2_ERROR rma2_desc_set_put_get(RMA2_Descriptor *desc, RMA2_Handle handle, RMA2_Command command,
				 uint32_t count, RMA2_Notification_Spec noti,
				 RMA2_Command_Modifier modifier, uint64_t read_address,
				 uint64_t write_address);
RMA2_ERROR rma2_desc_set_immediate_put(RMA2_Descriptor *desc, RMA2_Handle handle,
				       RMA2_Notification_Spec noti, RMA2_Command_Modifier modifier,
				       uint32_t count, uint64_t write_address, uint64_t value);
RMA2_ERROR rma2_desc_set_noti_put(RMA2_Descriptor *desc, RMA2_Handle handle,
				  RMA2_Notification_Spec noti, RMA2_Command_Modifier modifier,
				  RMA2_Class mclass, uint64_t value);
RMA2_ERROR rma2_desc_set_lock(RMA2_Descriptor *desc, RMA2_Handle handle,
			      RMA2_Notification_Spec noti, RMA2_Command_Modifier modifier,
			      uint8_t type, uint32_t lock_number, uint32_t compare,
			      uint32_t add_value);
RMA2_ERROR rma2_desc_set_notification_value(RMA2_Descriptor *desc, RMA2_Class mclass,
					    uint64_t value);

/* Notifications */
RMA2_ERROR rma2_noti_probe(RMA2_Port port, RMA2_Notification **notification);
RMA2_ERROR rma2_noti_get_block(RMA2_Port port, RMA2_Notification **notification);
RMA2_ERROR rma2_noti_match(RMA2_Port port, RMA2_Command cmd, RMA2_Nodeid nodeid, RMA2_VPID vpid,
			   RMA2_Notification_Spec type, RMA2_NLA nla, int flags,
			   RMA2_Notification **notification);
RMA2_ERROR rma2_noti_match_block(RMA2_Port port, RMA2_Command cmd, RMA2_Nodeid nodeid,
				 RMA2_VPID vpid, RMA2_Notification_Spec type, RMA2_NLA nla,
				 int flags, RMA2_Notification **notification);
RMA2_ERROR rma2_noti_noti_match(RMA2_Port port, RMA2_Class mclass, RMA2_Nodeid nodeid,
				RMA2_VPID vpid, RMA2_Notification **notification);
RMA2_ERROR rma2_noti_noti_match_block(RMA2_Port port, RMA2_Class mclass, RMA2_Nodeid nodeid,
				      RMA2_VPID vpid, RMA2_Notification **notification);
RMA2_ERROR rma2_noti_lock_match(RMA2_Port port, uint32_t lockid, RMA2_Nodeid nodeid,
				RMA2_VPID vpid, RMA2_Notification **notification);
RMA2_ERROR rma2_noti_lock_match_block(RMA2_Port port, uint32_t lockid, RMA2_Nodeid nodeid,
				      RMA2_VPID vpid, RMA2_Notification **notification);
RMA2_ERROR rma2_noti_dup(RMA2_Notification *input, RMA2_Notification *output);
RMA2_ERROR rma2_noti_free(RMA2_Port port, RMA2_Notification *notification);
void rma2_noti_dump(RMA2_Notification *noti);
void rma2_noti_fdump(RMA2_Notification *noti, FILE *filedescriptor);
void rma2_noti_sdump(RMA2_Notification *noti, char *pstring, int size);
RMA2_Command rma2_noti_get_cmd(RMA2_Notification *noti);
RMA2_Notification_Spec rma2_noti_get_notification_type(RMA2_Notification *noti);
RMA2_Notification_Modifier rma2_noti_get_mode(RMA2_Notification *noti);
uint8_t rma2_noti_get_error(RMA2_Notification *noti);
RMA2_Nodeid rma2_noti_get_remote_nodeid(RMA2_Notification *noti);
RMA2_VPID rma2_noti_get_remote_vpid(RMA2_Notification *noti);
uint64_t rma2_noti_get_local_address(RMA2_Notification *noti);
uint32_t rma2_noti_get_size(RMA2_Notification *noti);
uint32_t rma2_noti_get_total_size(RMA2_NLA start_nla, RMA2_Notification *noti);
uint32_t rma2_noti_get_lock_value(RMA2_Notification *noti);
uint32_t rma2_noti_get_lock_number(RMA2_Notification *noti);
uint8_t rma2_noti_get_lock_result(RMA2_Notification *noti);
uint64_t rma2_noti_get_notiput_payload(RMA2_Notification *noti);
uint8_t rma2_noti_get_notiput_class(RMA2_Notification *noti);

/* Memory registration */
RMA2_ERROR rma2_register(RMA2_Port port, void *address, size_t size, RMA2_Region **region);
RMA2_ERROR rma2_register_nomalloc(RMA2_Port port, void *address, size_t size, RMA2_Region *region);
RMA2_ERROR rma2_register_cached(RMA2_Port port, void *address, size_t size, RMA2_Region **region);
RMA2_ERROR rma2_unregister(RMA2_Port port, RMA2_Region *region);
RMA2_ERROR rma2_unregister_nofree(RMA2_Port port, RMA2_Region *region);
RMA2_ERROR rma2_unregister_cached(RMA2_Port port, RMA2_Region *region);
RMA2_ERROR rma2_register_adhoc(RMA2_Port port, void *address, RMA2_Region **region);
RMA2_ERROR rma2_unregister_adhoc(RMA2_Port port, RMA2_Region *region);
RMA2_ERROR rma2_get_nla(RMA2_Region *region, size_t offset, RMA2_NLA *nla);
RMA2_ERROR rma2_get_va(RMA2_Region *region, size_t offset, void **va);
RMA2_ERROR rma2_get_size(RMA2_Region *region, size_t *size);
RMA2_ERROR rma2_get_page_count(RMA2_Region *region, size_t *count);
int rma2_get_region_contained(RMA2_Region *region, void *start, size_t size);
int rma2_get_region_overlap(RMA2_Region *region, void *start, size_t size);
int rma2_get_region_equal(RMA2_Region *region, void *start, size_t size);

/* Utility, configuration, replay buffer */
void rma2_serror(RMA2_ERROR error, char *buf, int buflen);
void rma2_perror(RMA2_ERROR error, const char *header);
RMA2_ERROR rma2_request_interrupt(RMA2_Port port, RMA2_Handle handle);
uint32_t rma2_get_interrupt(RMA2_Port port, RMA2_Handle handle);
RMA2_ERROR rma2_request_rra(RMA2_Port port, RMA2_Handle handle);
uint32_t rma2_get_rra(RMA2_Port port, RMA2_Handle handle);
RMA2_ERROR rma2_request_physical_access(RMA2_Port port, RMA2_Handle handle);
uint32_t rma2_get_physical_access(RMA2_Port port, RMA2_Handle handle);
RMA2_ERROR rma2_request_tcs(RMA2_Port port, RMA2_Handle handle, uint32_t request_tc,
			    uint32_t response_tc);
RMA2_ERROR rma2_get_tcs(RMA2_Port port, RMA2_Handle handle, uint32_t *request_tc,
			uint32_t *response_tc);
RMA2_ERROR rma2_set_protectionid(RMA2_Port port, uint16_t id);
uint32_t rma2_get_queue_size(RMA2_Port port);
RMA2_ERROR rma2_set_queue_size(RMA2_Port port, uint32_t bytes);
uint32_t rma2_get_queue_segment_size(RMA2_Port port);
RMA2_ERROR rma2_set_queue_segment_size(RMA2_Port port, uint32_t size);
void rma2_replay_buffer_drain(RMA2_Port port);
void rma2_set_replay_mode(RMA2_Port port, RMA2_Replay_Buffer_Mode mode);
RMA2_Replay_Buffer_Mode rma2_get_replay_buffer_mode(RMA2_Port port);

#ifdef __cplusplus
}
#endif

#endif /* LIBRMA2_H */
