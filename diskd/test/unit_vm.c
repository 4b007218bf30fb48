/*
 * unit_vm.c
 *	  Unit tests of the expression VM (vm_compile.c, vm_eval.c): three-valued logic,
 *	  every comparison family, compilation checks; no server needed.
 *
 * Rules of this file (unit.c's): inputs built byte by byte from the
 * documented formats, expected results written out as literal tables, every
 * allocation freed.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diskd.h"
#include "testutil.h"
#include "exprbuild.h"
#include "bytes.h"
#include "vm_internal.h"

/* ---------------- vm_compile.c ---------------- */

/* Every protobuf node built by the tests, freed at the end. */

/* Expr: NULL constant of a kind. */
static ActivePg__Expr *
E_null(int kind)
{
	return E_const(kind, NULL, 0, true);
}

/* Expr: date constant (days since 2000-01-01). */
static ActivePg__Expr *
E_date(int32_t v)
{
	return E_const(AP_TYPE_DATE, &v, 4, false);
}

/* Expr: timestamp or timestamptz constant (microseconds). */
static ActivePg__Expr *
E_ts(int kind, int64_t v)
{
	return E_const(kind, &v, 8, false);
}


/* Expr: text-like constant with a short header. */
static ActivePg__Expr *
E_text(int kind, const char *s)
{
	unsigned char buf[600];
	size_t		n = mk_varlena(buf, s, strlen(s), false);

	return E_const(kind, buf, n, false);
}

/* Expr: numeric constant from its payload. */
static ActivePg__Expr *
E_num(const unsigned char *payload, size_t n)
{
	unsigned char buf[100];
	size_t		len;

	if (n > sizeof(buf) - 4)
		abort();				/* numeric payloads here are a few bytes */
	len = mk_varlena(buf, payload, n, false);
	return E_const(AP_TYPE_NUMERIC, buf, len, false);
}


/* Expr: a AND b. */
static ActivePg__Expr *
E_and2(ActivePg__Expr *a, ActivePg__Expr *b)
{
	ActivePg__Expr *args[2] = {a, b};

	return E_boolexpr(AP_BOOL_AND, 2, args);
}

/* Expr: a OR b. */
static ActivePg__Expr *
E_or2(ActivePg__Expr *a, ActivePg__Expr *b)
{
	ActivePg__Expr *args[2] = {a, b};

	return E_boolexpr(AP_BOOL_OR, 2, args);
}

/* Expr: NOT a. */
static ActivePg__Expr *
E_not(ActivePg__Expr *a)
{
	return E_boolexpr(AP_BOOL_NOT, 1, &a);
}

/* Expr: a IS [NOT] NULL. */
static ActivePg__Expr *
E_nulltest(ActivePg__Expr *a, bool is_not_null)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__NullTest *t = talloc(sizeof(*t));
	ActivePg__Expr einit = ACTIVE_PG__EXPR__INIT;
	ActivePg__NullTest tinit = ACTIVE_PG__NULL_TEST__INIT;

	*e = einit;
	*t = tinit;
	t->arg = a;
	t->is_not_null = is_not_null;
	e->node_case = ACTIVE_PG__EXPR__NODE_NULL_TEST;
	e->null_test = t;
	return e;
}

/* Expr: a IS [NOT] TRUE/FALSE/UNKNOWN. */
static ActivePg__Expr *
E_booltest(ActivePg__Expr *a, int kind)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__BooleanTest *t = talloc(sizeof(*t));
	ActivePg__Expr einit = ACTIVE_PG__EXPR__INIT;
	ActivePg__BooleanTest tinit = ACTIVE_PG__BOOLEAN_TEST__INIT;

	*e = einit;
	*t = tinit;
	t->arg = a;
	t->kind = (uint32_t) kind;
	e->node_case = ACTIVE_PG__EXPR__NODE_BOOL_TEST;
	e->bool_test = t;
	return e;
}

/*
 * The VM's test descriptor:
 *  1 int4  2 int8  3 float8  4 float4  5 numeric  6 text  7 bpchar  8 date
 *  9 timestamp  10 bool  11 int2  12 varchar  13 timestamptz  14 other
 *  15 dropped int4
 */
#define VM_NATTS 15
static ApColumn vm_cols[VM_NATTS];
static ApTupleDesc vm_desc = {VM_NATTS, vm_cols, 0};
static ApValue vm_vals[VM_NATTS];

