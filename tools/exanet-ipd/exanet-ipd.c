// SPDX-License-Identifier: MIT
/*
 * exanet-ipd: IP over the ExaNet fabric.  Owns a TUN interface (default
 * exa0) and carries its IP packets to the daemons of the other nodes in
 * RDMA-written receive rings.  Reference: Documentation/exanet/ipd.md and
 * --help.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <exanet_ip.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <exa_cpu.h>

#include "exa_genl.h"
#include "ipd.h"
#include "ipd_fabric.h"
#include "tool_parse.h"

volatile sig_atomic_t ipd_tick_pending, ipd_stop, ipd_status_req;

static FILE *log_fp;
static int log_syslog;
static int log_verbose;

void ipd_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level >= LOG_D && !log_verbose)
		return;
	va_start(ap, fmt);
	if (log_syslog) {
		vsyslog(level, fmt, ap);
	} else {
		struct timespec ts;
		FILE *f = log_fp ? log_fp : stderr;

		clock_gettime(CLOCK_REALTIME, &ts);
		fprintf(f, "%lld.%03ld " TOOL ": ", (long long)ts.tv_sec, ts.tv_nsec / 1000000);
		vfprintf(f, fmt, ap);
		fputc('\n', f);
		fflush(f);
	}
	va_end(ap);
}

/* --------------------------------------------------- PDID binding */

int ipd_pdid_bind_self(uint32_t pdid)
{
	uint16_t types[2] = { EXANET_ATTR_PID, EXANET_ATTR_PDID };
	uint32_t vals[2] = { (uint32_t)getpid(), pdid };
	struct exa_genl g;
	int err = exa_genl_open(&g);

	if (err)
		return err;
	err = exa_genl_call(&g, EXANET_CMD_PDID_BIND, NLM_F_ACK, types, vals, 2, NULL, NULL);
	exa_genl_close(&g);
	return err;
}

/* ----------------------------------------------------------- setup */

static void on_signal(int sig)
{
	switch (sig) {
	case SIGALRM:
		ipd_tick_pending = 1;
		break;
	case SIGUSR1:
		ipd_status_req = 1;
		break;
	default:
		ipd_stop = 1;
		break;
	}
}

/*
 * How the daemon shares a CPU with the programs whose packets it carries.
 * With a TUN device every packet it writes wakes the receiving program and
 * every packet a program sends wakes the daemon; as an ordinary task each
 * wake-up preempts the other side at once, so a TCP stream switches tasks
 * twice per packet.  SCHED_BATCH keeps the daemon from preempting on its
 * wake-ups, and a weight above the programs' (nice -10) keeps them from
 * preempting it: each side runs until it blocks, as a NIC's receive
 * processing does before the program it woke.  Measured:
 * notes/measurements-2026.md.
 */
static void setup_sched(struct ipd *d)
{
	struct sched_param sp = { 0 };
	enum ipd_sched s = d->o.sched;
	int policy;

	if (s == IPD_SCHED_DEFAULT)
		s = d->o.mode == MODE_BUSY ? IPD_SCHED_KEEP : IPD_SCHED_BATCH;
	if (s == IPD_SCHED_KEEP)
		return;
	policy = s == IPD_SCHED_BATCH ? SCHED_BATCH : SCHED_OTHER;
	if (sched_setscheduler(0, policy, &sp))
		ipd_log(LOG_W, "--sched %s: %s", s == IPD_SCHED_BATCH ? "batch" : "normal",
			strerror(errno));
	if (setpriority(PRIO_PROCESS, 0, d->o.nice))
		ipd_log(LOG_W, "--nice %d: %s (needs CAP_SYS_NICE)", d->o.nice, strerror(errno));
	else
		d->reniced = d->o.nice != 0;
}

/*
 * Before anything is set up: a stop request that comes while exa0 is being
 * made (a service stopped just after its start) is seen by run() at once,
 * which then takes everything down as usual and exits 0.
 */
static void setup_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int setup_signals(const struct ipd_opts *o)
{
	struct sigaction sa;
	struct itimerval it;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	memset(&it, 0, sizeof(it));
	it.it_interval.tv_sec = o->hb_interval_ms / 1000;
	it.it_interval.tv_usec = (o->hb_interval_ms % 1000) * 1000;
	it.it_value = it.it_interval;
	return setitimer(ITIMER_REAL, &it, NULL) ? -errno : 0;
}

