/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The 3D-torus link block of both NICs (uapi/exa_torus.h), shared by
 * exanet.ko and extoll.ko and exported by exa_core.ko (symbol namespace
 * EXA_CORE):
 *
 *  - struct exa_links: where the block is and which lock guards it;
 *    register readers for the drivers' own reports (netlink);
 *  - struct exa_links_sysfs: its view under a class device:
 *      torus, coords, rx_hops, no_route
 *      links/<port>/state, admin, peer, peer_alive, mbps, ns, drop_ppm,
 *                   corrupt_ppm and one file per port counter
 *
 * A device without the block (an older model) reads EXA_TORUS_NUM_PORTS
 * as 0: exa_links_present() is false and the view is empty.
 */
#ifndef _EXA_LINKS_H
#define _EXA_LINKS_H

#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/mutex.h>
#include <linux/sysfs.h>
#include <linux/types.h>

#include <exa_torus.h>

struct exa_links {
	void __iomem *regs;		/* BAR0 + EXA_TORUS_BASE; NULL: no block */
	struct mutex *lock;		/* the driver's lock of all register access */
	const bool *dead;		/* set under *lock once the NIC is gone */
	u32 shape;			/* EXA_TORUS_SHAPE, fixed for a device */
	u32 coord;			/* EXA_TORUS_COORD */
};

/* One port as the registers give it (exa_links_read_port()). */
struct exa_links_port_state {
	u32 state;			/* EXA_PORT_* bits */
	u32 peer;
	u32 mbps;
	u32 ns;
	u32 drop_ppm;
	u32 corrupt_ppm;
	u64 counters[EXA_NUM_PORT_COUNTERS];
};

void exa_links_init(struct exa_links *links, struct device *dev,
		    void __iomem *bar0, struct mutex *lock, const bool *dead);

static inline bool exa_links_present(const struct exa_links *links)
{
	return links->regs;
}

const char *exa_links_port_name(unsigned int port);

/* Callers hold *links->lock and have checked !*links->dead. */
void exa_links_read_port(const struct exa_links *links, unsigned int port,
			 struct exa_links_port_state *ps);
u64 exa_links_rx_hops(const struct exa_links *links, unsigned int hops);
u64 exa_links_no_route(const struct exa_links *links);

/* The files of a port directory: register values, then the counters. */
enum exa_links_port_file {
	EXA_LINKS_FILE_STATE,
	EXA_LINKS_FILE_ADMIN,
	EXA_LINKS_FILE_PEER,
	EXA_LINKS_FILE_PEER_ALIVE,
	EXA_LINKS_FILE_MBPS,
	EXA_LINKS_FILE_NS,
	EXA_LINKS_FILE_DROP_PPM,
	EXA_LINKS_FILE_CORRUPT_PPM,
	EXA_LINKS_FILE_COUNTER0,	/* + n: port counter n */
	EXA_LINKS_PORT_FILES = EXA_LINKS_FILE_COUNTER0 + EXA_NUM_PORT_COUNTERS
};

struct exa_links_port_attr {
	struct attribute attr;
	enum exa_links_port_file file;
};

struct exa_links_port;

/*
 * Embedded in the driver's structure of the class device; the attribute
 * names come from the uapi tables, so the attributes are built at run time.
 */
struct exa_links_sysfs {
	const struct exa_links *links;
	struct device *dev;		/* NULL: not added */
	struct device_attribute torus, coords, rx_hops, no_route;
	struct attribute *dev_attrs[5];
	struct attribute_group dev_group;
	struct kobject *dir;		/* links/ */
	struct exa_links_port *ports[EXA_NUM_PORTS];
	struct exa_links_port_attr port_attrs[EXA_LINKS_PORT_FILES];
	struct attribute *port_attr_list[EXA_LINKS_PORT_FILES + 1];
	struct attribute_group port_group;
};

/*
 * Adds the view under @dev (after device_add(); nothing if the NIC has no
 * link block).  Remove it before the device is deleted and BAR0 unmapped;
 * removing a view that was not added is a no-op.
 */
int exa_links_sysfs_add(struct exa_links_sysfs *view,
			const struct exa_links *links, struct device *dev);
void exa_links_sysfs_remove(struct exa_links_sysfs *view);

#endif /* _EXA_LINKS_H */
