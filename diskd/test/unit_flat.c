/*
 * unit_flat.c
 *	  The VM's specialised paths against its generic interpreter, which is
 *	  the definition: the flat 64-bit form of aggregation programs
 *	  (vm_flat.c) and the fast comparisons of a column with a string
 *	  constant or of two integer-like columns (vm_eval.c's eval_fast).
 *
 * Rules of this file:
 *  - Random trees of + - * over numeric columns and constants are compiled
 *    both ways and evaluated on random stored numerics (short format, any
 *    scale, zero, negative, NULL, values beyond 64 bits, invalid digits):
 *    whenever the flat form answers, its value and NULL-ness must equal the
 *    interpreter's; when it declines, the interpreter decides.  The test
 *    also counts that the flat form answers the ordinary tuples and
 *    declines the ones it must (overflow, more than four base-10000 digits,
 *    invalid digits).
 *  - Programs with anything else (division, comparisons) get no flat form.
 *  - Fast comparisons: every operator, both argument orders, bpchar and text
 *    semantics, trailing spaces, empty strings, NULLs and values with a
 *    4-byte header give the generic path's answer (the constant wrapped in
 *    COALESCE, which is never specialised).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskd.h"
#include "vm_internal.h"
#include "testutil.h"
#include "exprbuild.h"
#include "numbuild.h"

#define NCOLS 4
static ApColumn cols[NCOLS];
static ApTupleDesc desc = {NCOLS, cols, 0};
static ApValue vals[NCOLS];
/* stored values lie after a tuple header in a page: 8 bytes before them are readable */
static struct
{
	unsigned char header[8];
	unsigned char s[NCOLS][64];
}			store_page;
#define store store_page.s

static uint64_t rng = 0x243F6A8885A308D3u;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}


/* A random stored numeric (1-byte varlena header) into column c. */
/*
 * A random stored numeric into column c; at scale `at` and never NULL if
 * at >= 0 (a numeric(p,s) NOT NULL column), else at any scale.
 */
static void
random_numeric_at(int c, int at)
{
	unsigned char *p = store[c];
	int			dscale = at >= 0 ? at : (int) (rnd() % 5);
	int			shape = (int) (rnd() % 16);
	__int128	coef;
	size_t		n;

	vals[c].isnull = false;
	if (shape == 0 && at >= 0)
		shape = 5;
	if (shape == 0)
	{
		vals[c].isnull = true;
		vals[c].ptr = NULL;
		return;
	}
	if (shape == 1)
		coef = 0;
	else if (shape == 2)
		coef = (__int128) (rnd() % 1000000000000000000u) * 100000;	/* beyond 64 bits scaled */
	else if (shape == 3)
		coef = (__int128) (rnd() % 9000000000000000000u);		/* near the 64-bit edge */
	else
		coef = (__int128) (rnd() % 100000000) - 50000000;
	n = short_numeric(coef, dscale, p + 1);
	if (shape == 4 && n > 2)
		p[1 + n - 1] = 0x7f;	/* last digit >= NBASE: invalid */
	p[0] = (unsigned char) (((n + 1) << 1) | 1);
	vals[c].ptr = p;
	vals[c].len = (uint32_t) n + 1;
}

static void
random_numeric(int c)
{
	random_numeric_at(c, -1);
}

/* A numeric constant expression (4-byte varlena datum). */
static ActivePg__Expr *
num_const(void)
{
	unsigned char buf[64];
	__int128	coef = (__int128) (rnd() % 2000) - 1000;
	int			dscale = (int) (rnd() % 4);
	size_t		n = short_numeric(coef, dscale, buf + 4);
	uint32_t	hdr = (uint32_t) (n + 4) << 2;

	memcpy(buf, &hdr, 4);
	return E_const(AP_TYPE_NUMERIC, buf, n + 4, false);
}