/* Fill the VM test descriptor and make every value NULL. */
static void
vm_setup(void)
{
	vm_cols[0] = col(4, 'i', AP_TYPE_INT4);
	vm_cols[1] = col(8, 'd', AP_TYPE_INT8);
	vm_cols[2] = col(8, 'd', AP_TYPE_FLOAT8);
	vm_cols[3] = col(4, 'i', AP_TYPE_FLOAT4);
	vm_cols[4] = col(-1, 'i', AP_TYPE_NUMERIC);
	vm_cols[5] = col(-1, 'i', AP_TYPE_TEXT);
	vm_cols[6] = col(-1, 'i', AP_TYPE_BPCHAR);
	vm_cols[7] = col(4, 'i', AP_TYPE_DATE);
	vm_cols[8] = col(8, 'd', AP_TYPE_TIMESTAMP);
	vm_cols[9] = col(1, 'c', AP_TYPE_BOOL);
	vm_cols[10] = col(2, 's', AP_TYPE_INT2);
	vm_cols[11] = col(-1, 'i', AP_TYPE_VARCHAR);
	vm_cols[12] = col(8, 'd', AP_TYPE_TIMESTAMPTZ);
	vm_cols[13] = col(4, 'i', AP_TYPE_OTHER);
	vm_cols[14] = col(4, 'i', AP_TYPE_INT4);
	vm_cols[14].attisdropped = true;
	for (int i = 0; i < VM_NATTS; i++)
	{
		vm_vals[i].isnull = true;
		vm_vals[i].ptr = NULL;
		vm_vals[i].len = 0;
	}
}

/* Point value attno at bytes. */
static void
setval(int attno, const void *p, uint32_t len)
{
	vm_vals[attno - 1].ptr = p;
	vm_vals[attno - 1].len = len;
	vm_vals[attno - 1].isnull = false;
}

/* Make value attno NULL. */
static void
setnull(int attno)
{
	vm_vals[attno - 1].ptr = NULL;
	vm_vals[attno - 1].isnull = true;
}

/* Compile a filter (no projection) and evaluate it on vm_vals; -1 on error. */
static int
run_filter(ActivePg__Expr *filter)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ApProgram	prog;
	int			rc;
	ApTri		t;

	msg.filter = filter;
	rc = ap_program_compile(&msg, &vm_desc, &prog);
	if (rc != 0)
	{
		fprintf(stderr, "unexpected compile error %d: %s\n", rc, prog.error);
		return -1;
	}
	t = ap_program_filter(&prog, vm_vals);
	ap_program_free(&prog);
	return (int) t;
}

/* Compile and return the error code (0 if it compiled). */
static int
compile_rc(ActivePg__Expr *filter, const int32_t *project, size_t nproject)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ApProgram	prog;
	int			rc;

	msg.filter = filter;
	msg.project = (int32_t *) project;
	msg.n_project = nproject;
	rc = ap_program_compile(&msg, &vm_desc, &prog);
	if (rc != 0)
		CHECK(prog.error[0] != '\0');
	else
		ap_program_free(&prog);
	return rc;
}

/* External TOAST pointer used to force FALLBACK through a text comparison. */
static unsigned char ext_ptr[18] = {0x01, 18};

/* A leaf evaluating to t: TRUE, FALSE, NULL, or FALLBACK. */
static ActivePg__Expr *
tri_leaf(ApTri t)
{
	switch (t)
	{
		case AP_TRUE:
			return E_bool(true);
		case AP_FALSE:
			return E_bool(false);
		case AP_NULL:
			return E_null(AP_TYPE_BOOL);
		default:
			/* var 6 holds an external pointer: cannot be compared at the disk */
			return OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_text(AP_TYPE_TEXT, "x"));
	}
}

