/*
 * ap_bloom.h
 *	  The Bloom filter of a join's small side: layout, hash, normalized key
 *	  encoding and sizing, compiled by the host (extension/bloom_exec.c builds
 *	  filters) and by the disks (diskd/bloom.c probes them).
 *
 * This is the only copy of these rules.  A filter built on the host and
 * probed at a disk must agree bit for bit, so nothing here may depend on the
 * compiler, the byte order or either side's headers: plain C99, static inline.
 *
 * Layout (message BloomFilter.bits).  nblocks blocks of 64 bytes (512 bits,
 * one cache line each), bits.len = 64 * nblocks.  Bit b (0..511) of block B is
 * bit (b & 7) of byte B * 64 + (b >> 3).  A key's 64-bit hash h selects one
 * block, ((h >> 32) * nblocks) >> 32 (multiply-shift range reduction), and k
 * bits within it: with a = (uint32) h, probe i uses the top 9 bits of a and
 * then a *= AP_BLOOM_BIT_MUL (an odd constant, so a permutation of 32-bit
 * values; 9 bits per probe is what a 512-bit block needs).  One cache line
 * per probe whatever k is: the disk pays one memory access per tuple.
 * A filter of 8, 16 or 32 bytes (64, 128 or 256 bits: the small sizes of
 * Riedel et al.'s Table 3) is one narrow block of that many bits, probe i using the top
 * 6, 7 or 8 bits of a; the ap_bloom_*_len functions take either form.
 *
 * Hash.  A seeded chain over 64-bit words w_1..w_n of the key's encoding:
 *	h_0 = mix(seed ^ AP_BLOOM_SEED_SALT),  h_i = mix(h_{i-1} ^ w_i),
 *	hash = mix(h_n ^ n)
 * where mix is the xorshift-multiply finalizer x ^= x >> 32; x *= C; x ^= x >> 32;
 * x *= C; x ^= x >> 32 (a bijection on 64-bit values with full avalanche).
 * Byte strings are read as little-endian words, the last one zero-padded;
 * every variable-length field is preceded by its length, so padding never
 * makes two keys equal.
 *
 * Normalized key encoding: values that PostgreSQL's equality operator calls
 * equal must encode identically, on either side, whatever their stored form.
 *	int2, int4, int8   one word: the value as int64 (so int4 5 = int8 5)
 *	date               one word: the day number as int64
 *	numeric            display scale ignored, leading and trailing zero
 *	                   base-10000 digits stripped (1.50 = 1.5 = 1.500):
 *	                   one word (tag | negative << 8 | weight << 16 |
 *	                   ndigits << 32), then the digits four to a word;
 *	                   zero (either sign) and NaN, +inf, -inf are one word
 *	                   each.  Short and long header forms decode alike.
 *	text, varchar      one word with the byte length, then the bytes
 *	bpchar             as text, without trailing spaces ('ab  ' = 'ab')
 * A multi-column key is the concatenation of its columns' words, in order.
 * A NULL key never passes and is never inserted (equality is strict).
 * Text equality is bytewise only under a deterministic collation: the planner
 * never builds a filter on other collations.
 *
 * Sizing.  From the expected number of distinct keys n, a target
 * false-positive rate and a byte cap: blocks for -n ln(p) / (ln 2)^2 bits,
 * grown while the blocked filter's own rate (ap_bloom_fpr: Poisson-many keys
 * per block) is above the target, capped; then the k that minimizes that rate.
 */
#ifndef AP_BLOOM_H
#define AP_BLOOM_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ap_numeric.h"

