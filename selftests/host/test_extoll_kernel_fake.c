// SPDX-License-Identifier: GPL-2.0
/*
 * librma2 and libvelo2 against a fake kernel: the library sources are
 * linked with ld --wrap of open/ioctl/mmap/munmap/close and of the two
 * allocators they use (calloc, aligned_alloc), so every failure a real
 * driver or libc can produce is produced on purpose.  Checks the error
 * codes of rma2_open, rma2_close, rma2_get_nodeid, rma2_connect,
 * rma2_register*, rma2_unregister*, rma2_desc_alloc, velo2_open and
 * velo2_close that a healthy device never gives, and that every failed
 * open gives back what it took (descriptors, mappings).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <extoll.h>
#include <rma2.h>
#include <velo2.h>

#include "../lib/kselftest_exa.h"

int __real_open(const char *path, int flags, ...);
int __real_ioctl(int fd, unsigned long req, ...);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);
int __real_close(int fd);
void *__real_calloc(size_t n, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);

#define MAX_MAPS 16

/* What the fake kernel answers; reset before each test. */
static struct {
	int open_errno;		/* open of a /dev/extoll node fails with this */
	unsigned int fail_nr;	/* ioctl number (_IOC_NR) that fails ... */
	int fail_errno;		/* ... with this errno (0: none fails) */
	uint32_t abi, noti_size, slot_size;
	uint64_t qsize, mbox_size;
	int fail_mmap;		/* the n-th mmap of a device fails (1-based) */
	int close_fails;
	int fail_calloc;	/* the n-th calloc fails */
	int fail_aligned_alloc;	/* the n-th aligned_alloc fails */
	int bad_answer;		/* REGISTER answers with wrong arithmetic */
	/* observed */
	int fds[8], nfds;
	void *maps[MAX_MAPS];
	size_t map_len[MAX_MAPS];
	int mmaps, callocs, aligned_allocs, unregisters;
	uint64_t next_nla;
} fk;

static void fk_reset(void)
{
	memset(&fk, 0, sizeof(fk));
	fk.abi = EXTOLL_ABI_VERSION;
	fk.noti_size = RMA2_NOTI_SIZE;
	fk.slot_size = 128;
	fk.qsize = 64 * 1024;
	fk.mbox_size = 64 * 1024;
	fk.next_nla = 0x10000;
}

static int fake_fd(int fd)
{
	for (int i = 0; i < fk.nfds; i++)
		if (fk.fds[i] == fd)
			return 1;
	return 0;
}

static int live_maps(void)
{
	int n = 0;

	for (int i = 0; i < MAX_MAPS; i++)
		n += fk.maps[i] != NULL;
	return n;
}

int __wrap_open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode = 0;
	int fd;

	va_start(ap, flags);
	if (flags & O_CREAT)
		mode = va_arg(ap, mode_t);
	va_end(ap);
	if (strncmp(path, "/dev/extoll/", 12))
		return __real_open(path, flags, mode);
	if (fk.open_errno) {
		errno = fk.open_errno;
		return -1;
	}
	fd = __real_open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		fk.fds[fk.nfds++] = fd;
	return fd;
}

int __wrap_close(int fd)
{
	if (!fake_fd(fd))
		return __real_close(fd);
	for (int i = 0; i < fk.nfds; i++)
		if (fk.fds[i] == fd)
			fk.fds[i] = fk.fds[--fk.nfds];
	__real_close(fd);
	if (fk.close_fails) {
		errno = EIO;
		return -1;
	}
	return 0;
}

