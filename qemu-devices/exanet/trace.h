/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Trace events of hw/exafab/exanet (generated from exanet/trace-events). */
#include "trace/trace-hw_exafab_exanet.h"
