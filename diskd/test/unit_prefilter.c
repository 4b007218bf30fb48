/*
 * unit_prefilter.c
 *	  The filter's range checks (vm_opt.c) and the prefilter that decides
 *	  them on raw tuples (prefilter.h), against the VM itself as the oracle.
 *
 * Random conjunctions of comparisons of int2/int4/int8/date/timestamp
 * columns with constants or with each other (date against timestamp
 * constants included), of a numeric column with numeric constants of
 * other scales, and
 * non-range arguments among them, run over random tuples built byte by
 * byte: values at and around the constants, the infinities, dates outside
 * the timestamp range, NULLs, short and 4-byte varlena headers, external
 * TOAST pointers.  For every
 * tuple: a rejection must be one the filter makes (a leading range argument
 * is FALSE or NULL), and on a tuple the walk can measure with every value
 * inside its check's domain, the prefilter must reject exactly then.
 */
#include <stdint.h>
#include <stdlib.h>

#include "prefilter.h"
#include "vm_internal.h"
#include "testutil.h"
#include "exprbuild.h"
#include "bytes.h"
#include "numbuild.h"

#define NATTS	10

/* int8 | int2 | numeric | date | bpchar | timestamp | int4 | text | date | int8 */
static ApColumn cols[NATTS];
static ApTupleDesc desc = {NATTS, cols, 0};

static uint64_t rng = UINT64_C(0x9E3779B97F4A7C15);

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng % n);
}

#define U_DAY	AP_USECS_PER_DAY

static const int32_t dates[] = {-2191, -1827, -1826, 0, 1, AP_DATE_MIN_DAYS, AP_TS_END_DAYS - 1};
static const int64_t ints[] = {0, 24, -5, 32767, -32768, 100000, INT64_MAX, INT64_MIN};

/* A date near the interesting ones, or an infinity, or beyond timestamps. */
static int32_t
some_date(void)
{
	switch (rnd(8))
	{
		case 0:
			return INT32_MIN;	/* -infinity */
		case 1:
			return INT32_MAX;	/* infinity */
		case 2:
			return AP_TS_END_DAYS + (int32_t) rnd(3);	/* no timestamp for it */
		default:
			return dates[rnd(sizeof(dates) / sizeof(dates[0]))] + (int32_t) rnd(3) - 1;
	}
}

static int64_t
some_ts(void)
{
	static const int64_t off[] = {0, -1, 1, U_DAY / 2, -U_DAY / 2};

	if (rnd(8) == 0)
		return rnd(2) ? INT64_MAX : INT64_MIN;	/* the infinities */
	return (int64_t) some_date() % AP_TS_END_DAYS * U_DAY + off[rnd(5)];
}

/*
 * A numeric coefficient near the interesting ones (Q6's 24 and 0.05..0.07
 * at scale 2, zero, signs); now and then one of 17 digits, which
 * ap_numeric_payload_i64 does not read.
 */
static int64_t
some_coef(void)
{
	static const int64_t coefs[] = {0, 24, 2400, 5, 7, 6, -24, 99999999, 123456789012};

	if (rnd(12) == 0)
		return INT64_C(12345678901234567) + (int64_t) rnd(3);
	return coefs[rnd(sizeof(coefs) / sizeof(coefs[0]))] + (int64_t) rnd(3) - 1;
}

