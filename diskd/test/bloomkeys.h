/*
 * bloomkeys.h
 *	  Helpers of the Bloom filter tests (bloom.c, bloom_probe.c): a test key
 *	  generator, keys hashed as the host hashes them, stored numerics built
 *	  byte by byte.
 */
#ifndef DISKD_TEST_BLOOMKEYS_H
#define DISKD_TEST_BLOOMKEYS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bloom.h"

#define SEED				UINT64_C(0x5EED)

/* splitmix64: an independent generator for test keys. */
static inline uint64_t
next_rand(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Hash of one int key, as the host computes it. */
static inline uint64_t
hash_int(int64_t v)
{
	ApBloomHash st;

	ap_bloom_hash_init(&st, SEED);
	ap_bloom_key_int(&st, v);
	return ap_bloom_hash_final(&st);
}

/* Hash of one text key. */
static inline uint64_t
hash_text(const char *s)
{
	ApBloomHash st;

	ap_bloom_hash_init(&st, SEED);
	ap_bloom_key_text(&st, (const unsigned char *) s, strlen(s));
	return ap_bloom_hash_final(&st);
}

/* Hash of one bpchar key. */
static inline uint64_t
hash_bpchar(const char *s)
{
	ApBloomHash st;

	ap_bloom_hash_init(&st, SEED);
	ap_bloom_key_bpchar(&st, (const unsigned char *) s, strlen(s));
	return ap_bloom_hash_final(&st);
}

/* Hash of one numeric payload; 0 if the payload is refused. */
static inline uint64_t
hash_numeric(const unsigned char *p, size_t len)
{
	ApBloomHash st;

	ap_bloom_hash_init(&st, SEED);
	if (!ap_bloom_key_numeric(&st, p, len))
		return 0;
	return ap_bloom_hash_final(&st);
}

/* A numeric payload in the long form: sign/dscale header, weight, digits. */
static inline size_t
num_long(unsigned char *buf, bool neg, int dscale, int16_t weight, const int *digits, int n)
{
	uint16_t	hdr = (uint16_t) ((neg ? 0x4000 : 0) | (dscale & 0x3FFF));

	buf[0] = hdr & 0xFF;
	buf[1] = hdr >> 8;
	buf[2] = (uint16_t) weight & 0xFF;
	buf[3] = (uint16_t) weight >> 8;
	for (int i = 0; i < n; i++)
	{
		buf[4 + 2 * i] = digits[i] & 0xFF;
		buf[5 + 2 * i] = digits[i] >> 8;
	}
	return 4 + 2 * (size_t) n;
}

/* A numeric payload in the short form (weight -64..63, dscale 0..63). */
static inline size_t
num_short(unsigned char *buf, bool neg, int dscale, int weight, const int *digits, int n)
{
	uint16_t	hdr = (uint16_t) (0x8000 | (neg ? 0x2000 : 0) | ((dscale & 0x3F) << 7) |
								  (weight < 0 ? 0x0040 | ((weight + 64) & 0x3F) : (weight & 0x3F)));

	buf[0] = hdr & 0xFF;
	buf[1] = hdr >> 8;
	for (int i = 0; i < n; i++)
	{
		buf[2 + 2 * i] = digits[i] & 0xFF;
		buf[3 + 2 * i] = digits[i] >> 8;
	}
	return 2 + 2 * (size_t) n;
}

#endif							/* DISKD_TEST_BLOOMKEYS_H */
