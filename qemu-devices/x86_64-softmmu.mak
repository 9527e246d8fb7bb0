# Minimal device set for the ExaNet/EXTOLL emulated cluster nodes
# (scripts/build-qemu.sh installs it as
# configs/devices/x86_64-softmmu/exanet.mak and configures QEMU with
# --without-default-devices --with-devices-x86_64=exanet).
CONFIG_Q35=y
CONFIG_VTD=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_RNG=y
# virtio-serial: the qemu-guest-agent channel (Documentation/cluster.md)
CONFIG_VIRTIO_SERIAL=y
# virtio-9p: exacluster up --share (needs --enable-virtfs, scripts/build-qemu.sh)
CONFIG_VIRTIO_9P=y
CONFIG_VGA_PCI=y
CONFIG_PCIE_PORT=y
CONFIG_ISA_DEBUG=y
# defaults the pc machines create without -nodefaults
CONFIG_PARALLEL=y
CONFIG_E1000E_PCI_EXPRESS=y
# the fabric NICs (qemu-devices/Kconfig)
CONFIG_EXANET_NI=y
CONFIG_EXTOLL_NIC=y
