/* SPDX-License-Identifier: MIT */
/*
 * CPU hints shared by the user-space libraries (private: not installed).
 * They poll device memory and store to write-combined MMIO pages.
 */
#ifndef EXA_CPU_H
#define EXA_CPU_H

#include <sched.h>
#include <stdint.h>

#include "exa_clock.h"

/* In a polling loop: let the sibling hyperthread run, reload memory. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("pause" ::: "memory");
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

/* Order stores to write-combined MMIO before the ones that follow. */
static inline void store_fence(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("sfence" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/*
 * Blocking waits: poll with cpu_relax() for at most EXA_SPIN_NS, then
 * sched_yield() between polls.  The peer a wait depends on may need this
 * very CPU (two processes on a one-CPU node): spinning longer only delays
 * it.  The clock is read once per EXA_SPIN_CHECK polls.
 */
#define EXA_SPIN_NS	20000
#define EXA_SPIN_CHECK	32u

struct exa_spin {
	unsigned int polls;
	int yielding;
	int64_t end;		/* 0: not started */
};

#define EXA_SPIN_INIT { 0, 0, 0 }

/* One unsuccessful poll of a blocking wait. */
static inline void exa_spin_wait(struct exa_spin *s)
{
	if (s->yielding) {
		sched_yield();
		return;
	}
	cpu_relax();
	if (++s->polls % EXA_SPIN_CHECK)
		return;
	if (!s->end)
		s->end = exa_clock_ns() + EXA_SPIN_NS;
	else if (exa_clock_ns() >= s->end)
		s->yielding = 1;
}

#endif
