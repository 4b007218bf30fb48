/*
 * bloom.c
 *	  Unit tests of the Bloom filter shared by host and disks (proto/ap_bloom.h)
 *	  and of the disk's probe (diskd/bloom.c) against host-built filters;
 *	  the disk side's request checks, capture, measuring and narrow filters
 *	  are in bloom_probe.c.
 *
 * Rules of this file:
 *  - Filters are built exactly as the host builds them (ap_bloom.h's key
 *    functions over the host's detoasted values) and probed exactly as a disk
 *    probes them (ap_bloom_compile / ap_bloom_pass over stored datums built
 *    byte by byte: short and 4-byte varlena headers, short and long numeric
 *    forms), so the two sides are checked against each other.
 *  - The measured false-positive rate is checked against ap_bloom_fpr (the
 *    blocked formula) and against the classic unblocked formula.
 *  - Known-answer hashes are literals: a change of the hash or of the key
 *    encoding breaks compatibility between a host and a disk built apart,
 *    and must show up here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "testutil.h"

#include "bloomkeys.h"

/* ---------------- encoding ---------------- */

/* Values PostgreSQL calls equal hash alike; others do not. */
static void
test_normalization(void)
{
	unsigned char a[64];
	unsigned char b[64];
	size_t		la;
	size_t		lb;
	int			d15[] = {1, 5000};
	int			d150[] = {1, 5000, 0};
	int			d015[] = {0, 1, 5000};
	int			d1[] = {1};
	int			d2[] = {2};

	/* int2/int4/int8 all hash as int64 */
	CHECK(hash_int((int16_t) -7) == hash_int((int64_t) -7));
	CHECK(hash_int(5) != hash_int(6));

	/* 1.50 (long form, dscale 2, trailing zero digit) = 1.5 (short form) */
	la = num_long(a, false, 2, 0, d150, 3);
	lb = num_short(b, false, 1, 0, d15, 2);
	CHECK(hash_numeric(a, la) != 0);
	CHECK(hash_numeric(a, la) == hash_numeric(b, lb));
	/* a leading zero digit moves the weight */
	la = num_long(a, false, 1, 1, d015, 3);
	CHECK(hash_numeric(a, la) == hash_numeric(b, lb));
	/* sign matters, except for zero */
	la = num_short(a, true, 1, 0, d15, 2);
	CHECK(hash_numeric(a, la) != hash_numeric(b, lb));
	la = num_short(a, true, 3, 0, NULL, 0);
	lb = num_long(b, false, 0, 0, NULL, 0);
	CHECK(hash_numeric(a, la) == hash_numeric(b, lb));
	/* 1 and 10000 differ only in weight */
	la = num_short(a, false, 0, 0, d1, 1);
	lb = num_short(b, false, 0, 1, d1, 1);
	CHECK(hash_numeric(a, la) != hash_numeric(b, lb));
	la = num_short(a, false, 0, 0, d2, 1);
	lb = num_short(b, false, 0, 0, d1, 1);
	CHECK(hash_numeric(a, la) != hash_numeric(b, lb));
	/* NaN is one value; NaN, +inf and -inf differ */
	a[0] = 0x00;
	a[1] = 0xC0;
	b[0] = 0x00;
	b[1] = 0xD0;
	CHECK(hash_numeric(a, 2) != 0);
	CHECK(hash_numeric(a, 2) != hash_numeric(b, 2));
	/* malformed: digit above 9999, odd length, unknown special */
	{
		int			bad[] = {10000};

		la = num_short(a, false, 0, 0, bad, 1);
		CHECK(hash_numeric(a, la) == 0);
		CHECK(hash_numeric(a, 3) == 0);
		a[0] = 0x00;
		a[1] = 0xE0;
		CHECK(hash_numeric(a, 2) == 0);
	}

	/* bpchar ignores trailing spaces, text does not */
	CHECK(hash_bpchar("ab  ") == hash_bpchar("ab"));
	CHECK(hash_bpchar(" ab") != hash_bpchar("ab"));
	CHECK(hash_text("ab  ") != hash_text("ab"));
	{
		ApBloomHash s1;
		ApBloomHash s2;

		ap_bloom_hash_init(&s1, SEED);
		ap_bloom_key_text(&s1, (const unsigned char *) "", 0);
		ap_bloom_hash_init(&s2, SEED);
		ap_bloom_key_text(&s2, (const unsigned char *) "\0", 1);
		CHECK(ap_bloom_hash_final(&s1) != ap_bloom_hash_final(&s2));
	}
	/* the length word keeps the zero padding from making keys equal */
	{
		ApBloomHash s1;
		ApBloomHash s2;

		ap_bloom_hash_init(&s1, SEED);
		ap_bloom_key_text(&s1, (const unsigned char *) "ab\0", 3);
		ap_bloom_hash_init(&s2, SEED);
		ap_bloom_key_text(&s2, (const unsigned char *) "ab", 2);
		CHECK(ap_bloom_hash_final(&s1) != ap_bloom_hash_final(&s2));
		/* multi-column keys: ("ab", "c") vs ("a", "bc") */
		ap_bloom_hash_init(&s1, SEED);
		ap_bloom_key_text(&s1, (const unsigned char *) "ab", 2);
		ap_bloom_key_text(&s1, (const unsigned char *) "c", 1);
		ap_bloom_hash_init(&s2, SEED);
		ap_bloom_key_text(&s2, (const unsigned char *) "a", 1);
		ap_bloom_key_text(&s2, (const unsigned char *) "bc", 2);
		CHECK(ap_bloom_hash_final(&s1) != ap_bloom_hash_final(&s2));
	}
	/* the seed changes everything */
	{
		ApBloomHash st;

		ap_bloom_hash_init(&st, SEED + 1);
		ap_bloom_key_int(&st, 42);
		CHECK(ap_bloom_hash_final(&st) != hash_int(42));
	}
}

