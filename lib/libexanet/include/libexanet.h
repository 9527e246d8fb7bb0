/* SPDX-License-Identifier: MIT */
/*
 * libexanet: thin user-space library over the ExaNet NI kernel ABI
 * (uapi/exanet.h).  Setup (open, allocate, mmap) goes through the kernel;
 * after that, sending, receiving and polling are plain loads and stores to
 * the pages the kernel mapped for this process: no system calls.
 *
 * Error convention: functions returning int return 0 (or a non-negative
 * value documented per function) on success and a negative errno code on
 * failure.  Nothing sets errno.
 *
 * Thread safety: an exanet_dev may be shared between threads for
 * allocation/free (the kernel serialises those).  A struct exanet_pkt and a
 * struct exanet_mbox carry unsynchronised software state (channel cursor,
 * head index, phase); use each one from a single thread at a time, or
 * protect it with your own lock.  Different objects may be used
 * concurrently without locking.
 *
 * Full reference: Documentation/exanet/libexanet.md
 */
#ifndef LIBEXANET_H
#define LIBEXANET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <exanet.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBEXANET_VERSION_MAJOR 1
#define LIBEXANET_VERSION_MINOR 0

#define EXANET_DEFAULT_DEVICE "/dev/exanet0"

/* Timeouts in nanoseconds: 0 = do not wait (poll once), negative = forever. */
#define EXANET_WAIT_FOREVER ((int64_t)-1)

struct exanet_dev;	/* an open /dev/exanetN */
struct exanet_pkt;	/* a packetizer interface (4 channels) mapped into this process */
struct exanet_mbox;	/* a mailbox interface: register page + read-only slot queue */

/* Source information of a received message. */
struct exanet_msg_info {
	uint32_t src_node;
	uint16_t src_iface;
	uint8_t  src_chan;
	uint32_t seq;
	uint32_t slot;		/* slot index it was read from */
};

/* ---- device ---- */

/* path NULL means EXANET_DEFAULT_DEVICE.  -ENOENT, -EACCES, -ENODEV (not an
 * ExaNet device / ABI mismatch), -ENOMEM. */
int exanet_open(const char *path, struct exanet_dev **devp);
int exanet_open_index(unsigned int index, struct exanet_dev **devp);
/* Frees every interface still allocated through this device, then closes. */
void exanet_close(struct exanet_dev *dev);

int exanet_dev_fd(const struct exanet_dev *dev);
/* Index N of /dev/exanetN, or a negative errno if it cannot be determined. */
int exanet_dev_index(const struct exanet_dev *dev);
/* Info as returned by EXANET_IOC_GET_INFO at open time. */
int exanet_query(const struct exanet_dev *dev, struct exanet_info *info);
/* Re-issues EXANET_IOC_GET_INFO (e.g. after a PDID binding changed). */
int exanet_query_fresh(struct exanet_dev *dev, struct exanet_info *info);
uint32_t exanet_node_id(const struct exanet_dev *dev);
uint32_t exanet_num_nodes(const struct exanet_dev *dev);
uint32_t exanet_pdid(const struct exanet_dev *dev);

/* Device-wide hardware counters (enum exanet_counter) read from sysfs
 * (/sys/class/exanet/exanetN/counters).  Fills up to n values, returns the
 * number filled.  Not a fast-path call. */
int exanet_read_counters(const struct exanet_dev *dev, uint64_t *values, unsigned int n);
const char *exanet_counter_name(unsigned int counter);

/* ---- packetizer (send side) ---- */

int exanet_pkt_alloc(struct exanet_dev *dev, struct exanet_pkt **pktp);
/* Unmaps and returns the interface to the kernel. */
int exanet_pkt_free(struct exanet_pkt *pkt);
uint32_t exanet_pkt_iface(const struct exanet_pkt *pkt);

/*
 * Start one message of len (1..EXANET_MAX_PAYLOAD) bytes to mailbox mbox on
 * node.  Picks a channel that is not ONGOING (round robin) and returns its
 * number (0..3); -EAGAIN if all channels are ONGOING; -EINVAL for bad
 * arguments (checked before touching the hardware).  No system call.
 */
int exanet_send(struct exanet_pkt *pkt, uint32_t node, uint32_t mbox,
		const void *buf, size_t len);
