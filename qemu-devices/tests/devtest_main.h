/* SPDX-License-Identifier: GPL-2.0 */
/*
 * main() of a driverless device test on the kernel's kselftest harness
 * (selftests/README.md).  One static program per device model runs in the
 * throw-away VMs of run-*vm-tests.sh in several modes: the first argument
 * names the mode, which picks the fixtures to run (in the order it lists
 * them); the further arguments are parameters of the cases
 * (devtest_arg()).  Every case runs in a forked child: its DMA memory
 * (locked pages and their physical addresses) must be allocated there, in
 * the fixture or the case; the BARs, mapped by main(), are shared.
 * Include once per program.
 */
#ifndef DEVTEST_MAIN_H
#define DEVTEST_MAIN_H

#include "devmem.h"
#include "kselftest_exa.h"

/*
 * A case may take what the VM running it allows (timeout 300 in the
 * runners): emulated MMIO is slow, and fuzzing and round trips run long.
 */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 240

struct devtest_mode {
    const char *name;
    const char *fixtures; /* space-separated fixture names */
    int nargs;            /* arguments the mode needs after its name */
    const char *usage;    /* its arguments */
};

static char **devtest_args;
static int devtest_nargs;

/* Argument i after the mode name (C syntax: 0x.. is hexadecimal), or dflt. */
static inline long long devtest_arg(int i, long long dflt)
{
    long long v;

    return i < devtest_nargs && sscanf(devtest_args[i], "%lli", &v) == 1 ? v
                                                                         : dflt;
}

/*
 * Only the fixtures named in list (space-separated) stay registered with the
 * harness, in the order of the list.
 */
static inline void devtest_keep_fixtures(const char *list)
{
    struct __fixture_metadata *all[64], *f, *tail = NULL;
    const char *name = list;
    int n = 0, i;

    for (f = __fixture_list; f && n < 64; f = f->next) {
        all[n++] = f;
    }
    __fixture_list = NULL;
    while (*name) {
        size_t len = strcspn(name, " ");

        for (i = 0; i < n; i++) {
            if (strlen(all[i]->name) == len &&
                !strncmp(all[i]->name, name, len)) {
                break;
            }
        }
        if (i == n) {
            ksft_exit_fail_msg("no fixture %.*s\n", (int)len, name);
        }
        /* the harness's list: next ends in NULL, head->prev is the tail */
        if (tail) {
            tail->next = all[i];
        } else {
            __fixture_list = all[i];
        }
        tail = all[i];
        name += len + strspn(name + len, " ");
    }
    if (tail) {
        tail->next = NULL;
        __fixture_list->prev = tail;
    }
}

/* The mode argv[1] (dflt without one) of modes, ended by a NULL name. */
static inline const struct devtest_mode *
devtest_mode(int argc, char **argv, const struct devtest_mode *modes,
             const char *dflt)
{
    const char *name = argc > 1 ? argv[1] : dflt;
    int nargs = argc > 2 ? argc - 2 : 0;
    const struct devtest_mode *m;

    for (m = modes; name && m->name; m++) {
        if (!strcmp(m->name, name) && nargs >= m->nargs) {
            devtest_args = argv + 2;
            devtest_nargs = nargs;
            return m;
        }
    }
    fprintf(stderr, "usage:\n");
    for (m = modes; m->name; m++) {
        fprintf(stderr, "  %s %s %s\n", argv[0], m->name, m->usage);
    }
    exit(KSFT_FAIL);
}

/*
 * The first PCI function vendor:device (its sysfs directory in path), made
 * a bus master; without it the program is skipped: it runs in a guest with
 * the device model (what).
 */
static inline void devtest_find(unsigned vendor, unsigned device, char *path,
                                size_t len, const char *what)
{
    if (!pci_find(vendor, device, 0, path, len)) {
        ksft_exit_skip("no PCI device %04x:%04x: runs in a guest with %s\n",
                       vendor, device, what);
    }
    if (!enable_busmaster(path)) {
        ksft_exit_fail_msg("%s: cannot enable bus mastering\n", path);
    }
}

/* BAR n of the device at path, mapped; the program fails without it. */
static inline volatile uint8_t *devtest_bar(const char *path, int n, size_t len)
{
    void *m = map_res(path, n, len);

    if (!m) {
        ksft_exit_fail_msg("%s: BAR %d: %s\n", path, n, strerror(errno));
    }
    return m;
}

/* Runs the cases of mode m; the exit status is the harness's. */
static inline int devtest_run(const struct devtest_mode *m, int argc,
                              char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* children end with _exit() */
    devtest_keep_fixtures(m->fixtures);
    return test_harness_run(argc, argv);
}

#endif
