/* SPDX-License-Identifier: MIT */
/*
 * CPU hints shared by the user-space libraries (private: not installed).
 * They poll device memory and store to write-combined MMIO pages; their
 * blocking waits are exa_wait.h's.
 */
#ifndef EXA_CPU_H
#define EXA_CPU_H

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

#endif