static int64_t
some_int(int64_t lo, int64_t hi)
{
	int64_t		v = ints[rnd(sizeof(ints) / sizeof(ints[0]))];

	if (rnd(2) && v > INT64_MIN && v < INT64_MAX)
		v += (int64_t) rnd(3) - 1;
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * A comparison of a column with a constant or another column; *range: the
 * VM can make it a check; *dts_attno: the date column if it is compared with
 * a timestamp; *numeric: the numeric column is compared.
 */
static ActivePg__Expr *
some_cmp(bool *range, int *dts_attno, bool *numeric)
{
	static const int ops[] = {AP_OP_EQ, AP_OP_NE, AP_OP_LT, AP_OP_LE, AP_OP_GT, AP_OP_GE};
	static const int attnos[] = {1, 2, 3, 4, 6, 7, 9};
	int			op = ops[rnd(6)];
	int			attno = attnos[rnd(7)];
	ActivePg__Expr *k;
	int			cmp;

	*range = op != AP_OP_NE;
	*dts_attno = 0;
	*numeric = false;
	if (rnd(4) == 0)
	{
		/* two columns of one kind: walked, cached and walked, one with itself */
		static const int pairs[][3] = {{4, 9, AP_CMP_DATE}, {9, 4, AP_CMP_DATE},
		{1, 10, AP_CMP_INT}, {10, 1, AP_CMP_INT}, {6, 6, AP_CMP_TS}, {2, 2, AP_CMP_INT}};
		int			p = (int) rnd(6);

		*range = true;			/* any operator: the check keeps its sign bits */
		return OP(op, pairs[p][2], E_var(pairs[p][0]), E_var(pairs[p][1]));
	}
	switch (attno)
	{
		case 4:
		case 9:
			if (rnd(2))
			{
				int64_t		t = some_ts();

				k = E_const(AP_TYPE_TIMESTAMP, &t, 8, false);
				cmp = AP_CMP_DATE_TS;
				*dts_attno = attno;
			}
			else
			{
				int32_t		d = some_date();

				k = E_const(AP_TYPE_DATE, &d, 4, false);
				cmp = AP_CMP_DATE;
			}
			break;
		case 6:
			{
				int64_t		t = some_ts();

				k = E_const(AP_TYPE_TIMESTAMP, &t, 8, false);
				cmp = AP_CMP_TS;
			}
			break;
		case 3:
			{
				unsigned char payload[64];
				size_t		n = short_numeric(some_coef(), (int) rnd(5), payload);
				unsigned char buf[80];
				size_t		len;

				if (n > 40)
					abort();	/* a few base-10000 digits */
				len = mk_varlena(buf, payload, n, false);

				k = E_const(AP_TYPE_NUMERIC, buf, len, false);
				cmp = AP_CMP_NUMERIC;
				*numeric = true;
			}
			break;
		default:
			k = rnd(2) ? E_i8(some_int(INT64_MIN, INT64_MAX)) : E_i4((int32_t) some_int(INT32_MIN, INT32_MAX));
			cmp = AP_CMP_INT;
			break;
	}
	/* the constant first now and then: the VM mirrors the operator */
	return rnd(4) == 0 ? OP(op, cmp, k, E_var(attno)) : OP(op, cmp, E_var(attno), k);
}

/*
 * A tuple: header, optional null bitmap, values laid out as heap_form_tuple
 * does, the numeric (attribute 3) a stored numeric.  *plain: no nulls and
 * only short varlena headers (no 4-byte header, no TOAST pointer); *num_read:
 * the numeric is one ap_numeric_payload_i64 reads.  Returns its length.
 */
static uint32_t
build_tuple(unsigned char *buf, bool *plain, bool *num_read, int64_t *v)
{
	bool		nulls[NATTS];
	bool		anynull = false;
	bool		long_hdr = rnd(10) == 0;
	uint32_t	hoff;
	uint32_t	off;

	for (int i = 0; i < NATTS; i++)
	{
		nulls[i] = rnd(12) == 0;
		anynull |= nulls[i];
	}
	*plain = !anynull && !long_hdr;
	memset(buf, 0, 512);
	hoff = AP_TUPLE_HEADER_MIN + (anynull ? (NATTS + 7) / 8 : 0);
	hoff = (hoff + 7) & ~7u;
	put32(buf, 2);				/* xmin */
	put16(buf + 18, NATTS);
	put16(buf + 20, (uint16_t) ((anynull ? AP_HEAP_HASNULL : 0) | AP_HEAP_HASVARWIDTH));
	buf[22] = (unsigned char) hoff;
	for (int i = 0; i < NATTS && anynull; i++)
		if (!nulls[i])
			buf[AP_TUPLE_HEADER_MIN + i / 8] |= (unsigned char) (1u << (i % 8));

	v[0] = some_int(INT64_MIN, INT64_MAX);
	v[1] = some_int(INT16_MIN, INT16_MAX);
	v[3] = some_date();
	v[5] = some_ts();
	v[6] = some_int(INT32_MIN, INT32_MAX);
	v[8] = some_date();
	v[9] = rnd(2) ? v[0] : some_int(INT64_MIN, INT64_MAX);
	off = 0;
	for (int i = 0; i < NATTS; i++)
	{
		unsigned char *d = buf + hoff;
		const ApColumn *c = &cols[i];

		if (nulls[i])
			continue;
		if (c->attlen == -1)
		{
			unsigned char payload[128];
			uint32_t	n = rnd(40);

			memset(payload, 'a' + i, n);
			if (c->type_kind == AP_TYPE_NUMERIC)
			{
				int64_t		coef;
				int			ds;

				n = (uint32_t) short_numeric(some_coef(), (int) rnd(5), payload);
				if (n > 40)
					abort();
				*num_read = ap_numeric_payload_i64(payload, n, &coef, &ds);
			}
			if (long_hdr && rnd(3) == 0)
			{
				/* an external TOAST pointer: 0x01, its tag, 16 bytes */
				d[off] = 0x01;
				d[off + 1] = 18;
				memset(d + off + 2, 0x5A, 16);
				off += 18;
			}
			else if (long_hdr && rnd(2))
			{
				off = (off + 3) & ~3u;	/* a 4-byte header is aligned */
				off += (uint32_t) mk_varlena(d + off, payload, n, true);
			}
			else
				off += (uint32_t) mk_varlena(d + off, payload, n, false);
			continue;
		}
		off = (off + (uint32_t) c->attlen - 1) & ~((uint32_t) c->attlen - 1);
		if (c->attlen == 2)
			put16(d + off, (uint16_t) v[i]);
		else if (c->attlen == 4)
			put32(d + off, (uint32_t) v[i]);
		else
			put64(d + off, (uint64_t) v[i]);
		off += (uint32_t) c->attlen;
	}
	return hoff + off;
}

/* The filter's verdict on the tuple, or the verdict of one of its arguments. */
static ApTri
verdict(ActivePg__Expr *filter, const unsigned char *tup, uint32_t len)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ApProgram	prog;
	ApTupleHeader hdr;
	ApValue		vals[NATTS];
	ApTri		t;

	msg.filter = filter;
	if (ap_program_compile(&msg, &desc, &prog) != 0)
		return AP_TRI_FALLBACK;
	/* the oracle is the tree alone, not ap_program_filter's range shortcut */
	prog.ranges_exact = false;
	if (ap_tuple_header(tup, len, &hdr) != AP_OK ||
		ap_tuple_deform(&desc, tup, len, &hdr, NATTS, vals) != AP_OK)
		t = AP_TRI_FALLBACK;
	else
		t = ap_program_filter(&prog, vals);
	ap_program_free(&prog);
	return t;
}

