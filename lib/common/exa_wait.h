/* SPDX-License-Identifier: MIT */
/*
 * The one blocking wait of the user-space libraries and tools (private: not
 * installed; exa_wait.c is compiled into each user): poll, and after an
 * unsuccessful poll call exa_wait_poll().
 *
 * A wait spins with cpu_relax() for at most EXA_SPIN_NS, then calls
 * sched_yield() between polls: the peer a wait depends on may need this
 * very CPU (two processes on a one-CPU node), and spinning longer only
 * delays it.  A sched_yield() that took EXA_YIELD_RAN_OTHER_NS or more ran
 * another task: the CPU is shared, and the thread's next waits yield after
 * their first unsuccessful poll until EXA_SHARED_DECAY of them succeeded
 * without yielding (exa_wait_done()).
 *
 * The clock is read only every EXA_SPIN_CHECK polls while spinning, so a
 * wait that succeeds quickly reads none; the price is that a timeout starts
 * counting after the first EXA_SPIN_CHECK polls (microseconds).  The clock
 * is CLOCK_MONOTONIC, or the TSC once exa_wait_clock_setup() calibrated it
 * (clock_gettime() is a system call where the clocksource has no vDSO).
 */
#ifndef EXA_WAIT_H
#define EXA_WAIT_H

#include <stdint.h>

#define EXA_SPIN_NS		20000
#define EXA_SPIN_CHECK		32u
#define EXA_YIELD_RAN_OTHER_NS	5000
#define EXA_SHARED_DECAY	64

/* Timeouts in ns; these two never time out. */
#define EXA_WAIT_SPIN		((int64_t)-1)	/* spins only: no clock, no system call */
#define EXA_WAIT_NO_LIMIT	INT64_MAX	/* spins, then yields */

struct exa_wait {
	int64_t timeout;	/* ns; 0: poll once */
	int64_t end;		/* 0 until the clock is first read */
	int64_t spin_end;	/* from then on, yield between polls */
	unsigned int polls;
	int yielding;
};

void exa_wait_init(struct exa_wait *w, int64_t timeout_ns);
/* After an unsuccessful poll: relax or yield; 1 when the time is up. */
int exa_wait_poll(struct exa_wait *w);
/* After the successful poll (counts towards "the CPU is not shared"). */
void exa_wait_done(const struct exa_wait *w);
/* The time left, for chaining two waits under one timeout. */
int64_t exa_wait_left(const struct exa_wait *w);
/*
 * Calibrates the TSC for the waits' clock (x86-64; sleeps 2 ms the first
 * time, at setup).  Without it the waits read CLOCK_MONOTONIC.
 */
void exa_wait_clock_setup(void);

#endif
