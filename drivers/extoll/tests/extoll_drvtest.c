// SPDX-License-Identifier: GPL-2.0
/*
 * extoll_drvtest: stand-alone test of extoll.ko, run as root inside a node
 * that carries an EXTOLL device (needs no library, only uapi/extoll.h and
 * uapi/extoll_hw.h).  Build on the host:
 *
 *   gcc -O1 -Wall -I uapi -o extoll_drvtest drivers/extoll/tests/extoll_drvtest.c
 *
 * and put it in a node image (e.g. BUILD=<dir with bin/ and modules/>
 * tools/cluster/mkinitramfs.sh <out>, then boot with exacluster.Cluster(...,
 * extra_device_args=["-device", "extoll,node-id={node},num-nodes={nodes},
 * fabric={sockdir}/extoll"])).
 *
 *   extoll_drvtest [basic,register,put,velo,kill,hostile]   default: all
 *   extoll_drvtest hold     keep an endpoint + registration + mappings,
 *                           wait for /tmp/go (unbind the device meanwhile),
 *                           then expect ENODEV and SIGBUS
 *   extoll_drvtest target   (node B) endpoint + 1 MiB region, writes
 *                           "node vpid nla" to /tmp/target.info, waits for
 *                           a completer notification, checks the data
 *   extoll_drvtest source NODE VPID NLA   (node A) put beyond the region
 *                           (expects error 4), then the 1 MiB put
 *
 * Prints "ok - ..." / "FAIL ... - ..." per check, exit status 0 on success.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "extoll.h"
#include "extoll_hw.h"

static int fails;
#define CHECK(c, ...) do { if (c) printf("ok - " __VA_ARGS__); else { fails++; printf("FAIL (%s, errno %d %s) - ", #c, errno, strerror(errno)); printf(__VA_ARGS__); } printf("\n"); } while (0)

static uint64_t sysfs_u(const char *f)
{
	char p[256]; FILE *fp; unsigned long long v = ~0ull;
	snprintf(p, sizeof(p), "/sys/class/extoll/extoll0-rma2/%s", f);
	fp = fopen(p, "r");
	if (fp) { if (fscanf(fp, "%llu", &v) != 1) v = ~0ull; fclose(fp); }
	return v;
}

struct ep {
	int fd;
	struct rma2_ioc_info info;
	volatile uint64_t *req;	/* 33 pages */
	volatile uint64_t *q;	/* rp page + queue */
	uint64_t qsize;
	uint32_t rd;
};

static int ep_open(struct ep *e)
{
	memset(e, 0, sizeof(*e));
	e->fd = open(EXTOLL_DEV_RMA2, O_RDWR);
	if (e->fd < 0) return -1;
	if (ioctl(e->fd, RMA2_IOCTL_GET_INFO, &e->info)) return -1;
	e->req = mmap(NULL, 33 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, e->fd, 0);
	if (e->req == MAP_FAILED) return -1;
	e->qsize = e->info.notiq_size;
	e->q = mmap(NULL, 4096 + e->qsize, PROT_READ | PROT_WRITE, MAP_SHARED, e->fd, RMA2_MMAP_NOTIQ_OFFSET);
	if (e->q == MAP_FAILED) return -1;
	return 0;
}

static int ep_poll(struct ep *e, uint64_t *w0, uint64_t *w1, int ms)
{
	volatile uint64_t *ent;
	int i;
	for (i = 0; i < ms * 100; i++) {
		ent = e->q + 512 + 2 * (e->rd % (e->qsize / 16));
		if (ent[1]) {
			*w0 = ent[0]; *w1 = ent[1]; ent[1] = 0; e->rd++;
			return 0;
		}
		usleep(10);
	}
	return -1;
}

static void post(struct ep *e, int page, uint64_t w0, uint64_t w1, uint64_t w2)
{
	volatile uint64_t *p = e->req + page * 512;
	while (p[EXTOLL_RMA_CMD_FREE / 8] == 0)
		usleep(10);
	p[0] = w0; p[1] = w1; p[2] = w2;
	__sync_synchronize();
}

static int reg(int fd, void *a, size_t len, struct rma2_ioc_region *r)
{
	memset(r, 0, sizeof(*r));
	r->addr = (uintptr_t)a; r->len = len;
	return ioctl(fd, RMA2_IOCTL_REGISTER_REGION, r);
}

