/*
 * bloom_probe.c
 *	  Unit tests of the disk side of Bloom filters (diskd/bloom.c): malformed
 *	  filters refused at compile time, the key capture, the measuring of
 *	  false positives, and narrow filters.  Split from bloom.c.
 *
 * Rules of this file:
 *  - Filters are built as the host builds them (proto/ap_bloom.h) and
 *    probed as a disk probes them, over datums built byte by byte.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "testutil.h"
#include "bloomkeys.h"

/* Malformed filters are refused at compile time, naming the field. */
static void
test_compile_errors(void)
{
	ApColumn	cols[2] = {
		{4, 'i', true, false, AP_TYPE_INT4, 0},
		{4, 'i', true, false, AP_TYPE_FLOAT4, 0},
	};
	ApTupleDesc desc = {2, cols, 0};
	ActivePg__Expr var = ACTIVE_PG__EXPR__INIT;
	ActivePg__Expr *keyp = &var;
	uint32_t	kind = AP_TYPE_INT4;
	unsigned char bits[128] = {0};
	ActivePg__BloomFilter bf = ACTIVE_PG__BLOOM_FILTER__INIT;
	ActivePg__BloomFilter *bfp = &bf;
	ActivePg__Program prog = ACTIVE_PG__PROGRAM__INIT;
	ApBloomSet	set;

	var.node_case = ACTIVE_PG__EXPR__NODE_VAR;
	var.var = 1;
	bf.bits.data = bits;
	bf.bits.len = sizeof(bits);
	bf.nhashes = 3;
	bf.n_keys = 1;
	bf.keys = &keyp;
	bf.n_key_kinds = 1;
	bf.key_kinds = &kind;
	prog.n_blooms = 1;
	prog.blooms = &bfp;

	memset(&set, 0, sizeof(set));
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), 0);
	ap_bloom_free(&set);

	bf.bits.len = 100;
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), AP_ERR_BAD_REQUEST);
	CHECK(strstr(set.error, "bits") != NULL);
	bf.bits.len = sizeof(bits);
	bf.nhashes = 17;
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), AP_ERR_BAD_REQUEST);
	CHECK(strstr(set.error, "nhashes") != NULL);
	bf.nhashes = 3;
	var.var = 3;
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), AP_ERR_BAD_REQUEST);
	var.var = 2;
	kind = AP_TYPE_FLOAT4;
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), AP_ERR_UNSUPPORTED);
	kind = AP_TYPE_INT8;
	var.var = 1;
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), AP_ERR_BAD_REQUEST);
	CHECK(strstr(set.error, "key_kinds") != NULL);
	kind = AP_TYPE_INT4;
	var.node_case = ACTIVE_PG__EXPR__NODE_KONST;
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), AP_ERR_UNSUPPORTED);
	var.node_case = ACTIVE_PG__EXPR__NODE_VAR;
	bf.n_key_kinds = 0;
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), AP_ERR_BAD_REQUEST);
	bf.n_key_kinds = 1;
	prog.n_blooms = AP_BLOOM_FILTERS_MAX + 1;
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), AP_ERR_BAD_REQUEST);
	prog.n_blooms = 0;
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), 0);
	CHECK_EQ(set.nfilters, 0);
	ap_bloom_free(&set);
}

/*
 * The normalized encoding a hash captures is the key's words, and capturing
 * does not change the hash (the host's exact key set rests on both).
 */
static void
test_capture(void)
{
	uint64_t	words[8];
	ApBloomHash st;
	ApBloomHash plain;

	ap_bloom_hash_init(&st, SEED);
	st.capture = words;
	st.capture_cap = 8;
	ap_bloom_key_int(&st, -5);
	ap_bloom_key_text(&st, (const unsigned char *) "abcdefghij", 10);
	CHECK_EQ(st.nwords, 4);
	CHECK(words[0] == (uint64_t) (int64_t) -5);
	CHECK_EQ(words[1], 10);
	CHECK(words[2] == UINT64_C(0x6867666564636261));
	CHECK(words[3] == UINT64_C(0x6a69));
	ap_bloom_hash_init(&plain, SEED);
	ap_bloom_key_int(&plain, -5);
	ap_bloom_key_text(&plain, (const unsigned char *) "abcdefghij", 10);
	CHECK(ap_bloom_hash_final(&st) == ap_bloom_hash_final(&plain));

	/* a key longer than the buffer: the count tells, nothing overflows */
	ap_bloom_hash_init(&st, SEED);
	st.capture = words;
	st.capture_cap = 2;
	ap_bloom_key_text(&st, (const unsigned char *) "abcdefghijklmnopqrstuvwxyz", 26);
	CHECK_EQ(st.nwords, 5);
}

