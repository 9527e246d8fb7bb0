/*
 * ExaNet NI: DMA context function (one per rank).
 *
 * A BAR-less conventional PCI function.  It only exists so that the RDMA
 * engine of the NI can master DMA "as" this function: each context sits in
 * its own slot (own IOMMU group), so the kernel driver can attach an
 * unmanaged IOMMU domain per rank and map user pages at their user VA.
 * See uapi/exanet_rdma.h and Documentation/exanet/rdma.md.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qom/object.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet-int.h"

OBJECT_DECLARE_SIMPLE_TYPE(ExanetCtxState, EXANET_CTX)

struct ExanetCtxState {
    PCIDevice parent_obj;
    PCIDevice *ni;          /* link property "ni" */
    uint8_t rank;
    ExanetRdma *rdma;
};

static void exanet_ctx_realize(PCIDevice *pdev, Error **errp)
{
    ExanetCtxState *c = EXANET_CTX(pdev);
    Object *ni = c->ni ? OBJECT(c->ni) : NULL;

    if (!ni) {
        bool ambiguous = false;

        ni = object_resolve_path_type("", TYPE_EXANET, &ambiguous);
        if (!ni) {
            error_setg(errp, "exanet-ctx: %s", ambiguous ?
                       "several exanet devices: set ni=<id>" :
                       "no exanet device (it must come first)");
            return;
        }
    }
    c->rdma = exanet_get_rdma(ni);
    if (!c->rdma) {
        error_setg(errp, "exanet-ctx: ni is not a realized exanet device");
        return;
    }
    if (!exanet_rdma_attach_ctx(c->rdma, c->rank, pdev, errp)) {
        c->rdma = NULL;
        return;
    }
    pci_config_set_interrupt_pin(pdev->config, 0);
    pdev->config[EXANET_CTX_CFG_RANK] = c->rank;
}

/*
 * A read of EXANET_CTX_CFG_RANK is the driver's translation fence
 * (uapi/exanet_rdma.h): after an IOMMU unmap of the rank's domain, no
 * access of a peer goes through a translation our NI cached before.
 */
static uint32_t exanet_ctx_config_read(PCIDevice *pdev, uint32_t addr,
                                       int len)
{
    ExanetCtxState *c = EXANET_CTX(pdev);

    if (c->rdma && addr <= EXANET_CTX_CFG_RANK &&
        addr + len > EXANET_CTX_CFG_RANK) {
        exanet_rdma_direct_fence(c->rdma, c->rank, "driver");
    }
    return pci_default_read_config(pdev, addr, len);
}

static void exanet_ctx_exit(PCIDevice *pdev)
{
    ExanetCtxState *c = EXANET_CTX(pdev);

    if (c->rdma) {
        exanet_rdma_detach_ctx(c->rdma, c->rank, pdev);
        c->rdma = NULL;
    }
}

static Property exanet_ctx_properties[] = {
    DEFINE_PROP_LINK("ni", ExanetCtxState, ni, TYPE_EXANET, PCIDevice *),
    DEFINE_PROP_UINT8("rank", ExanetCtxState, rank, 0),
    DEFINE_PROP_END_OF_LIST(),
};

static const VMStateDescription exanet_ctx_vmstate = {
    .name = "exanet-ctx",
    .unmigratable = 1,
};

static void exanet_ctx_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = exanet_ctx_realize;
    k->exit = exanet_ctx_exit;
    k->config_read = exanet_ctx_config_read;
    k->vendor_id = EXANET_CTX_PCI_VENDOR_ID;
    k->device_id = EXANET_CTX_PCI_DEVICE_ID;
    k->revision = EXANET_HW_VERSION;
    k->class_id = PCI_CLASS_SYSTEM_OTHER;
    dc->desc = "ExaNet NI DMA context (one per rank)";
    dc->vmsd = &exanet_ctx_vmstate;
    device_class_set_props(dc, exanet_ctx_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo exanet_ctx_info = {
    .name = TYPE_EXANET_CTX,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(ExanetCtxState),
    .class_init = exanet_ctx_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void exanet_ctx_register_types(void)
{
    type_register_static(&exanet_ctx_info);
}

type_init(exanet_ctx_register_types)