static void test_basic(void)
{
	struct rma2_ioc_info info;
	uint64_t v;
	int fd = open(EXTOLL_DEV_RMA2, O_RDWR), fds[70], i, n = 0;
	void *m;

	CHECK(fd >= 0, "open rma2");
	CHECK(!ioctl(fd, RMA2_IOCTL_GET_INFO, &info) && info.abi_version == EXTOLL_ABI_VERSION, "GET_INFO node %u vpid %u max_vpids %u", info.nodeid, info.vpid, info.max_vpids);
	CHECK(!ioctl(fd, RMA2_IOCTL_GET_NODEID, &v) && v == info.nodeid, "GET_NODEID");
	CHECK(!ioctl(fd, RMA2_IOCTL_GET_VPID, &v) && v == info.vpid, "GET_VPID");
	CHECK(!ioctl(fd, RMA2_IOCTL_GET_MAXVPID, &v) && v == 64, "GET_MAXVPID %lu", v);
	CHECK(ioctl(fd, RMA2_IOCTL_GET_NODEID, (void *)16) < 0 && errno == EFAULT, "bad pointer EFAULT");
	CHECK(ioctl(fd, _IO('k', 99)) < 0 && errno == ENOTTY, "unknown ENOTTY");
	CHECK(ioctl(fd, _IO('x', 1)) < 0 && errno == ENOTTY, "other magic ENOTTY");
	CHECK(ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 0) < 0 && errno == EINVAL, "notiq 0 EINVAL");
	CHECK(ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 100) < 0 && errno == EINVAL, "notiq 100 EINVAL");
	CHECK(ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 3 * 4096) < 0 && errno == EINVAL, "notiq 12K EINVAL");
	CHECK(ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 8 << 20) < 0 && errno == EINVAL, "notiq 8M EINVAL");
	CHECK(!ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 16384), "notiq 16K");
	CHECK(!ioctl(fd, RMA2_IOCTL_GET_NOTIQ_SIZE, &v) && v == 16384, "GET_NOTIQ_SIZE");
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(m == MAP_FAILED && errno == EINVAL, "private mmap EINVAL");
	m = mmap(NULL, 34 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m == MAP_FAILED && errno == EINVAL, "mmap across areas EINVAL");
	m = mmap(NULL, 4096 + 16384 + 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, RMA2_MMAP_NOTIQ_OFFSET);
	CHECK(m == MAP_FAILED && errno == EINVAL, "queue mmap too long EINVAL");
	CHECK(!ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 8192) && !ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 16384),
	      "failed mmap leaves the size settable");
	m = mmap(NULL, 4096 + 16384, PROT_READ | PROT_WRITE, MAP_SHARED, fd, RMA2_MMAP_NOTIQ_OFFSET);
	CHECK(m != MAP_FAILED, "queue mmap");
	CHECK(ioctl(fd, RMA2_IOCTL_SET_NOTIQ_SIZE, 32768) < 0 && errno == EBUSY, "notiq size after mmap EBUSY");
	CHECK(!ioctl(fd, RMA2_IOCTL_GET_NOTIQ_WP, &v) && v == 0, "GET_NOTIQ_WP 0");
	CHECK(!ioctl(fd, RMA2_IOCTL_SET_NOTIQ_WP, 0), "SET_NOTIQ_WP 0");
	CHECK(!ioctl(fd, RMA2_IOCTL_SET_NOTIQ_RP, 5) && !ioctl(fd, RMA2_IOCTL_GET_NOTIQ_RP, &v) && v == 5 && ((uint64_t *)m)[0] == 5, "SET/GET RP");
	CHECK(ioctl(fd, RMA2_IOCTL_SET_NOTIQ_RP, 1024) < 0 && errno == EINVAL, "RP beyond queue EINVAL");
	munmap(m, 4096 + 16384);

	/* VPID exhaustion */
	for (i = 0; i < 70; i++) {
		fds[i] = open(EXTOLL_DEV_RMA2, O_RDWR);
		if (fds[i] < 0) break;
		n++;
	}
	CHECK(n == 63 && errno == EBUSY, "VPIDs exhausted after %d more opens: EBUSY", n);
	CHECK(sysfs_u("vpids_in_use") == 64, "sysfs vpids_in_use 64");
	for (i = 0; i < n; i++) close(fds[i]);
	CHECK(sysfs_u("vpids_in_use") == 1, "sysfs vpids_in_use 1");

	/* child of fork cannot use the endpoint */
	if (fork() == 0) {
		int r = ioctl(fd, RMA2_IOCTL_GET_VPID, &v);
		_exit(r < 0 && errno == EACCES ? 0 : 1);
	}
	{ int st; wait(&st); CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child EACCES"); }
	close(fd);
}