static int open_device(struct ipd *d)
{
	int err = exanet_open(d->o.device, &d->dev);

	if (err) {
		ipd_log(LOG_E, "open %s: %s", d->o.device ? d->o.device : EXANET_DEFAULT_DEVICE,
			strerror(-err));
		return err;
	}
	if (d->o.pdid && exanet_pdid(d->dev) != d->o.pdid) {
		exanet_close(d->dev);
		d->dev = NULL;
		err = ipd_pdid_bind_self(d->o.pdid);
		if (err) {
			ipd_log(LOG_E, "binding to PDID %u: %s%s", d->o.pdid, strerror(-err),
				err == -EPERM ? " (needs CAP_NET_ADMIN; or start under "
				"'exanetctl run --pdid N --')" : "");
			return err;
		}
		err = exanet_open(d->o.device, &d->dev);
		if (err) {
			ipd_log(LOG_E, "open: %s", strerror(-err));
			return err;
		}
		if (exanet_pdid(d->dev) != d->o.pdid) {
			ipd_log(LOG_E, "bound to PDID %u but the device gives %u", d->o.pdid,
				exanet_pdid(d->dev));
			return -EACCES;
		}
	}
	d->pdid = exanet_pdid(d->dev);
	if (d->pdid >= 0x8000)
		ipd_log(LOG_W, "running in the per-user domain %#x: every process of this "
			"user can reach the rings; give the IP service its own PDID "
			"(--pdid N or exanetctl run --pdid N --)", d->pdid);
	d->node = exanet_node_id(d->dev);
	d->num_nodes = exanet_num_nodes(d->dev);
	return 0;
}

static int setup_fabric(struct ipd *d)
{
	int err;

	err = exanet_pkt_alloc(d->dev, &d->pkt);
	if (!err)
		err = exanet_mbox_alloc(d->dev, IPD_MBOX_SLOTS, &d->mbox);
	if (!err)
		err = exanet_rdma_alloc(d->dev, &d->rdma);
	if (err) {
		ipd_log(LOG_E, "ExaNet interfaces: %s", strerror(-err));
		return err;
	}
	d->ctrl = aligned_alloc(4096, 4096);
	if (!d->ctrl)
		return -ENOMEM;
	memset(d->ctrl, 0, 4096);
	err = exanet_reg_mr(d->dev, d->ctrl, 4096, 0, &d->ctrl_mr);
	if (err) {
		ipd_log(LOG_E, "register completion records: %s", strerror(-err));
		return err;
	}
	d->lcomp = (struct exanet_rdma_notif *)d->ctrl;
	{
		struct exanet_rdma_info ri;

		/* the rank is the file's for good now: no ioctl later */
		d->rank = exanet_rdma_query(d->dev, &ri) ? EXANET_RDMA_NO_RANK : ri.rank;
	}
	return 0;
}

static int if_ioctl(int s, unsigned long req, struct ifreq *ifr, const char *what)
{
	if (ioctl(s, req, ifr) < 0) {
		int err = -errno;

		ipd_log(LOG_E, "%s %s: %s", what, ifr->ifr_name, strerror(errno));
		return err;
	}
	return 0;
}

static void set_sin(struct sockaddr *sa, uint32_t addr)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = addr };

	memcpy(sa, &sin, sizeof(sin));
}

