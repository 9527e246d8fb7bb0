// SPDX-License-Identifier: GPL-2.0
/*
 * The 3D-torus link block of both NICs (exa_links.h): register readers and
 * the sysfs view.  The port directories are kobjects of their own because
 * an attribute group gives only one level of subdirectory (links/x+/state
 * needs two).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "exa_dbg.h"
#include "exa_links.h"

static const char * const exa_port_names[EXA_NUM_PORTS] = {
	EXA_PORT_NAMES_INIT
};

static const char * const exa_port_counter_names[EXA_NUM_PORT_COUNTERS] = {
	EXA_PORT_COUNTER_NAMES_INIT
};

static const char * const exa_port_file_names[EXA_LINKS_FILE_COUNTER0] = {
	[EXA_LINKS_FILE_STATE]		= "state",
	[EXA_LINKS_FILE_ADMIN]		= "admin",
	[EXA_LINKS_FILE_PEER]		= "peer",
	[EXA_LINKS_FILE_PEER_ALIVE]	= "peer_alive",
	[EXA_LINKS_FILE_MBPS]		= "mbps",
	[EXA_LINKS_FILE_NS]		= "ns",
	[EXA_LINKS_FILE_DROP_PPM]	= "drop_ppm",
	[EXA_LINKS_FILE_CORRUPT_PPM]	= "corrupt_ppm",
};

/* The register behind each file that is not a counter. */
static const u8 exa_port_file_regs[EXA_LINKS_FILE_COUNTER0] = {
	[EXA_LINKS_FILE_STATE]		= EXA_PORT_STATE,
	[EXA_LINKS_FILE_ADMIN]		= EXA_PORT_STATE,
	[EXA_LINKS_FILE_PEER]		= EXA_PORT_PEER,
	[EXA_LINKS_FILE_PEER_ALIVE]	= EXA_PORT_STATE,
	[EXA_LINKS_FILE_MBPS]		= EXA_PORT_MBPS,
	[EXA_LINKS_FILE_NS]		= EXA_PORT_NS,
	[EXA_LINKS_FILE_DROP_PPM]	= EXA_PORT_DROP_PPM,
	[EXA_LINKS_FILE_CORRUPT_PPM]	= EXA_PORT_CORRUPT_PPM,
};

/* ------------------------------------------------------------ registers */

/* At probe, before the device is visible: no lock needed yet. */
void exa_links_init(struct exa_links *links, struct device *dev,
		    void __iomem *bar0, struct mutex *lock, const bool *dead)
{
	void __iomem *regs = bar0 + EXA_TORUS_BASE;
	u32 nports;

	memset(links, 0, sizeof(*links));
	links->lock = lock;
	links->dead = dead;
	nports = ioread32(regs + EXA_TORUS_NUM_PORTS);
	if (!nports)		/* an older device model: no links to show */
		return;
	if (nports != EXA_NUM_PORTS) {
		dev_warn(dev, "torus link block with %u ports ignored\n",
			 nports);
		return;
	}
	links->regs = regs;
	links->shape = ioread32(regs + EXA_TORUS_SHAPE);
	links->coord = ioread32(regs + EXA_TORUS_COORD);
}
EXPORT_SYMBOL_NS_GPL(exa_links_init, EXA_CORE);

const char *exa_links_port_name(unsigned int port)
{
	return port < EXA_NUM_PORTS ? exa_port_names[port] : "?";
}
EXPORT_SYMBOL_NS_GPL(exa_links_port_name, EXA_CORE);

static void __iomem *exa_port_regs(const struct exa_links *links,
				   unsigned int port)
{
	return links->regs + EXA_TORUS_PORT(port);
}

void exa_links_read_port(const struct exa_links *links, unsigned int port,
			 struct exa_links_port_state *ps)
{
	void __iomem *regs = exa_port_regs(links, port);
	unsigned int n;

	lockdep_assert_held(links->lock);
	ps->state = ioread32(regs + EXA_PORT_STATE);
	ps->peer = ioread32(regs + EXA_PORT_PEER);
	ps->mbps = ioread32(regs + EXA_PORT_MBPS);
	ps->ns = ioread32(regs + EXA_PORT_NS);
	ps->drop_ppm = ioread32(regs + EXA_PORT_DROP_PPM);
	ps->corrupt_ppm = ioread32(regs + EXA_PORT_CORRUPT_PPM);
	for (n = 0; n < EXA_NUM_PORT_COUNTERS; n++)
		ps->counters[n] = lo_hi_readq(regs + EXA_PORT_COUNTER(n));
}
EXPORT_SYMBOL_NS_GPL(exa_links_read_port, EXA_CORE);

u64 exa_links_rx_hops(const struct exa_links *links, unsigned int hops)
{
	lockdep_assert_held(links->lock);
	return lo_hi_readq(links->regs + EXA_TORUS_RX_HOPS(hops));
}
EXPORT_SYMBOL_NS_GPL(exa_links_rx_hops, EXA_CORE);