static void test_register(void)
{
	struct rma2_ioc_region r;
	int fd = open(EXTOLL_DEV_RMA2, O_RDWR);
	char *buf = malloc(100000);
	uint64_t before = sysfs_u("registered_pages");

	CHECK(reg(fd, buf + 3, 10000, &r) == 0 && r.nla && !(r.nla & 4095) &&
	      r.start == ((uintptr_t)(buf + 3) & ~4095ul) && r.offset == ((uintptr_t)(buf + 3) & 4095) &&
	      r.size == (uint64_t)r.count * 4096 && r.start + r.size >= (uintptr_t)buf + 3 + 10000,
	      "register: nla %#llx start %#llx off %u count %u", (unsigned long long)r.nla,
	      (unsigned long long)r.start, r.offset, r.count);
	CHECK(sysfs_u("registered_pages") == before + r.count, "sysfs registered_pages +%u", r.count);
	{
		struct rma2_ioc_region r2;
		CHECK(reg(fd, buf + 3, 10000, &r2) == 0 && r2.nla != r.nla, "overlapping registration independent");
		struct rma2_ioc_region bad = r2; bad.size += 4096;
		CHECK(ioctl(fd, RMA2_IOCTL_UNREGISTER_REGION, &bad) < 0 && errno == EINVAL, "unregister wrong size EINVAL");
		CHECK(!ioctl(fd, RMA2_IOCTL_UNREGISTER_REGION, &r2), "unregister");
		CHECK(ioctl(fd, RMA2_IOCTL_UNREGISTER_REGION, &r2) < 0 && errno == EINVAL, "double unregister EINVAL");
	}
	struct rma2_ioc_region z;
	memset(&z, 0, sizeof(z)); z.addr = (uintptr_t)buf; z.len = 0;
	CHECK(ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &z) < 0 && errno == EINVAL, "len 0 EINVAL");
	z.len = 10; z.flags = 0x80;
	CHECK(ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &z) < 0 && errno == EINVAL, "bad flags EINVAL");
	z.flags = 0; z.reserved = 1;
	CHECK(ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &z) < 0 && errno == EINVAL, "reserved EINVAL");
	z.reserved = 0; z.addr = ~0ull - 5; z.len = 100;
	CHECK(ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &z) < 0 && errno == EINVAL, "wrap EINVAL");
	z.addr = 0xffff800000000000ull; z.len = 4096;
	CHECK(ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &z) < 0 && errno == EFAULT, "kernel address EFAULT");
	z.addr = 4096; z.len = 4096;
	CHECK(ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &z) < 0 && errno == EFAULT, "unmapped EFAULT");
	z.addr = (uintptr_t)"const string"; z.len = 8;
	CHECK(ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &z) < 0 && errno == EFAULT, "read-only memory writable EFAULT");
	z.flags = RMA2_REGION_READONLY;
	CHECK(ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &z) == 0, "read-only memory READONLY ok");
	z.len = 1ull << 33; z.addr = (uintptr_t)buf; z.flags = 0;
	CHECK(ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &z) < 0 && errno == EINVAL, "8 GiB EINVAL");
	CHECK(ioctl(fd, RMA2_IOCTL_REGISTER_REGION, (void *)8) < 0 && errno == EFAULT, "bad struct pointer EFAULT");
	/* ATU exhaustion: 512 MiB of address space > 256 MiB ATU */
	{
		char *big = mmap(NULL, 512 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		struct rma2_ioc_region rb;
		int ret = reg(fd, big, 300 << 20, &rb);
		CHECK(ret < 0 && (errno == ENOSPC || errno == ENOMEM), "300 MiB: ENOSPC/ENOMEM (%d)", errno);
		munmap(big, 512 << 20);
	}
	/* RLIMIT_MEMLOCK as an unprivileged user */
	if (fork() == 0) {
		struct rlimit rl = { 64 << 10, 64 << 10 };
		struct rma2_ioc_region rr;
		char *b = aligned_alloc(4096, 1 << 20);
		int f, ok = 1;
		memset(b, 1, 1 << 20);
		setrlimit(RLIMIT_MEMLOCK, &rl);
		if (setgid(65534) || setuid(65534)) _exit(2);
		f = open(EXTOLL_DEV_RMA2, O_RDWR);
		if (f < 0) _exit(3);
		if (reg(f, b, 1 << 20, &rr) == 0 || errno != ENOMEM) ok = 0;
		if (reg(f, b, 60 << 10, &rr) != 0) ok = 0;
		if (reg(f, b, 8 << 10, &rr) == 0 || errno != ENOMEM) ok = 0;
		_exit(ok ? 0 : 1);
	}
	{ int st; wait(&st); CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "RLIMIT_MEMLOCK enforced for unprivileged user (rc %d)", WEXITSTATUS(st)); }
	close(fd);
	CHECK(sysfs_u("registered_pages") == before, "close releases registrations (%lu)", sysfs_u("registered_pages"));
}