static int setup_tun(struct ipd *d)
{
	struct ifreq ifr;
	char path[128];
	int s, err, fd;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		ipd_log(LOG_E, "/dev/net/tun: %s (modprobe tun)", strerror(errno));
		return -errno;
	}
	memset(&ifr, 0, sizeof(ifr));
	/* every packet behind a virtio_net_hdr: checksum offload both ways */
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", d->o.ifname);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		err = -errno;
		ipd_log(LOG_E, "create %s: %s%s", d->o.ifname, strerror(errno),
			errno == EBUSY ? " (another daemon owns it?)" : "");
		close(fd);
		return err;
	}
	d->tunfd = fd;
	/* The kernel may leave transport checksums to us (TUN_F_CSUM): we
	 * pass them on to the peer's kernel, which accepts the packet as
	 * checksummed by the "hardware"; the fabric is CRC-protected. */
	if (ioctl(fd, TUNSETOFFLOAD, d->o.offload ? TUN_F_CSUM : 0) < 0)
		ipd_log(LOG_W, "checksum offload on %s: %s", d->o.ifname, strerror(errno));
	/* no IPv6 on the fabric interface (only IPv4 is routed) */
	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", d->o.ifname);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) != 1)
			ipd_log(LOG_D, "disable IPv6 on %s failed", d->o.ifname);
		close(fd);
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", d->o.ifname);
	set_sin(&ifr.ifr_addr, d->ip);
	err = if_ioctl(s, SIOCSIFADDR, &ifr, "set address of");
	if (!err) {
		set_sin(&ifr.ifr_netmask, d->netmask);
		err = if_ioctl(s, SIOCSIFNETMASK, &ifr, "set netmask of");
	}
	if (!err) {
		ifr.ifr_mtu = (int)d->o.mtu;
		err = if_ioctl(s, SIOCSIFMTU, &ifr, "set MTU of");
	}
	if (!err) {
		ifr.ifr_qlen = (int)d->o.txqlen;
		err = if_ioctl(s, SIOCSIFTXQLEN, &ifr, "set queue length of");
	}
	if (!err)
		err = if_ioctl(s, SIOCGIFFLAGS, &ifr, "get flags of");
	if (!err) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		err = if_ioctl(s, SIOCSIFFLAGS, &ifr, "bring up");
	}
	close(s);
	return err;
}

static int setup_heartbeat(struct ipd *d)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct ifreq ifr;
	int one = 1, fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", d->o.hb_iface);
	if (ioctl(fd, SIOCGIFBRDADDR, &ifr) < 0) {
		int err = -errno;

		ipd_log(LOG_E, "heartbeat interface %s: %s", d->o.hb_iface, strerror(errno));
		close(fd);
		return err;
	}
	memcpy(&sa, &ifr.ifr_broadaddr, sizeof(sa));
	d->hb_bcast = sa.sin_addr.s_addr;
	if (!d->hb_bcast) {
		/* no broadcast address configured (busybox `ip addr add`
		 * without brd): address | ~netmask */
		uint32_t a, m;

		if (ioctl(fd, SIOCGIFADDR, &ifr) < 0) {
			int err = -errno;

			ipd_log(LOG_E, "heartbeat interface %s has no address: %s",
				d->o.hb_iface, strerror(errno));
			close(fd);
			return err;
		}
		memcpy(&sa, &ifr.ifr_addr, sizeof(sa));
		a = sa.sin_addr.s_addr;
		if (ioctl(fd, SIOCGIFNETMASK, &ifr) < 0) {
			close(fd);
			return -errno;
		}
		memcpy(&sa, &ifr.ifr_netmask, sizeof(sa));
		m = sa.sin_addr.s_addr;
		d->hb_bcast = a | ~m;
	}
	/* only heartbeats from the management network */
	setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, d->o.hb_iface, (socklen_t)strlen(d->o.hb_iface));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)d->o.hb_port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		ipd_log(LOG_E, "heartbeat port %u: %s", d->o.hb_port, strerror(errno));
		close(fd);
		return err;
	}
	d->hbfd = fd;
	return 0;
}

/*
 * The driver's kernel path for small packets (Documentation/exanet/ipd.md,
 * "The kernel path").  Without it (an older driver, an NI without
 * interrupts, --kernel-path-len 0) every packet goes through the daemon.
 */