/*
 * Program.bloom_measure: which filter alone rejects a dropped tuple, and the
 * per-filter counters handed to ScanStats.
 */
static void
test_measure(void)
{
	ApColumn	cols[2] = {
		{4, 'i', true, false, AP_TYPE_INT4, 0},
		{4, 'i', true, false, AP_TYPE_INT4, 0},
	};
	ApTupleDesc desc = {2, cols, 0};
	uint32_t	kind = AP_TYPE_INT4;
	ActivePg__Expr vars[2];
	ActivePg__Expr *keyp[2];
	ActivePg__BloomFilter bf[2];
	ActivePg__BloomFilter *bfp[2];
	ActivePg__Program prog = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__ScanStats stats = ACTIVE_PG__SCAN_STATS__INIT;
	unsigned char bits[2][16 * AP_BLOOM_BLOCK_BYTES];
	ApBloomSet	set;
	int32_t		a;
	int32_t		b;
	ApValue		v[2];
	int32_t		out_a = -1;
	int32_t		out_b = -1;

	memset(bits, 0, sizeof(bits));
	for (int f = 0; f < 2; f++)
	{
		active_pg__expr__init(&vars[f]);
		vars[f].node_case = ACTIVE_PG__EXPR__NODE_VAR;
		vars[f].var = f + 1;
		keyp[f] = &vars[f];
		active_pg__bloom_filter__init(&bf[f]);
		bf[f].id = f;
		bf[f].n_keys = 1;
		bf[f].keys = &keyp[f];
		bf[f].n_key_kinds = 1;
		bf[f].key_kinds = &kind;
		bf[f].bits.data = bits[f];
		bf[f].bits.len = sizeof(bits[f]);
		bf[f].nhashes = 6;
		bf[f].seed = SEED + f;
		bfp[f] = &bf[f];
	}
	/* filter 0 holds a in 0..9, filter 1 holds b in 0..4 */
	for (int i = 0; i < 10; i++)
	{
		ApBloomHash st;

		ap_bloom_hash_init(&st, SEED + 0);
		ap_bloom_key_int(&st, i);
		ap_bloom_insert(bits[0], 16, 6, ap_bloom_hash_final(&st));
		if (i < 5)
		{
			ap_bloom_hash_init(&st, SEED + 1);
			ap_bloom_key_int(&st, i);
			ap_bloom_insert(bits[1], 16, 6, ap_bloom_hash_final(&st));
		}
	}
	/* values outside both filters that each filter really rejects */
	for (int32_t x = 1000; x < 2000 && (out_a < 0 || out_b < 0); x++)
	{
		ApBloomHash st;

		ap_bloom_hash_init(&st, SEED + 0);
		ap_bloom_key_int(&st, x);
		if (out_a < 0 && !ap_bloom_probe(bits[0], 16, 6, ap_bloom_hash_final(&st)))
			out_a = x;
		ap_bloom_hash_init(&st, SEED + 1);
		ap_bloom_key_int(&st, x);
		if (out_b < 0 && !ap_bloom_probe(bits[1], 16, 6, ap_bloom_hash_final(&st)))
			out_b = x;
	}
	CHECK(out_a >= 0 && out_b >= 0);

	prog.n_blooms = 2;
	prog.blooms = bfp;
	prog.bloom_measure = true;
	memset(&set, 0, sizeof(set));
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), 0);
	CHECK(set.measure);
	v[0] = (ApValue) {(const unsigned char *) &a, 4, false};
	v[1] = (ApValue) {(const unsigned char *) &b, 4, false};

	/* both pass */
	a = 3;
	b = 3;
	CHECK(ap_bloom_pass(&set, v));
	/* filter 0 alone rejects */
	a = out_a;
	b = 3;
	CHECK(!ap_bloom_pass(&set, v));
	CHECK_EQ(ap_bloom_sole_rejection(&set, v), 0);
	/* filter 1 alone rejects (after filter 0 passed) */
	a = 3;
	b = out_b;
	CHECK(!ap_bloom_pass(&set, v));
	CHECK_EQ(ap_bloom_sole_rejection(&set, v), 1);
	/* both reject: neither decided alone */
	a = out_a;
	b = out_b;
	CHECK(!ap_bloom_pass(&set, v));
	CHECK_EQ(ap_bloom_sole_rejection(&set, v), -1);
	/* a NULL key is no candidate for a false positive */
	a = 3;
	v[1].isnull = true;
	CHECK(!ap_bloom_pass(&set, v));
	CHECK_EQ(ap_bloom_sole_rejection(&set, v), -1);
	v[1].isnull = false;

	/* probing for the measure counts nothing */
	CHECK_EQ(set.filters[0].tested, 5);
	CHECK_EQ(set.filters[0].dropped, 2);
	CHECK_EQ(set.filters[1].tested, 3);
	CHECK_EQ(set.filters[1].dropped, 2);
	set.filters[1].alone = 7;
	ap_bloom_report(&set, &stats);
	CHECK_EQ(stats.n_bloom_filter_tested, 2);
	CHECK_EQ(stats.n_bloom_filter_dropped, 2);
	CHECK_EQ(stats.n_bloom_filter_alone, 2);
	CHECK_EQ(stats.bloom_filter_tested[0], 5);
	CHECK_EQ(stats.bloom_filter_dropped[1], 2);
	CHECK_EQ(stats.bloom_filter_alone[0], 0);
	CHECK_EQ(stats.bloom_filter_alone[1], 7);
	ap_bloom_free(&set);

	/* without the flag the set does not measure */
	prog.bloom_measure = false;
	memset(&set, 0, sizeof(set));
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), 0);
	CHECK(!set.measure);
	ap_bloom_free(&set);
}