static int fk_ioctl(unsigned long req, void *arg)
{
	unsigned int nr = _IOC_NR(req);

	if (fk.fail_errno && nr == fk.fail_nr) {
		errno = fk.fail_errno;
		return -1;
	}
	switch (req) {
	case RMA2_IOCTL_GET_INFO: {
		struct rma2_ioc_info *i = arg;

		memset(i, 0, sizeof(*i));
		i->abi_version = fk.abi;
		i->nodeid = 3;
		i->vpid = 7;
		i->max_nodes = RMA2_NODES;
		i->max_vpids = 64;
		i->noti_size = fk.noti_size;
		i->notiq_size = fk.qsize;
		i->notiq_offset = RMA2_MMAP_NOTIQ_OFFSET;
		return 0;
	}
	case RMA2_IOCTL_GET_NOTIQ_SIZE:
		*(uint64_t *)arg = fk.qsize;
		return 0;
	case RMA2_IOCTL_SET_NOTIQ_SIZE:
	case RMA2_IOCTL_SET_NOTIQ_SEGMENT_SIZE:
		return 0;
	case RMA2_IOCTL_GET_NODEID:
		*(uint64_t *)arg = 3;
		return 0;
	case RMA2_IOCTL_REGISTER_REGION: {
		struct rma2_ioc_region *r = arg;

		r->start = r->addr & ~4095ull;
		r->offset = (uint32_t)(r->addr & 4095);
		r->count = (uint32_t)((r->offset + r->len + 4095) / 4096);
		r->size = (uint64_t)r->count * 4096;
		r->nla = fk.next_nla;
		fk.next_nla += r->size;
		if (fk.bad_answer == 1)
			r->nla = 0;
		else if (fk.bad_answer == 2)
			r->count++;
		return 0;
	}
	case RMA2_IOCTL_UNREGISTER_REGION:
		fk.unregisters++;
		return 0;
	case VELO2_IOCG_GET_INFO: {
		struct velo2_ioc_info *i = arg;

		memset(i, 0, sizeof(*i));
		i->abi_version = fk.abi;
		i->nodeid = 3;
		i->vpid = 9;
		i->max_vpids = 64;
		i->slot_size = fk.slot_size;
		i->mbox_size = fk.mbox_size;
		i->mbox_offset = VELO2_MMAP_MBOX_OFFSET;
		return 0;
	}
	default:
		errno = ENOTTY;
		return -1;
	}
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!fake_fd(fd))
		return __real_ioctl(fd, req, arg);
	return fk_ioctl(req, arg);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *m;

	if (!fake_fd(fd))
		return __real_mmap(addr, len, prot, flags, fd, off);
	if (++fk.mmaps == fk.fail_mmap) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	m = __real_mmap(NULL, len, prot, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return m;
	if (off == 0)	/* requester page 0: the device has room for commands */
		((uint64_t *)m)[0x800 / 8] = 256;
	for (int i = 0; i < MAX_MAPS; i++) {
		if (!fk.maps[i]) {
			fk.maps[i] = m;
			fk.map_len[i] = len;
			break;
		}
	}
	return m;
}

int __wrap_munmap(void *addr, size_t len)
{
	for (int i = 0; i < MAX_MAPS; i++) {
		if (fk.maps[i] == addr) {
			if (fk.map_len[i] != len)
				return -1;	/* the test sees the leak */
			fk.maps[i] = NULL;
		}
	}
	return __real_munmap(addr, len);
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (++fk.callocs == fk.fail_calloc) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	if (++fk.aligned_allocs == fk.fail_aligned_alloc) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_aligned_alloc(align, size);
}

/* Nothing of a failed open may stay behind. */
#define EXPECT_NOTHING_HELD()							\
	do {									\
		EXPECT_EQ(0, fk.nfds);						\
		EXPECT_EQ(0, live_maps());					\
	} while (0)

static RMA2_ERROR rma2_open_expect_null(RMA2_Port *p)
{
	*p = (RMA2_Port)0x1;
	return rma2_open(p);
}

