/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmap.h - ioctl names of the original /dev/extoll/pmap device (physically
 * contiguous buffers for physical-address RMA tests).  Provided so that
 * such clients compile; the emulated EXTOLL stack has no pmap device
 * (opening /dev/extoll/pmap fails with ENOENT).  Like the original, this
 * header does not include <sys/ioctl.h>.
 */
#ifndef PMAP_H
#define PMAP_H

#include <stdint.h>

#define PMAP_IOC_MAGIC 'k'
#define PMAP_IOC_MAXNR 9

#define PMAP_IOCTL_SET_TYPE	_IOW(PMAP_IOC_MAGIC, 0, uint32_t)
#define PMAP_IOCTL_GET_TYPE	_IOR(PMAP_IOC_MAGIC, 1, uint32_t)
#define PMAP_IOCTL_SET_HADDR	_IOW(PMAP_IOC_MAGIC, 2, uint32_t)
#define PMAP_IOCTL_GET_HADDR	_IOR(PMAP_IOC_MAGIC, 3, uint32_t)
#define PMAP_IOCTL_SET_SIZE	_IOW(PMAP_IOC_MAGIC, 4, uint32_t)
#define PMAP_IOCTL_GET_SIZE	_IOR(PMAP_IOC_MAGIC, 5, uint32_t)
#define PMAP_IOCTL_GET_PADDR	_IOR(PMAP_IOC_MAGIC, 6, uint32_t)
#define PMAP_IOCTL_CREATE	_IOR(PMAP_IOC_MAGIC, 7, uint32_t)
#define PMAP_IOCTL_FREE		_IOR(PMAP_IOC_MAGIC, 8, uint32_t)
#define PMAP_IOCTL_SET_CURRENT	_IOW(PMAP_IOC_MAGIC, 9, uint32_t)

#endif /* PMAP_H */
