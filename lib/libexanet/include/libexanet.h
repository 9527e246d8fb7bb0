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
#include <exanet_rdma.h>
#include <exanet_coll.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBEXANET_VERSION_MAJOR 1
#define LIBEXANET_VERSION_MINOR 4

#define EXANET_DEFAULT_DEVICE "/dev/exanet0"

/*
 * Timeouts in nanoseconds: 0 = do not wait (poll once), negative = forever.
 * A wait with a timeout busy-polls for about 20 us, then calls
 * sched_yield() between polls, so that a peer process on the same CPU
 * runs.  A wait without timeout never enters the kernel (usable under
 * seccomp strict mode); it spins.
 */
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

/* ---- events: sleeping instead of polling ----
 *
 * The data path never enters the kernel; a caller that has nothing to do
 * and would rather sleep than spin uses these (system calls: one ioctl to
 * arm, poll() to sleep).  Spurious wake-ups are possible (e.g. another
 * thread of the process closing the descriptor): after a wake-up, check
 * the queues, and arm again before sleeping again. */

/* Arm the NI's interrupt for this open device: the next message written
 * into any mailbox of dev, or the next RDMA completion notification for
 * dev's rank, makes exanet_dev_fd(dev) readable (POLLIN) and ends
 * exanet_event_wait().  One-shot: arm again after each wake-up.
 * Return 0 or -errno (-EOPNOTSUPP: the NI has no interrupts). */
int exanet_event_arm(struct exanet_dev *dev);
/* Arm, then sleep until an event or timeout_ms (-1: no timeout).
 * Return 1 (event), 0 (timeout) or -errno.  Callers check their queues
 * after arming and again after it returns (an event that arrived before
 * the arm is not reported).
 * Returns 1 at once if a source armed by the previous exanet_event_arm()
 * or exanet_event_wait() of dev fired since (so "drain the queues; wait"
 * in a loop misses nothing: each wait's arm covers the next drain). */