/* Random filters over random tuples, the VM as the oracle. */
static void
test_random(void)
{
	int			rejected = 0;
	int			decided_plain = 0;
	int			exact_rounds = 0;
	int			exact_decided = 0;
	int			single_rounds = 0;
	int			numeric_rounds = 0;
	int			numeric_decided = 0;

	for (int round = 0; round < 400; round++)
	{
		ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
		ActivePg__Expr *args[5];
		bool		isrange[5];
		int			dts[5];
		bool		numcmp[5];
		int			nargs = 1 + (int) rnd(5);
		int			nlead = 0;
		ApProgram	prog;
		ApPrefilter *pf;

		for (int i = 0; i < nargs; i++)
		{
			if (i > 0 && rnd(6) == 0)
			{
				/* not a range: a string comparison stops the leading run */
				args[i] = OP(AP_OP_NE, AP_CMP_TEXT, E_var(8), E_str(AP_TYPE_TEXT, "x"));
				isrange[i] = false;
				dts[i] = 0;
				numcmp[i] = false;
			}
			else
				args[i] = some_cmp(&isrange[i], &dts[i], &numcmp[i]);
		}
		while (nlead < nargs && isrange[nlead])
			nlead++;
		msg.filter = nargs == 1 ? args[0] : E_boolexpr(AP_BOOL_AND, nargs, args);
		CHECK_EQ(ap_program_compile(&msg, &desc, &prog), 0);
		pf = ap_prefilter_build(&prog, &desc);
		CHECK_EQ(pf != NULL, nlead > 0);
		/* the filter is the AND of its checks exactly when every argument is one */
		CHECK_EQ(prog.ranges_exact, nlead == nargs);
		exact_rounds += prog.ranges_exact;
		single_rounds += pf != NULL && pf->single;
		for (int i = 0; pf != NULL && i < pf->nchecks; i++)
		{
			if (pf->checks[i].numeric)
			{
				numeric_rounds++;
				break;
			}
		}

		for (int t = 0; t < 60; t++)
		{
			unsigned char buf[512];
			int64_t		v[NATTS];
			bool		plain;
			bool		num_read = false;
			uint32_t	len = build_tuple(buf, &plain, &num_read, v);
			ApTupleHeader hdr = {0};
			bool		rejects;
			bool		lead_rejects = false;
			bool		in_domains = true;

			CHECK_EQ(ap_tuple_header(buf, len, &hdr), AP_OK);
			rejects = pf != NULL && ap_prefilter_rejects(pf, buf, len, &hdr);
			for (int i = 0; i < nlead; i++)
			{
				ApTri		a = verdict(args[i], buf, len);

				if (a == AP_FALSE || a == AP_NULL)
					lead_rejects = true;
				/*
				 * a date that does not convert plainly (fallback, infinity),
				 * a numeric the checks do not read
				 */
				if (a == AP_TRI_FALLBACK ||
					(dts[i] > 0 && (v[dts[i] - 1] == INT32_MIN || v[dts[i] - 1] == INT32_MAX)) ||
					(numcmp[i] && !num_read))
					in_domains = false;
			}
			/* a rejection is the filter's own */
			if (rejects)
			{
				ApTri		whole = verdict(msg.filter, buf, len);

				CHECK(lead_rejects);
				CHECK(whole != AP_TRUE);
				rejected++;
			}
			/* and nothing it can decide is left undecided */
			if (plain && in_domains)
			{
				CHECK_EQ(rejects, lead_rejects);
				decided_plain++;
				for (int i = 0; i < nlead; i++)
					numeric_decided += numcmp[i];
			}
			/* ap_program_filter's shortcut gives the tree's verdict (or a sure FALSE) */
			if (prog.ranges_exact)
			{
				ApValue		vals[NATTS];
				ApTri		whole = verdict(msg.filter, buf, len);

				if (ap_tuple_deform(&desc, buf, len, &hdr, NATTS, vals) == AP_OK)
				{
					ApTri		fast = ap_program_filter(&prog, vals);

					if (whole == AP_TRI_FALLBACK)
						CHECK(fast == AP_TRI_FALLBACK || fast == AP_FALSE);
					else
						CHECK_EQ(fast, whole);
					exact_decided += whole != AP_TRI_FALLBACK;
				}
			}
		}
		free(pf);
		ap_program_free(&prog);
		tfree_all();
	}
	/* the cases above happened, not just their absence */
	CHECK(rejected > 2000);
	CHECK(decided_plain > 5000);
	CHECK(exact_rounds > 50);
	CHECK(exact_decided > 3000);
	/* and the one-check walk's short way was among them */
	CHECK(single_rounds > 10);
	/* numeric checks, on numerics they read */
	CHECK(numeric_rounds > 50);
	CHECK(numeric_decided > 1000);
}