static void setup_kpath(struct ipd *d)
{
	struct exanet_ip_attach req = { 0 };

	d->kmbox = IPD_NO_KMBOX;
	if (!d->o.kpath_len)
		return;
	d->kpeers = calloc(IPD_MAX_NODES, sizeof(*d->kpeers));
	req.ifindex = if_nametoindex(d->o.ifname);
	req.max_len = d->o.kpath_len;
	if (!d->kpeers || !req.ifindex) {
		ipd_log(LOG_W, "kernel path: %s", strerror(errno));
		return;
	}
	if (ioctl(exanet_dev_fd(d->dev), EXANET_IOC_IP_ATTACH, &req) < 0) {
		ipd_log(LOG_W, "kernel path for %s: %s: every packet through the daemon",
			d->o.ifname, errno == ENOTTY ? "not in this driver" : strerror(errno));
		return;
	}
	d->kmbox = req.mbox;
	d->kpath_len = req.max_len;
	ipd_log(LOG_I, "kernel path: packets up to %u bytes, mailbox %u", req.max_len, req.mbox);
}

/* ------------------------------------------------------- main loop */

#ifdef EXANET_HAVE_EVENTS
static int setup_irq(struct ipd *d)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int err = exanet_event_arm(d->dev);

	if (err == -EOPNOTSUPP) {
		if (d->o.mode_set)
			ipd_log(LOG_E, "--mode irq: the NI has no interrupts");
		return -EOPNOTSUPP;
	}
	if (err) {
		ipd_log(LOG_E, "arming the NI interrupt: %s", strerror(-err));
		return err;
	}
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0)
		return -errno;
	ev.data.fd = d->tunfd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->tunfd, &ev) < 0)
		return -errno;
	ev.data.fd = exanet_dev_fd(d->dev);
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) < 0)
		return -errno;
	return 0;
}

/* Arm the NI interrupt, look once more, then sleep in epoll. */
static void idle_irq(struct ipd *d)
{
	struct epoll_event ev[4];
	int timeout;

	if (exanet_event_arm(d->dev) < 0) {
		usleep(100);
		return;
	}
	if (ipd_mbox_poll(d) + ipd_rx_poll_all(d) + ipd_comp_poll(d))
		return;
	/* completions of our own writes do not interrupt: poll for them
	 * while something waits for a channel or credit */
	timeout = ipd_tx_pending(d) ? 1 : -1;
	d->c.idle_sleeps++;
	if (epoll_wait(d->epfd, ev, 4, timeout) > 0)
		d->c.wakeups++;
}
#endif

static void idle_sleep(struct ipd *d, unsigned int *idle, unsigned int *sleep_us)
{
	struct pollfd pfd = { .fd = d->tunfd, .events = POLLIN };
	struct timespec ts;

	if (++*idle < d->o.spin_us) {
		cpu_relax();
		return;
	}
	ts.tv_sec = *sleep_us / 1000000;
	ts.tv_nsec = (long)(*sleep_us % 1000000) * 1000;
	d->c.idle_sleeps++;
	if (ppoll(&pfd, 1, &ts, NULL) > 0)
		d->c.wakeups++;
	else
		d->tun_quiet = 1;	/* nothing to read: skip one read() */
	*sleep_us *= 2;
	if (*sleep_us > d->o.max_sleep_us)
		*sleep_us = d->o.max_sleep_us;
}

/*
 * While it polls for a reply the daemon runs at nice 0: at its usual weight
 * (nice -10) its sched_yield() hardly lets the program that produces the
 * reply run, and a ping-pong got slower, not faster (ipd.md, "Modes").
 */
static void spin_begin(struct ipd *d, int *spinning)
{
	if (*spinning || !d->reniced)
		return;
	*spinning = 1;
	setpriority(PRIO_PROCESS, 0, 0);
}

static void spin_end(struct ipd *d, int *spinning)
{
	if (!*spinning)
		return;
	*spinning = 0;
	setpriority(PRIO_PROCESS, 0, d->o.nice);
}

static uint64_t tun_packets(const struct ipd *d)
{
	return d->c.tun_rx_packets + d->c.tun_tx_packets;
}

static uint64_t tun_bytes(const struct ipd *d)
{
	return d->c.tun_rx_bytes + d->c.tun_tx_bytes;
}