/* A random + - * tree of depth <= d over the numeric columns and constants. */
static ActivePg__Expr *
random_tree(int d)
{
	static const int fns[3] = {AP_FN_ADD, AP_FN_SUB, AP_FN_MUL};

	if (d == 0 || rnd() % 4 == 0)
		return rnd() % 3 == 0 ? num_const() : E_var(1 + (int) (rnd() % NCOLS));
	return F2(fns[rnd() % 3], AP_TYPE_NUMERIC, random_tree(d - 1), random_tree(d - 1));
}

static void
setup(void)
{
	for (int i = 0; i < NCOLS; i++)
	{
		memset(&cols[i], 0, sizeof(cols[i]));
		cols[i].attlen = -1;
		cols[i].attalign = 'i';
		cols[i].type_kind = AP_TYPE_NUMERIC;
	}
}

static bool
same_value(const ApVal *x, bool xnull, const ApVal *y, bool ynull)
{
	ApFixed		fy;
	ApNumSpecial sp;

	if (xnull || ynull)
		return xnull == ynull;
	if (x->nform != AP_NF_FIXED)
		return false;
	/* the interpreter may keep a column's value as its datum */
	if (y->nform == AP_NF_DATUM)
	{
		if (ap_numeric_payload_fixed(y->u.s.p, y->u.s.len, &fy, &sp) != AP_OK ||
			sp != AP_NUM_FINITE)
			return false;
	}
	else if (y->nform == AP_NF_FIXED)
		fy = y->u.fx;
	else
		return false;
	return x->u.fx.coef == fy.coef && x->u.fx.dscale == fy.dscale;
}

/*
 * A random program of 1 to 4 computed projections (exprs: room for 4) and
 * its flat form, which every such program has.
 */
static ApFlat *
random_flat(ActivePg__Expr **exprs, ApProgram *prog, int *nexprs)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ApFlat	   *flat;

	*nexprs = 1 + (int) (rnd() % 4);
	for (int j = 0; j < *nexprs; j++)
		exprs[j] = random_tree(1 + (int) (rnd() % 4));
	msg.project_exprs = exprs;
	msg.n_project_exprs = (size_t) *nexprs;
	CHECK_EQ(ap_program_compile(&msg, &desc, prog), 0);
	flat = ap_flat_compile(prog);
	CHECK(flat != NULL);
	return flat;
}

/* Random programs, random tuples: the flat answers equal the tree's. */
static void
test_random_programs(void)
{
	long		answered = 0,
				declined = 0;

	for (int prog_i = 0; prog_i < 300; prog_i++)
	{
		ActivePg__Expr *exprs[4];
		ApProgram	prog;
		int			nexprs;
		ApFlat	   *flat = random_flat(exprs, &prog, &nexprs);

		for (int t = 0; flat != NULL && t < 400; t++)
		{
			ApVal		fo[4],
						to[4];
			bool		fnull[4],
						tnull[4];
			ApFlatNum	num[4];
			bool		ok;
			ApStatus	st;

			for (int c = 0; c < NCOLS; c++)
				random_numeric(c);
			ok = ap_flat_eval(flat, vals, fo, fnull, NULL);
			st = ap_program_eval(&prog, vals, to, tnull);
			if (!ok)
			{
				declined++;
				continue;
			}
			answered++;
			/* whatever the flat form answers, the tree computes the same */
			CHECK_EQ(st, AP_OK);
			if (st != AP_OK)
				continue;
			for (int j = 0; j < nexprs; j++)
				CHECK(same_value(&fo[j], fnull[j], &to[j], tnull[j]));
			/* the 64-bit outputs carry the same numbers */
			CHECK(ap_flat_eval(flat, vals, fo, fnull, num));
			for (int j = 0; j < nexprs; j++)
				if (!fnull[j])
				{
					CHECK(num[j].coef == (int64_t) to[j].u.fx.coef || to[j].nform == AP_NF_DATUM);
					CHECK(num[j].dscale == to[j].u.fx.dscale || to[j].nform == AP_NF_DATUM);
				}
		}
		ap_flat_free(flat);
		ap_program_free(&prog);
		tfree_all();
	}
	printf("flat form answered %ld tuples, declined %ld\n", answered, declined);
	/*
	 * Three shapes in sixteen per column are edges the flat form must
	 * decline; with several columns per tuple about half the tuples have one.
	 */
	CHECK(answered > 20000);
	CHECK(declined > 20000);
}