u64 exa_links_no_route(const struct exa_links *links)
{
	lockdep_assert_held(links->lock);
	return lo_hi_readq(links->regs + EXA_TORUS_NO_ROUTE);
}
EXPORT_SYMBOL_NS_GPL(exa_links_no_route, EXA_CORE);

/* ------------------------------------------------------ device files */

static ssize_t exa_links_torus_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	struct exa_links_sysfs *view = container_of(attr, struct exa_links_sysfs,
						    torus);
	u32 shape = view->links->shape;

	return sysfs_emit(buf, "%ux%ux%u\n", EXA_TORUS_DIM(shape, 0),
			  EXA_TORUS_DIM(shape, 1), EXA_TORUS_DIM(shape, 2));
}

static ssize_t exa_links_coords_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	struct exa_links_sysfs *view = container_of(attr, struct exa_links_sysfs,
						    coords);
	u32 coord = view->links->coord;

	return sysfs_emit(buf, "%u,%u,%u\n", EXA_TORUS_DIM(coord, 0),
			  EXA_TORUS_DIM(coord, 1), EXA_TORUS_DIM(coord, 2));
}

static ssize_t exa_links_rx_hops_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	struct exa_links_sysfs *view = container_of(attr, struct exa_links_sysfs,
						    rx_hops);
	const struct exa_links *links = view->links;
	unsigned int h;
	ssize_t len = 0;

	mutex_lock(links->lock);
	if (*links->dead) {
		mutex_unlock(links->lock);
		exa_dbg(dev, "device removed\n");
		return -ENODEV;
	}
	for (h = 0; h < EXA_TORUS_MAX_HOPS; h++)
		len += sysfs_emit_at(buf, len, "%s%llu", h ? " " : "",
				     exa_links_rx_hops(links, h));
	mutex_unlock(links->lock);
	len += sysfs_emit_at(buf, len, "\n");
	return len;
}

static ssize_t exa_links_no_route_show(struct device *dev,
				       struct device_attribute *attr, char *buf)
{
	struct exa_links_sysfs *view = container_of(attr, struct exa_links_sysfs,
						    no_route);
	const struct exa_links *links = view->links;
	u64 val;

	mutex_lock(links->lock);
	if (*links->dead) {
		mutex_unlock(links->lock);
		exa_dbg(dev, "device removed\n");
		return -ENODEV;
	}
	val = exa_links_no_route(links);
	mutex_unlock(links->lock);
	return sysfs_emit(buf, "%llu\n", val);
}

/* ------------------------------------------------------- port files */

struct exa_links_port {
	struct kobject kobj;		/* links/<port name> */
	const struct exa_links *links;
	unsigned int port;
};

static const char *exa_port_state_name(u32 state)
{
	if (!(state & EXA_PORT_USED))
		return "unused";
	return state & EXA_PORT_UP ? "up" : "down";
}

static ssize_t exa_links_port_show(struct kobject *kobj,
				   struct attribute *attr, char *buf)
{
	struct exa_links_port *lp = container_of(kobj, struct exa_links_port,
						 kobj);
	struct exa_links_port_attr *pa =
		container_of(attr, struct exa_links_port_attr, attr);
	const struct exa_links *links = lp->links;
	void __iomem *regs = exa_port_regs(links, lp->port);
	u64 val;

	mutex_lock(links->lock);
	if (*links->dead) {
		mutex_unlock(links->lock);
		exa_pr_dbg("port %s: device removed\n", exa_links_port_name(lp->port));
		return -ENODEV;
	}
	if (pa->file >= EXA_LINKS_FILE_COUNTER0)
		val = lo_hi_readq(regs + EXA_PORT_COUNTER(pa->file -
							  EXA_LINKS_FILE_COUNTER0));
	else
		val = ioread32(regs + exa_port_file_regs[pa->file]);
	mutex_unlock(links->lock);

	switch (pa->file) {
	case EXA_LINKS_FILE_STATE:
		return sysfs_emit(buf, "%s\n", exa_port_state_name(val));
	case EXA_LINKS_FILE_ADMIN:
		return sysfs_emit(buf, "%s\n",
				  val & EXA_PORT_ADMIN_UP ? "up" : "down");
	case EXA_LINKS_FILE_PEER_ALIVE:
		return sysfs_emit(buf, "%d\n", !!(val & EXA_PORT_PEER_ALIVE));
	default:
		return sysfs_emit(buf, "%llu\n", val);
	}
}

static const struct sysfs_ops exa_links_port_sysfs_ops = {
	.show	= exa_links_port_show,
};

static void exa_links_port_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct exa_links_port, kobj));
}