/*
 * Narrow filters (8, 16, 32 bytes: 000 Table 3's small sizes): the disk
 * accepts exactly those below 64 bytes, finds every key the host inserted,
 * and passes non-members at the rate ap_bloom_fpr_len predicts.
 */
static void
test_narrow(void)
{
	ApColumn	cols[1] = {{4, 'i', true, false, AP_TYPE_INT4, 0}};
	ApTupleDesc desc = {1, cols, 0};
	uint32_t	kind = AP_TYPE_INT4;
	ActivePg__Expr var = ACTIVE_PG__EXPR__INIT;
	ActivePg__Expr *keyp = &var;
	ActivePg__BloomFilter bf = ACTIVE_PG__BLOOM_FILTER__INIT;
	ActivePg__BloomFilter *bfp = &bf;
	ActivePg__Program prog = ACTIVE_PG__PROGRAM__INIT;
	unsigned char bits[64];
	ApBloomSet	set;
	size_t		sizes[3] = {8, 16, 32};

	CHECK(ap_bloom_len_valid(8) && ap_bloom_len_valid(16) && ap_bloom_len_valid(32));
	CHECK(ap_bloom_len_valid(64) && ap_bloom_len_valid(128));
	CHECK(!ap_bloom_len_valid(0) && !ap_bloom_len_valid(24) && !ap_bloom_len_valid(48) &&
		  !ap_bloom_len_valid(100));
	var.node_case = ACTIVE_PG__EXPR__NODE_VAR;
	var.var = 1;
	bf.n_keys = 1;
	bf.keys = &keyp;
	bf.n_key_kinds = 1;
	bf.key_kinds = &kind;
	bf.seed = SEED;
	prog.n_blooms = 1;
	prog.blooms = &bfp;

	for (int s = 0; s < 3; s++)
	{
		size_t		len = sizes[s];
		uint32_t	nkeys = (uint32_t) len * 2;		/* 4 bits per key: a visible rate */
		uint32_t	k = ap_bloom_best_k_len(nkeys, len);
		uint64_t	passed = 0;
		uint32_t	trials = 200000;
		double		expect = ap_bloom_fpr_len(nkeys, len, k);
		double		measured;

		memset(bits, 0, sizeof(bits));
		for (uint32_t i = 0; i < nkeys; i++)
			ap_bloom_insert_len(bits, len, k, hash_int(i));
		/* nothing beyond the narrow block is touched */
		for (size_t b = len; b < sizeof(bits); b++)
			CHECK_EQ(bits[b], 0);
		bf.bits.data = bits;
		bf.bits.len = len;
		bf.nhashes = k;
		memset(&set, 0, sizeof(set));
		CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), 0);
		for (int32_t i = 0; i < (int32_t) nkeys; i++)
		{
			ApValue		v = {(const unsigned char *) &i, 4, false};

			CHECK(ap_bloom_pass(&set, &v));
		}
		for (uint32_t t = 0; t < trials; t++)
		{
			int32_t		x = (int32_t) (1000000 + t);
			ApValue		v = {(const unsigned char *) &x, 4, false};

			if (ap_bloom_pass(&set, &v))
				passed++;
			/* host and disk agree on every key */
			CHECK(ap_bloom_probe_len(bits, len, k, hash_int(x)) == ap_bloom_pass(&set, &v));
		}
		measured = (double) passed / trials;
		/*
		 * One filter this small strays from the formula's mean over
		 * filters; its own rate is its fill to the k-th power
		 */
		{
			uint32_t	set_bits = 0;
			double		own;

			for (size_t b = 0; b < len; b++)
				set_bits += (uint32_t) __builtin_popcount(bits[b]);
			own = pow((double) set_bits / (len * 8.0), k);
			printf("  narrow fpr n=%u bytes=%zu k=%u: measured %.5f, this filter's fill^k %.5f, formula %.5f\n",
				   nkeys, len, k, measured, own, expect);
			CHECK(fabs(measured - own) < 0.1 * own + 0.005);
			CHECK(measured > 0.5 * expect && measured < 2.0 * expect);
		}
		ap_bloom_free(&set);
	}
	/* 48 bytes is neither narrow nor whole blocks */
	bf.bits.len = 48;
	memset(&set, 0, sizeof(set));
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), AP_ERR_BAD_REQUEST);
	CHECK(strstr(set.error, "bits") != NULL);
}

