/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Trace events of hw/exafab/extoll (generated from extoll/trace-events). */
#include "trace/trace-hw_exafab_extoll.h"
