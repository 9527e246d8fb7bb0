/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the driverless device tests (exanet-regtest, exanet-rdmatest,
 * extoll-regtest) share: MMIO accessors, EXPECT, a clock, and PCI functions
 * found, mapped and made bus masters through sysfs.  The tests run as root
 * in a guest WITHOUT an IOMMU, so DMA addresses are physical addresses
 * (phys_of()).  Each test is a single file, hence static functions.
 */
#ifndef DEVTEST_H
#define DEVTEST_H

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

extern int fails; /* failed EXPECTs; defined by each program */

#define R32(b, o) (*(volatile uint32_t *)((b) + (o))) /* MMIO */
#define R64(b, o) (*(volatile uint64_t *)((b) + (o))) /* MMIO */
#define W32(b, o, v) (*(volatile uint32_t *)((b) + (o)) = (v)) /* MMIO */
#define W64(b, o, v) (*(volatile uint64_t *)((b) + (o)) = (v)) /* MMIO */

#define EXPECT(c, ...)                                   \
    do {                                                 \
        if (c)                                           \
            printf("PASS: " __VA_ARGS__);                \
        else {                                           \
            fails++;                                     \
            printf("FAIL(%s:%d): ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                         \
        }                                                \
        fflush(stdout);                                  \
    } while (0)

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

static inline void enable_busmaster(const char *dev)
{
    char p[512];
    uint16_t cmd = 0;
    snprintf(p, sizeof p, "%s/config", dev);
    int fd = open(p, O_RDWR);
    if (pread(fd, &cmd, 2, 4) != 2) {
        exit(2);
    }
    cmd |= 0x6; /* memory space + bus master */
    if (pwrite(fd, &cmd, 2, 4) != 2) {
        exit(2);
    }
    close(fd);
}

/* The first function vendor:device, made a bus master; exits 2 without one. */
static inline void pci_open_dev(unsigned vendor, unsigned device, char *out,
                                size_t len)
{
    if (!pci_find(vendor, device, 0, out, len)) {
        fprintf(stderr, "no PCI device %04x:%04x\n", vendor, device);
        exit(2);
    }
    enable_busmaster(out);
}

static inline void *map_res(const char *dev, int n, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/resource%d", dev, n);
    int fd = open(p, O_RDWR | O_SYNC);
    if (fd < 0) {
        perror(p);
        exit(2);
    }
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return m;
}

/* Zeroed anonymous memory, populated and locked (for DMA). */
static inline void *locked(size_t len)
{
    void *m =
        mmap(NULL, len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_LOCKED, -1, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    memset(m, 0, len);
    return m;
}

/* Physical address of a locked page (/proc/self/pagemap). */
static inline uint64_t phys_of(void *va)
{
    static int pm_fd = -1;
    uint64_t ent = 0;
    if (pm_fd < 0) {
        pm_fd = open("/proc/self/pagemap", O_RDONLY);
    }
    if (pread(pm_fd, &ent, 8, ((uintptr_t)va / 4096) * 8) != 8) {
        exit(2);
    }
    return (ent & ((1ull << 55) - 1)) * 4096;
}

#endif
