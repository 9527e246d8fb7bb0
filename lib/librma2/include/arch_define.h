/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * arch_define.h - architecture helpers of the original driver package.
 * Kept (nearly empty) because sys_rma2.h and librma tests include it.
 */
#ifndef ARCH_DEFINE_H
#define ARCH_DEFINE_H

#if defined(__x86_64__) || defined(__i386__)
#define EXTOLL_ARCH_X86 1
#endif

#endif /* ARCH_DEFINE_H */