#define AP_BLOOM_BLOCK_BYTES		64
#define AP_BLOOM_BLOCK_BITS			512
#define AP_BLOOM_HASHES_MIN			1
#define AP_BLOOM_HASHES_MAX			16
/* Contract limits a disk enforces on a ScanRequest's filters. */
#define AP_BLOOM_BYTES_MAX			(16u * 1024u * 1024u)	/* one filter */
#define AP_BLOOM_FILTERS_MAX		8	/* filters on one scan */
#define AP_BLOOM_KEYS_MAX			8	/* columns of one key */
/* The host's sizing target (false-positive rate of a filter under the cap). */
#define AP_BLOOM_TARGET_FPR			0.01

#define AP_BLOOM_SEED_SALT			UINT64_C(0x9E3779B97F4A7C15)
#define AP_BLOOM_MIX_MUL			UINT64_C(0xD6E8FEB86659FD93)
#define AP_BLOOM_BIT_MUL			UINT32_C(0x9E3779B1)
#define AP_BLOOM_LN2				0.69314718055994530942

/* Numeric tags (first word of a numeric key, low byte). */
#define AP_BLOOM_NUM_FINITE			1
#define AP_BLOOM_NUM_ZERO			2
#define AP_BLOOM_NUM_NAN			3
#define AP_BLOOM_NUM_PINF			4
#define AP_BLOOM_NUM_NINF			5

/*
 * Running hash of one key.  capture, when not NULL, receives the key's words
 * (the first capture_cap of them; nwords tells whether all fit): the
 * normalized encoding itself, which the host keeps under EXPLAIN ANALYZE as
 * the exact key set a filter's false positives are measured against.
 */
typedef struct ApBloomHash
{
	uint64_t	h;
	uint32_t	nwords;
	uint32_t	capture_cap;
	uint64_t   *capture;
} ApBloomHash;

/* The xorshift-multiply mixer (see the file header). */
static inline uint64_t
ap_bloom_mix64(uint64_t x)
{
	x ^= x >> 32;
	x *= AP_BLOOM_MIX_MUL;
	x ^= x >> 32;
	x *= AP_BLOOM_MIX_MUL;
	x ^= x >> 32;
	return x;
}

/* The state every key of a filter starts from (a prober computes it once). */
static inline uint64_t
ap_bloom_seed_state(uint64_t seed)
{
	return ap_bloom_mix64(seed ^ AP_BLOOM_SEED_SALT);
}

/* Start hashing a key from a filter's seed state. */
static inline void
ap_bloom_hash_start(ApBloomHash *st, uint64_t seed_state)
{
	st->h = seed_state;
	st->nwords = 0;
	st->capture_cap = 0;
	st->capture = NULL;
}

/* Start hashing a key with the filter's seed. */
static inline void
ap_bloom_hash_init(ApBloomHash *st, uint64_t seed)
{
	ap_bloom_hash_start(st, ap_bloom_seed_state(seed));
}

/* Add one word of the encoding. */
static inline void
ap_bloom_hash_word(ApBloomHash *st, uint64_t w)
{
	st->h = ap_bloom_mix64(st->h ^ w);
	if (st->capture != NULL && st->nwords < st->capture_cap)
		st->capture[st->nwords] = w;
	st->nwords++;
}

/* The key's hash; the word count makes a prefix differ from the whole. */
static inline uint64_t
ap_bloom_hash_final(const ApBloomHash *st)
{
	return ap_bloom_mix64(st->h ^ (uint64_t) st->nwords);
}

/* Add len bytes as little-endian words, the last one zero-padded. */
static inline void
ap_bloom_hash_bytes(ApBloomHash *st, const unsigned char *p, size_t len)
{
	while (len >= 8)
	{
		uint64_t	w = 0;

		for (int i = 7; i >= 0; i--)
			w = (w << 8) | p[i];
		ap_bloom_hash_word(st, w);
		p += 8;
		len -= 8;
	}
	if (len > 0)
	{
		uint64_t	w = 0;

		for (int i = (int) len - 1; i >= 0; i--)
			w = (w << 8) | p[i];
		ap_bloom_hash_word(st, w);
	}
}