static void test_put(void)
{
	struct ep a, b;
	struct rma2_ioc_region rs, rd, rd2;
	size_t len = 100000, i;
	char *src = malloc(len + 7), *dst = malloc(len + 9);
	uint64_t w0, w1;
	int t, ok;

	CHECK(ep_open(&a) == 0 && ep_open(&b) == 0, "two endpoints vpid %u %u", a.info.vpid, b.info.vpid);
	for (i = 0; i < len; i++) src[i + 7] = (char)(i * 7 + 1);
	memset(dst, 0, len + 9);
	CHECK(reg(a.fd, src + 7, len, &rs) == 0 && reg(b.fd, dst + 9, len, &rd) == 0, "register src/dst");
	/* a puts into b (loopback), TE page 16, requester+completer notifications */
	post(&a, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, a.info.nodeid, b.info.vpid, 1 | 4, 0, len - 1),
	     rs.nla + rs.offset, rd.nla + rd.offset);
	t = ep_poll(&a, &w0, &w1, 5000);
	CHECK(t == 0 && (w1 >> 61) == 0 && ((w1 >> 48) & 7) == 1, "requester notification w1 %#llx", (unsigned long long)w1);
	t = ep_poll(&b, &w0, &w1, 5000);
	CHECK(t == 0 && (w1 >> 61) == 0 && ((w1 >> 48) & 7) == 4, "completer notification w1 %#llx", (unsigned long long)w1);
	CHECK(memcmp(src + 7, dst + 9, len) == 0, "put data intact");

	/* put into a region of another VPID's NLA owned by b but addressed to a's vpid: ATU refuses */
	memset(dst, 0, len + 9);
	post(&a, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, a.info.nodeid, a.info.vpid, 1, 0, 99),
	     rs.nla + rs.offset, rd.nla + rd.offset);
	t = ep_poll(&a, &w0, &w1, 5000);
	ok = 1; for (i = 0; i < len + 9; i++) if (dst[i]) ok = 0;
	CHECK(t == 0 && (w1 >> 61) != 0 && ok, "put to NLA owned by other VPID: error %llu, memory untouched", (unsigned long long)(w1 >> 61));

	/* unregistered dst: error */
	CHECK(reg(b.fd, dst + 9, len, &rd2) == 0 && !ioctl(b.fd, RMA2_IOCTL_UNREGISTER_REGION, &rd2), "register+unregister");
	post(&a, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, a.info.nodeid, b.info.vpid, 1, 0, 99),
	     rs.nla + rs.offset, rd2.nla + rd2.offset);
	t = ep_poll(&a, &w0, &w1, 5000);
	CHECK(t == 0 && (w1 >> 61) != 0, "put to unregistered NLA: error notification");

	/* physical page (no TE) refused: RMA_PHYS never enabled */
	post(&a, 0, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, a.info.nodeid, b.info.vpid, 1, 0, 7), 0x1000, 0x2000);
	t = ep_poll(&a, &w0, &w1, 5000);
	CHECK(t == 0 && (w1 >> 61) == 1, "physical addressing refused (err %llu)", (unsigned long long)(w1 >> 61));

	/* big puts in flight, then unregister destination and close */
	{
		size_t bl = 8 << 20;
		char *bs = malloc(bl), *bd = malloc(bl);
		struct rma2_ioc_region rbs, rbd;
		memset(bs, 0x5a, bl); memset(bd, 0, bl);
		CHECK(reg(a.fd, bs, bl, &rbs) == 0 && reg(b.fd, bd, bl, &rbd) == 0, "register 8 MiB x2");
		for (i = 0; i < 4; i++)
			post(&a, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, a.info.nodeid, b.info.vpid, 1, 0, bl - 1),
			     rbs.nla, rbd.nla);
		CHECK(!ioctl(b.fd, RMA2_IOCTL_UNREGISTER_REGION, &rbd), "unregister destination with puts in flight");
		CHECK(!ioctl(a.fd, RMA2_IOCTL_UNREGISTER_REGION, &rbs), "unregister source with puts in flight");
	}
	munmap((void *)a.req, 33 * 4096); munmap((void *)a.q, 4096 + a.qsize);
	munmap((void *)b.req, 33 * 4096); munmap((void *)b.q, 4096 + b.qsize);
	close(a.fd); close(b.fd);
}