/*
 * Pinned hashes (also computed independently from the definition in the
 * header): host and disk builds must agree across versions.
 */
static void
test_known_answers(void)
{
	CHECK(hash_int(0) == UINT64_C(0xff14339f57ee4fe0));
	CHECK(hash_int(42) == UINT64_C(0x284a1a12313a343e));
	CHECK(hash_text("green") == UINT64_C(0x8f7b25293a91bb38));
	CHECK(ap_bloom_mix64(1) == UINT64_C(0x4179b061e0c0e0d0));
}

/* ---------------- false-positive rate ---------------- */

/* The unblocked filter's rate for the same bits: (1 - e^(-kn/m))^k. */
static double
classic_fpr(double n, double mbits, double k)
{
	return pow(1.0 - exp(-k * n / mbits), k);
}

/* Insert n random keys, probe many others, compare with the formula. */
static void
check_fpr(uint32_t n, uint32_t nblocks, uint32_t k)
{
	unsigned char *bits = calloc(nblocks, AP_BLOOM_BLOCK_BYTES);
	uint64_t	state = 12345 + n + k;
	uint32_t	probes = 400000;
	uint32_t	fp = 0;
	double		measured;
	double		expect = ap_bloom_fpr(n, nblocks, k);
	double		classic = classic_fpr(n, (double) nblocks * AP_BLOOM_BLOCK_BITS, k);
	double		sigma;

	/* members are even numbers, probes odd ones: never a true member */
	for (uint32_t i = 0; i < n; i++)
		ap_bloom_insert(bits, nblocks, k, hash_int((int64_t) (next_rand(&state) << 1)));
	/* no false negatives: replay the members */
	state = 12345 + n + k;
	for (uint32_t i = 0; i < n; i++)
		CHECK(ap_bloom_probe(bits, nblocks, k, hash_int((int64_t) (next_rand(&state) << 1))));
	for (uint32_t i = 0; i < probes; i++)
	{
		if (ap_bloom_probe(bits, nblocks, k, hash_int((int64_t) (next_rand(&state) << 1 | 1))))
			fp++;
	}
	measured = (double) fp / probes;
	sigma = sqrt(expect * (1.0 - expect) / probes);
	fprintf(stderr, "  fpr n=%u bytes=%u k=%u: measured %.5f, blocked formula %.5f, classic %.5f\n",
			n, nblocks * AP_BLOOM_BLOCK_BYTES, k, measured, expect, classic);
	/* within 5 sigma and 10% of the blocked formula */
	CHECK(fabs(measured - expect) <= 5.0 * sigma + 0.10 * expect);
	/* blocking costs something, never less than the classic filter */
	CHECK(expect >= classic * 0.999);
	free(bits);
}