/* vm_compile.c: AND/OR/NOT/BooleanTest/NullTest tables over TRUE/FALSE/NULL/FALLBACK. */
static void
test_vm_logic(void)
{
	/* indices: 0 FALSE 1 TRUE 2 NULL 3 FALLBACK */
	const ApTri F = AP_FALSE,
				T = AP_TRUE,
				N = AP_NULL,
				X = AP_TRI_FALLBACK;
	const ApTri and_tab[4][4] = {
		/* F  T  N  X */
		{F, F, F, F},			/* F */
		{F, T, N, X},			/* T */
		{F, N, N, X},			/* N */
		{X, X, X, X},			/* X: PostgreSQL would have raised its error first */
	};
	const ApTri or_tab[4][4] = {
		{F, T, N, X},
		{T, T, T, T},
		{N, T, N, X},
		{X, X, X, X},
	};
	const ApTri not_tab[4] = {T, F, N, X};
	/* IS TRUE, IS NOT TRUE, IS FALSE, IS NOT FALSE, IS UNKNOWN, IS NOT UNKNOWN */
	const ApTri bt_tab[4][6] = {
		{F, T, T, F, F, T},		/* F */
		{T, F, F, T, F, T},		/* T */
		{F, T, F, T, T, F},		/* N */
		{X, X, X, X, X, X},		/* X */
	};

	vm_setup();
	setval(6, ext_ptr, sizeof(ext_ptr));

	for (int a = 0; a < 4; a++)
	{
		for (int b = 0; b < 4; b++)
		{
			CHECK_EQ(run_filter(E_and2(tri_leaf((ApTri) a), tri_leaf((ApTri) b))), and_tab[a][b]);
			CHECK_EQ(run_filter(E_or2(tri_leaf((ApTri) a), tri_leaf((ApTri) b))), or_tab[a][b]);
		}
		CHECK_EQ(run_filter(E_not(tri_leaf((ApTri) a))), not_tab[a]);
		for (int k = 0; k < 6; k++)
			CHECK_EQ(run_filter(E_booltest(tri_leaf((ApTri) a), AP_IS_TRUE + k)), bt_tab[a][k]);
	}
	/*
	 * three-argument AND/OR decide in order, as the executor: a FALSE (TRUE)
	 * after a FALLBACK does not decide, because PostgreSQL evaluating the
	 * earlier argument may have raised an error there
	 */
	{
		ActivePg__Expr *args[3] = {tri_leaf(X), tri_leaf(N), tri_leaf(F)};

		CHECK_EQ(run_filter(E_boolexpr(AP_BOOL_AND, 3, args)), X);
		args[2] = tri_leaf(T);
		CHECK_EQ(run_filter(E_boolexpr(AP_BOOL_AND, 3, args)), X);
		CHECK_EQ(run_filter(E_boolexpr(AP_BOOL_OR, 3, args)), X);
		args[0] = tri_leaf(N);
		args[1] = tri_leaf(F);
		args[2] = tri_leaf(X);
		CHECK_EQ(run_filter(E_boolexpr(AP_BOOL_AND, 3, args)), F);
		args[1] = tri_leaf(T);
		CHECK_EQ(run_filter(E_boolexpr(AP_BOOL_OR, 3, args)), T);
	}

	/* NullTest never yields NULL */
	setnull(1);
	CHECK_EQ(run_filter(E_nulltest(E_var(1), false)), T);
	CHECK_EQ(run_filter(E_nulltest(E_var(1), true)), F);
	setval(1, "\1\0\0\0", 4);
	CHECK_EQ(run_filter(E_nulltest(E_var(1), false)), F);
	CHECK_EQ(run_filter(E_nulltest(E_var(1), true)), T);
	CHECK_EQ(run_filter(E_nulltest(tri_leaf(N), false)), T);
	CHECK_EQ(run_filter(E_nulltest(tri_leaf(F), false)), F);
	CHECK_EQ(run_filter(E_nulltest(tri_leaf(X), false)), X);
	/* external values are still known to be non-null */
	CHECK_EQ(run_filter(E_nulltest(E_var(6), true)), T);

	/* a boolean column as a qual */
	setval(10, "\1", 1);
	CHECK_EQ(run_filter(E_var(10)), T);
	setval(10, "\0", 1);
	CHECK_EQ(run_filter(E_var(10)), F);
	setnull(10);
	CHECK_EQ(run_filter(E_var(10)), N);

	/* no filter: everything passes */
	CHECK_EQ(compile_rc(NULL, NULL, 0), 0);
	{
		ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
		ApProgram	prog;

		CHECK_EQ(ap_program_compile(&msg, &vm_desc, &prog), 0);
		CHECK_EQ(ap_program_filter(&prog, vm_vals), T);
		ap_program_free(&prog);
	}
	tfree_all();
}

/* Evaluate op(cmp, a, b) for all six operators; returns the results as "ftf..." */
static void
six(int cmp, ActivePg__Expr *(*mk_a) (void), ActivePg__Expr *(*mk_b) (void),
	char out[7])
{
	for (int op = AP_OP_EQ; op <= AP_OP_GE; op++)
	{
		int			r = run_filter(OP(op, cmp, mk_a(), mk_b()));

		out[op - 1] = r == AP_TRUE ? 't' : r == AP_FALSE ? 'f' : r == AP_NULL ? 'n' : 'x';
	}
	out[6] = '\0';
}

/* Result strings for six(): = <> < <= > >= */
#define LESS	"ftttff"
#define EQUAL	"tfftft"
#define GREATER	"ftfftt"

/* A quiet NaN (a function so the MK() makers below stay one-liners). */
static double
nan_val(void)
{
	return NAN;
}

