// SPDX-License-Identifier: MIT
/* The blocking wait of the libraries and tools: see exa_wait.h. */
#include <sched.h>

#include "exa_clock.h"
#include "exa_cpu.h"
#include "exa_wait.h"

static __thread unsigned int cpu_shared;	/* > 0: yield early */

#if defined(EXA_HAVE_TSC)
static uint64_t ns_per_tsc_q32;		/* ns per tick << 32; 0: clock_gettime() */
static int tsc_tried;

void exa_wait_clock_setup(void)
{
	uint64_t mult;

	if (__atomic_exchange_n(&tsc_tried, 1, __ATOMIC_ACQ_REL))
		return;
	mult = exa_tsc_calibrate(2000000, NULL);	/* 2 ms */
	if (mult)
		__atomic_store_n(&ns_per_tsc_q32, mult, __ATOMIC_RELEASE);
}

static int64_t wait_clock_ns(void)
{
	uint64_t mult = __atomic_load_n(&ns_per_tsc_q32, __ATOMIC_ACQUIRE);

	return mult ? exa_tsc_ns(mult) : exa_clock_ns();
}
#else
void exa_wait_clock_setup(void)
{
}

static int64_t wait_clock_ns(void)
{
	return exa_clock_ns();
}
#endif

void exa_wait_init(struct exa_wait *w, int64_t timeout_ns)
{
	w->timeout = timeout_ns;
	w->end = 0;
	w->spin_end = 0;
	w->polls = 0;
	w->yielding = 0;
}

int exa_wait_poll(struct exa_wait *w)
{
	int64_t now;

	if (w->timeout < 0) {
		cpu_relax();
		return 0;
	}
	if (w->timeout == 0)
		return 1;
	if (w->yielding) {
		int64_t before = wait_clock_ns();

		sched_yield();
		now = wait_clock_ns();
		if (now - before >= EXA_YIELD_RAN_OTHER_NS)
			cpu_shared = EXA_SHARED_DECAY;
		return now >= w->end;
	}
	cpu_relax();
	if (++w->polls % EXA_SPIN_CHECK && !cpu_shared)
		return 0;
	now = wait_clock_ns();
	if (!w->end) {
		w->end = w->timeout > INT64_MAX - now ? INT64_MAX : now + w->timeout;
		w->spin_end = now + (cpu_shared ? 0 : EXA_SPIN_NS);
	}
	if (now >= w->spin_end)
		w->yielding = 1;
	return now >= w->end;
}

void exa_wait_done(const struct exa_wait *w)
{
	if (!w->yielding && cpu_shared)
		cpu_shared--;
}

int64_t exa_wait_left(const struct exa_wait *w)
{
	int64_t left;

	if (w->timeout < 0 || !w->end)
		return w->timeout;
	left = w->end - wait_clock_ns();
	return left > 0 ? left : 0;
}