TEST(rma2_open_every_error_code)
{
	static const struct { int err; RMA2_ERROR want; } opens[] = {
		{ ENOENT, RMA2_ERR_NO_DEVICE }, { ENODEV, RMA2_ERR_NO_DEVICE },
		{ ENXIO, RMA2_ERR_NO_DEVICE }, { EBUSY, RMA2_ERR_PORTS_USED },
		{ ENOSPC, RMA2_ERR_PORTS_USED }, { EACCES, RMA2_ERR_FD }, { EMFILE, RMA2_ERR_FD },
	};
	RMA2_Port p;

	for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++) {
		fk_reset();
		fk.open_errno = opens[i].err;
		EXPECT_EQ(opens[i].want, rma2_open_expect_null(&p));
		EXPECT_TRUE(p == NULL);
	}
	fk_reset();
	fk.fail_nr = _IOC_NR(RMA2_IOCTL_GET_INFO);
	fk.fail_errno = EIO;
	EXPECT_EQ(RMA2_ERR_IOCTL, rma2_open_expect_null(&p));
	EXPECT_TRUE(p == NULL);
	EXPECT_NOTHING_HELD();
	fk_reset();
	fk.fail_nr = _IOC_NR(RMA2_IOCTL_GET_NOTIQ_SIZE);
	fk.fail_errno = EIO;
	EXPECT_EQ(RMA2_ERR_IOCTL, rma2_open_expect_null(&p));
	EXPECT_NOTHING_HELD();
	fk_reset();
	fk.qsize = 16;		/* a queue of one notification */
	EXPECT_EQ(RMA2_ERR_IOCTL, rma2_open_expect_null(&p));
	EXPECT_NOTHING_HELD();
	fk_reset();
	fk.abi = EXTOLL_ABI_VERSION + 1;
	EXPECT_EQ(RMA2_ERR_INVALID_VERSION, rma2_open_expect_null(&p));
	EXPECT_NOTHING_HELD();
	fk_reset();
	fk.noti_size = 32;
	EXPECT_EQ(RMA2_ERR_INVALID_VERSION, rma2_open_expect_null(&p));
	EXPECT_NOTHING_HELD();
	for (int m = 1; m <= 2; m++) {	/* requester pages, then the queue */
		fk_reset();
		fk.fail_mmap = m;
		EXPECT_EQ(RMA2_ERR_MMAP, rma2_open_expect_null(&p));
		EXPECT_TRUE(p == NULL);
		EXPECT_NOTHING_HELD();
	}
	fk_reset();
	fk.fail_calloc = 1;		/* the endpoint */
	EXPECT_EQ(RMA2_ERR_NO_MEM, rma2_open_expect_null(&p));
	EXPECT_NOTHING_HELD();
	for (int a = 1; a <= 2; a++) {	/* descriptor pool, region pool */
		fk_reset();
		fk.fail_aligned_alloc = a;
		EXPECT_EQ(RMA2_ERR_NO_MEM, rma2_open_expect_null(&p));
		EXPECT_TRUE(p == NULL);
		EXPECT_NOTHING_HELD();
	}
	fk_reset();
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&p));
	EXPECT_EQ(3, rma2_get_nodeid(p));
	EXPECT_EQ(7, rma2_get_vpid(p));
	EXPECT_EQ(1, fk.nfds);
	EXPECT_EQ(2, live_maps());
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p));
	EXPECT_NOTHING_HELD();
}

TEST(rma2_close_and_queries_when_the_kernel_fails)
{
	RMA2_Port p;

	fk_reset();
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&p));
	fk.fail_nr = _IOC_NR(RMA2_IOCTL_GET_NODEID);
	fk.fail_errno = EIO;
	EXPECT_EQ(0xffff, rma2_get_nodeid(p));
	fk.close_fails = 1;
	EXPECT_EQ(RMA2_ERR_ERROR, rma2_close(p));
	EXPECT_NOTHING_HELD();	/* given back all the same */
}

TEST(rma2_connect_and_pools_out_of_memory)
{
	RMA2_Port p;
	RMA2_Handle h = (RMA2_Handle)0x1;
	RMA2_Descriptor *d[32], *extra = (RMA2_Descriptor *)0x1;
	RMA2_Region *r[32], *rx = (RMA2_Region *)0x1;
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	int i;

	fk_reset();
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&p));
	fk.fail_calloc = fk.callocs + 1;
	EXPECT_EQ(RMA2_ERR_NO_MEM, rma2_connect(p, 1, 1, RMA2_CONN_DEFAULT, &h));
	/* the pools hold 32 each; growing them fails */
	for (i = 0; i < 32; i++)
		ASSERT_EQ(RMA2_SUCCESS, rma2_desc_alloc(p, &d[i]));
	fk.fail_aligned_alloc = fk.aligned_allocs + 1;
	EXPECT_EQ(RMA2_ERR_NO_DESC_MEM, rma2_desc_alloc(p, &extra));
	EXPECT_TRUE(extra == (RMA2_Descriptor *)0x1);
	for (i = 0; i < 32; i++)
		ASSERT_EQ(RMA2_SUCCESS, rma2_register(p, buf, sizeof(buf), &r[i]));
	fk.fail_aligned_alloc = fk.aligned_allocs + 1;
	EXPECT_EQ(RMA2_ERR_NO_MEM, rma2_register(p, buf, sizeof(buf), &rx));
	EXPECT_TRUE(rx == (RMA2_Region *)0x1);
	/* after the failure, everything still works */
	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_free(p, d[0]));
	EXPECT_EQ(RMA2_SUCCESS, rma2_desc_alloc(p, &d[0]));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, r[0]));
	EXPECT_EQ(RMA2_SUCCESS, rma2_register(p, buf, sizeof(buf), &r[0]));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p));
}