/* The prefilter's verdict on a tuple whose numeric (attribute 3) is coef * 10^-ds. */
static bool
numeric_rejects(const ApPrefilter *pf, int64_t coef, int ds)
{
	unsigned char buf[256];
	unsigned char payload[64];
	size_t		n = short_numeric(coef, ds, payload);
	uint32_t	hoff = (AP_TUPLE_HEADER_MIN + 7) & ~7u;
	uint32_t	off = 0;
	ApTupleHeader hdr = {0};

	if (n > 40)
		abort();
	memset(buf, 0, sizeof(buf));
	put16(buf + 18, NATTS);
	put16(buf + 20, AP_HEAP_HASVARWIDTH);
	buf[22] = (unsigned char) hoff;
	/* int8, int2, then the numeric; the rest zero-filled past the checks */
	off = 8 + 2;
	off += (uint32_t) mk_varlena(buf + hoff + off, payload, n, false);
	CHECK_EQ(ap_tuple_header(buf, hoff + 160, &hdr), AP_OK);
	return ap_prefilter_rejects(pf, buf, hoff + 160, &hdr);
}

/*
 * TPC-H Q6's l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24, on one
 * numeric column: one check at scale 2, [0.05, 0.07] closed (0.07 < 24).
 */
static void
test_numeric_range(void)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__Expr *args[3];
	ApProgram	prog;
	ApPrefilter *pf;
	unsigned char p[64];
	unsigned char b[80];

	args[0] = OP(AP_OP_GE, AP_CMP_NUMERIC, E_var(3),
				 E_const(AP_TYPE_NUMERIC, b, mk_varlena(b, p, short_numeric(5, 2, p), false), false));
	args[1] = OP(AP_OP_LE, AP_CMP_NUMERIC, E_var(3),
				 E_const(AP_TYPE_NUMERIC, b, mk_varlena(b, p, short_numeric(7, 2, p), false), false));
	args[2] = OP(AP_OP_LT, AP_CMP_NUMERIC, E_var(3),
				 E_const(AP_TYPE_NUMERIC, b, mk_varlena(b, p, short_numeric(24, 0, p), false), false));
	msg.filter = E_boolexpr(AP_BOOL_AND, 3, args);
	CHECK_EQ(ap_program_compile(&msg, &desc, &prog), 0);
	CHECK_EQ(prog.nranges, 1);
	CHECK_EQ(prog.ranges[0].type_kind, AP_TYPE_NUMERIC);
	CHECK_EQ(prog.ranges[0].nscale, 2);
	CHECK_EQ(prog.ranges[0].lo, 5);
	CHECK_EQ(prog.ranges[0].hi, 7);
	CHECK(!prog.ranges[0].lo_open && !prog.ranges[0].hi_open);
	CHECK(prog.ranges_exact);
	pf = ap_prefilter_build(&prog, &desc);
	CHECK(pf != NULL && pf->nchecks == 1 && pf->checks[0].numeric && !pf->single);
	CHECK(numeric_rejects(pf, 4, 2));
	CHECK(!numeric_rejects(pf, 5, 2));
	CHECK(!numeric_rejects(pf, 6, 2));
	CHECK(!numeric_rejects(pf, 7, 2));
	CHECK(!numeric_rejects(pf, 70, 3));	/* 0.070 */
	CHECK(numeric_rejects(pf, 71, 3));	/* 0.071 */
	CHECK(numeric_rejects(pf, 49, 3));	/* 0.049 */
	CHECK(numeric_rejects(pf, 5, 2 + 18));	/* 5e-20, scales 18 apart */
	CHECK(!numeric_rejects(pf, 5, 2 + 19));	/* 19 apart: undecided */
	CHECK(numeric_rejects(pf, 0, 0));
	CHECK(numeric_rejects(pf, -6, 2));
	/* 17 digits: not read here, left to the filter */
	CHECK(!numeric_rejects(pf, INT64_C(12345678901234567), 2));
	free(pf);
	ap_program_free(&prog);

	/* the strict bound alone: 23.99 passes, 24 and 24.00 do not */
	msg.filter = args[2];
	CHECK_EQ(ap_program_compile(&msg, &desc, &prog), 0);
	CHECK_EQ(prog.nranges, 1);
	CHECK(prog.ranges[0].hi_open);
	pf = ap_prefilter_build(&prog, &desc);
	CHECK(pf != NULL);
	CHECK(!numeric_rejects(pf, 2399, 2));
	CHECK(numeric_rejects(pf, 2400, 2));
	CHECK(numeric_rejects(pf, 24, 0));
	CHECK(!numeric_rejects(pf, 239999, 4));
	free(pf);
	ap_program_free(&prog);
	tfree_all();
}