/* Hash of an (int4, date) key, as the host computes it. */
static uint64_t
hash_int_date(int32_t k, int32_t d)
{
	ApBloomHash st;

	ap_bloom_hash_init(&st, SEED);
	ap_bloom_key_int(&st, k);
	ap_bloom_key_date(&st, d);
	return ap_bloom_hash_final(&st);
}

/*
 * The first filter's verdicts on a batch (ap_bloom_first_batch) are what
 * probing each tuple says: over tuples of (int4, int2, int8, date, text) with
 * a two-column filter on (int4, date) and a second on the int8, across
 * batch boundaries, with tuples the caller left out (NULL data).  A filter
 * on the text column leaves the set without batches.
 */
static void
test_first_batch(void)
{
	ApColumn	cols[5] = {
		{4, 'i', true, false, AP_TYPE_INT4, 0},
		{2, 's', true, false, AP_TYPE_INT2, 0},
		{8, 'd', true, false, AP_TYPE_INT8, 0},
		{4, 'i', true, false, AP_TYPE_DATE, 0},
		{-1, 'i', false, false, AP_TYPE_TEXT, 0},
	};
	ApTupleDesc desc = {5, cols, 0};
	ActivePg__Expr vars[3] = {ACTIVE_PG__EXPR__INIT, ACTIVE_PG__EXPR__INIT,
	ACTIVE_PG__EXPR__INIT};
	ActivePg__Expr *keys0[2] = {&vars[0], &vars[1]};
	ActivePg__Expr *keys1[1] = {&vars[2]};
	uint32_t	kinds0[2] = {AP_TYPE_INT4, AP_TYPE_DATE};
	uint32_t	kinds1[1] = {AP_TYPE_INT8};
	ActivePg__BloomFilter bf[2] = {ACTIVE_PG__BLOOM_FILTER__INIT, ACTIVE_PG__BLOOM_FILTER__INIT};
	ActivePg__BloomFilter *bfp[2] = {&bf[0], &bf[1]};
	ActivePg__Program prog = ACTIVE_PG__PROGRAM__INIT;
	static unsigned char bits0[1024];
	static unsigned char bits1[1024];
	enum {NROWS = 150};
	static unsigned char rows[NROWS][24];
	const unsigned char *data[NROWS];
	uint8_t		verdict[NROWS];
	ApBloomSet	set;
	ApBloomSet	first_only;
	uint64_t	state = 77;
	int			drops = 0;

	ap_tupdesc_cache_offsets(&desc);
	CHECK_EQ(desc.ncached, 4);
	vars[0].node_case = vars[1].node_case = vars[2].node_case = ACTIVE_PG__EXPR__NODE_VAR;
	vars[0].var = 1;
	vars[1].var = 4;
	vars[2].var = 3;
	for (int f = 0; f < 2; f++)
	{
		bf[f].bits.data = f == 0 ? bits0 : bits1;
		bf[f].bits.len = sizeof(bits0);
		bf[f].nhashes = 4;
		bf[f].seed = SEED;
	}
	bf[0].n_keys = bf[0].n_key_kinds = 2;
	bf[0].keys = keys0;
	bf[0].key_kinds = kinds0;
	bf[1].n_keys = bf[1].n_key_kinds = 1;
	bf[1].keys = keys1;
	bf[1].key_kinds = kinds1;
	prog.n_blooms = 2;
	prog.blooms = bfp;

	/* rows at the cached offsets (0, 4, 8, 16); every third one's keys inserted */
	for (int i = 0; i < NROWS; i++)
	{
		int32_t		k = (int32_t) (next_rand(&state) % 100000) - 50000;
		int16_t		s2 = (int16_t) i;
		int64_t		k8 = (int64_t) next_rand(&state);
		int32_t		d = (int32_t) (next_rand(&state) % 20000) - 10000;

		CHECK_EQ(cols[1].cacheoff, 4);
		memcpy(rows[i] + cols[0].cacheoff, &k, 4);
		memcpy(rows[i] + cols[1].cacheoff, &s2, 2);
		memcpy(rows[i] + cols[2].cacheoff, &k8, 8);
		memcpy(rows[i] + cols[3].cacheoff, &d, 4);
		if (i % 3 == 0)
			ap_bloom_insert_len(bits0, sizeof(bits0), 4, hash_int_date(k, d));
		ap_bloom_insert_len(bits1, sizeof(bits1), 4, hash_int(k8));
		data[i] = i % 10 == 5 ? NULL : rows[i];
	}
	memset(&set, 0, sizeof(set));
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), 0);
	CHECK(set.fixed);
	prog.n_blooms = 1;
	memset(&first_only, 0, sizeof(first_only));
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &first_only), 0);

	memset(verdict, 0xEE, sizeof(verdict));
	ap_bloom_first_batch(&set, data, NROWS, verdict);
	for (int i = 0; i < NROWS; i++)
	{
		ApValue		v[4];

		for (int c = 0; c < 4; c++)
		{
			v[c].ptr = rows[i] + cols[c].cacheoff;
			v[c].len = (uint32_t) cols[c].attlen;
			v[c].isnull = false;
		}
		if (data[i] == NULL)
		{
			CHECK_EQ(verdict[i], AP_BLOOM_UNKNOWN);
			continue;
		}
		CHECK_EQ(verdict[i], ap_bloom_pass(&first_only, v) ? AP_BLOOM_PASSES : AP_BLOOM_DROPS);
		/* no false negative */
		if (i % 3 == 0)
			CHECK_EQ(verdict[i], AP_BLOOM_PASSES);
		drops += verdict[i] == AP_BLOOM_DROPS;
		/* the rest of the set: the second filter holds every row's key */
		if (verdict[i] == AP_BLOOM_PASSES)
			CHECK(ap_bloom_pass_rest(&set, v));
	}
	/* a filter of 8,192 bits with ~50 keys: most others dropped */
	CHECK(drops > NROWS / 2);
	/* counting a verdict counts the first filter as probing it would */
	set.filters[0].tested = set.filters[0].dropped = 0;
	ap_bloom_count_first(&set, false);
	ap_bloom_count_first(&set, true);
	CHECK_EQ(set.filters[0].tested, 2);
	CHECK_EQ(set.filters[0].dropped, 1);
	ap_bloom_free(&set);
	ap_bloom_free(&first_only);

	/* a key in the variable-length part: no batches */
	vars[2].var = 5;
	kinds1[0] = AP_TYPE_TEXT;
	prog.n_blooms = 2;
	memset(&set, 0, sizeof(set));
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), 0);
	CHECK(!set.fixed);
	ap_bloom_free(&set);
}

int
main(void)
{
	test_compile_errors();
	test_capture();
	test_measure();
	test_narrow();
	test_first_batch();
	return TEST_DONE();
}