/*
 * The blocked rate term by term from its definition, each Poisson weight
 * and clear share computed directly: ap_bloom_fpr gets its terms by
 * recurrence and must agree.
 */
static double
direct_fpr(double n, uint32_t nblocks, uint32_t k)
{
	double		lambda = n / nblocks;
	double		clear1 = 1.0 - 1.0 / AP_BLOOM_BLOCK_BITS;
	double		sum = 0.0;

	for (double j = 0.0; j <= lambda + 12.0 * sqrt(lambda) + 20.0; j += 1.0)
	{
		double		pj = exp(-lambda + j * log(lambda) - lgamma(j + 1.0));

		sum += pj * pow(1.0 - pow(clear1, k * j), k);
	}
	return sum > 1.0 ? 1.0 : sum;
}

/* ap_bloom_fpr against the direct sum, over sparse to overfull filters and every k. */
static void
test_fpr_formula(void)
{
	static const double keys[] = {1, 3, 50, 700, 10000, 227597, 3e6};
	static const uint32_t blocks[] = {1, 7, 64, 1024, 4689, 65536};
	double		worst = 0.0;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++)
		{
			/* beyond 20,000 keys a block the rate takes its closed form */
			if (keys[i] / blocks[b] > 20000.0)
				continue;
			for (uint32_t k = AP_BLOOM_HASHES_MIN; k <= AP_BLOOM_HASHES_MAX; k++)
			{
				double		want = direct_fpr(keys[i], blocks[b], k);
				double		got = ap_bloom_fpr(keys[i], blocks[b], k);
				double		rel = fabs(got - want) / fmax(want, 1e-300);

				if (rel > worst)
					worst = rel;
				CHECK(rel <= 1e-9 || fabs(got - want) <= 1e-15);
			}
		}
	fprintf(stderr, "  fpr recurrence vs direct sum: worst relative difference %.3g\n", worst);
}

/*
 * ap_bloom_best_k stops at the first k whose rate rises; the full search
 * over every k (as it was) must pick the same k: over 0.01 to 5,000 keys
 * a block and 1 to 262,144 blocks, and at the sizes ap_bloom_size picks
 * (and the planner's 256-block cached size) for 1 to 300 million keys.
 */
static uint32_t
full_best_k(double nkeys, uint32_t nblocks)
{
	double		rate[AP_BLOOM_HASHES_MAX + 1];
	uint32_t	best = AP_BLOOM_HASHES_MIN;

	/* every rate first, then the rule: a larger k wins only by 2% */
	for (uint32_t k = AP_BLOOM_HASHES_MIN; k <= AP_BLOOM_HASHES_MAX; k++)
		rate[k] = ap_bloom_fpr(nkeys, nblocks, k);
	for (uint32_t k = AP_BLOOM_HASHES_MIN + 1; k <= AP_BLOOM_HASHES_MAX; k++)
		best = rate[k] < rate[best] * 0.98 ? k : best;
	return best;
}

static void
test_best_k(void)
{
	long		checked = 0;
	long		differ = 0;

	for (uint32_t nb = 1; nb <= 262144; nb *= 2)
		for (double lambda = 0.01; lambda < 5000.0; lambda *= 1.02)
		{
			checked++;
			if (ap_bloom_best_k(lambda * nb, nb) != full_best_k(lambda * nb, nb))
				differ++;
		}
	for (double lg = 0.0; lg <= 8.5; lg += 0.002)
	{
		double		nkeys = pow(10.0, lg);
		uint32_t	nblocks;
		uint32_t	k;

		ap_bloom_size(nkeys, AP_BLOOM_BYTES_MAX, AP_BLOOM_TARGET_FPR, &nblocks, &k);
		CHECK_EQ(k, full_best_k(nkeys, nblocks));
		checked += 2;
		if (ap_bloom_best_k(nkeys, 256) != full_best_k(nkeys, 256))
			differ++;
	}
	CHECK_EQ(differ, 0);
	fprintf(stderr, "  best k: %ld sizes, the stopped search as the full one\n", checked);
}

