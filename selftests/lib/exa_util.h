/* SPDX-License-Identifier: MIT */
/* Helpers shared by the ExaNet in-VM selftests. */
#ifndef SELFTEST_EXA_UTIL_H
#define SELFTEST_EXA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Generic netlink "exanet" through tools/common/exa_genl.c (libnl-genl-3).
 * 0 or negative errno as the kernel answered. */
int exa_genl_pdid_bind(pid_t pid, uint32_t pdid);
int exa_genl_pdid_unbind(pid_t pid);
/* DEV_GET doit for /dev/exanet<index>: fills what it finds (-1 if absent). */
int exa_genl_dev_get(uint32_t index, long *node_id, long *pkt_in_use, long *mbox_in_use);
/* Id of the "exanet" family, negative errno if it is not registered. */
int exa_genl_family_id(void);
/* Number of PDID bindings (PDID_GET dump); negative errno on error. */
int exa_genl_count_bindings(void);
/* Raw request with arbitrary u32 attributes, for bad-input tests. */
int exa_genl_request(uint8_t cmd, int flags, const uint16_t *types, const uint32_t *vals, int n);

/* The number in a (sysfs) file; negative errno on error. */
long exa_read_long(const char *path);
/* /sys/class/exanet/exanet0/<attr> as a number; negative errno on error. */
long exa_sysfs_long(const char *attr);
/*
 * The number after "field" in a file of "name value" or "name: value [kB]"
 * lines (/proc/<pid>/status, /proc/meminfo, /proc/vmstat, counters in
 * sysfs); -1 if the file or the field is missing.
 */
long long exa_file_field(const char *path, const char *field);

/* Lines in the kernel log containing "Oops", "BUG:", "WARNING:",
 * "general protection" or "Call Trace"; negative errno if unreadable. */
int exa_kmsg_bad_lines(void);

/* Deterministic payload of 'len' bytes for (stream, index). */
void exa_fill(uint8_t *buf, size_t len, uint32_t stream, uint32_t index);
int exa_check(const uint8_t *buf, size_t len, uint32_t stream, uint32_t index);
/* Stream messages (len >= 12): [seq u32][src u32][crc u32][pattern...] */
void exa_make_msg(uint8_t *buf, size_t len, uint32_t src, uint32_t seq);
/* 0 ok; -EBADMSG on corruption; fills src/seq. */
int exa_parse_msg(const uint8_t *buf, size_t len, uint32_t *src, uint32_t *seq);
uint32_t exa_crc32(const void *buf, size_t len);
/* A 32-bit integer hash (bijective): patterns that differ in every word. */
uint32_t exa_mix32(uint32_t x);

/* Fork a child that runs fn(arg) as a separate process; the child is
 * bound to 'pdid' (if non-zero) before fn runs.  Returns pid or -errno. */
pid_t exa_spawn_in_pdid(uint32_t pdid, int (*fn)(void *), void *arg);
/* waitpid with a timeout; returns exit status (0..255), 128+sig, or -ETIMEDOUT
 * (the child is then killed). */
int exa_wait_child(pid_t pid, int timeout_ms);
/* Same, but on timeout the child is left running. */
int exa_poll_child(pid_t pid, int timeout_ms);

/* Runs a shell command, returns its exit status (or -errno). */
int exa_system(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int64_t exa_now_ms(void);

#endif