static void test_velo(void)
{
	int fd = open(EXTOLL_DEV_VELO2, O_RDWR);
	struct velo2_ioc_info info;
	volatile uint64_t *req, *ring;
	uint64_t v, st;
	int i;

	CHECK(fd >= 0, "open velo2");
	CHECK(!ioctl(fd, VELO2_IOCG_GET_INFO, &info), "VELO GET_INFO vpid %u slot %u mbox %llu", info.vpid, info.slot_size, (unsigned long long)info.mbox_size);
	CHECK(!ioctl(fd, VELO2_IOCG_GET_SLOT_SIZE, &v) && v == 128, "slot size 128");
	v = 3000;
	CHECK(ioctl(fd, VELO2_IOCG_SET_MBOX_SIZE, &v) < 0 && errno == EINVAL, "mbox 3000 EINVAL");
	v = 8192;
	CHECK(!ioctl(fd, VELO2_IOCG_SET_MBOX_SIZE, &v), "mbox 8K");
	req = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(req != MAP_FAILED, "map requester + state");
	ring = mmap(NULL, 4096 + 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, VELO2_MMAP_MBOX_OFFSET);
	CHECK(ring != MAP_FAILED, "map mailbox");
	CHECK(req[EXTOLL_VELO_CREDITS / 8] > 0, "credits %llu (state page alias %llu)", (unsigned long long)req[EXTOLL_VELO_CREDITS / 8], (unsigned long long)req[512 + EXTOLL_VELO_CREDITS / 8]);
	req[1] = 0x1122334455667788ull; req[2] = 0x99;
	req[0] = EXTOLL_VELO_MKHDR(info.nodeid, info.vpid, 0, 0x42, 13);
	for (i = 0; i < 500000 && !ring[512 + 15]; i++) usleep(10);
	st = ring[512 + 15];
	CHECK(st && EXTOLL_VELO_ST_LEN(st) == 13 && EXTOLL_VELO_ST_TAG(st) == 0x42 && EXTOLL_VELO_ST_VPID(st) == info.vpid && ring[512] == 0x1122334455667788ull,
	      "VELO loopback status %#llx", (unsigned long long)st);
	CHECK(!ioctl(fd, VELO2_IOCG_GET_WP, &v) && v == 1, "VELO WP %llu", (unsigned long long)v);
	close(fd);
}

static void test_kill(void)
{
	int k;
	for (k = 0; k < 5; k++) {
		pid_t p = fork();
		if (p == 0) {
			struct ep a;
			struct rma2_ioc_region r;
			size_t bl = 4 << 20;
			char *b = malloc(bl);
			int vf = open(EXTOLL_DEV_VELO2, O_RDWR);
			memset(b, 1, bl);
			mmap(NULL, 4096 + 65536, PROT_READ | PROT_WRITE, MAP_SHARED, vf, VELO2_MMAP_MBOX_OFFSET);
			if (ep_open(&a) || reg(a.fd, b, bl, &r)) _exit(1);
			for (;;)
				post(&a, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, a.info.nodeid, a.info.vpid, 1 | 4, 0, bl - 1), r.nla, r.nla);
		}
		usleep(200000 + k * 100000);
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
	printf("right after: vpids %lu pages %lu\n", sysfs_u("vpids_in_use"), sysfs_u("registered_pages"));
	for (k = 0; k < 50 && sysfs_u("vpids_in_use"); k++) usleep(100000);
	printf("after %d ms\n", k * 100);
	CHECK(sysfs_u("vpids_in_use") == 0 && sysfs_u("registered_pages") == 0, "kill -9 during puts: all released (vpids %lu pages %lu)", sysfs_u("vpids_in_use"), sysfs_u("registered_pages"));
}

