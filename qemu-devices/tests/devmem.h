/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the driverless device tests (exanet-regtest, exanet-rdmatest,
 * extoll-regtest) need besides the test harness (devtest_main.h): MMIO
 * accessors, a clock, and PCI functions found, mapped and made bus masters
 * through sysfs.  The tests run as root in a guest WITHOUT an IOMMU, so DMA
 * addresses are physical addresses (phys_of()).
 */
#ifndef DEVMEM_H
#define DEVMEM_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define R32(b, o) (*(volatile uint32_t *)((b) + (o)))          /* MMIO */
#define R64(b, o) (*(volatile uint64_t *)((b) + (o)))          /* MMIO */
#define W32(b, o, v) (*(volatile uint32_t *)((b) + (o)) = (v)) /* MMIO */
#define W64(b, o, v) (*(volatile uint64_t *)((b) + (o)) = (v)) /* MMIO */

/*
 * What the test cannot go on without (memory, pagemap): say why, as a TAP
 * comment, and end the process (a test case: it fails).
 */
static inline void devmem_die(const char *what)
{
    fprintf(stderr, "# %s: %s\n", what, strerror(errno));
    exit(1);
}

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A hexadecimal sysfs attribute of a device directory, 0 if unreadable. */
static inline unsigned sysfs_hex(const char *dev, const char *attr)
{
    char p[400], b[32] = "";
    unsigned v;

    snprintf(p, sizeof p, "%s/%s", dev, attr);
    FILE *f = fopen(p, "r");
    if (!f) {
        return 0;
    }
    if (!fgets(b, sizeof b, f)) {
        b[0] = 0;
    }
    fclose(f);
    return sscanf(b, "%x", &v) == 1 ? v : 0;
}

/* The sysfs directory of the index-th (0, 1, ...) PCI function vendor:device. */
static inline bool pci_find(unsigned vendor, unsigned device, int index,
                            char *out, size_t len)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e;
    bool found = false;
    while (d && !found && (e = readdir(d))) {
        char p[280]; /* the directory + NAME_MAX */
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(p, sizeof p, "/sys/bus/pci/devices/%s", e->d_name);
        if (sysfs_hex(p, "vendor") == vendor &&
            sysfs_hex(p, "device") == device && index-- == 0) {
            snprintf(out, len, "%s", p);
            found = true;
        }
    }
    if (d) {
        closedir(d);
    }
    return found;
}

/* Memory space and bus mastering on; false if the config space refuses. */
static inline bool enable_busmaster(const char *dev)
{
    char p[512];
    uint16_t cmd = 0;
    bool ok;

    snprintf(p, sizeof p, "%s/config", dev);
    int fd = open(p, O_RDWR);
    if (fd < 0) {
        return false;
    }
    ok = pread(fd, &cmd, 2, 4) == 2;
    cmd |= 0x6; /* memory space + bus master */
    ok = ok && pwrite(fd, &cmd, 2, 4) == 2;
    close(fd);
    return ok;
}

/* BAR n of a device mapped, NULL (and errno) if it cannot be. */
static inline void *map_res(const char *dev, int n, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/resource%d", dev, n);
    int fd = open(p, O_RDWR | O_SYNC);
    if (fd < 0) {
        return NULL;
    }
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return m == MAP_FAILED ? NULL : m;
}

/* Zeroed anonymous memory, populated and locked (for DMA). */
static inline void *locked(size_t len)
{
    void *m =
        mmap(NULL, len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_LOCKED, -1, 0);
    if (m == MAP_FAILED) {
        devmem_die("locked memory");
    }
    memset(m, 0, len);
    return m;
}

/*
 * Physical address of a locked page (/proc/self/pagemap).  Opened per call:
 * an open pagemap describes the process that opened it, and the harness
 * runs every case in a child.
 */
static inline uint64_t phys_of(void *va)
{
    uint64_t ent = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY);
    bool ok = fd >= 0 && pread(fd, &ent, 8, ((uintptr_t)va / 4096) * 8) == 8;

    if (fd >= 0) {
        close(fd);
    }
    if (!ok) {
        devmem_die("/proc/self/pagemap");
    }
    return (ent & ((1ull << 55) - 1)) * 4096;
}

#endif
