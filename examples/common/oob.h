/* SPDX-License-Identifier: MIT */
/*
 * Out-of-band exchange for the examples: before two processes can reach
 * each other over the NI they must learn each other's NI address (a
 * libfabric address, or the EXTOLL node, VPID and buffer NLA).  A TCP
 * connection over the management network carries those few bytes.
 *
 * Both nodes run the same command line naming the server's host: the node
 * whose hostname is that name listens, the other connects (retrying until
 * the server is up), so `exacluster run --all` can start both at once.
 */
#ifndef EXAMPLES_OOB_H
#define EXAMPLES_OOB_H

#include <stddef.h>

/* Seconds a process waits for its peer (connect, accept, each read). */
#define OOB_TIMEOUT_S 60

/*
 * Connect to the peer: listen on @port when this host is @server, else
 * connect to @server:@port.  Sets *is_server; returns the socket or -1
 * (after printing why).
 */
int oob_connect(const char *server, int port, int *is_server);

/* Send @len bytes of @mine and read @len bytes into @peer; 0 or -1. */
int oob_exchange(int fd, const void *mine, void *peer, size_t len);

/*
 * Swap verdicts with the peer (bad bytes seen, -1 for an error) and print
 * the one line: "ok @what" or "FAIL @what: ... here, ... at the peer".
 * Returns 0 when both sides are right.  Waiting for the peer also keeps
 * each side's buffers alive until the other is done with them.
 */
int oob_verdict(int fd, long bad, const char *what);

#endif
