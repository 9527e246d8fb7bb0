/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Trace events of hw/exafab/common (generated from common/trace-events). */
#include "trace/trace-hw_exafab_common.h"