/* Measured rates and sizing. */
static void
test_fpr(void)
{
	uint32_t	nblocks;
	uint32_t	k;

	check_fpr(1000, 20, 7);		/* ~10 bits per key */
	check_fpr(10000, 200, 7);
	check_fpr(10000, 100, 4);	/* ~5 bits per key */
	check_fpr(50000, 64, 3);	/* overfull */
	check_fpr(20000, 1024, 10);

	/* sizing: the target met when the cap allows it */
	ap_bloom_size(10000, 1024 * 1024, AP_BLOOM_TARGET_FPR, &nblocks, &k);
	CHECK(ap_bloom_fpr(10000, nblocks, k) <= AP_BLOOM_TARGET_FPR);
	CHECK(nblocks * AP_BLOOM_BLOCK_BYTES < 32 * 1024);
	check_fpr(10000, nblocks, k);
	/* the cap wins */
	ap_bloom_size(1e7, 64 * 1024, AP_BLOOM_TARGET_FPR, &nblocks, &k);
	CHECK_EQ(nblocks, 1024);
	CHECK(k >= AP_BLOOM_HASHES_MIN && k <= AP_BLOOM_HASHES_MAX);
	/* at least one block, and never above the contract's limit */
	ap_bloom_size(0, 1024 * 1024, AP_BLOOM_TARGET_FPR, &nblocks, &k);
	CHECK_EQ(nblocks, 1);
	ap_bloom_size(1e9, UINT64_C(1) << 40, AP_BLOOM_TARGET_FPR, &nblocks, &k);
	CHECK_EQ(nblocks, AP_BLOOM_BYTES_MAX / AP_BLOOM_BLOCK_BYTES);
	CHECK(ap_bloom_fpr(0, 1, 1) == 0.0);
}

/* ---------------- host-built, disk-probed ---------------- */

/* A stored datum: a short (1-byte header) varlena around s. */
static unsigned char *
short_varlena(const unsigned char *s, size_t len)
{
	unsigned char *p = malloc(len + 1);

	p[0] = (unsigned char) (((len + 1) << 1) | 1);
	memcpy(p + 1, s, len);
	return p;
}

/* A stored datum: a plain 4-byte-header varlena around s. */
static unsigned char *
long_varlena(const unsigned char *s, size_t len)
{
	unsigned char *p = malloc(len + 4);
	uint32_t	hdr = (uint32_t) (len + 4) << 2;

	memcpy(p, &hdr, 4);
	memcpy(p + 4, s, len);
	return p;
}

/*
 * Relation (a int4, b int8, c text, d bpchar, e numeric, f date); one filter
 * per key column plus one two-column filter (a, c).  Keys inserted host-style,
 * tuples probed disk-style.
 */
