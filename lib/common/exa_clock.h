/* SPDX-License-Identifier: MIT */
/*
 * Clocks shared by the user-space libraries and tools (private: not
 * installed): CLOCK_MONOTONIC in nanoseconds and, on x86-64, the TSC
 * calibrated against it.
 *
 * clock_gettime() is a vDSO call on clocksources that support it (tsc,
 * kvm-clock) but a system call on the others (acpi_pm, hpet: what emulated
 * x86 nodes fall back to when the TSC is declared unstable).  A loop that
 * must stay free of system calls reads the TSC instead, converted with a
 * factor measured once at setup time (exa_tsc_calibrate()).
 */
#ifndef EXA_CLOCK_H
#define EXA_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns. */
static inline int64_t exa_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#if defined(__x86_64__)
#define EXA_HAVE_TSC 1

static inline uint64_t exa_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/*
 * Measures the TSC against CLOCK_MONOTONIC over a sleep of pause_ns.
 * Returns ns per TSC tick << 32 (for exa_tsc_ns()), 0 when either clock did
 * not advance.  ghz (may be NULL): the TSC's rate, ticks per ns.
 */
static inline uint64_t exa_tsc_calibrate(long pause_ns, double *ghz)
{
	struct timespec pause_ts = { pause_ns / 1000000000, pause_ns % 1000000000 };
	int64_t t0 = exa_clock_ns(), t1;
	uint64_t c0 = exa_rdtsc(), c1;

	nanosleep(&pause_ts, NULL);
	t1 = exa_clock_ns();
	c1 = exa_rdtsc();
	if (t1 <= t0 || c1 <= c0)
		return 0;
	if (ghz)
		*ghz = (double)(c1 - c0) / (double)(t1 - t0);
	return (uint64_t)(((unsigned __int128)(t1 - t0) << 32) / (c1 - c0));
}

/* The TSC in ns, with the factor from exa_tsc_calibrate(). */
static inline int64_t exa_tsc_ns(uint64_t mult_q32)
{
	return (int64_t)(((unsigned __int128)exa_rdtsc() * mult_q32) >> 32);
}
#endif

#endif