static void on_bus(int sig)
{
	(void)sig;
	printf("ok - SIGBUS on access after unbind\n");
	_exit(fails ? 1 : 0);
}

static void test_hold(void)
{
	struct ep a;
	struct rma2_ioc_region r;
	char *b = malloc(1 << 20);
	uint64_t v;
	int vf = open(EXTOLL_DEV_VELO2, O_RDWR);
	volatile uint64_t *ring;

	memset(b, 1, 1 << 20);
	CHECK(ep_open(&a) == 0 && reg(a.fd, b, 1 << 20, &r) == 0, "hold: endpoint + registration");
	ring = mmap(NULL, 4096 + 65536, PROT_READ | PROT_WRITE, MAP_SHARED, vf, VELO2_MMAP_MBOX_OFFSET);
	CHECK(ring != MAP_FAILED, "hold: velo ring");
	(void)ring[0];
	post(&a, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, a.info.nodeid, a.info.vpid, 1, 0, (1 << 20) - 1), r.nla, r.nla);
	printf("ready\n");
	while (access("/tmp/go", F_OK)) usleep(10000);
	CHECK(ioctl(a.fd, RMA2_IOCTL_GET_VPID, &v) < 0 && errno == ENODEV, "ioctl after unbind ENODEV");
	CHECK(ioctl(a.fd, RMA2_IOCTL_UNREGISTER_REGION, &r) < 0 && errno == ENODEV, "unregister after unbind ENODEV");
	CHECK(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0) == MAP_FAILED && errno == ENODEV, "mmap after unbind ENODEV");
	signal(SIGBUS, on_bus);
	a.req[0] = 1;
	printf("FAIL - no SIGBUS\n");
	exit(1);
}

static int storm_fd;
static volatile int storm_stop;

static void *storm(void *arg)
{
	char *b = arg;
	struct rma2_ioc_region r;
	unsigned int i = 0;

	while (!storm_stop) {
		if (reg(storm_fd, b + (i % 64) * 100, 4096 * (1 + i % 5), &r) == 0 && (i & 1))
			ioctl(storm_fd, RMA2_IOCTL_UNREGISTER_REGION, &r);
		i++;
	}
	return NULL;
}

static void test_hostile(void)
{
	struct ep a;
	struct rma2_ioc_region r;
	pthread_t th[3];
	char *b = malloc(1 << 20);
	void *m;
	int i;

	CHECK(ep_open(&a) == 0, "hostile: endpoint");
	CHECK(reg(a.fd, (void *)a.req, 4096, &r) < 0 && errno == EFAULT, "register own MMIO mapping EFAULT");
	CHECK(reg(a.fd, (void *)a.q, 4096, &r) < 0 && errno == EFAULT, "register own queue mapping EFAULT");
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, a.fd, (off_t)1 << 44);
	CHECK(m == MAP_FAILED && errno == EINVAL, "mmap huge offset EINVAL");
	m = mremap((void *)a.req, 33 * 4096, 40 * 4096, MREMAP_MAYMOVE);
	CHECK(m == MAP_FAILED, "mremap grow refused");
	CHECK(madvise((void *)a.q, 4096, MADV_DOFORK) == 0 || errno == EINVAL, "madvise DOFORK");
	if (fork() == 0) {
		/* the mapping must not exist in the child */
		_exit(mincore((void *)a.q, 4096, (unsigned char *)b) == 0 ? 1 : 0);
	}
	{ int st; wait(&st); CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child has no queue mapping"); }
	{
		FILE *f = fopen("/sys/module/extoll/parameters/queue_budget_mb", "w");
		int q1 = open(EXTOLL_DEV_RMA2, O_RDWR), q2 = open(EXTOLL_DEV_RMA2, O_RDWR);
		uint64_t before = sysfs_u("queue_bytes");

		fprintf(f, "1\n");
		fclose(f);
		m = mmap(NULL, 4096 + 65536, PROT_READ | PROT_WRITE, MAP_SHARED, q1, RMA2_MMAP_NOTIQ_OFFSET);
		CHECK(ioctl(q2, RMA2_IOCTL_SET_NOTIQ_SIZE, 1 << 20) == 0, "1 MiB queue size accepted");
		CHECK(mmap(NULL, 4096 + (1 << 20), PROT_READ | PROT_WRITE, MAP_SHARED, q2, RMA2_MMAP_NOTIQ_OFFSET) == MAP_FAILED &&
		      errno == ENOMEM, "queue budget 1 MiB: second queue ENOMEM (held %llu)", (unsigned long long)sysfs_u("queue_bytes"));
		munmap(m, 4096 + 65536);
		close(q1); close(q2);
		CHECK(sysfs_u("queue_bytes") == before - 0, "queue_bytes back to %llu", (unsigned long long)before);
		f = fopen("/sys/module/extoll/parameters/queue_budget_mb", "w");
		fprintf(f, "64\n");
		fclose(f);
	}
	memset(b, 1, 1 << 20);
	storm_fd = a.fd;
	for (i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, storm, b);
	usleep(1500000);
	storm_stop = 1;
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	CHECK(sysfs_u("registered_pages") > 0, "storm left registrations (%lu pages)", sysfs_u("registered_pages"));
	munmap((void *)a.req, 33 * 4096); munmap((void *)a.q, 4096 + a.qsize);
	close(a.fd);
	CHECK(sysfs_u("registered_pages") == 0 && sysfs_u("vpids_in_use") == 0, "storm: close released everything");
}

