// SPDX-License-Identifier: MIT
/* Out-of-band exchange over TCP for the examples: see oob.h. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "oob.h"

/* Reads and writes give up after OOB_TIMEOUT_S instead of hanging. */
static int oob_set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = OOB_TIMEOUT_S };

	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	       setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int oob_listen(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct pollfd pfd = { .events = POLLIN };
	int one = 1, fd;

	pfd.fd = socket(AF_INET, SOCK_STREAM, 0);
	if (pfd.fd < 0)
		return -1;
	/* A restarted server must not wait for the last run's TIME_WAIT. */
	setsockopt(pfd.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(pfd.fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(pfd.fd, 1)) {
		close(pfd.fd);
		return -1;
	}
	if (poll(&pfd, 1, OOB_TIMEOUT_S * 1000) != 1) {
		close(pfd.fd);
		errno = ETIMEDOUT;
		return -1;
	}
	fd = accept(pfd.fd, NULL, NULL);
	close(pfd.fd);
	return fd;
}

/* The server may start later than the client: retry until the deadline. */
static int oob_dial(const char *server, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	time_t deadline = time(NULL) + OOB_TIMEOUT_S;
	struct addrinfo *ai;
	char service[16];
	int fd, rc;

	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(server, service, &hints, &ai);
	if (rc) {
		fprintf(stderr, "oob: %s: %s\n", server, gai_strerror(rc));
		errno = EINVAL;
		return -1;
	}
	do {
		fd = socket(ai->ai_family, ai->ai_socktype, 0);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
		nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
	} while (time(NULL) < deadline);
	freeaddrinfo(ai);
	return fd;
}

int oob_connect(const char *server, int port, int *is_server)
{
	char me[256] = "";
	int fd;

	gethostname(me, sizeof(me) - 1);
	*is_server = strcmp(me, server) == 0;
	fd = *is_server ? oob_listen(port) : oob_dial(server, port);
	if (fd < 0 || oob_set_timeouts(fd)) {
		fprintf(stderr, "oob: %s %s port %d: %s\n", *is_server ? "listening as" : "connecting to",
			server, port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int oob_exchange(int fd, const void *mine, void *peer, size_t len)
{
	const char *out = mine;
	char *in = peer;
	ssize_t n;

	/* The records are small: the write fits the socket buffer at once. */
	for (size_t done = 0; done < len; done += (size_t)n) {
		n = write(fd, out + done, len - done);
		if (n <= 0)
			goto fail;
	}
	for (size_t done = 0; done < len; done += (size_t)n) {
		n = read(fd, in + done, len - done);
		if (n <= 0)
			goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "oob: exchange with the peer failed: %s\n",
		n == 0 ? "connection closed" : strerror(errno));
	return -1;
}

static const char *outcome(long bad)
{
	return bad < 0 ? "error" : bad ? "wrong bytes" : "ok";
}

int oob_verdict(int fd, long bad, const char *what)
{
	long peer_bad = -1;

	oob_exchange(fd, &bad, &peer_bad, sizeof(bad));
	if (bad == 0 && peer_bad == 0) {
		printf("ok %s\n", what);
		return 0;
	}
	printf("FAIL %s: %s here, %s at the peer\n", what, outcome(bad), outcome(peer_bad));
	return -1;
}