/* int2/int4/int8 key: the value as int64. */
static inline void
ap_bloom_key_int(ApBloomHash *st, int64_t v)
{
	ap_bloom_hash_word(st, (uint64_t) v);
}

/* date key: the day number as int64. */
static inline void
ap_bloom_key_date(ApBloomHash *st, int32_t days)
{
	ap_bloom_hash_word(st, (uint64_t) (int64_t) days);
}

/* text/varchar key: length, then the bytes. */
static inline void
ap_bloom_key_text(ApBloomHash *st, const unsigned char *p, size_t len)
{
	ap_bloom_hash_word(st, (uint64_t) len);
	ap_bloom_hash_bytes(st, p, len);
}

/* bpchar key: as text without trailing spaces (bpchareq ignores them). */
static inline void
ap_bloom_key_bpchar(ApBloomHash *st, const unsigned char *p, size_t len)
{
	while (len > 0 && p[len - 1] == ' ')
		len--;
	ap_bloom_key_text(st, p, len);
}

/*
 * numeric key from the varlena payload (after the varlena header) as stored
 * (common/ap_numeric.h).  Returns false (nothing hashed) if the payload is
 * not a valid numeric.
 */
static inline bool
ap_bloom_key_numeric(ApBloomHash *st, const unsigned char *p, size_t len)
{
	ApNumeric	n;
	bool		negative;
	int			weight;
	size_t		ndigits;
	size_t		first;
	size_t		last;
	uint64_t	w = 0;
	int			inword = 0;

	if (!ap_numeric_parse(p, len, &n) || n.odd_byte)
		return false;
	switch (n.special)
	{
		case AP_NUM_NAN:
			ap_bloom_hash_word(st, AP_BLOOM_NUM_NAN);
			return true;
		case AP_NUM_PINF:
			ap_bloom_hash_word(st, AP_BLOOM_NUM_PINF);
			return true;
		case AP_NUM_NINF:
			ap_bloom_hash_word(st, AP_BLOOM_NUM_NINF);
			return true;
		case AP_NUM_FINITE:
			break;
	}
	negative = n.negative;
	weight = n.weight;
	ndigits = (size_t) n.ndigits;

	/* strip zero digits at both ends; weight follows the first kept digit */
	first = 0;
	while (first < ndigits && (uint16_t) ap_numeric_digit(&n, first) == 0)
		first++;
	if (first == ndigits)
	{
		ap_bloom_hash_word(st, AP_BLOOM_NUM_ZERO);
		return true;
	}
	last = ndigits;
	while ((uint16_t) ap_numeric_digit(&n, last - 1) == 0)
		last--;
	weight -= (int) first;

	ap_bloom_hash_word(st, (uint64_t) AP_BLOOM_NUM_FINITE |
					   ((uint64_t) (negative ? 1 : 0) << 8) |
					   ((uint64_t) (uint16_t) (int16_t) weight << 16) |
					   ((uint64_t) (last - first) << 32));
	for (size_t i = first; i < last; i++)
	{
		w |= (uint64_t) (uint16_t) ap_numeric_digit(&n, i) << (16 * inword);
		if (++inword == 4)
		{
			ap_bloom_hash_word(st, w);
			w = 0;
			inword = 0;
		}
	}
	if (inword > 0)
		ap_bloom_hash_word(st, w);
	return true;
}

/* Block of a hash (see the layout in the file header). */
static inline uint32_t
ap_bloom_block(uint64_t h, uint32_t nblocks)
{
	return (uint32_t) (((h >> 32) * (uint64_t) nblocks) >> 32);
}

/* Narrow filters (see the layout): 8, 16 and 32 bytes. */
#define AP_BLOOM_NARROW_MIN_BYTES	8

/* Is len a valid filter size: 8, 16, 32 or a positive multiple of 64 bytes? */
static inline bool
ap_bloom_len_valid(size_t len)
{
	if (len >= AP_BLOOM_BLOCK_BYTES)
		return len % AP_BLOOM_BLOCK_BYTES == 0;
	return len == 8 || len == 16 || len == 32;
}