/*
 * Batches: every tuple of a batch gets from ap_flat_batch_row what
 * ap_flat_eval gives it alone (declined or the same values), with single
 * evaluations in between, as the aggregation's fallback makes them.
 */
static void
test_batches(void)
{
	static struct
	{
		unsigned char header[8];
		unsigned char s[AP_FLAT_BATCH][NCOLS][64];
	}			bpage;
	unsigned char (*bstore)[NCOLS][64] = bpage.s;
	static ApValue bvals[AP_FLAT_BATCH][NCOLS];
	const ApValue *rows[AP_FLAT_BATCH];
	long		declined = 0,
				tuples = 0,
				uniform = 0;

	for (int prog_i = 0; prog_i < 200; prog_i++)
	{
		ActivePg__Expr *exprs[4];
		ApProgram	prog;
		int			nexprs;
		ApFlat	   *flat = random_flat(exprs, &prog, &nexprs);
		int			n = 1 + (int) (rnd() % AP_FLAT_BATCH);

		int			at[NCOLS];
		ApFlatCol	fcols[4];

		if (flat == NULL)
			continue;
		/* half the columns as numeric(p,s) NOT NULL: one scale, no NULL in the batch */
		for (int c = 0; c < NCOLS; c++)
			at[c] = rnd() % 2 ? (int) (rnd() % 5) : -1;
		for (int r = 0; r < n; r++)
		{
			for (int c = 0; c < NCOLS; c++)
			{
				random_numeric_at(c, at[c]);
				memcpy(bstore[r][c], store[c], sizeof(store[c]));
				bvals[r][c] = vals[c];
				if (!vals[c].isnull)
					bvals[r][c].ptr = bstore[r][c];
			}
			rows[r] = bvals[r];
		}
		CHECK(ap_flat_eval_batch(flat, rows, n));
		CHECK(!ap_flat_eval_batch(flat, rows, AP_FLAT_BATCH + 1));
		CHECK(ap_flat_eval_batch(flat, rows, n));
		(void) ap_flat_batch_cols(flat, fcols);
		for (int j = 0; j < nexprs; j++)
			uniform += fcols[j].uscale >= 0 && !fcols[j].anynull;
		for (int r = 0; r < n; r++)
		{
			ApVal		bo[4],
						so[4];
			bool		bnull[4],
						snull[4];
			ApFlatNum	bnum[4],
						snum[4];
			bool		sok = ap_flat_eval(flat, bvals[r], so, snull, snum);
			bool		bok = ap_flat_batch_row(flat, r, bo, bnull, bnum);

			tuples++;
			CHECK_EQ(bok, sok);
			if (!bok || !sok)
			{
				declined++;
				continue;
			}
			for (int j = 0; j < nexprs; j++)
			{
				CHECK_EQ(bnull[j], snull[j]);
				if (!bnull[j] && !snull[j])
				{
					CHECK(bnum[j].coef == snum[j].coef);
					CHECK_EQ(bnum[j].dscale, snum[j].dscale);
				}
			}
			/* and as ApVals, the same as the tree's */
			CHECK(ap_flat_batch_row(flat, r, bo, bnull, NULL));
			CHECK(ap_flat_eval(flat, bvals[r], so, snull, NULL));
			for (int j = 0; j < nexprs; j++)
				CHECK(same_value(&bo[j], bnull[j], &so[j], snull[j]));
		}
		ap_flat_free(flat);
		ap_program_free(&prog);
		tfree_all();
	}
	printf("batches: %ld tuples, %ld declined, %ld projections of one scale without NULL\n",
		   tuples, declined, uniform);
	CHECK(tuples > 2000);
	CHECK(uniform > 50);
	CHECK(declined > 500 && declined < tuples - 500);
}