/* Same, on a given channel: -EBUSY if that channel is ONGOING. */
int exanet_send_on(struct exanet_pkt *pkt, unsigned int chan, uint32_t node,
		   uint32_t mbox, const void *buf, size_t len);

/* Raw STATUS register of a channel (decode with EXANET_ST_*), or 0 for an
 * out-of-range channel. */
uint64_t exanet_chan_status(const struct exanet_pkt *pkt, unsigned int chan);
/* Decoded state: enum exanet_chan_state, or -EINVAL. */
int exanet_chan_state(const struct exanet_pkt *pkt, unsigned int chan);

/*
 * Map a final STATUS to an error code: ACK -> 0, TIMEOUT -> -ETIMEDOUT,
 * NACK -> by reason: PDID -> -EACCES, FULL -> -ENOBUFS, BAD_PACKET -> -EPROTO,
 * DISABLED -> -ECONNREFUSED, NO_ROUTE -> -EHOSTUNREACH, other -> -ECONNREFUSED;
 * ONGOING -> -EINPROGRESS, IDLE -> -ENOMSG.
 */
int exanet_status_errno(uint64_t status);

/* Busy-poll channel chan until it is no longer ONGOING or timeout_ns
 * elapses.  Returns exanet_status_errno() of the final status (so -ETIMEDOUT
 * for a hardware TIMEOUT) or -EINPROGRESS if the wait itself timed out.
 * If statusp is non-NULL the last raw STATUS is stored there. */
int exanet_wait(struct exanet_pkt *pkt, unsigned int chan, int64_t timeout_ns,
		uint64_t *statusp);

/* Send and wait for the outcome.  Waits up to timeout_ns for a free channel
 * and then for the result.  0 on ACK, negative errno otherwise (see
 * exanet_status_errno); -EINPROGRESS if the software timeout expired first. */
int exanet_send_wait(struct exanet_pkt *pkt, uint32_t node, uint32_t mbox,
		     const void *buf, size_t len, int64_t timeout_ns,
		     uint64_t *statusp);

/* ---- mailbox (receive side) ---- */

/* nslots: power of two in [EXANET_MBOX_MIN_SLOTS, EXANET_MBOX_MAX_SLOTS]. */
int exanet_mbox_alloc(struct exanet_dev *dev, unsigned int nslots,
		      struct exanet_mbox **mboxp);
int exanet_mbox_free(struct exanet_mbox *mbox);
uint32_t exanet_mbox_id(const struct exanet_mbox *mbox);
unsigned int exanet_mbox_nslots(const struct exanet_mbox *mbox);

/*
 * Non-blocking receive: if the slot at head is owned by software, copy its
 * payload into buf and its source into info (may be NULL), consume the slot
 * and return the payload length (1..64).  Returns 0 if the mailbox is
 * empty, -EMSGSIZE if buflen is too small (message left in place), -EIO if
 * the slot holds an impossible length (slot consumed), -EINVAL for bad
 * arguments.  No system call.
 */
ssize_t exanet_recv(struct exanet_mbox *mbox, void *buf, size_t buflen,
		    struct exanet_msg_info *info);
/* Busy-polling receive; -ETIMEDOUT if nothing arrived within timeout_ns. */
ssize_t exanet_recv_wait(struct exanet_mbox *mbox, void *buf, size_t buflen,
			 struct exanet_msg_info *info, int64_t timeout_ns);
/* Number of messages ready at head (0..nslots), without consuming. */
unsigned int exanet_mbox_pending(const struct exanet_mbox *mbox);
/* Publish the consumed head to the NI now (exanet_recv batches HEAD stores
 * but always publishes before reporting the mailbox empty). */
void exanet_mbox_flush(struct exanet_mbox *mbox);

/* Mailbox page registers. */
uint32_t exanet_mbox_rx_count(const struct exanet_mbox *mbox);
uint32_t exanet_mbox_full_count(const struct exanet_mbox *mbox);
uint32_t exanet_mbox_hw_tail(const struct exanet_mbox *mbox);
uint32_t exanet_mbox_hw_head(const struct exanet_mbox *mbox);

/* ---- helpers ---- */

const char *exanet_chan_state_str(unsigned int state);
const char *exanet_nack_reason_str(unsigned int reason);
/* Monotonic clock in ns (vDSO clock_gettime). */
int64_t exanet_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* LIBEXANET_H */