/* log2 of the bits of one block of a filter of len (valid) bytes. */
static inline uint32_t
ap_bloom_block_log2(size_t len)
{
	if (len >= AP_BLOOM_BLOCK_BYTES)
		return 9;
	return len == 8 ? 6 : len == 16 ? 7 : 8;
}

/* Blocks of a filter of len (valid) bytes. */
static inline uint32_t
ap_bloom_nblocks(size_t len)
{
	return len >= AP_BLOOM_BLOCK_BYTES ? (uint32_t) (len / AP_BLOOM_BLOCK_BYTES) : 1;
}

/*
 * AP_BLOOM_BIT_MUL^i mod 2^32, i < AP_BLOOM_HASHES_MAX: probe i's word
 * a * AP_BLOOM_BIT_MUL^i in one multiply, so the k probes do not wait on one
 * another (the same bits as multiplying k times in turn).
 */
static const uint32_t ap_bloom_bit_mul_pow[AP_BLOOM_HASHES_MAX] = {
	UINT32_C(0x00000001),
	UINT32_C(0x9E3779B1),
	UINT32_C(0xFFE6CC61),
	UINT32_C(0xCC042811),
	UINT32_C(0x1F76BCC1),
	UINT32_C(0x8BC6BA71),
	UINT32_C(0x5ECD5121),
	UINT32_C(0x6364B0D1),
	UINT32_C(0x4B180981),
	UINT32_C(0xF0D38B31),
	UINT32_C(0xA49465E1),
	UINT32_C(0xB018C991),
	UINT32_C(0x448FE641),
	UINT32_C(0x0149EBF1),
	UINT32_C(0x43680AA1),
	UINT32_C(0x6E8C7251)
};

/* Set the key's k bits: nblocks blocks of 2^log2bits bits. */
static inline void
ap_bloom_insert_blocks(unsigned char *bits, uint32_t nblocks, uint32_t log2bits, uint32_t k,
					   uint64_t h)
{
	unsigned char *block = bits + ((size_t) ap_bloom_block(h, nblocks) << (log2bits - 3));
	uint32_t	a = (uint32_t) h;

	for (uint32_t i = 0; i < k && i < AP_BLOOM_HASHES_MAX; i++)
	{
		uint32_t	b = (a * ap_bloom_bit_mul_pow[i]) >> (32 - log2bits);

		block[b >> 3] |= (unsigned char) (1u << (b & 7));
	}
}

/* May the key be in the filter?  False means certainly not. */
static inline bool
ap_bloom_probe_blocks(const unsigned char *bits, uint32_t nblocks, uint32_t log2bits,
					  uint32_t k, uint64_t h)
{
	const unsigned char *block = bits + ((size_t) ap_bloom_block(h, nblocks) << (log2bits - 3));
	uint32_t	a = (uint32_t) h;
	uint32_t	all = 1;

	/* every bit read, no early exit: a data-dependent exit mispredicts half the time */
	for (uint32_t i = 0; i < k && i < AP_BLOOM_HASHES_MAX; i++)
	{
		uint32_t	b = (a * ap_bloom_bit_mul_pow[i]) >> (32 - log2bits);

		all &= (uint32_t) block[b >> 3] >> (b & 7);
	}
	return (all & 1) != 0;
}

/* The same for nblocks 64-byte blocks. */
static inline void
ap_bloom_insert(unsigned char *bits, uint32_t nblocks, uint32_t k, uint64_t h)
{
	ap_bloom_insert_blocks(bits, nblocks, 9, k, h);
}

static inline bool
ap_bloom_probe(const unsigned char *bits, uint32_t nblocks, uint32_t k, uint64_t h)
{
	return ap_bloom_probe_blocks(bits, nblocks, 9, k, h);
}

