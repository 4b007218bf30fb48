/*
 * bytes.h
 *	  Little-endian stores, varlena headers and descriptor columns for tests
 *	  that build pages, tuples and datums byte by byte.
 */
#ifndef DISKD_TEST_BYTES_H
#define DISKD_TEST_BYTES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Store a little-endian u16. */
static inline void
put16(unsigned char *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

/* Store a little-endian u32. */
static inline void
put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* Store a little-endian u64. */
static inline void
put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* Build a varlena (short header if it fits, else 4-byte) into buf. */
static inline size_t
mk_varlena(unsigned char *buf, const void *payload, size_t n, bool force4)
{
	if (!force4 && n + 1 < 128)
	{
		buf[0] = (unsigned char) (((n + 1) << 1) | 1);
		memcpy(buf + 1, payload, n);
		return n + 1;
	}
	put32(buf, (uint32_t) (n + 4) << 2);
	memcpy(buf + 4, payload, n);
	return n + 4;
}

#include "diskd.h"

/* A descriptor column with the given storage properties. */
static inline ApColumn
col(int16_t attlen, char attalign, uint8_t kind)
{
	ApColumn	c;

	memset(&c, 0, sizeof(c));
	c.attlen = attlen;
	c.attalign = attalign;
	c.attbyval = attlen > 0 && attlen <= 8;
	c.type_kind = kind;
	return c;
}

#endif							/* DISKD_TEST_BYTES_H */