/* Operand makers for six(): each returns a fresh expression. */
#define MK(name, expr) static ActivePg__Expr *name(void) { return (expr); }
MK(mk_v1, E_var(1))
MK(mk_v2, E_var(2))
MK(mk_v11, E_var(11))
MK(mk_i8big, E_i8(INT64_C(3000000000)))
MK(mk_i2m5, E_i2(-5))
MK(mk_i4m5, E_i4(-5))
MK(mk_v3, E_var(3))
MK(mk_v4, E_var(4))
MK(mk_f8nan, E_f8(nan_val()))
MK(mk_f8inf, E_f8(INFINITY))
MK(mk_f8zero, E_f8(0.0))
MK(mk_f8mzero, E_f8(-0.0))
MK(mk_f8tenth, E_f8(0.1))
MK(mk_f4tenth, E_f4(0.1f))
MK(mk_f4half, E_f4(0.5f))
MK(mk_v5, E_var(5))
MK(mk_v6, E_var(6))
MK(mk_v7, E_var(7))
MK(mk_v8, E_var(8))
MK(mk_v9, E_var(9))
MK(mk_v10, E_var(10))
MK(mk_v12, E_var(12))
MK(mk_v13, E_var(13))
MK(mk_t_abc, E_text(AP_TYPE_TEXT, "abc"))
MK(mk_t_abd, E_text(AP_TYPE_TEXT, "abd"))
MK(mk_t_ab, E_text(AP_TYPE_TEXT, "ab"))
MK(mk_t_b, E_text(AP_TYPE_TEXT, "b"))
MK(mk_t_utf, E_text(AP_TYPE_TEXT, "\xc3\xa9"))
MK(mk_t_z, E_text(AP_TYPE_TEXT, "z"))
MK(mk_t_null, E_null(AP_TYPE_TEXT))
MK(mk_vc_abc, E_text(AP_TYPE_VARCHAR, "abc"))
MK(mk_bp_ab, E_text(AP_TYPE_BPCHAR, "ab"))
MK(mk_bp_ab3, E_text(AP_TYPE_BPCHAR, "ab   "))
MK(mk_bp_ab1, E_text(AP_TYPE_BPCHAR, "ab\x01"))
MK(mk_bp_empty, E_text(AP_TYPE_BPCHAR, ""))
MK(mk_bp_sp, E_text(AP_TYPE_BPCHAR, "  "))
MK(mk_d0, E_date(0))
MK(mk_d1, E_date(1))
MK(mk_dpinf, E_date(INT32_MAX))
MK(mk_dninf, E_date(INT32_MIN))
MK(mk_dbig, E_date(106751983))
MK(mk_dlast, E_date(106751982))
MK(mk_dlow, E_date(-2451546))
MK(mk_ts0, E_ts(AP_TYPE_TIMESTAMP, 0))
MK(mk_tsday, E_ts(AP_TYPE_TIMESTAMP, INT64_C(86400000000)))
MK(mk_tsdaym1, E_ts(AP_TYPE_TIMESTAMP, INT64_C(86399999999)))
MK(mk_tspinf, E_ts(AP_TYPE_TIMESTAMP, INT64_MAX))
MK(mk_tsninf, E_ts(AP_TYPE_TIMESTAMP, INT64_MIN))
MK(mk_tsmin1, E_ts(AP_TYPE_TIMESTAMP, INT64_MIN + 1))
MK(mk_tstz5, E_ts(AP_TYPE_TIMESTAMPTZ, 5))
MK(mk_btrue, E_bool(true))
MK(mk_bfalse, E_bool(false))
MK(mk_lt_true, OP(AP_OP_LT, AP_CMP_INT, E_i4(1), E_i4(2)))

/* numeric constants 1.5, NaN, +inf and -inf */
static const unsigned char num_1_5[] = {0x80, 0x80, 1, 0, 0x88, 0x13};	/* short: dscale 1, weight 0, [1, 5000] */
static const unsigned char num_nan[] = {0x00, 0xC0};
static const unsigned char num_pinf[] = {0x00, 0xD0};
static const unsigned char num_ninf[] = {0x00, 0xF0};
MK(mk_n15, E_num(num_1_5, sizeof(num_1_5)))
MK(mk_nnan, E_num(num_nan, sizeof(num_nan)))
MK(mk_npinf, E_num(num_pinf, sizeof(num_pinf)))
MK(mk_nninf, E_num(num_ninf, sizeof(num_ninf)))