/* The same for a filter of len (valid) bytes, of either form. */
static inline void
ap_bloom_insert_len(unsigned char *bits, size_t len, uint32_t k, uint64_t h)
{
	ap_bloom_insert_blocks(bits, ap_bloom_nblocks(len), ap_bloom_block_log2(len), k, h);
}

static inline bool
ap_bloom_probe_len(const unsigned char *bits, size_t len, uint32_t k, uint64_t h)
{
	return ap_bloom_probe_blocks(bits, ap_bloom_nblocks(len), ap_bloom_block_log2(len), k, h);
}

/* x^k for a small integer k, by squaring (k multiplies at most). */
static inline double
ap_bloom_ipow(double x, uint32_t k)
{
	double		r = 1.0;

	for (; k > 0; k >>= 1)
	{
		if (k & 1)
			r *= x;
		x *= x;
	}
	return r;
}

/*
 * Expected false-positive rate of a blocked filter holding nkeys distinct
 * keys: the keys per block are Poisson(nkeys / nblocks); a block with j keys
 * has each bit still clear with probability (1 - 1/512)^(k j), and a
 * non-member passes if its k bits are all set.  The sum runs over j within
 * ten standard deviations of the mean, each term from the one before (the
 * Poisson weight times lambda / j, the clear share times (1 - 1/512)^k): the
 * planner asks for many rates while it costs filters, and a logarithm, an
 * exponential and a log-gamma per term made that a third of planning a
 * six-table join.
 */
static inline double
ap_bloom_fpr(double nkeys, uint32_t nblocks, uint32_t k)
{
	double		lambda;
	double		clear1 = 1.0 - 1.0 / AP_BLOOM_BLOCK_BITS;
	double		clear_k;
	double		sum = 0.0;
	double		lo;
	double		hi;
	double		pj;
	double		clear_j;

	if (nkeys <= 0.0 || nblocks == 0)
		return nkeys <= 0.0 ? 0.0 : 1.0;
	lambda = nkeys / nblocks;
	/* so many keys per block that the spread no longer matters */
	if (lambda > 20000.0)
		return ap_bloom_ipow(1.0 - pow(clear1, k * lambda), k);
	lo = floor(lambda - 10.0 * sqrt(lambda) - 10.0);
	if (lo < 0.0)
		lo = 0.0;
	hi = ceil(lambda + 10.0 * sqrt(lambda) + 10.0);
	clear_k = ap_bloom_ipow(clear1, k);
	pj = exp(-lambda + lo * log(lambda) - lgamma(lo + 1.0));
	clear_j = pow(clear_k, lo);
	for (double j = lo; j <= hi; j += 1.0)
	{
		sum += pj * ap_bloom_ipow(1.0 - clear_j, k);
		pj *= lambda / (j + 1.0);
		clear_j *= clear_k;
	}
	return sum > 1.0 ? 1.0 : sum;
}

/*
 * The rate of a filter of len (valid) bytes: a narrow filter is one block
 * holding every key, (1 - (1 - 1/m)^(k n))^k for its m bits.
 */
static inline double
ap_bloom_fpr_len(double nkeys, size_t len, uint32_t k)
{
	double		m;

	if (len >= AP_BLOOM_BLOCK_BYTES)
		return ap_bloom_fpr(nkeys, ap_bloom_nblocks(len), k);
	if (nkeys <= 0.0)
		return 0.0;
	m = (double) len * 8.0;
	return ap_bloom_ipow(1.0 - pow(1.0 - 1.0 / m, k * nkeys), k);
}

/* The k in [MIN, MAX] with the lowest rate for a filter of len bytes. */
static inline uint32_t
ap_bloom_best_k_len(double nkeys, size_t len)
{
	uint32_t	best = AP_BLOOM_HASHES_MIN;
	double		best_fpr = 2.0;

	for (uint32_t k = AP_BLOOM_HASHES_MIN; k <= AP_BLOOM_HASHES_MAX; k++)
	{
		double		f = ap_bloom_fpr_len(nkeys, len, k);

		/* a larger k must win clearly: every probe pays for it */
		if (f < best_fpr * 0.98)
		{
			best = k;
			best_fpr = f;
		}
	}
	return best;
}

