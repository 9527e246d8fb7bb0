/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rma2_ioctl.h - RMA2 ioctl names of the original driver package.  Clients
 * (nhtl-extoll, libhbp) include it without issuing ioctls; here it maps to
 * this project's kernel ABI, uapi/extoll.h (installed as extoll.h next to
 * this header): RMA2_IOC_MAGIC 'k' and RMA2_IOCTL_* with the original
 * numbers 0..13 (14..25 of the original are not supported), plus
 * RMA2_IOCTL_GET_INFO (32).  librma2 is the supported way to use them.
 */
#ifndef RMA2_IOCTL_H
#define RMA2_IOCTL_H

#include <extoll.h>

#ifndef RMA2_IOC_MAXNR
#define RMA2_IOC_MAXNR 32
#endif

#endif /* RMA2_IOCTL_H */
