// SPDX-License-Identifier: GPL-2.0
/*
 * drivers/common/exa_umem.c (pin + RLIMIT_MEMLOCK accounting) built into
 * extoll.ko.  The source is shared with exanet.ko, not copied; it is
 * compiled once per module because Kbuild objects belong to one module.
 */
#include "../common/exa_umem.c"
