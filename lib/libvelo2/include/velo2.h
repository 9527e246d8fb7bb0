/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * velo2.h - libvelo2: small OS-bypass messages (<= 120 bytes) through the
 * VELO unit of the (emulated) EXTOLL NIC.  Reconstructed API, source
 * compatible with the known clients of the (non-public) original; see
 * Documentation/extoll/libvelo2.md.
 *
 * Self-contained; coexists with rma2.h.  velo2_port_t / velo2_connection_t
 * are complete types: clients allocate them (zeroed) and pass pointers.
 * An all-zero object means "not opened" / "not connected".
 */
#ifndef VELO2_H
#define VELO2_H

#include <stdint.h>
#include <velo2_mod.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VELO2_MAX_MSG_SIZE 120

typedef uint32_t velo2_nodeid_t;
typedef uint32_t velo2_vpid_t;

typedef enum velo2_ret {
	VELO2_RET_SUCCESS = 0,
	VELO2_RET_ERROR = 1,
	VELO2_RET_NO_MSG = 2,
	VELO2_RET_NO_MATCH = 3,
	VELO2_RET_ERR_FDOPEN = 4,
	VELO2_RET_ERR_MMAP = 5,
	VELO2_RET_INVALID_MBOX = 6,
	VELO2_RET_INVALID_NODE = 7,
	VELO2_RET_INV_MSG = 8,
	VELO2_RET_TRY_AGAIN = 9,
	VELO2_RET_INV_MTT = 10
} velo2_ret_t;

typedef union {
	struct {
		uint16_t nodeid;
		uint8_t vpid;
		uint8_t reserved0;
	};
	uint32_t raw;
} velo2_destination_t;

typedef struct velo2_port {
	void *map;			/* non-NULL while open */
	/* implementation-private below */
	int fd;
	uint32_t nodeid;
	uint32_t vpid;
	uint32_t slot_size;		/* mailbox slot bytes */
	uint32_t nslots;		/* mailbox slots */
	uint32_t rd;			/* next slot to read */
	uint32_t unpublished;		/* slots consumed since last RP write-back */
	uint32_t flags;
	uint32_t credits;		/* sends the device accepts without re-reading */
	uint32_t since_poll;		/* slots consumed since the last NI poll */
	volatile uint64_t *req_page;	/* requester page (send) */
	volatile uint64_t *state_page;	/* send-state page */
	volatile uint64_t *rp_word;	/* read-pointer write-back word */
	volatile uint8_t *mbox;		/* receive mailbox */
	void *mbox_map;			/* mapping of rp page + mailbox */
	uint64_t map_len;
	uint64_t mbox_map_len;
	uint32_t empty_polls;		/* empty probes in a row (direct delivery) */
	uint32_t spin_probes;		/* ... before the NI is polled too */
	uint64_t reserved[4];
} velo2_port_t;

typedef struct velo2_connection {
	velo2_destination_t dest;
	volatile uint64_t *state_map;	/* non-NULL while connected */
	/* implementation-private below */
	velo2_port_t *port;
	uint64_t header;		/* precomputed destination bits */
	uint64_t reserved[4];
} velo2_connection_t;

velo2_ret_t velo2_open(velo2_port_t *port);
velo2_ret_t velo2_close(velo2_port_t *port);
velo2_nodeid_t velo2_get_nodeid(velo2_port_t *port);
velo2_vpid_t velo2_get_vpid(velo2_port_t *port);
velo2_ret_t velo2_connect(velo2_port_t *port, velo2_connection_t *con,
			  velo2_nodeid_t nodeid, velo2_vpid_t vpid);
velo2_ret_t velo2_disconnect(velo2_port_t *port, velo2_connection_t *con);
velo2_ret_t velo2_send(velo2_connection_t *con, const void *buf, uint32_t len,
		       uint8_t tag, uint8_t mtt);
velo2_ret_t velo2_recv(velo2_port_t *port, void *buf, uint32_t buflen, uint32_t *len,
		       uint32_t *srcid, uint8_t *tag, uint8_t *mtt);
velo2_ret_t velo2_probe_recv(velo2_port_t *port, void *buf, uint32_t buflen, uint32_t *len,
			     uint32_t *srcid, uint8_t *tag, uint8_t *mtt);

#ifdef __cplusplus
}
#endif

#endif /* VELO2_H */
