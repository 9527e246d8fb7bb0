/* SPDX-License-Identifier: MIT */
/*
 * Little-endian fields of wire formats in byte buffers (any alignment),
 * with the C library's htole16() .. le64toh(): shared by the libraries,
 * tools and tests (private: not installed).
 */
#ifndef EXA_ENDIAN_H
#define EXA_ENDIAN_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void exa_put_le16(void *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void exa_put_le32(void *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void exa_put_le64(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint16_t exa_get_le16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t exa_get_le32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t exa_get_le64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

#endif