static void run(struct ipd *d)
{
	unsigned int idle = 0, sleep_us = 20;
	int64_t irq_spin_ns = (int64_t)d->o.irq_spin_us * 1000, burst_end_ns = 0;
	int spinning = 0, in_burst = 0, spin_ok = 0;
	uint64_t burst_packets = 0, burst_bytes = 0;

	while (!ipd_stop) {
		int work;

		if (ipd_tick_pending) {
			ipd_tick_pending = 0;
			ipd_tick(d);
			if (d->ticks % 10 == 0)
				ipd_status_write(d);
		}
		d->c.loops++;
		work = ipd_mbox_poll(d);
		if (d->ctl_busy)
			ipd_ctl_poll(d);
		if (d->chan_busy)
			work += ipd_comp_poll(d);
		work += ipd_rx_poll_all(d);
		work += ipd_tun_rx(d);
		work += ipd_tx_flush(d);
		/*
		 * After the polls: a status asked for counts every message the
		 * NI had delivered (and ACKed) before the request, even when
		 * the signal is handled before the NI's interrupt.
		 */
		if (ipd_status_req) {
			ipd_status_req = 0;
			ipd_status_write(d);
		}
		if (work) {
			idle = 0;
			sleep_us = 20;
			in_burst = irq_spin_ns != 0;
			spin_end(d, &spinning);
			continue;
		}
		if (in_burst) {
			/*
			 * The burst that just ended: requests and replies are
			 * small; a stream keeps the daemon busy anyway and
			 * only loses throughput by polling at nice 0.
			 */
			uint64_t n = tun_packets(d) - burst_packets;

			in_burst = 0;
			burst_end_ns = exanet_now_ns();	/* once per burst, not per loop */
			spin_ok = n && (tun_bytes(d) - burst_bytes) / n <= IPD_IRQ_SPIN_MAX_AVG;
			burst_packets = tun_packets(d);
			burst_bytes = tun_bytes(d);
		}
		switch (d->o.mode) {
		case MODE_BUSY:
			sched_yield();
			break;
		case MODE_SLEEP:
			idle_sleep(d, &idle, &sleep_us);
			break;
		case MODE_IRQ:
			/*
			 * A reply to what we just carried usually comes within a
			 * round trip: polling for it (and giving the CPU to the
			 * application between polls) spares the interrupt and
			 * the wake-up, as NAPI busy polling does.
			 */
			if (spin_ok && exanet_now_ns() - burst_end_ns < irq_spin_ns) {
				spin_begin(d, &spinning);
				d->c.irq_spins++;
				sched_yield();
				break;
			}
			spin_end(d, &spinning);
#ifdef EXANET_HAVE_EVENTS
			idle_irq(d);
#endif
			break;
		}
	}
}

static const char *sched_name(int policy)
{
	switch (policy) {
	case SCHED_OTHER:
		return "other";
	case SCHED_BATCH:
		return "batch";
	case SCHED_IDLE:
		return "idle";
	case SCHED_FIFO:
		return "fifo";
	case SCHED_RR:
		return "rr";
	default:
		return "?";
	}
}

static const char *mode_name(enum ipd_mode m)
{
	return m == MODE_BUSY ? "busy" : m == MODE_SLEEP ? "sleep" : "irq";
}