/* vm_compile.c: every comparison family with all six operators. */
static void
test_vm_compare(void)
{
	char		r[7];
	int32_t		i4;
	int64_t		i8;
	int16_t		i2;
	double		f8;
	float		f4;
	int32_t		date;
	int64_t		ts;
	unsigned char numv[16];
	unsigned char txt[64];
	unsigned char bp[64];
	unsigned char vc[64];
	unsigned char cmpd[64];
	unsigned char b;

	vm_setup();

	/* INT: int4 var vs int8 const, int2 var vs int4 const */
	i4 = -5;
	setval(1, &i4, 4);
	six(AP_CMP_INT, mk_v1, mk_i8big, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_INT, mk_v1, mk_i2m5, r);
	CHECK(strcmp(r, EQUAL) == 0);
	i8 = INT64_C(3000000001);
	setval(2, &i8, 8);
	six(AP_CMP_INT, mk_v2, mk_i8big, r);
	CHECK(strcmp(r, GREATER) == 0);
	i2 = -6;
	setval(11, &i2, 2);
	six(AP_CMP_INT, mk_v11, mk_i4m5, r);
	CHECK(strcmp(r, LESS) == 0);
	setnull(1);
	six(AP_CMP_INT, mk_v1, mk_i8big, r);
	CHECK(strcmp(r, "nnnnnn") == 0);

	/* FLOAT: NaN = NaN, NaN > inf, -0 = 0, float4 widened exactly */
	f8 = NAN;
	setval(3, &f8, 8);
	six(AP_CMP_FLOAT, mk_v3, mk_f8nan, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_FLOAT, mk_v3, mk_f8inf, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_FLOAT, mk_f8inf, mk_v3, r);
	CHECK(strcmp(r, LESS) == 0);
	f8 = 0.0;
	six(AP_CMP_FLOAT, mk_v3, mk_f8mzero, r);
	CHECK(strcmp(r, EQUAL) == 0);
	f4 = 0.1f;
	setval(4, &f4, 4);
	six(AP_CMP_FLOAT, mk_v4, mk_f8tenth, r);	/* (double) 0.1f > 0.1 */
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_FLOAT, mk_v4, mk_f4tenth, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_FLOAT, mk_f4half, mk_v3, r);
	CHECK(strcmp(r, GREATER) == 0);
	f4 = NAN;
	six(AP_CMP_FLOAT, mk_v4, mk_f8nan, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_FLOAT, mk_v4, mk_f8zero, r);
	CHECK(strcmp(r, GREATER) == 0);

	/* NUMERIC: 1.50 (long form, 4-byte header) = 1.5; specials */
	put32(numv, (uint32_t) (4 + 8) << 2);
	put16(numv + 4, 2);			/* long form, positive, dscale 2 */
	put16(numv + 6, 0);			/* weight 0 */
	put16(numv + 8, 1);
	put16(numv + 10, 5000);
	setval(5, numv, 12);
	six(AP_CMP_NUMERIC, mk_v5, mk_n15, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_NUMERIC, mk_v5, mk_nnan, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_NUMERIC, mk_nnan, mk_npinf, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_NUMERIC, mk_nnan, mk_nnan, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_NUMERIC, mk_nninf, mk_v5, r);
	CHECK(strcmp(r, LESS) == 0);
	put16(numv + 10, 10000);	/* invalid digit: the host decides */
	six(AP_CMP_NUMERIC, mk_v5, mk_n15, r);
	CHECK(strcmp(r, "xxxxxx") == 0);

	/* TEXT: byte order, prefix shorter first, bytes unsigned; varchar mix */
	setval(6, txt, (uint32_t) mk_varlena(txt, "abc", 3, true));	/* 4-byte header */
	six(AP_CMP_TEXT, mk_v6, mk_t_abc, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_TEXT, mk_v6, mk_t_abd, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_TEXT, mk_v6, mk_t_ab, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_TEXT, mk_v6, mk_t_b, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_TEXT, mk_t_utf, mk_t_z, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_TEXT, mk_v6, mk_t_null, r);
	CHECK(strcmp(r, "nnnnnn") == 0);
	setval(12, vc, (uint32_t) mk_varlena(vc, "abc", 3, false));
	six(AP_CMP_TEXT, mk_v12, mk_v6, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_TEXT, mk_vc_abc, mk_t_abd, r);
	CHECK(strcmp(r, LESS) == 0);
	/* compressed inline value: "ababababab ab" decompressed via scratch */
	{
		const unsigned char s[] = {0x04, 'a', 'b', (unsigned char) (10 - 3), 0x02};

		put32(cmpd, ((uint32_t) (8 + sizeof(s)) << 2) | 0x02);
		put32(cmpd + 4, 12);
		memcpy(cmpd + 8, s, sizeof(s));
		setval(6, cmpd, 8 + sizeof(s));
		CHECK_EQ(run_filter(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6),
								 E_text(AP_TYPE_TEXT, "abababababab"))), AP_TRUE);
		CHECK_EQ(run_filter(OP(AP_OP_LT, AP_CMP_TEXT, E_var(6),
								 E_text(AP_TYPE_TEXT, "abababababab"))), AP_FALSE);
		put32(cmpd + 4, 12 | (1u << 30));	/* lz4: fallback */
		CHECK_EQ(run_filter(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6),
								 E_text(AP_TYPE_TEXT, "abababababab"))), AP_TRI_FALLBACK);
	}

	/* BPCHAR: trailing spaces are not significant */
	setval(7, bp, (uint32_t) mk_varlena(bp, "ab  ", 4, false));
	six(AP_CMP_BPCHAR, mk_v7, mk_bp_ab, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_BPCHAR, mk_v7, mk_bp_ab3, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_BPCHAR, mk_v7, mk_bp_ab1, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_BPCHAR, mk_bp_empty, mk_bp_sp, r);
	CHECK(strcmp(r, EQUAL) == 0);

	/* DATE */
	date = 1;
	setval(8, &date, 4);
	six(AP_CMP_DATE, mk_v8, mk_d0, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_DATE, mk_dninf, mk_v8, r);
	CHECK(strcmp(r, LESS) == 0);

	/* DATE_TS: either order, infinities, out-of-range finite dates */
	six(AP_CMP_DATE_TS, mk_d0, mk_ts0, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_DATE_TS, mk_v8, mk_tsdaym1, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_DATE_TS, mk_tsday, mk_v8, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_DATE_TS, mk_d1, mk_tsday, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_DATE_TS, mk_dpinf, mk_tspinf, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_DATE_TS, mk_dninf, mk_tsninf, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_DATE_TS, mk_dninf, mk_tsmin1, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_DATE_TS, mk_tspinf, mk_dlast, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_DATE_TS, mk_dbig, mk_ts0, r);
	CHECK(strcmp(r, "xxxxxx") == 0);
	six(AP_CMP_DATE_TS, mk_ts0, mk_dlow, r);
	CHECK(strcmp(r, "xxxxxx") == 0);
	ts = INT64_C(86400000000) * 2;
	setval(9, &ts, 8);
	six(AP_CMP_DATE_TS, mk_v9, mk_v8, r);
	CHECK(strcmp(r, GREATER) == 0);

	/* TS */
	six(AP_CMP_TS, mk_v9, mk_tsday, r);
	CHECK(strcmp(r, GREATER) == 0);
	ts = 5;
	setval(13, &ts, 8);
	six(AP_CMP_TS, mk_v13, mk_tstz5, r);
	CHECK(strcmp(r, EQUAL) == 0);

	/* BOOL: false < true; boolean subexpressions as operands */
	b = 0;
	setval(10, &b, 1);
	six(AP_CMP_BOOL, mk_v10, mk_btrue, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_BOOL, mk_bfalse, mk_v10, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_BOOL, mk_lt_true, mk_btrue, r);
	CHECK(strcmp(r, EQUAL) == 0);

	tfree_all();
}