/* Fixed cases: Q1's charge, overflow, scales, NULL. */
static void
test_fixed_cases(void)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__Expr *exprs[2];
	ApProgram	prog;
	ApFlat	   *flat;
	ApVal		out[2];
	bool		isnull[2];
	size_t		n;

	/* price * (1 - disc) * (1 + tax) */
	exprs[0] = F2(AP_FN_MUL, AP_TYPE_NUMERIC,
				  F2(AP_FN_MUL, AP_TYPE_NUMERIC, E_var(1),
					 F2(AP_FN_SUB, AP_TYPE_NUMERIC, num_const(), E_var(2))),
				  F2(AP_FN_ADD, AP_TYPE_NUMERIC, num_const(), E_var(3)));
	exprs[1] = E_var(4);
	msg.project_exprs = exprs;
	msg.n_project_exprs = 2;
	CHECK_EQ(ap_program_compile(&msg, &desc, &prog), 0);
	flat = ap_flat_compile(&prog);
	CHECK(flat != NULL);

	/* 21168.23, 0.04, 0.02 and NULL */
	n = short_numeric(2116823, 2, store[0] + 1);
	store[0][0] = (unsigned char) (((n + 1) << 1) | 1);
	n = short_numeric(4, 2, store[1] + 1);
	store[1][0] = (unsigned char) (((n + 1) << 1) | 1);
	n = short_numeric(2, 2, store[2] + 1);
	store[2][0] = (unsigned char) (((n + 1) << 1) | 1);
	for (int c = 0; c < 3; c++)
	{
		vals[c].ptr = store[c];
		vals[c].isnull = false;
	}
	vals[3].ptr = NULL;
	vals[3].isnull = true;
	CHECK(ap_flat_eval(flat, vals, out, isnull, NULL));
	CHECK(!isnull[0]);
	CHECK(isnull[1]);
	/* scales 2 + (max(const, 2)) + max(const, 2): at least 6 */
	CHECK(out[0].u.fx.dscale >= 6);

	/* an operand of 17 digits times itself overflows 64 bits: declined */
	n = short_numeric((__int128) 9999999999999999, 0, store[0] + 1);
	store[0][0] = (unsigned char) (((n + 1) << 1) | 1);
	CHECK(!ap_flat_eval(flat, vals, out, isnull, NULL));
	CHECK_EQ(ap_program_eval(&prog, vals, out, isnull), AP_OK);
	ap_flat_free(flat);
	ap_program_free(&prog);

	/* division has no flat form */
	exprs[0] = F2(AP_FN_DIV, AP_TYPE_NUMERIC, E_var(1), E_var(2));
	msg.n_project_exprs = 1;
	CHECK_EQ(ap_program_compile(&msg, &desc, &prog), 0);
	CHECK(ap_flat_compile(&prog) == NULL);
	ap_program_free(&prog);
	tfree_all();
}

/* ---- fast comparisons ---- */

/* 1 bpchar  2 text  3 date  4 date */
static ApColumn scols[4];
static ApTupleDesc sdesc = {4, scols, 0};
static ApValue svals[4];
static unsigned char sstore[4][64];




/* The answer of filter e over d and v; *fast gets its root's FastCompare. */
static ApTri
run_filter_on(ActivePg__Expr *e, const ApTupleDesc *d, const ApValue *v, int *fast)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ApProgram	prog;
	ApTri		t;

	msg.filter = e;
	if (ap_program_compile(&msg, d, &prog) != 0)
	{
		CHECK(false);
		return AP_TRI_FALLBACK;
	}
	*fast = prog.filter->root->fast;
	t = ap_program_filter(&prog, v);
	ap_program_free(&prog);
	return t;
}

/* The filter's answer on the string/date columns; *fast: was its root specialised? */
static ApTri
run_filter(ActivePg__Expr *e, bool *fast)
{
	int			f;
	ApTri		t = run_filter_on(e, &sdesc, svals, &f);

	*fast = f != FC_NONE;
	return t;
}

