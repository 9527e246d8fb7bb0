/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The 3D torus the fabric's nodes sit in: coordinates, six link ports per
 * node, dimension-order routing with detours around cables that are down,
 * and the links themselves (rate, latency, faults, counters).  Plain POSIX
 * C like fabric.c, which calls it for every packet it sends.
 *
 * The links are modelled in shared memory that every sender charges (not
 * forwarded hop by hop by the neighbours' models): <dir>/links holds one
 * record per node (its QEMU's pid) and one per link port.  A sender works
 * out the route, checks each cable on it, draws the cable's faults,
 * reserves the cable's time (rate) and adds its latency, counts the packet
 * on every port it crosses, and hands the packet straight to the
 * destination's ring with the hop count and the time at which it may be
 * delivered (Documentation/fabric.md).  A port's settings are written only
 * by its node (the owner); its counters by every sender whose route
 * crosses it (atomics).
 *
 * Node n sits at x = n % X, y = (n / X) % Y, z = n / (X * Y).
 */
#ifndef EXANET_FABRIC_TORUS_H
#define EXANET_FABRIC_TORUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "exa_torus.h"

#define FABRIC_TORUS_MAX_DIM 255 /* per dimension (8-bit register fields) */
#define FABRIC_MAX_ROUTE 1024    /* hops of the longest detour kept */

/* What a packet met on its way (fabric_torus_route()). */
enum fabric_route_fate {
    FABRIC_ROUTE_OK,
    FABRIC_ROUTE_DROPPED, /* a cable's injected drop */
    FABRIC_ROUTE_CORRUPT, /* a cable flipped a bit (delivered, CRC fails) */
    FABRIC_ROUTE_NONE,    /* every path cut: not sent */
};

struct fabric_route_result {
    enum fabric_route_fate fate;
    unsigned hops;
    bool detour;     /* not the dimension-order route */
    uint64_t due_ns; /* CLOCK_MONOTONIC: may be delivered from */
};

/* One port as the owner node and its guest see it. */
struct fabric_port_info {
    uint32_t state; /* EXA_PORT_* bits */
    uint32_t peer;
    uint32_t mbps, ns, drop_ppm, corrupt_ppm;
    uint64_t counters[EXA_NUM_PORT_COUNTERS];
};

struct fabric_torus;

/*
 * "XxYxZ" (each 1..FABRIC_TORUS_MAX_DIM); num_nodes must be the product.
 * Returns 0 or -EINVAL with a message in err.
 */
int fabric_torus_parse(const char *shape, uint32_t num_nodes, uint32_t dims[3],
                       char *err, size_t errlen);
/* The documented default: the most cube-like X >= Y >= Z for n nodes. */
void fabric_torus_default_shape(uint32_t num_nodes, uint32_t dims[3]);
int fabric_port_parse(const char *name); /* "x+" .. "z-", or -1 */
const char *fabric_port_name(unsigned port);

/*
 * Map (create) <dir>/links for a torus of dims and claim node's records:
 * its ports up, rate mbps (0 = unlimited), latency ns.  Fails with a
 * message when a running node of the same directory uses another shape.
 */
int fabric_torus_open(struct fabric_torus **out, const char *dir, uint32_t node,
                      const uint32_t dims[3], uint32_t mbps, uint32_t ns,
                      uint64_t seed, char *err, size_t errlen);
/* Marks the node's ports down for the others (the node leaves). */
void fabric_torus_close(struct fabric_torus *t);

void fabric_torus_dims(const struct fabric_torus *t, uint32_t dims[3]);
void fabric_torus_coords(const struct fabric_torus *t, uint32_t node,
                         uint32_t c[3]);
/* The node port leads to (node itself for an unused port). */
uint32_t fabric_torus_neighbour(const struct fabric_torus *t, uint32_t node,
                                unsigned port);
/* Hops of the dimension-order route between two nodes. */
unsigned fabric_torus_distance(const struct fabric_torus *t, uint32_t a,
                               uint32_t b);

/*
 * Route a packet of bytes to dst now: pick the path (dimension order, or
 * a detour), draw faults, charge rate and latency, count it on each port.
 */
void fabric_torus_route(struct fabric_torus *t, uint32_t dst, size_t bytes,
                        struct fabric_route_result *res);
/*
 * The same for bytes that travel from node src to dst on this node's
 * behalf: the answer of a read this node's NI does in src's memory itself
 * (direct delivery).
 */
void fabric_torus_route_from(struct fabric_torus *t, uint32_t src,
                             uint32_t dst, size_t bytes,
                             struct fabric_route_result *res);

/* A cable on the route to dst is booked beyond now + horizon_ns. */
bool fabric_torus_booked(struct fabric_torus *t, uint32_t dst,
                         uint64_t horizon_ns);
bool fabric_torus_booked_from(struct fabric_torus *t, uint32_t src,
                              uint32_t dst, uint64_t horizon_ns);

/* The owner's settings of one of its ports (-EINVAL: bad port / values). */
int fabric_torus_set_port(struct fabric_torus *t, unsigned port, bool up,
                          uint32_t mbps, uint32_t ns, uint32_t drop_ppm,
                          uint32_t corrupt_ppm);
void fabric_torus_port_info(struct fabric_torus *t, unsigned port,
                            struct fabric_port_info *info);

#endif