/* vm_compile.c: compile-time validation errors and limits. */
static void
test_vm_compile(void)
{
	const int32_t proj_ok[] = {3, 1, 14};
	const int32_t proj_bad[] = {1, 16};
	const int32_t proj_dropped[] = {15};
	unsigned char buf[8] = {0};

	vm_setup();

	/* attribute numbers */
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(0), E_i4(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(16), E_i4(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(15), E_i4(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(14), E_i4(1)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(E_nulltest(E_var(14), false), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(NULL, proj_ok, 3), 0);
	CHECK_EQ(compile_rc(NULL, proj_bad, 2), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(NULL, proj_dropped, 1), AP_ERR_BAD_REQUEST);

	/* operators and comparison families */
	CHECK_EQ(compile_rc(OP(0, AP_CMP_INT, E_var(1), E_i4(1)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(OP(7, AP_CMP_INT, E_var(1), E_i4(1)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, 10, E_var(1), E_i4(1)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, 0, E_var(1), E_i4(1)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_f8(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_FLOAT, E_var(1), E_i4(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TS, E_var(9), E_var(13)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_DATE_TS, E_var(8), E_var(13)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_DATE_TS, E_var(8), E_var(8)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(7), E_var(6)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_BPCHAR, E_var(7), E_var(6)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_NUMERIC, E_var(5), E_i4(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(12), E_var(6)), NULL, 0), 0);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_DATE_TS, E_var(9), E_var(8)), NULL, 0), 0);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(11), E_var(2)), NULL, 0), 0);
	{
		/* operator with three arguments */
		ActivePg__Expr *e = OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_i4(1));

		e->op->n_args = 1;
		CHECK_EQ(compile_rc(e, NULL, 0), AP_ERR_BAD_REQUEST);
	}

	/* constant sizes */
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_const(AP_TYPE_INT4, buf, 8, false)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_const(AP_TYPE_INT8, buf, 4, false)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_const(AP_TYPE_INT2, buf, 2, false)), NULL, 0), 0);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_null(AP_TYPE_INT4)), NULL, 0), 0);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_BOOL, E_var(10), E_const(AP_TYPE_BOOL, buf, 2, false)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_const(AP_TYPE_OTHER, buf, 4, false)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_const(99, buf, 4, false)), NULL, 0), AP_ERR_UNSUPPORTED);
	{
		unsigned char v[8];

		v[0] = (4 << 1) | 1;	/* short header says 4 bytes */
		memcpy(v + 1, "abcdef", 6);
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 5, false)), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 4, false)), NULL, 0), 0);
		put32(v, 8u << 2);		/* 4-byte header, 8 bytes */
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 8, false)), NULL, 0), 0);
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 7, false)), NULL, 0), AP_ERR_BAD_REQUEST);
		put32(v, (8u << 2) | 2);	/* compressed constant */
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 8, false)), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, ext_ptr, 18, false)), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 0, false)), NULL, 0), AP_ERR_BAD_REQUEST);
	}

	/* boolean positions */
	CHECK_EQ(compile_rc(E_var(1), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(E_i4(1), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(E_not(E_var(6)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(E_and2(E_var(10), E_var(2)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(E_booltest(E_var(2), AP_IS_TRUE), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(E_booltest(E_var(10), 7), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(E_and2(E_var(10), E_nulltest(E_var(2), true)), NULL, 0), 0);

	/* structure */
	{
		ActivePg__Expr *args[2] = {E_var(10), E_var(10)};
		ActivePg__Expr *e;

		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_NOT, 2, args), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_NOT, 0, args), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_AND, 0, args), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_OR, 0, args), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_AND, 1, args), NULL, 0), 0);
		CHECK_EQ(compile_rc(E_boolexpr(4, 1, args), NULL, 0), AP_ERR_UNSUPPORTED);
		CHECK_EQ(compile_rc(E_nulltest(NULL, false), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(E_booltest(NULL, AP_IS_TRUE), NULL, 0), AP_ERR_BAD_REQUEST);
		e = E_var(1);
		e->node_case = ACTIVE_PG__EXPR__NODE__NOT_SET;
		CHECK_EQ(compile_rc(E_nulltest(e, false), NULL, 0), AP_ERR_BAD_REQUEST);

		/* depth: 200 levels compile, 201 do not */
		e = E_var(10);
		for (int i = 1; i < AP_MAX_EXPR_DEPTH; i++)
			e = E_not(e);
		CHECK_EQ(compile_rc(e, NULL, 0), 0);
		CHECK_EQ(compile_rc(E_not(e), NULL, 0), AP_ERR_UNSUPPORTED);
	}
	/* node count: an AND of 100000 arguments is 100001 nodes */
	{
		int			n = AP_MAX_EXPR_NODES;
		ActivePg__Expr **args = malloc(sizeof(ActivePg__Expr *) * n);
		ActivePg__Expr *leaf = E_var(10);

		for (int i = 0; i < n; i++)
			args[i] = leaf;
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_AND, n, args), NULL, 0), AP_ERR_UNSUPPORTED);
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_AND, n - 1, args), NULL, 0), 0);
		free(args);
	}

	/* max_attno covers both the filter and the projection */
	{
		ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
		ApProgram	prog;

		msg.filter = OP(AP_OP_LT, AP_CMP_INT, E_var(11), E_var(1));
		msg.project = (int32_t *) proj_ok;
		msg.n_project = 2;		/* 3, 1 */
		CHECK_EQ(ap_program_compile(&msg, &vm_desc, &prog), 0);
		CHECK_EQ(prog.max_attno, 11);
		CHECK_EQ(prog.nproject, 2);
		CHECK(prog.project[0] == 3 && prog.project[1] == 1);
		ap_program_free(&prog);
		msg.filter = NULL;
		msg.n_project = 3;
		CHECK_EQ(ap_program_compile(&msg, &vm_desc, &prog), 0);
		CHECK_EQ(prog.max_attno, 14);
		CHECK(prog.filter == NULL);
		ap_program_free(&prog);
	}
	tfree_all();
}

