/*
 * ap_bytes.h
 *	  Reading integers out of PostgreSQL's on-disk bytes.
 *
 * Pages, tuple headers, varlena headers and numeric digits are written by
 * the server in its own byte order at offsets that need not be aligned for
 * the type; every reader in the disk daemon (and the host code that
 * shares its decoders) goes through these, so an unaligned load is never
 * made and the rule lives in one place.
 */
#ifndef AP_BYTES_H
#define AP_BYTES_H

#include <stdint.h>
#include <string.h>

/* The 16-bit unsigned integer at p, in the server's byte order. */
static inline uint16_t
ap_read_u16(const unsigned char *p)
{
	uint16_t	v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The 32-bit unsigned integer at p, in the server's byte order. */
static inline uint32_t
ap_read_u32(const unsigned char *p)
{
	uint32_t	v;

	memcpy(&v, p, sizeof(v));
	return v;
}

#endif							/* AP_BYTES_H */