/* The k minimizing an unblocked filter's rate, m/n ln 2, within [MIN, MAX]. */
static inline uint32_t
ap_bloom_plain_k(double nkeys, uint32_t nblocks)
{
	double		k = floor((double) nblocks * AP_BLOOM_BLOCK_BITS / nkeys * AP_BLOOM_LN2 + 0.5);

	if (k < AP_BLOOM_HASHES_MIN)
		return AP_BLOOM_HASHES_MIN;
	if (k > AP_BLOOM_HASHES_MAX)
		return AP_BLOOM_HASHES_MAX;
	return (uint32_t) k;
}

/*
 * The k in [MIN, MAX] with the lowest blocked rate for this size.  The rate
 * falls with k to its least and then rises, so the search stops at the
 * first rise: no later k can win.  Checked against the full search
 * (diskd/test/bloom.c, test_best_k) over 0.01 to 5,000 keys per block, 1 to
 * 262,144 blocks, and the sizes ap_bloom_size picks for 1 to 300 million
 * keys: the same k for every one.  It halves the planner's sizing of a
 * new filter.
 */
static inline uint32_t
ap_bloom_best_k(double nkeys, uint32_t nblocks)
{
	uint32_t	best = AP_BLOOM_HASHES_MIN;
	double		best_fpr = 2.0;
	double		prev = 3.0;

	for (uint32_t k = AP_BLOOM_HASHES_MIN; k <= AP_BLOOM_HASHES_MAX; k++)
	{
		double		f = ap_bloom_fpr(nkeys, nblocks, k);

		/* a larger k must win clearly: every probe pays for it */
		if (f < best_fpr * 0.98)
		{
			best = k;
			best_fpr = f;
		}
		if (f > prev)
			break;
		prev = f;
	}
	return best;
}

/*
 * Size a filter for nkeys distinct keys: *nblocks (at least 1, at most
 * max_bytes / 64, at most AP_BLOOM_BYTES_MAX) and *k, aiming at target_fpr.
 */
static inline void
ap_bloom_size(double nkeys, uint64_t max_bytes, double target_fpr,
			  uint32_t *nblocks, uint32_t *k)
{
	uint64_t	max_blocks = max_bytes / AP_BLOOM_BLOCK_BYTES;
	double		n = nkeys < 1.0 ? 1.0 : nkeys;
	double		bits = -n * log(target_fpr) / (AP_BLOOM_LN2 * AP_BLOOM_LN2);
	double		blocks = ceil(bits / AP_BLOOM_BLOCK_BITS);

	if (max_blocks > AP_BLOOM_BYTES_MAX / AP_BLOOM_BLOCK_BYTES)
		max_blocks = AP_BLOOM_BYTES_MAX / AP_BLOOM_BLOCK_BYTES;
	if (max_blocks < 1)
		max_blocks = 1;
	if (blocks < 1.0)
		blocks = 1.0;
	if (blocks > (double) max_blocks)
		blocks = (double) max_blocks;
	*nblocks = (uint32_t) blocks;

	/* blocking costs a little: grow (bounded) until the target is met */
	for (int round = 0; round < 16 && *nblocks < max_blocks &&
		 ap_bloom_fpr(n, *nblocks, ap_bloom_plain_k(n, *nblocks)) > target_fpr; round++)
	{
		uint64_t	grown = (uint64_t) *nblocks + *nblocks / 8 + 1;

		*nblocks = (uint32_t) (grown < max_blocks ? grown : max_blocks);
	}
	*k = ap_bloom_best_k(n, *nblocks);
}

#endif							/* AP_BLOOM_H */