TEST(rma2_register_maps_kernel_errors)
{
	static const struct { int err; RMA2_ERROR want; } errs[] = {
		{ ENOMEM, RMA2_ERR_NO_MEM }, { ENOSPC, RMA2_ERR_ATU },
		{ EINVAL, RMA2_ERR_INV_VALUE }, { EFAULT, RMA2_ERR_INV_VALUE },
		{ EIO, RMA2_ERR_ERROR }, { ENODEV, RMA2_ERR_ERROR },
	};
	static uint8_t buf[3 * 4096] __attribute__((aligned(4096)));
	RMA2_Port p;
	RMA2_Region *r, byval;

	fk_reset();
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&p));
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		fk.fail_nr = _IOC_NR(RMA2_IOCTL_REGISTER_REGION);
		fk.fail_errno = errs[i].err;
		r = (RMA2_Region *)0x1;
		EXPECT_EQ(errs[i].want, rma2_register(p, buf, 100, &r));
		EXPECT_TRUE(r == (RMA2_Region *)0x1);	/* untouched on failure */
		memset(&byval, 0x5a, sizeof(byval));
		EXPECT_EQ(errs[i].want, rma2_register_nomalloc(p, buf, 100, &byval));
		EXPECT_EQ(0x5a5a5a5a5a5a5a5aul, byval.nla);
		EXPECT_EQ(errs[i].want, rma2_register_cached(p, buf, 100, &r));
		EXPECT_EQ(errs[i].want, rma2_register_adhoc(p, buf, &r));
		EXPECT_TRUE(r == (RMA2_Region *)0x1);
	}
	fk.fail_errno = 0;
	/* a driver answer that disagrees with the 4 KiB arithmetic is undone */
	for (int bad = 1; bad <= 2; bad++) {
		int before = fk.unregisters;

		fk.bad_answer = bad;
		EXPECT_EQ(RMA2_ERR_ERROR, rma2_register(p, buf + 10, 5000, &r));
		EXPECT_EQ(before + 1, fk.unregisters);
	}
	fk.bad_answer = 0;
	/* the kernel refuses the deregistration */
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(p, buf + 10, 5000, &r));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register_nomalloc(p, buf, 10, &byval));
	fk.fail_nr = _IOC_NR(RMA2_IOCTL_UNREGISTER_REGION);
	fk.fail_errno = EINVAL;
	EXPECT_EQ(RMA2_ERR_ERROR, rma2_unregister(p, r));
	EXPECT_EQ(RMA2_ERR_ERROR, rma2_unregister_cached(p, r));
	EXPECT_EQ(RMA2_ERR_ERROR, rma2_unregister_adhoc(p, r));
	EXPECT_EQ(RMA2_ERR_ERROR, rma2_unregister_nofree(p, &byval));
	fk.fail_errno = 0;
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, r));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister_nofree(p, &byval));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p));
}

TEST(velo2_open_every_error_code)
{
	velo2_port_t vp;

	fk_reset();
	fk.open_errno = EACCES;
	EXPECT_EQ(VELO2_RET_ERR_FDOPEN, velo2_open(&vp));
	EXPECT_TRUE(vp.map == NULL);
	fk_reset();
	fk.fail_nr = _IOC_NR(VELO2_IOCG_GET_INFO);
	fk.fail_errno = EIO;
	EXPECT_EQ(VELO2_RET_ERROR, velo2_open(&vp));
	EXPECT_NOTHING_HELD();
	fk_reset();
	fk.abi = EXTOLL_ABI_VERSION + 1;
	EXPECT_EQ(VELO2_RET_ERROR, velo2_open(&vp));
	EXPECT_NOTHING_HELD();
	fk_reset();
	fk.slot_size = 32;
	EXPECT_EQ(VELO2_RET_ERROR, velo2_open(&vp));
	fk_reset();
	fk.slot_size = 8192;
	EXPECT_EQ(VELO2_RET_ERROR, velo2_open(&vp));
	fk_reset();
	fk.mbox_size = 256;	/* fewer than 4 slots */
	EXPECT_EQ(VELO2_RET_ERROR, velo2_open(&vp));
	EXPECT_NOTHING_HELD();
	for (int m = 1; m <= 2; m++) {	/* requester + state page, then the ring */
		fk_reset();
		fk.fail_mmap = m;
		EXPECT_EQ(VELO2_RET_ERR_MMAP, velo2_open(&vp));
		EXPECT_TRUE(vp.map == NULL);
		EXPECT_NOTHING_HELD();
	}
	fk_reset();
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_open(&vp));
	EXPECT_TRUE(vp.map != NULL);
	EXPECT_EQ(9, velo2_get_vpid(&vp));
	EXPECT_EQ(2, live_maps());
	fk.close_fails = 1;
	EXPECT_EQ(VELO2_RET_ERROR, velo2_close(&vp));
	EXPECT_TRUE(vp.map == NULL);
	EXPECT_NOTHING_HELD();
}

TEST_HARNESS_MAIN