/* TPC-H Q6's l_shipdate range: two comparisons, one check. */
static void
test_q6_range(void)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__Expr *args[3];
	ApProgram	prog;
	int32_t		d94 = -2191;	/* 1994-01-01 */
	int64_t		t95 = (int64_t) -1826 * U_DAY;	/* 1995-01-01 00:00 */
	int64_t		t95noon = t95 + U_DAY / 2;

	args[0] = OP(AP_OP_LT, AP_CMP_DATE_TS, E_var(4), E_const(AP_TYPE_TIMESTAMP, &t95, 8, false));
	args[1] = OP(AP_OP_GE, AP_CMP_DATE, E_var(4), E_const(AP_TYPE_DATE, &d94, 4, false));
	args[2] = OP(AP_OP_LE, AP_CMP_DATE_TS, E_var(9), E_const(AP_TYPE_TIMESTAMP, &t95noon, 8, false));
	msg.filter = E_boolexpr(AP_BOOL_AND, 3, args);
	CHECK_EQ(ap_program_compile(&msg, &desc, &prog), 0);
	CHECK_EQ(prog.nranges, 2);
	CHECK_EQ(prog.ranges[0].attno, 4);
	CHECK_EQ(prog.ranges[0].lo, -2191);
	CHECK_EQ(prog.ranges[0].hi, -1827);
	CHECK_EQ(prog.ranges[0].dom_lo, AP_DATE_MIN_DAYS);
	CHECK_EQ(prog.ranges[0].dom_hi, AP_TS_END_DAYS - 1);
	/* outside the domain only the date comparison decides */
	CHECK_EQ(prog.ranges[0].olo, -2191);
	CHECK_EQ(prog.ranges[0].ohi, INT64_MAX);
	/* <= noon of 1995-01-01: that day passes, the next does not */
	CHECK_EQ(prog.ranges[1].attno, 9);
	CHECK_EQ(prog.ranges[1].hi, -1826);
	CHECK_EQ(prog.ranges[1].lo, INT64_MIN);
	ap_program_free(&prog);

	/* <> is no range, and nothing after it counts */
	args[0] = OP(AP_OP_NE, AP_CMP_DATE, E_var(4), E_const(AP_TYPE_DATE, &d94, 4, false));
	msg.filter = E_boolexpr(AP_BOOL_AND, 3, args);
	CHECK_EQ(ap_program_compile(&msg, &desc, &prog), 0);
	CHECK_EQ(prog.nranges, 0);
	ap_program_free(&prog);
	tfree_all();
}

int
main(void)
{
	cols[0] = col(8, 'd', AP_TYPE_INT8);
	cols[1] = col(2, 's', AP_TYPE_INT2);
	cols[2] = col(-1, 'i', AP_TYPE_NUMERIC);
	cols[3] = col(4, 'i', AP_TYPE_DATE);
	cols[4] = col(-1, 'i', AP_TYPE_BPCHAR);
	cols[5] = col(8, 'd', AP_TYPE_TIMESTAMP);
	cols[6] = col(4, 'i', AP_TYPE_INT4);
	cols[7] = col(-1, 'i', AP_TYPE_TEXT);
	cols[8] = col(4, 'i', AP_TYPE_DATE);
	cols[9] = col(8, 'd', AP_TYPE_INT8);
	ap_tupdesc_cache_offsets(&desc);

	test_q6_range();
	test_numeric_range();
	test_random();
	return TEST_DONE();
}