int exanet_event_wait(struct exanet_dev *dev, int timeout_ms);

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
/* exanet_send_on() on a channel known not ONGOING (no STATUS read). */
int exanet_send_on_idle(struct exanet_pkt *pkt, unsigned int chan, uint32_t node,
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

/* ---- RDMA ----
 *
 * Model (Documentation/exanet/rdma.md): a process registers memory
 * (pinned, mapped in its rank's IOMMU domain at its own virtual address)
 * and tells peers a remote address (node, rank, VA).  It allocates an RDMA
 * page (32 write + 32 read channels) and posts descriptors to channels
 * with plain stores; completion is a channel STATUS (MMIO read) and/or a
 * completion record written to memory; the target (write) or the
 * initiator (read) can also ask for a notification record written once
 * all data has landed.  Posting and polling make no system calls.
 *
 * Channels are numbered by slot: 0..31 write channels, 32..63 read
 * channels (EXANET_RDMA_WCHAN(i), EXANET_RDMA_RCHAN(i)).
 *
 * Thread safety: registration, deregistration, page alloc/free go through
 * the kernel and may be called from any thread, but not concurrently on
 * the same object (or with exanet_close()).  Data path: a channel is owned
 * by one thread from post to completion.  exanet_rdma_post_write() /
 * exanet_rdma_post_read() claim a free channel atomically, so any number
 * of threads may post on the same page concurrently; a claimed channel is
 * released by the exanet_rdma_poll()/exanet_rdma_wait() call that reports
 * its completion (call it from the thread that posted, or hand the channel
 * number over).  The *_on() variants use a channel the caller manages
 * itself and must not be mixed with auto-claimed use of the same channel.
 */

struct exanet_rdma;	/* an RDMA page mapped into this process */

/* A registered memory region (read-only for the application). */
struct exanet_mr {
	void *addr;		/* as registered */
	size_t len;
	uint32_t handle;	/* kernel handle */
	uint32_t node;		/* this node */
	uint32_t rank;		/* this process's rank */
	uint32_t access;	/* EXANET_MR_* */
	struct exanet_dev *dev;
	struct exanet_mr *next;	/* library internal */
};

/* A remote address: process (node, rank) and its virtual address.  With
 * the PDID (supplied by the hardware, never by software) it is the GVA. */
struct exanet_raddr {
	uint32_t node;
	uint32_t rank;
	uint64_t va;
};

/* Wire form of a remote address, for exchanging it out of band:
 * 16 bytes, little-endian: EXANET_RDMA_REMOTE(node, rank), then VA. */
#define EXANET_RADDR_WIRE_SIZE 16

/* Compose: -EINVAL if node >= 2^22, rank > 7 or va >= 2^48. */
int exanet_raddr_make(uint32_t node, uint32_t rank, uint64_t va,
		      struct exanet_raddr *out);
int exanet_raddr_encode(const struct exanet_raddr *ra,
			uint8_t out[EXANET_RADDR_WIRE_SIZE]);
/* Parse: -EINVAL if reserved bits are set or the VA is out of range. */
int exanet_raddr_decode(const uint8_t in[EXANET_RADDR_WIRE_SIZE],
			struct exanet_raddr *out);
/* Remote address of ptr inside mr (ptr must lie in [addr, addr+len)). */
int exanet_mr_raddr(const struct exanet_mr *mr, const void *ptr,
		    struct exanet_raddr *out);
/* Offset a remote address: -EINVAL on overflow past 2^48. */
int exanet_raddr_add(struct exanet_raddr *ra, uint64_t off);

/* RDMA info of this open file (rank is EXANET_RDMA_NO_RANK until the first
 * registration or page allocation).  One ioctl. */
int exanet_rdma_query(struct exanet_dev *dev, struct exanet_rdma_info *info);

/* Register [addr, addr + len): pins the pages (RLIMIT_MEMLOCK, -ENOMEM),
 * the memory must be writable (-EFAULT otherwise).  access: EXANET_MR_*
 * (access bits 0 = all).  The first registration also gives the process
 * its rank (-EBUSY if all ranks of the node are taken, -ENODEV without RDMA
 * contexts / IOMMU).
 * With EXANET_MR_ON_DEMAND (1.2): nothing is pinned or charged to
 * RLIMIT_MEMLOCK, the memory need not exist yet; the NI faults pages in as
 * transfers touch them (a transfer touching memory the process may not
 * access ends with EXANET_RDMA_E_LOCAL_FAULT / _REMOTE_FAULT, errno
 * -EPERM / -ENXIO).  -EOPNOTSUPP when the NI has no interrupts (older
 * NIs); -EINVAL from drivers before 1.2. */
int exanet_reg_mr(struct exanet_dev *dev, void *addr, size_t len,
		  uint32_t access, struct exanet_mr **mrp);
/* 1.2: the implicit on-demand registration: every address of the process
 * is a valid RDMA source / target (exanet_mr_raddr() accepts any pointer).
 * Same as exanet_reg_mr(dev, NULL, 0, access | EXANET_MR_ON_DEMAND, mrp). */
int exanet_reg_mr_implicit(struct exanet_dev *dev, uint32_t access,
			   struct exanet_mr **mrp);
/* Unmap from the NI (in-flight transfers on it fail cleanly), unpin, free. */
int exanet_dereg_mr(struct exanet_mr *mr);

int exanet_rdma_alloc(struct exanet_dev *dev, struct exanet_rdma **rdmap);
/* Aborts ONGOING channels, unmaps and returns the page. */
int exanet_rdma_free(struct exanet_rdma *rdma);
uint32_t exanet_rdma_page(const struct exanet_rdma *rdma);
uint32_t exanet_rdma_rank(const struct exanet_rdma *rdma);
uint32_t exanet_rdma_node(const struct exanet_rdma *rdma);

/* Optional per-post arguments (NULL = none). */
struct exanet_rdma_opts {
	/* write: VA in the target process; read: address in this process.
	 * 8-byte aligned, in registered memory; 0 = no notification. */
	uint64_t notify_va;
	uint64_t tag;		/* copied into notification and completion */
	/* local completion record (in registered memory), or NULL */
	struct exanet_rdma_notif *lcomp;
};

/* Post an RDMA write of len bytes (1..EXANET_RDMA_MAX_LEN) from src (in
 * this process's registered memory) to dst.  Claims a free write channel
 * and returns its slot (0..31); -EAGAIN if all are in use; -EINVAL for
 * bad arguments (checked before touching the hardware).  No system call. */
int exanet_rdma_post_write(struct exanet_rdma *rdma, const void *src,
			   const struct exanet_raddr *dst, size_t len,
			   const struct exanet_rdma_opts *opts);
/* Post an RDMA read of len bytes from src (remote) into dst (local,
 * registered).  Returns the claimed read channel slot (32..63). */
int exanet_rdma_post_read(struct exanet_rdma *rdma, void *dst,
			  const struct exanet_raddr *src, size_t len,
			  const struct exanet_rdma_opts *opts);
/* Same on a given slot the caller manages: -EBUSY if it is ONGOING,
 * -EINVAL if slot is not a write (resp. read) channel. */
int exanet_rdma_post_write_on(struct exanet_rdma *rdma, unsigned int slot,
			      const void *src, const struct exanet_raddr *dst,
			      size_t len, const struct exanet_rdma_opts *opts);
int exanet_rdma_post_read_on(struct exanet_rdma *rdma, unsigned int slot,
			     void *dst, const struct exanet_raddr *src,
			     size_t len, const struct exanet_rdma_opts *opts);

/* Poll a channel once: -EINPROGRESS while ONGOING, 0 when DONE, else the
 * error as an errno (exanet_rdma_status_errno).  A completed auto-claimed
 * channel is released.  statusp (may be NULL) gets the raw STATUS. */
int exanet_rdma_poll(struct exanet_rdma *rdma, unsigned int slot,
		     uint64_t *statusp);
/* Busy-poll until completion or timeout_ns (-EINPROGRESS if the wait timed
 * out; the channel is still claimed then). */
int exanet_rdma_wait(struct exanet_rdma *rdma, unsigned int slot,
		     int64_t timeout_ns, uint64_t *statusp);
/* Raw STATUS / DONE_BYTES of a slot (0 for a bad slot). */
uint64_t exanet_rdma_status(const struct exanet_rdma *rdma, unsigned int slot);
uint64_t exanet_rdma_done_bytes(const struct exanet_rdma *rdma, unsigned int slot);

/* DONE -> 0, ONGOING -> -EINPROGRESS, IDLE -> -ENOMSG, ERROR by code:
 * BAD_DESC -EINVAL, NO_ROUTE -EHOSTUNREACH, PDID -EACCES, REMOTE_CTX
 * -ECONNREFUSED, REMOTE_DMA -EREMOTEIO, LOCAL_DMA -EFAULT, TIMEOUT
 * -ETIMEDOUT, NOTIFY_DMA -EBADMSG, ABORTED -ECANCELED, other -EIO. */
int exanet_rdma_status_errno(uint64_t status);
int exanet_rdma_error_errno(unsigned int error);
const char *exanet_rdma_error_str(unsigned int error);

/* Notification / completion records in memory.  poll: if the record is
 * valid (flags & EXANET_RDMA_N_VALID, read with acquire semantics) copy it
 * to out (may be NULL), clear it for reuse and return 1; else 0.  The
 * record's error field tells success (0) or the error code. */
int exanet_rdma_notif_poll(struct exanet_rdma_notif *n,
			   struct exanet_rdma_notif *out);
/* Busy-poll; 1 when a record arrived, -ETIMEDOUT otherwise. */
int exanet_rdma_notif_wait(struct exanet_rdma_notif *n,
			   struct exanet_rdma_notif *out, int64_t timeout_ns);
/* Clear a record before handing it to the NI. */
void exanet_rdma_notif_reset(struct exanet_rdma_notif *n);

/* ---- collectives (1.3): the NI's allreduce unit, uapi/exanet_coll.h ----
 *
 * The collective unit of an RDMA page reduces vectors across a group of
 * processes on (usually) different nodes: every member starts the same
 * operation (same count, datatype and op) on its own group handle, the NIs
 * combine the vectors among themselves and each member gets the same
 * result, bit for bit.  Source and result must be in memory registered
 * with exanet_reg_mr() (or the implicit on-demand registration).
 * Documentation/exanet/collectives.md has the algorithm and the rules.
 *
 * Thread safety: like an exanet_rdma page; a group is used by one thread
 * at a time (one operation in flight per group).
 */
struct exanet_coll;		/* the collective page of an RDMA page */
struct exanet_coll_group;	/* a group slot of the NI */

/* Map the collective page of rdma (one per RDMA page).  -ENODEV if the NI
 * or the driver has no collective unit. */
int exanet_coll_open(struct exanet_rdma *rdma, struct exanet_coll **collp);
/* Destroys the groups still open on it, unmaps. */
int exanet_coll_close(struct exanet_coll *coll);

/* Create this member's view of a group: key is the same on all members
 * (e.g. derived from a communicator id; unique among the groups of the
 * job on each node), nodes[i] the node of member i, nodes[my_rank] this
 * node.  Errors as EXANET_IOC_COLL_GROUP_CREATE (-EEXIST, -ENOSPC,
 * -EINVAL). */
int exanet_coll_group_create(struct exanet_coll *coll, uint32_t key,
			     uint32_t size, uint32_t my_rank,
			     const uint32_t *nodes,
			     struct exanet_coll_group **grpp);
int exanet_coll_group_destroy(struct exanet_coll_group *grp);
uint32_t exanet_coll_group_size(const struct exanet_coll_group *grp);
uint32_t exanet_coll_group_rank(const struct exanet_coll_group *grp);
uint32_t exanet_coll_group_slot(const struct exanet_coll_group *grp);

/* Size in bytes of one element of dtype, 0 if unknown. */
size_t exanet_coll_dtype_size(unsigned int dtype);

/* Start an allreduce of count elements from src into dst (dst may equal
 * src).  count 0 is a barrier.  -EINVAL for a bad dtype/op/count
 * (bitwise ops on float/double, more than EXANET_COLL_MAX_LEN bytes),
 * -EBUSY if the group has an operation in flight.  lcomp (in registered
 * memory, or NULL) receives the completion record.  No system call. */
int exanet_coll_start(struct exanet_coll_group *grp, const void *src,
		      void *dst, size_t count, unsigned int dtype,
		      unsigned int op, struct exanet_rdma_notif *lcomp,
		      uint64_t tag);
/* Poll once: -EINPROGRESS while in flight, 0 when done, else the error as
 * an errno (exanet_coll_error_errno()).  statusp may be NULL. */
int exanet_coll_poll(struct exanet_coll_group *grp, uint64_t *statusp);
/* Poll until done or timeout_ns (see EXANET_WAIT_FOREVER). */
int exanet_coll_wait(struct exanet_coll_group *grp, int64_t timeout_ns,
		     uint64_t *statusp);
/* start + wait; vectors longer than EXANET_COLL_MAX_LEN are split. */
int exanet_coll_allreduce(struct exanet_coll_group *grp, const void *src,
			  void *dst, size_t count, unsigned int dtype,
			  unsigned int op, int64_t timeout_ns);
/* BAD_DESC -EINVAL, LOCAL_DMA -EFAULT, MISMATCH -EPROTO, NO_GROUP
 * -ECONNRESET, TIMEOUT -ETIMEDOUT, PEER -EREMOTEIO, ABORTED -ECANCELED,
 * FAILED -EPIPE, NOMEM -ENOMEM, other -EIO. */
int exanet_coll_error_errno(unsigned int error);
const char *exanet_coll_error_str(unsigned int error);

/* ---- helpers ---- */

const char *exanet_chan_state_str(unsigned int state);
const char *exanet_nack_reason_str(unsigned int reason);
/* Monotonic clock in ns (vDSO clock_gettime). */
int64_t exanet_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* LIBEXANET_H */