static void
test_host_vs_disk(void)
{
	enum
	{
		NKEYS = 300
	};
	ApColumn	cols[6] = {
		{4, 'i', true, false, AP_TYPE_INT4, 0},
		{8, 'd', true, false, AP_TYPE_INT8, 0},
		{-1, 'i', false, false, AP_TYPE_TEXT, 0},
		{-1, 'i', false, false, AP_TYPE_BPCHAR, 0},
		{-1, 'i', false, false, AP_TYPE_NUMERIC, 0},
		{4, 'i', true, false, AP_TYPE_DATE, 0},
	};
	ApTupleDesc desc = {6, cols, 0};
	uint32_t	kinds[6] = {AP_TYPE_INT4, AP_TYPE_INT8, AP_TYPE_TEXT, AP_TYPE_BPCHAR,
	AP_TYPE_NUMERIC, AP_TYPE_DATE};
	ActivePg__Expr vars[6];
	ActivePg__Expr *keyp[6];
	ActivePg__BloomFilter bf[7];
	ActivePg__BloomFilter *bfp[7];
	ActivePg__Program prog = ACTIVE_PG__PROGRAM__INIT;
	unsigned char *bits[7];
	uint32_t	nblocks = 64;
	uint32_t	k = 6;
	ApBloomSet	set;
	uint64_t	agree = 0;
	uint64_t	passed_nonmembers = 0;

	for (int i = 0; i < 6; i++)
	{
		active_pg__expr__init(&vars[i]);
		vars[i].node_case = ACTIVE_PG__EXPR__NODE_VAR;
		vars[i].var = i + 1;
		keyp[i] = &vars[i];
	}
	for (int f = 0; f < 7; f++)
	{
		active_pg__bloom_filter__init(&bf[f]);
		bits[f] = calloc(nblocks, AP_BLOOM_BLOCK_BYTES);
		bf[f].id = f;
		bf[f].bits.data = bits[f];
		bf[f].bits.len = nblocks * AP_BLOOM_BLOCK_BYTES;
		bf[f].nhashes = k;
		bf[f].seed = SEED + f;
		if (f < 6)
		{
			bf[f].n_keys = 1;
			bf[f].keys = &keyp[f];
			bf[f].n_key_kinds = 1;
			bf[f].key_kinds = &kinds[f];
		}
		bfp[f] = &bf[f];
	}
	/* the two-column filter on (a, c) */
	{
		static ActivePg__Expr *ac[2];
		static uint32_t ackinds[2] = {AP_TYPE_INT4, AP_TYPE_TEXT};

		ac[0] = &vars[0];
		ac[1] = &vars[2];
		bf[6].n_keys = 2;
		bf[6].keys = ac;
		bf[6].n_key_kinds = 2;
		bf[6].key_kinds = ackinds;
	}

	/* host side: keys i = 0, 3, 6, ... (every third), as the host sees values */
	for (int i = 0; i < NKEYS; i += 3)
	{
		char		txt[32];
		unsigned char num[16];
		int			digits[2] = {i, 5000};
		size_t		nl;
		ApBloomHash st;

		snprintf(txt, sizeof(txt), "key-%d", i);
		/* the host detoasts numeric as stored: the long form with dscale 2 */
		nl = num_long(num, false, 2, 0, digits, 2);

		ap_bloom_hash_init(&st, SEED + 0);
		ap_bloom_key_int(&st, i);
		ap_bloom_insert(bits[0], nblocks, k, ap_bloom_hash_final(&st));
		/* an int4 host key against an int8 disk column */
		ap_bloom_hash_init(&st, SEED + 1);
		ap_bloom_key_int(&st, (int32_t) (i * 1000));
		ap_bloom_insert(bits[1], nblocks, k, ap_bloom_hash_final(&st));
		ap_bloom_hash_init(&st, SEED + 2);
		ap_bloom_key_text(&st, (const unsigned char *) txt, strlen(txt));
		ap_bloom_insert(bits[2], nblocks, k, ap_bloom_hash_final(&st));
		/* the host's bpchar has its padding; the disk's will have less */
		strcat(txt, "    ");
		ap_bloom_hash_init(&st, SEED + 3);
		ap_bloom_key_bpchar(&st, (const unsigned char *) txt, strlen(txt));
		ap_bloom_insert(bits[3], nblocks, k, ap_bloom_hash_final(&st));
		ap_bloom_hash_init(&st, SEED + 4);
		CHECK(ap_bloom_key_numeric(&st, num, nl));
		ap_bloom_insert(bits[4], nblocks, k, ap_bloom_hash_final(&st));
		ap_bloom_hash_init(&st, SEED + 5);
		ap_bloom_key_date(&st, -i);
		ap_bloom_insert(bits[5], nblocks, k, ap_bloom_hash_final(&st));
		snprintf(txt, sizeof(txt), "key-%d", i);
		ap_bloom_hash_init(&st, SEED + 6);
		ap_bloom_key_int(&st, i);
		ap_bloom_key_text(&st, (const unsigned char *) txt, strlen(txt));
		ap_bloom_insert(bits[6], nblocks, k, ap_bloom_hash_final(&st));
	}

	prog.n_blooms = 7;
	prog.blooms = bfp;
	memset(&set, 0, sizeof(set));
	CHECK_EQ(ap_bloom_compile(&prog, &desc, &set), 0);
	CHECK_EQ(set.nfilters, 7);
	CHECK_EQ(set.max_attno, 6);

	/* disk side: every tuple i, stored forms different from the host's */
	for (int i = 0; i < NKEYS; i++)
	{
		char		txt[32];
		unsigned char num[16];
		int			digits[2] = {i, 5000};
		size_t		nl;
		int32_t		a = i;
		int64_t		b = (int64_t) i * 1000;
		int32_t		f = -i;
		ApValue		v[6];
		unsigned char *c;
		unsigned char *d;
		unsigned char *e;
		bool		member = (i % 3) == 0;

		snprintf(txt, sizeof(txt), "key-%d", i);
		c = (i & 1) ? short_varlena((const unsigned char *) txt, strlen(txt)) :
			long_varlena((const unsigned char *) txt, strlen(txt));
		strcat(txt, " ");
		d = short_varlena((const unsigned char *) txt, strlen(txt));
		/* 1.5 stored in the short form with dscale 1 */
		nl = num_short(num, false, 1, 0, digits, 2);
		e = long_varlena(num, nl);

		v[0] = (ApValue) {(const unsigned char *) &a, 4, false};
		v[1] = (ApValue) {(const unsigned char *) &b, 8, false};
		v[2] = (ApValue) {c, 0, false};
		v[3] = (ApValue) {d, 0, false};
		v[4] = (ApValue) {e, 0, false};
		v[5] = (ApValue) {(const unsigned char *) &f, 4, false};

		/* each filter alone, then all together */
		for (int fi = 0; fi < 7; fi++)
		{
			ApBloomSet	one = set;
			ApBloomProbe *p = &set.filters[fi];
			bool		disk;
			ApBloomHash st;
			bool		host;

			one.filters[0] = set.filters[fi];
			one.nfilters = 1;
			disk = ap_bloom_pass(&one, v);
			if (member)
				CHECK(disk);
			else if (disk)
				passed_nonmembers++;
			/* the host's own probe of its normalized key answers the same */
			ap_bloom_hash_init(&st, p->seed);
			snprintf(txt, sizeof(txt), "key-%d", i);
			switch (fi)
			{
				case 0:
					ap_bloom_key_int(&st, i);
					break;
				case 1:
					ap_bloom_key_int(&st, (int64_t) i * 1000);
					break;
				case 2:
				case 3:
					ap_bloom_key_text(&st, (const unsigned char *) txt, strlen(txt));
					break;
				case 4:
					{
						unsigned char n2[16];
						int			dg[2] = {i, 5000};
						size_t		l2 = num_long(n2, false, 4, 0, dg, 2);

						ap_bloom_key_numeric(&st, n2, l2);
						break;
					}
				case 5:
					ap_bloom_key_date(&st, -i);
					break;
				case 6:
					ap_bloom_key_int(&st, i);
					ap_bloom_key_text(&st, (const unsigned char *) txt, strlen(txt));
					break;
			}
			host = ap_bloom_probe(p->bits, p->nblocks, p->nhashes, ap_bloom_hash_final(&st));
			CHECK(host == disk);
			if (host == disk)
				agree++;
		}
		CHECK(ap_bloom_pass(&set, v) || !member);

		/* a NULL key never passes */
		v[2].isnull = true;
		v[2].ptr = NULL;
		CHECK(!ap_bloom_pass(&set, v));
		/* an external TOAST pointer cannot be hashed here: it passes filter 2 */
		{
			unsigned char ext[18] = {0x01, 18};
			ApBloomSet	one = set;

			one.filters[0] = set.filters[2];
			one.nfilters = 1;
			v[2].isnull = false;
			v[2].ptr = ext;
			CHECK(ap_bloom_pass(&one, v));
		}
		free(c);
		free(d);
		free(e);
	}
	CHECK_EQ(agree, NKEYS * 7);
	/* 200 non-members x 6 single-column filters of ~10 bits/key: few pass */
	CHECK(passed_nonmembers < 60);
	CHECK(set.filters[0].tested > 0);
	ap_bloom_free(&set);
	for (int f = 0; f < 7; f++)
		free(bits[f]);
}

int
main(void)
{
	test_normalization();
	test_known_answers();
	test_fpr_formula();
	test_best_k();
	test_fpr();
	test_host_vs_disk();
	return TEST_DONE();
}
