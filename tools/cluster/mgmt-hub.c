// SPDX-License-Identifier: GPL-2.0
/*
 * exanet-mgmt-hub: Ethernet hub/learning switch for the management network of
 * the emulated cluster.  Host-only tool.
 *
 *   exanet-mgmt-hub HUB_SOCKET NODE_SOCKET...
 *
 * Binds a unix datagram socket at HUB_SOCKET.  Every node's QEMU uses
 *   -netdev dgram,id=mgmt,local.type=unix,local.path=NODE_SOCKET,
 *           remote.type=unix,remote.path=HUB_SOCKET
 * so each datagram is one Ethernet frame and its source address tells which
 * port it came from.  Frames are forwarded to the port that learned the
 * destination MAC, otherwise flooded to every other port.  Ports whose socket
 * does not exist yet (node not started) are silently skipped.
 * Exits on SIGTERM/SIGINT, unlinking HUB_SOCKET.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_PORTS 256
#define MAC_TABLE 1024

struct mac_entry {
	uint8_t mac[6];
	int port;
	int used;
};

static struct sockaddr_un ports[MAX_PORTS];
static int nports;
static struct mac_entry table[MAC_TABLE];
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int set_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path)) {
		fprintf(stderr, "exanet-mgmt-hub: path too long: %s\n", path);
		return -1;
	}
	strcpy(sa->sun_path, path);
	return 0;
}

static unsigned int mac_hash(const uint8_t *mac)
{
	unsigned int h = 2166136261u;

	for (int i = 0; i < 6; i++)
		h = (h ^ mac[i]) * 16777619u;
	return h % MAC_TABLE;
}

static void learn(const uint8_t *mac, int port)
{
	unsigned int h = mac_hash(mac);

	if (mac[0] & 1)
		return;		/* multicast source: bogus */
	for (unsigned int i = 0; i < MAC_TABLE; i++) {
		struct mac_entry *e = &table[(h + i) % MAC_TABLE];

		if (!e->used || !memcmp(e->mac, mac, 6)) {
			memcpy(e->mac, mac, 6);
			e->port = port;
			e->used = 1;
			return;
		}
	}
}

static int lookup(const uint8_t *mac)
{
	unsigned int h = mac_hash(mac);

	if (mac[0] & 1)
		return -1;
	for (unsigned int i = 0; i < MAC_TABLE; i++) {
		struct mac_entry *e = &table[(h + i) % MAC_TABLE];

		if (!e->used)
			return -1;
		if (!memcmp(e->mac, mac, 6))
			return e->port;
	}
	return -1;
}

static int port_of(const struct sockaddr_un *sa, socklen_t len)
{
	if (len <= offsetof(struct sockaddr_un, sun_path))
		return -1;
	for (int i = 0; i < nports; i++)
		if (!strncmp(ports[i].sun_path, sa->sun_path, sizeof(sa->sun_path)))
			return i;
	return -1;
}

int main(int argc, char **argv)
{
	static uint8_t buf[65536];
	struct sockaddr_un hub;
	struct sigaction sa;
	int fd;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: exanet-mgmt-hub HUB_SOCKET NODE_SOCKET...\n"
		       "Forward Ethernet frames between QEMU dgram unix-socket netdevs.\n");
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: exanet-mgmt-hub HUB_SOCKET NODE_SOCKET...\n");
		return 2;
	}
	if (argc - 2 > MAX_PORTS) {
		fprintf(stderr, "exanet-mgmt-hub: at most %d ports\n", MAX_PORTS);
		return 2;
	}
	if (set_addr(&hub, argv[1]))
		return 2;
	for (int i = 2; i < argc; i++)
		if (set_addr(&ports[nports++], argv[i]))
			return 2;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("exanet-mgmt-hub: socket");
		return 1;
	}
	unlink(argv[1]);
	if (bind(fd, (struct sockaddr *)&hub, sizeof(hub)) < 0) {
		perror("exanet-mgmt-hub: bind");
		return 1;
	}

	while (!stop) {
		struct sockaddr_un from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
		int src, dst;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("exanet-mgmt-hub: recvfrom");
			break;
		}
		if (n < 14)
			continue;
		src = port_of(&from, flen);
		if (src < 0)
			continue;	/* not one of ours */
		learn(buf + 6, src);
		dst = lookup(buf);
		for (int i = 0; i < nports; i++) {
			if (i == src || (dst >= 0 && i != dst))
				continue;
			/* Unreachable/absent ports and full queues drop the frame. */
			(void)sendto(fd, buf, (size_t)n, MSG_DONTWAIT,
				     (struct sockaddr *)&ports[i], sizeof(ports[i]));
		}
	}
	close(fd);
	unlink(argv[1]);
	return 0;
}