static void write_pidfile(struct ipd *d, int remove_it)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.pid", d->o.run_dir, d->o.ifname);
	if (remove_it) {
		unlink(path);
		return;
	}
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	static struct ipd ipd;
	struct ipd *d = &ipd;
	int status = 0, json = 0, ready_fd = -1, err;
	uint64_t inc = 0;

	/* a usage error: ipd_parse_args() said it in one line */
	if (ipd_parse_args(argc, argv, &d->o, &status, &json))
		return IPD_EXIT_USAGE;
	if (status)
		return ipd_status_show(&d->o, json);
	log_verbose = d->o.verbose;
	if (d->o.log_file) {
		log_fp = fopen(d->o.log_file, "a");
		if (!log_fp) {
			fprintf(stderr, TOOL ": %s: %s\n", d->o.log_file, strerror(errno));
			return IPD_EXIT_ERR;
		}
	}
	if (d->o.daemon) {
		int pfd[2];
		pid_t pid;
		char c;

		if (pipe2(pfd, O_CLOEXEC) < 0) {
			perror(TOOL ": pipe");
			return IPD_EXIT_ERR;
		}
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			perror(TOOL ": fork");
			return IPD_EXIT_ERR;
		}
		if (pid > 0) {
			/* Wait until the child is up (it opens the device while we
			 * are alive, so a PDID binding of ours reaches it). */
			close(pfd[1]);
			if (read(pfd[0], &c, 1) == 1 && c == 'r')
				return IPD_EXIT_OK;
			waitpid(pid, &status, 0);
			return WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status)
								       : IPD_EXIT_ERR;
		}
		close(pfd[0]);
		ready_fd = pfd[1];
		setsid();
		if (!log_fp)
			log_syslog = 1;
		openlog(TOOL, LOG_PID, LOG_DAEMON);
	}

	setup_stop_signals();
	d->tunfd = d->hbfd = d->epfd = -1;
	while (!inc)
		if (getrandom(&inc, sizeof(inc), 0) != sizeof(inc))
			inc = (uint64_t)exa_clock_ns() ^ ((uint64_t)getpid() << 32);
	d->inc = inc;
	d->buf = malloc(d->o.mtu + 64);
	if (!d->buf)
		return IPD_EXIT_ERR;
	err = open_device(d);
	if (!err)
		err = setup_fabric(d);
	if (err)
		return IPD_EXIT_ERR;
	if (d->num_nodes > IPD_MAX_NODES)
		d->num_nodes = IPD_MAX_NODES;
	d->peers = calloc(d->num_nodes, sizeof(*d->peers));
	d->active = calloc(d->num_nodes, sizeof(*d->active));
	if (!d->peers || !d->active)
		return IPD_EXIT_ERR;
	if (!d->o.addr_set) {
		d->o.addr = htonl(ntohl(inet_addr("10.43.0.0")) + d->node + 1);
		d->o.prefix = 16;
	}
	d->ip = d->o.addr;
	d->netmask = htonl(~0u << (32 - d->o.prefix));
	if (setup_tun(d) || setup_heartbeat(d))
		return IPD_EXIT_ERR;
	setup_kpath(d);
#ifdef EXANET_HAVE_EVENTS
	if (d->o.mode == MODE_IRQ) {
		err = setup_irq(d);
		if (err == -EOPNOTSUPP && !d->o.mode_set) {
			/* the default: fall back to the next cheapest wait */
			ipd_log(LOG_I, "the NI has no interrupts: sleep mode");
			d->o.mode = MODE_SLEEP;
		} else if (err) {
			return err == -EOPNOTSUPP ? IPD_EXIT_USAGE : IPD_EXIT_ERR;
		}
	}
#endif
	setup_sched(d);
	mkdir(d->o.run_dir, 0755);
	if (setup_signals(&d->o))
		return IPD_EXIT_ERR;
	d->start_ns = exa_clock_ns();
	write_pidfile(d, 0);
	ipd_status_write(d);
	{
		char ip[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &d->ip, ip, sizeof(ip));
		ipd_log(LOG_I, "%s %s/%u mtu %u on node %u of %u, PDID %u, rank %u, mode %s, "
			"sched %s nice %d, incarnation %016llx", d->o.ifname, ip, d->o.prefix,
			d->o.mtu, d->node, d->num_nodes, d->pdid, d->rank, mode_name(d->o.mode),
			sched_name(sched_getscheduler(0)), getpriority(PRIO_PROCESS, 0),
			(unsigned long long)d->inc);
	}
	if (ready_fd >= 0) {
		int fd = open("/dev/null", O_RDWR);

		if (write(ready_fd, "r", 1) != 1)
			ipd_log(LOG_W, "parent gone");
		close(ready_fd);
		/*
		 * A daemon keeps none of its starter's descriptors: whoever
		 * waits for the end of that output (a shell pipe, the guest
		 * agent) would wait for ours.  Stray stderr goes to the log.
		 */
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(log_fp && !log_syslog ? fileno(log_fp) : fd, 2);
			if (fd > 2)
				close(fd);
		}
	}
	run(d);
	ipd_log(LOG_I, "stopping");
	ipd_goodbye(d);
	d->stopped = 1;
	ipd_status_write(d);
	write_pidfile(d, 1);
	exanet_close(d->dev);
	close(d->tunfd);
	return IPD_EXIT_OK;
}

/* Exposed for ipd_status.c */
const char *ipd_mode_name(enum ipd_mode m)
{
	return mode_name(m);
}