/* A stored string in column c: 1-byte header, or 4-byte header when wide. */
static void
set_str(int c, const char *s, bool wide)
{
	size_t		n = strlen(s);

	svals[c].isnull = s == NULL;
	if (wide)
	{
		uint32_t	hdr = (uint32_t) (n + 4) << 2;

		memcpy(sstore[c], &hdr, 4);
		memcpy(sstore[c] + 4, s, n);
		svals[c].len = (uint32_t) n + 4;
	}
	else
	{
		sstore[c][0] = (unsigned char) (((n + 1) << 1) | 1);
		memcpy(sstore[c] + 1, s, n);
		svals[c].len = (uint32_t) n + 1;
	}
	svals[c].ptr = sstore[c];
}

static void
test_fast_compare(void)
{
	static const char *const strs[] = {"", " ", "MAIL", "MAIL ", "MAIL   ", "MAI", "MAILX",
	"SHIP", "mail", "A", "ZZ"};
	static const int ops[] = {AP_OP_EQ, AP_OP_NE, AP_OP_LT, AP_OP_LE, AP_OP_GT, AP_OP_GE};
	int			nstr = (int) (sizeof(strs) / sizeof(strs[0]));
	long		fast_seen = 0;

	scols[0] = (ApColumn) {.attlen = -1, .attalign = 'i', .type_kind = AP_TYPE_BPCHAR};
	scols[1] = (ApColumn) {.attlen = -1, .attalign = 'i', .type_kind = AP_TYPE_TEXT};
	scols[2] = (ApColumn) {.attlen = 4, .attalign = 'i', .attbyval = true, .type_kind = AP_TYPE_DATE};
	scols[3] = scols[2];

	for (int col = 0; col < 2; col++)
	{
		int			kind = col == 0 ? AP_TYPE_BPCHAR : AP_TYPE_TEXT;
		int			cmp = col == 0 ? AP_CMP_BPCHAR : AP_CMP_TEXT;

		for (int vi = -1; vi < nstr; vi++)
			for (int wide = 0; wide < 2; wide++)
				for (int ki = 0; ki < nstr; ki++)
					for (int oi = 0; oi < 6; oi++)
						for (int swap = 0; swap < 2; swap++)
						{
							ActivePg__Expr *fa,
									   *ga;
							bool		f1,
										f2;
							ApTri		t1,
										t2;

							if (vi < 0)
							{
								svals[col].isnull = true;
								svals[col].ptr = NULL;
							}
							else
								set_str(col, strs[vi], wide);
							fa = swap ? OP(ops[oi], cmp, E_str(kind, strs[ki]), E_var(col + 1)) :
								OP(ops[oi], cmp, E_var(col + 1), E_str(kind, strs[ki]));
							ga = swap ? OP(ops[oi], cmp, COAL1(kind, E_str(kind, strs[ki])), E_var(col + 1)) :
								OP(ops[oi], cmp, E_var(col + 1), COAL1(kind, E_str(kind, strs[ki])));
							t1 = run_filter(fa, &f1);
							t2 = run_filter(ga, &f2);
							CHECK(f1);
							CHECK(!f2);
							CHECK_EQ(t1, t2);
							fast_seen += f1;
						}
		svals[col].isnull = true;
	}

	/* two date columns, every operator, with NULLs */
	{
		static const int32_t days[] = {-5, 0, 7, 7, 10000};

		for (int i = -1; i < 5; i++)
			for (int j = -1; j < 5; j++)
				for (int oi = 0; oi < 6; oi++)
				{
					static int32_t d1,
								d2;
					bool		f1,
								f2;
					ApTri		t1,
								t2;

					d1 = i >= 0 ? days[i] : 0;
					d2 = j >= 0 ? days[j] : 0;
					svals[2] = (ApValue) {(const unsigned char *) &d1, 4, i < 0};
					svals[3] = (ApValue) {(const unsigned char *) &d2, 4, j < 0};
					t1 = run_filter(OP(ops[oi], AP_CMP_DATE, E_var(3), E_var(4)), &f1);
					t2 = run_filter(OP(ops[oi], AP_CMP_DATE, E_var(3),
										   COAL1(AP_TYPE_DATE, E_var(4))), &f2);
					CHECK(f1);
					CHECK(!f2);
					CHECK_EQ(t1, t2);
					if (i >= 0 && j >= 0)
						CHECK_EQ(t1, ((ops[oi] == AP_OP_EQ && d1 == d2) ||
									  (ops[oi] == AP_OP_NE && d1 != d2) ||
									  (ops[oi] == AP_OP_LT && d1 < d2) ||
									  (ops[oi] == AP_OP_LE && d1 <= d2) ||
									  (ops[oi] == AP_OP_GT && d1 > d2) ||
									  (ops[oi] == AP_OP_GE && d1 >= d2)) ? AP_TRUE : AP_FALSE);
					else
						CHECK_EQ(t1, AP_NULL);
				}
	}
	tfree_all();
	printf("fast string comparisons checked: %ld\n", fast_seen);
}