/* Deterministic test randomness (xorshift64). */
static uint64_t like_rng = UINT64_C(0x2545F4914F6CDD1D);

static uint32_t
like_rand(uint32_t n)
{
	like_rng ^= like_rng << 13;
	like_rng ^= like_rng >> 7;
	like_rng ^= like_rng << 17;
	return (uint32_t) (like_rng % n);
}

/*
 * LIKE's literal-and-% fast path against like_match.c's rules (the general
 * matcher) on random texts and patterns: every pattern shape (leading,
 * trailing, doubled %'s, one literal, none, _ and backslash that send it to
 * the general path), repeated letters that make a greedy search go wrong if
 * it were wrong, UTF8 characters, and patterns that change from call to call
 * at the same address (the fast path keys its cache on the bytes).
 */
static void
test_vm_like(void)
{
	static const char *const pieces[] = {"a", "b", "ab", "ba", "aa", "%", "%", "%%",
	"_", "\\%", "\\a", "\xc3\xa9"};
	static const char *const tpieces[] = {"a", "b", "ab", "aab", "b", "\xc3\xa9", " "};
	unsigned char pat[64];
	unsigned char txt[64];
	int			fast_taken = 0;

	for (int iter = 0; iter < 200000; iter++)
	{
		uint32_t	plen = 0;
		uint32_t	tlen = 0;
		int			np = (int) like_rand(6);
		int			nt = (int) like_rand(9);
		bool		utf8 = like_rand(4) != 0;
		bool		m1 = false,
					m2 = false;
		ApEv		r1,
					r2;
		bool		simple = true;

		for (int i = 0; i < np; i++)
		{
			const char *pc = pieces[like_rand(sizeof(pieces) / sizeof(pieces[0]))];

			if (plen + strlen(pc) > sizeof(pat))
				break;
			if (strchr(pc, '_') || strchr(pc, '\\'))
				simple = false;
			memcpy(pat + plen, pc, strlen(pc));
			plen += (uint32_t) strlen(pc);
		}
		for (int i = 0; i < nt; i++)
		{
			const char *tc = tpieces[like_rand(sizeof(tpieces) / sizeof(tpieces[0]))];

			if (tlen + strlen(tc) > sizeof(txt))
				break;
			memcpy(txt + tlen, tc, strlen(tc));
			tlen += (uint32_t) strlen(tc);
		}
		r1 = ap_vm_like(txt, tlen, pat, plen, false, utf8, &m1);
		r2 = ap_vm_like_general(txt, tlen, pat, plen, false, utf8, &m2);
		CHECK_EQ(r1, r2);
		if (r1 == AP_EV_VALUE && r2 == AP_EV_VALUE)
		{
			if (m1 != m2)
				fprintf(stderr, "LIKE '%.*s' ~ '%.*s' (utf8 %d): fast %d, general %d\n",
						(int) tlen, txt, (int) plen, pat, utf8, m1, m2);
			CHECK_EQ(m1, m2);
		}
		if (simple && plen > 0 && r1 == AP_EV_VALUE)
			fast_taken++;
	}
	/* the fast path's own cases came up often enough to mean something */
	CHECK(fast_taken > 50000);

	/* the TPC-H shapes, spelled out */
	{
		static const struct
		{
			const char *t;
			const char *p;
			bool		m;
		}			cases[] = {
			{"carefully special packages requests", "%special%requests%", true},
			{"requests special", "%special%requests%", false},
			{"specialrequests", "%special%requests%", true},
			{"specia requests", "%special%requests%", false},
			{"PROMO BRUSHED", "PROMO%", true},
			{"xPROMO", "PROMO%", false},
			{"LARGE BRASS", "%BRASS", true},
			{"BRASS LARGE", "%BRASS", false},
			{"abc", "abc", true},
			{"abcd", "abc", false},
			{"aba", "a%a", true},
			{"a", "a%a", false},
			{"", "%", true},
			{"", "", true},
			{"x", "", false},
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		{
			bool		m = !cases[i].m;

			CHECK_EQ(ap_vm_like((const unsigned char *) cases[i].t, (uint32_t) strlen(cases[i].t),
								(const unsigned char *) cases[i].p, (uint32_t) strlen(cases[i].p),
								false, true, &m), AP_EV_VALUE);
			CHECK_EQ(m, cases[i].m);
		}
	}
}

int
main(void)
{
	test_vm_logic();
	test_vm_compare();
	test_vm_compile();
	test_vm_like();
	return TEST_DONE();
}
