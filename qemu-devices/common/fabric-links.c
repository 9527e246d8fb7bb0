/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A NIC's view of the torus (fabric-torus.h): the link block in BAR0
 * (uapi/exa_torus.h) and the QOM properties that show and change the
 * node's six link ports at run time (qom-set over QMP, exacluster fault).
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/cutils.h"
#include "fabric-nic.h"
#include "fabric-torus.h"
#include "trace.h"

/* Longest hop latency a link may be given (link-ns, link-P-ns): 10 ms. */
#define FABRIC_LINK_NS_LIMIT    10000000u

static FabricNic *fabric_links_nic(Object *obj, void *opaque)
{
    return (FabricNic *)((char *)obj + (uintptr_t)opaque);
}

static struct fabric_torus *fabric_links_torus(FabricNic *nic)
{
    return nic->fq ? fabric_torus(fabric_qemu_fabric(nic->fq)) : NULL;
}

bool fabric_links_check(FabricNic *nic, const char *type, uint32_t dims[3],
                        Error **errp)
{
    char err[160];

    if (nic->link_ns > FABRIC_LINK_NS_LIMIT) {
        error_setg(errp, "%s: link-ns must be at most %u", type,
                   FABRIC_LINK_NS_LIMIT);
        return false;
    }
    if (!nic->torus || !nic->torus[0]) {
        fabric_torus_default_shape(nic->num_nodes, dims);
        return true;
    }
    if (fabric_torus_parse(nic->torus, nic->num_nodes, dims, err,
                           sizeof(err)) < 0) {
        error_setg(errp, "%s: %s (num-nodes %u)", type, err, nic->num_nodes);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* The link block in BAR0 */

static void fabric_links_shape(FabricNic *nic, uint32_t dims[3],
                               uint32_t coords[3])
{
    struct fabric_torus *t = fabric_links_torus(nic);

    if (t) {
        fabric_torus_dims(t, dims);
        fabric_torus_coords(t, nic->node_id, coords);
    } else {
        dims[0] = dims[1] = dims[2] = 1;
        coords[0] = coords[1] = coords[2] = 0;
    }
}

static uint64_t fabric_links_read64(FabricNic *nic, hwaddr off)
{
    struct fabric_torus *t = fabric_links_torus(nic);
    struct fabric_port_info info;
    uint32_t dims[3], c[3];

    if ((off >= EXA_TORUS_RX_HOPS(0) &&
         off < EXA_TORUS_RX_HOPS(EXA_TORUS_MAX_HOPS)) ||
        off == EXA_TORUS_NO_ROUTE) {
        struct fabric_stats st;

        if (!t) {
            return 0;
        }
        fabric_get_stats(fabric_qemu_fabric(nic->fq), &st);
        if (off == EXA_TORUS_NO_ROUTE) {
            return st.tx_no_route;
        }
        /* and what peers wrote into us directly (fabric-direct.h) */
        return st.rx_hops[(off - EXA_TORUS_RX_HOPS(0)) / 8] +
               fabric_direct_rx_hops(nic->dd, (off - EXA_TORUS_RX_HOPS(0)) / 8);
    }
    if (off >= EXA_TORUS_PORT(0) && off < EXA_TORUS_PORT(EXA_NUM_PORTS)) {
        unsigned port = (off - EXA_TORUS_PORT(0)) / 0x80;
        hwaddr r = (off - EXA_TORUS_PORT(0)) % 0x80;

        if (!t) {
            return 0;       /* one node: every port unused */
        }
        fabric_torus_port_info(t, port, &info);
        switch (r) {
        case EXA_PORT_STATE:
            return info.state | (uint64_t)info.peer << 32;
        case EXA_PORT_MBPS:
            return info.mbps | (uint64_t)info.ns << 32;
        case EXA_PORT_DROP_PPM:
            return info.drop_ppm | (uint64_t)info.corrupt_ppm << 32;
        }
        if (r >= EXA_PORT_COUNTER(0) &&
            r < EXA_PORT_COUNTER(EXA_NUM_PORT_COUNTERS)) {
            return info.counters[(r - EXA_PORT_COUNTER(0)) / 8];
        }
        return 0;
    }
    fabric_links_shape(nic, dims, c);
    switch (off) {
    case EXA_TORUS_SHAPE:
        return dims[0] | dims[1] << 8 | dims[2] << 16 |
               (uint64_t)(c[0] | c[1] << 8 | c[2] << 16) << 32;
    case EXA_TORUS_NUM_PORTS:
        return EXA_NUM_PORTS;
    }
    return 0;
}

uint64_t fabric_links_read(FabricNic *nic, hwaddr off, unsigned size)
{
    uint64_t v = fabric_links_read64(nic, off & ~7ull);

    if (size == 8) {
        return v;
    }
    return (uint32_t)(off & 4 ? v >> 32 : v);
}

/* ------------------------------------------------------------------ */
/*
 * Properties: link-P (up/down), link-P-{mbps,ns,drop-ppm,corrupt-ppm},
 * link-P-state, link-P-counters, torus-coords, rx-hops, no-route
 */

static const char *const fabric_link_settings[] = {
    "mbps", "ns", "drop-ppm", "corrupt-ppm",
};

/* The port and the setting ("" for link-P) a property name is about. */
static unsigned fabric_links_port(const char *name, const char **what)
{
    char p[3] = { name[5], name[6], 0 };    /* "link-" P */
    int port = fabric_port_parse(p);

    assert(port >= 0);
    *what = name[7] ? name + 8 : "";
    return port;
}

/*
 * The torus, the port a link-P... property is about and that port's state
 * now; NULL (errp set) on a node without a fabric.
 */
static struct fabric_torus *fabric_links_prop(Object *obj, void *opaque,
                                              const char *name,
                                              unsigned *port, const char **what,
                                              struct fabric_port_info *info,
                                              Error **errp)
{
    struct fabric_torus *t = fabric_links_torus(fabric_links_nic(obj, opaque));

    if (!t) {
        error_setg(errp, "%s: this node has no fabric (property fabric)",
                   name);
        return NULL;
    }
    *port = fabric_links_port(name, what);
    fabric_torus_port_info(t, *port, info);
    return t;
}

static void fabric_links_get(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    struct fabric_port_info info;
    const char *what;
    unsigned port;
    g_autofree char *str = NULL;
    uint32_t val;

    if (!fabric_links_prop(obj, opaque, name, &port, &what, &info, errp)) {
        return;
    }
    if (!what[0]) {
        str = g_strdup(info.state & EXA_PORT_ADMIN_UP ? "up" : "down");
    } else if (!strcmp(what, "state")) {
        str = g_strdup(!(info.state & EXA_PORT_USED) ? "unused" :
                       info.state & EXA_PORT_UP ? "up" : "down");
    } else if (!strcmp(what, "counters")) {
        static const char *const names[] = { EXA_PORT_COUNTER_NAMES_INIT };
        GString *s = g_string_new(NULL);

        g_string_append_printf(s, "peer=%u", info.peer);
        for (unsigned i = 0; i < EXA_NUM_PORT_COUNTERS; i++) {
            g_string_append_printf(s, " %s=%" PRIu64, names[i],
                                   info.counters[i]);
        }
        str = g_string_free(s, false);
    }
    if (str) {
        visit_type_str(v, name, &str, errp);
        return;
    }
    val = !strcmp(what, "mbps") ? info.mbps :
          !strcmp(what, "ns") ? info.ns :
          !strcmp(what, "drop-ppm") ? info.drop_ppm : info.corrupt_ppm;
    visit_type_uint32(v, name, &val, errp);
}

static void fabric_links_set(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    FabricNic *nic = fabric_links_nic(obj, opaque);
    struct fabric_port_info info;
    struct fabric_torus *t;
    const char *what;
    unsigned port;
    bool up;
    uint32_t val = 0;

    t = fabric_links_prop(obj, opaque, name, &port, &what, &info, errp);
    if (!t) {
        return;
    }
    up = info.state & EXA_PORT_ADMIN_UP;
    if (!what[0]) {
        g_autofree char *str = NULL;

        if (!visit_type_str(v, name, &str, errp)) {
            return;
        }
        if (strcmp(str, "up") && strcmp(str, "down")) {
            error_setg(errp, "%s must be up or down, not '%s'", name, str);
            return;
        }
        up = !strcmp(str, "up");
    } else {
        if (!visit_type_uint32(v, name, &val, errp)) {
            return;
        }
        if (strstr(what, "ppm") && val > FABRIC_PPM) {
            error_setg(errp, "%s must be 0..%u, not %u", name, FABRIC_PPM,
                       val);
            return;
        }
        if (!strcmp(what, "ns") && val > FABRIC_LINK_NS_LIMIT) {
            error_setg(errp, "%s must be 0..%u, not %u", name,
                       FABRIC_LINK_NS_LIMIT, val);
            return;
        }
        if (!strcmp(what, "mbps")) {
            info.mbps = val;
        } else if (!strcmp(what, "ns")) {
            info.ns = val;
        } else if (!strcmp(what, "drop-ppm")) {
            info.drop_ppm = val;
        } else {
            info.corrupt_ppm = val;
        }
    }
    fabric_torus_set_port(t, port, up, info.mbps, info.ns, info.drop_ppm,
                          info.corrupt_ppm);
    trace_fabric_link_set(nic->node_id, fabric_port_name(port), up, info.mbps,
                          info.ns, info.drop_ppm, info.corrupt_ppm);
}

static void fabric_links_get_node(Object *obj, Visitor *v, const char *name,
                                  void *opaque, Error **errp)
{
    FabricNic *nic = fabric_links_nic(obj, opaque);
    g_autofree char *str = NULL;
    uint32_t dims[3], c[3];

    if (!strcmp(name, "no-route")) {
        uint64_t val = fabric_links_read64(nic, EXA_TORUS_NO_ROUTE);

        visit_type_uint64(v, name, &val, errp);
        return;
    }
    if (!strcmp(name, "torus-coords")) {
        fabric_links_shape(nic, dims, c);
        str = g_strdup_printf("%u,%u,%u", c[0], c[1], c[2]);
    } else {
        GString *s = g_string_new(NULL);

        for (unsigned h = 0; h < EXA_TORUS_MAX_HOPS; h++) {
            g_string_append_printf(s, "%s%" PRIu64, h ? " " : "",
                                   fabric_links_read64(nic,
                                                       EXA_TORUS_RX_HOPS(h)));
        }
        str = g_string_free(s, false);
    }
    visit_type_str(v, name, &str, errp);
}

void fabric_links_class_init(ObjectClass *oc, size_t nic_offset)
{
    void *off = (void *)(uintptr_t)nic_offset;

    for (unsigned p = 0; p < EXA_NUM_PORTS; p++) {
        const char *port = fabric_port_name(p);
        g_autofree char *admin = g_strdup_printf("link-%s", port);
        g_autofree char *state = g_strdup_printf("link-%s-state", port);
        g_autofree char *counters = g_strdup_printf("link-%s-counters", port);

        object_class_property_add(oc, admin, "str", fabric_links_get,
                                  fabric_links_set, NULL, off);
        object_class_property_set_description(oc, admin,
            "this end of the cable: up or down (qom-set at run time)");
        object_class_property_add(oc, state, "str", fabric_links_get, NULL,
                                  NULL, off);
        object_class_property_add(oc, counters, "str", fabric_links_get,
                                  NULL, NULL, off);
        for (size_t i = 0; i < ARRAY_SIZE(fabric_link_settings); i++) {
            g_autofree char *n = g_strdup_printf("link-%s-%s", port,
                                                 fabric_link_settings[i]);

            object_class_property_add(oc, n, "uint32", fabric_links_get,
                                      fabric_links_set, NULL, off);
        }
    }
    object_class_property_add(oc, "torus-coords", "str",
                              fabric_links_get_node, NULL, NULL, off);
    object_class_property_add(oc, "rx-hops", "str", fabric_links_get_node,
                              NULL, NULL, off);
    object_class_property_add(oc, "no-route", "uint64", fabric_links_get_node,
                              NULL, NULL, off);
}