static const struct kobj_type exa_links_port_ktype = {
	.release	= exa_links_port_release,
	.sysfs_ops	= &exa_links_port_sysfs_ops,
};

/*
 * kobject_del() before the last put: with CONFIG_DEBUG_KOBJECT_RELEASE
 * the release, and the removal from sysfs it would do, comes later, when
 * a read could already find BAR0 unmapped.
 */
static void exa_links_kobject_remove(struct kobject *kobj)
{
	kobject_del(kobj);
	kobject_put(kobj);
}

static int exa_links_port_add(struct exa_links_sysfs *view, unsigned int port)
{
	struct exa_links_port *lp;
	int ret;

	lp = kzalloc(sizeof(*lp), GFP_KERNEL);
	if (!lp)
		return -ENOMEM;
	lp->links = view->links;
	lp->port = port;
	ret = kobject_init_and_add(&lp->kobj, &exa_links_port_ktype, view->dir,
				   "%s", exa_port_names[port]);
	if (ret) {
		kobject_put(&lp->kobj);
		return ret;
	}
	ret = sysfs_create_group(&lp->kobj, &view->port_group);
	if (ret) {
		exa_links_kobject_remove(&lp->kobj);
		return ret;
	}
	view->ports[port] = lp;
	return 0;
}

/* ------------------------------------------------------------- view */

static void exa_links_dev_attr_init(struct device_attribute *da,
				    const char *name,
				    ssize_t (*show)(struct device *dev,
						    struct device_attribute *attr,
						    char *buf))
{
	sysfs_attr_init(&da->attr);
	da->attr.name = name;
	da->attr.mode = 0444;
	da->show = show;
}

static void exa_links_sysfs_init(struct exa_links_sysfs *view)
{
	unsigned int f;

	exa_links_dev_attr_init(&view->torus, "torus", exa_links_torus_show);
	exa_links_dev_attr_init(&view->coords, "coords", exa_links_coords_show);
	exa_links_dev_attr_init(&view->rx_hops, "rx_hops",
				exa_links_rx_hops_show);
	exa_links_dev_attr_init(&view->no_route, "no_route",
				exa_links_no_route_show);
	view->dev_attrs[0] = &view->torus.attr;
	view->dev_attrs[1] = &view->coords.attr;
	view->dev_attrs[2] = &view->rx_hops.attr;
	view->dev_attrs[3] = &view->no_route.attr;
	view->dev_attrs[4] = NULL;
	view->dev_group.attrs = view->dev_attrs;

	for (f = 0; f < EXA_LINKS_PORT_FILES; f++) {
		struct exa_links_port_attr *pa = &view->port_attrs[f];

		sysfs_attr_init(&pa->attr);
		pa->attr.name = f < EXA_LINKS_FILE_COUNTER0 ?
			exa_port_file_names[f] :
			exa_port_counter_names[f - EXA_LINKS_FILE_COUNTER0];
		pa->attr.mode = 0444;
		pa->file = f;
		view->port_attr_list[f] = &pa->attr;
	}
	view->port_attr_list[EXA_LINKS_PORT_FILES] = NULL;
	view->port_group.attrs = view->port_attr_list;
}

static void exa_links_ports_remove(struct exa_links_sysfs *view)
{
	unsigned int p;

	for (p = 0; p < EXA_NUM_PORTS; p++) {
		if (!view->ports[p])
			continue;
		exa_links_kobject_remove(&view->ports[p]->kobj);
		view->ports[p] = NULL;
	}
}

int exa_links_sysfs_add(struct exa_links_sysfs *view,
			const struct exa_links *links, struct device *dev)
{
	unsigned int p;
	int ret;

	memset(view, 0, sizeof(*view));
	if (!exa_links_present(links))
		return 0;
	view->links = links;
	exa_links_sysfs_init(view);

	ret = device_add_group(dev, &view->dev_group);
	if (ret)
		return ret;
	view->dir = kobject_create_and_add("links", &dev->kobj);
	if (!view->dir) {
		ret = -ENOMEM;
		goto remove_group;
	}
	for (p = 0; p < EXA_NUM_PORTS; p++) {
		ret = exa_links_port_add(view, p);
		if (ret)
			goto remove_ports;
	}
	view->dev = dev;
	return 0;

remove_ports:
	exa_links_ports_remove(view);
	exa_links_kobject_remove(view->dir);
remove_group:
	device_remove_group(dev, &view->dev_group);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(exa_links_sysfs_add, EXA_CORE);

/* Returns once no read of the view's files runs or can start. */
void exa_links_sysfs_remove(struct exa_links_sysfs *view)
{
	if (!view->dev)
		return;
	exa_links_ports_remove(view);
	exa_links_kobject_remove(view->dir);
	device_remove_group(view->dev, &view->dev_group);
	view->dev = NULL;
}
EXPORT_SYMBOL_NS_GPL(exa_links_sysfs_remove, EXA_CORE);