/* 2 nodes: "target" on one node, then "source NODE VPID NLA" on another. */
static void test_target(void)
{
	struct ep a;
	struct rma2_ioc_region r;
	size_t len = 1 << 20, i;
	unsigned char *b = aligned_alloc(4096, len);
	uint64_t w0, w1;
	FILE *f;
	int ok = 1;

	memset(b, 0, len);
	CHECK(ep_open(&a) == 0 && reg(a.fd, b, len, &r) == 0, "target: endpoint + 1 MiB region");
	f = fopen("/tmp/target.info", "w");
	fprintf(f, "%u %u %llu\n", a.info.nodeid, a.info.vpid, (unsigned long long)r.nla);
	fclose(f);
	CHECK(ep_poll(&a, &w0, &w1, 60000) == 0 && !(w1 >> 61) && ((w1 >> 48) & 7) == 4,
	      "target: completer notification w1 %#llx from node %llu", (unsigned long long)w1,
	      (unsigned long long)((w1 >> 32) & 0xffff));
	for (i = 0; i < len; i++)
		if (b[i] != (unsigned char)(i * 13 + 5))
			ok = 0;
	CHECK(ok, "target: 1 MiB intact");
}

static void test_source(char **argv)
{
	struct ep a;
	struct rma2_ioc_region r;
	size_t len = 1 << 20, i;
	unsigned char *b = malloc(len + 3);
	unsigned int node = strtoul(argv[0], NULL, 0), vpid = strtoul(argv[1], NULL, 0);
	uint64_t nla = strtoull(argv[2], NULL, 0), w0, w1;

	for (i = 0; i < len; i++)
		b[i + 3] = (unsigned char)(i * 13 + 5);
	CHECK(ep_open(&a) == 0 && reg(a.fd, b + 3, len, &r) == 0, "source: endpoint + region");
	/* first a put to an NLA beyond the target's region: error, nothing written */
	post(&a, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, vpid, 1, 0, 99),
	     r.nla + r.offset, nla + len);
	CHECK(ep_poll(&a, &w0, &w1, 30000) == 0 && (w1 >> 61) == 4, "source: put beyond remote region: error %llu",
	      (unsigned long long)(w1 >> 61));
	post(&a, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, vpid, 1 | 4, 0, len - 1),
	     r.nla + r.offset, nla);
	CHECK(ep_poll(&a, &w0, &w1, 30000) == 0 && !(w1 >> 61) && ((w1 >> 48) & 7) == 1,
	      "source: requester notification w1 %#llx", (unsigned long long)w1);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!*only || strstr(only, "basic")) test_basic();
	if (!*only || strstr(only, "register")) test_register();
	if (!*only || strstr(only, "put")) test_put();
	if (!*only || strstr(only, "velo")) test_velo();
	if (!*only || strstr(only, "kill")) test_kill();
	if (!*only || strstr(only, "hostile")) test_hostile();
	if (strstr(only, "hold")) test_hold();
	if (!strcmp(only, "target")) test_target();
	if (!strcmp(only, "source") && argc == 5) test_source(argv + 2);
	printf("%s: %d failures\n", fails ? "FAILED" : "PASSED", fails);
	return fails != 0;
}