/* A numeric constant of coef * 10^-dscale (4-byte varlena datum). */
static ActivePg__Expr *
num_const_of(__int128 coef, int dscale)
{
	unsigned char buf[80];
	size_t		n = short_numeric(coef, dscale, buf + 4);
	uint32_t	hdr = (uint32_t) (n + 4) << 2;

	memcpy(buf, &hdr, 4);
	return E_const(AP_TYPE_NUMERIC, buf, n + 4, false);
}

/* The answer of a one-comparison filter over the numeric columns. */
static ApTri
run_num_filter(ActivePg__Expr *e, int *fast)
{
	return run_filter_on(e, &desc, vals, fast);
}

/*
 * A numeric column against a constant: eval_fast's 64-bit form (short
 * stored values, constants within 10^18) and its 128-bit form must answer
 * as the generic comparison (the constant hidden in a COALESCE), for
 * values and constants at many scales, at the 64-bit edges and beyond.
 */
static void
test_fast_numeric_compare(void)
{
	static const int ops[] = {AP_OP_EQ, AP_OP_NE, AP_OP_LT, AP_OP_LE, AP_OP_GT, AP_OP_GE};
	long		cases = 0;

	for (int round = 0; round < 3000; round++)
	{
		__int128	kc;
		int			kds = (int) (rnd() % 21);
		int			shape = (int) (rnd() % 6);

		if (shape == 0)
			kc = 0;
		else if (shape == 1)
			kc = (__int128) (rnd() % 1000000000000000000u) * 1000;	/* beyond 10^18 */
		else if (shape == 2)
			kc = (__int128) 999999999999999999 - (__int128) (rnd() % 3);	/* at the edge */
		else
			kc = (__int128) (rnd() % 200000) - 100000;
		if (rnd() % 2)
			kc = -kc;
		random_numeric(0);
		if (round % 7 == 0 && !vals[0].isnull)
		{
			/* the constant's own value, stored at another scale */
			unsigned char *p = store[0];
			size_t		n = short_numeric(kc * 10, kds + 1, p + 1);

			if (n + 1 < 64 && kds + 1 <= 63)
			{
				p[0] = (unsigned char) (((n + 1) << 1) | 1);
				vals[0].len = (uint32_t) n + 1;
			}
		}
		for (int oi = 0; oi < 6; oi++)
		{
			int			f1,
						f2;
			ApTri		t1 = run_num_filter(OP(ops[oi], AP_CMP_NUMERIC, E_var(1),
												   num_const_of(kc, kds)), &f1);
			ApTri		t2 = run_num_filter(OP(ops[oi], AP_CMP_NUMERIC, E_var(1),
												   COAL1(AP_TYPE_NUMERIC, num_const_of(kc, kds))), &f2);

			CHECK_EQ(f1, FC_NUMERIC);
			CHECK_EQ(f2, FC_NONE);
			CHECK_EQ(t1, t2);
			cases++;
		}
		tfree_all();
	}
	printf("fast numeric comparisons checked: %ld\n", cases);
}

int
main(void)
{
	setup();
	test_fixed_cases();
	test_random_programs();
	test_batches();
	test_fast_compare();
	setup();
	test_fast_numeric_compare();
	return TEST_DONE();
}
