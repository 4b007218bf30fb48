/*
 * unit_expr.c
 *	  Unit tests of the VM's value language (vm_compile.c, vm_num.c, vm_date.c,
 *	  vm_str.c, numeric.c's fixed point) and of computed projections.
 *
 * Rules of this file:
 *  - Every expression is compiled and run as a computed projection (or a
 *    filter), and its datum is rendered by a decoder written here from the
 *    documented formats: numerics print like numeric_out, so the expected
 *    strings are what PostgreSQL 15 prints for the same SQL (checked on a
 *    real server; the SQL is in the comments).
 *  - Inputs are built byte by byte, numerics from decimal strings by an
 *    encoder of this file (long format), not with the code under test.
 *  - Every allocation is freed so valgrind runs clean.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diskd.h"
#include "vm_internal.h"
#include "testutil.h"
#include "exprbuild.h"

#include "expr_fixture.h"

/* ---------------- tests ---------------- */

/* numeric + - * / with PostgreSQL's scales, specials, encoding. */
static void
test_numeric_arith(void)
{
	setup();
	/* SELECT 1.50 * 2 -> 3.00; 2.5::numeric(10,2) - 1 -> 1.50 */
	CHECK_STR(ev(NMUL(N("1.50"), N("2"))), "3.00");
	CHECK_STR(ev(NSUB(NTYP(N("2.5"), 10, 2), F1(AP_FN_CAST, AP_TYPE_NUMERIC, E_i4(1)))), "1.50");
	CHECK_STR(ev(NADD(N("0.1"), N("0.25"))), "0.35");
	CHECK_STR(ev(NSUB(N("1"), N("1.000"))), "0.000");
	CHECK_STR(ev(NADD(N("-0.5"), N("0.5"))), "0.0");
	CHECK_STR(ev(NSUB(N("-12.5"), N("100"))), "-112.5");
	/* Q1: 12345.67 * (1 - 0.05) * (1 + 0.08) -> 12666.657420 */
	CHECK_STR(ev(NMUL(NMUL(N("12345.67"), NSUB(N("1"), N("0.05"))), NADD(N("1"), N("0.08")))),
			  "12666.657420");
	CHECK_STR(ev(NMUL(N("-0.0001"), N("0.0001"))), "-0.00000001");
	CHECK_STR(ev(NMUL(N("123456789012345678"), N("100000000000000000000"))),
			  "12345678901234567800000000000000000000");
	/* 10^38 leaves the fixed-point range: the host computes it */
	CHECK_STR(ev(NMUL(N("1000000000000000000"), N("100000000000000000000"))), "FALLBACK");
	CHECK_STR(ev(NADD(N("99999999999999999999999999999999999999"), N("1"))), "FALLBACK");
	/* a stored value above 38 digits still compares exactly */
	CHECK_STR(filt(OP(AP_OP_GT, AP_CMP_NUMERIC, N("100000000000000000000000000000000000000000"),
					  NMUL(N("2"), N("3")))), "t");
	CHECK_STR(ev(NADD(N("100000000000000000000000000000000000000000"), N("0"))), "FALLBACK");
	/* large scales: SELECT 1e-40 * 1e-40 has dscale 80 (long format) */
	{
		char		tiny[64] = "0.",
					expect[100] = "0.";

		for (int i = 0; i < 39; i++)
			strcat(tiny, "0");
		strcat(tiny, "1");
		for (int i = 0; i < 79; i++)
			strcat(expect, "0");
		strcat(expect, "1");
		CHECK_STR(ev(NMUL(N(tiny), N(tiny))), expect);
		/* 1.000...0 at scale 40 has a 41-digit coefficient */
		CHECK_STR(ev(NMUL(N(tiny), NTYP(N("1"), 1000, 40))), "FALLBACK");
	}

	/* division: select_div_scale; SELECT 100.00/3, 1/3, 0/5, 2/3, -7/2 */
	CHECK_STR(ev(NDIV(N("100.00"), N("3"))), "33.3333333333333333");
	CHECK_STR(ev(NDIV(N("1"), N("3"))), "0.33333333333333333333");
	CHECK_STR(ev(NDIV(N("0"), N("5"))), "0.00000000000000000000");
	CHECK_STR(ev(NDIV(N("2"), N("3"))), "0.66666666666666666667");
	CHECK_STR(ev(NDIV(N("-7"), N("2"))), "-3.5000000000000000");
	CHECK_STR(ev(NDIV(N("1"), N("0"))), "FALLBACK");
	CHECK_STR(ev(NDIV(N("1"), N("0.000"))), "FALLBACK");

	/* specials: SELECT 'NaN'*0, 'inf'*0, 5/'inf', 'inf'-'inf', 'inf'+1, -inf*-2 */
	CHECK_STR(ev(NMUL(N("NaN"), N("0"))), "NaN");
	CHECK_STR(ev(NMUL(N("Infinity"), N("0"))), "NaN");
	CHECK_STR(ev(NDIV(N("5"), N("Infinity"))), "0");
	CHECK_STR(ev(NSUB(N("Infinity"), N("Infinity"))), "NaN");
	CHECK_STR(ev(NADD(N("Infinity"), N("1"))), "Infinity");
	CHECK_STR(ev(NSUB(N("1"), N("Infinity"))), "-Infinity");
	CHECK_STR(ev(NMUL(N("-Infinity"), N("-2"))), "Infinity");
	CHECK_STR(ev(NDIV(N("Infinity"), N("0"))), "FALLBACK");
	CHECK_STR(ev(NDIV(N("-Infinity"), N("2"))), "-Infinity");
	CHECK_STR(ev(NDIV(N("Infinity"), N("-Infinity"))), "NaN");
	CHECK_STR(ev(F1(AP_FN_NEG, AP_TYPE_NUMERIC, N("1.50"))), "-1.50");
	CHECK_STR(ev(F1(AP_FN_NEG, AP_TYPE_NUMERIC, N("0.00"))), "0.00");
	CHECK_STR(ev(F1(AP_FN_NEG, AP_TYPE_NUMERIC, N("-Infinity"))), "Infinity");

	/* comparison of computed values across scales: 1.50 * 2 = 3 */
	CHECK_STR(filt(OP(AP_OP_EQ, AP_CMP_NUMERIC, NMUL(N("1.50"), N("2")), N("3"))), "t");
	CHECK_STR(filt(OP(AP_OP_LT, AP_CMP_NUMERIC, NMUL(N("1.50"), N("2")), N("3.001"))), "t");
	CHECK_STR(filt(OP(AP_OP_GT, AP_CMP_NUMERIC, NMUL(N("NaN"), N("2")), N("Infinity"))), "t");
	CHECK_STR(filt(OP(AP_OP_EQ, AP_CMP_NUMERIC, NADD(N("NaN"), N("1")), N("NaN"))), "t");
	tfree_all();
}

/* numeric(p,s) coercion, int <-> numeric casts, exact encodings. */
static void
test_numeric_typmod(void)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__Expr *exprs[3];
	ApProgram	prog;
	ApValue		res[3];

	setup();
	/* SELECT 2.5::numeric(2,0), (-2.5)::numeric(10,0), 12345.678::numeric(7,-2) */
	CHECK_STR(ev(NTYP(N("2.5"), 2, 0)), "3");
	CHECK_STR(ev(NTYP(N("-2.5"), 10, 0)), "-3");
	CHECK_STR(ev(NTYP(N("12345.678"), 7, -2)), "12300");
	CHECK_STR(ev(NTYP(N("0.001"), 3, 2)), "0.00");
	CHECK_STR(ev(NTYP(N("1.5"), 5, 3)), "1.500");
	CHECK_STR(ev(NTYP(N("99.994"), 4, 2)), "99.99");
	/* 99.995::numeric(4,2) and 123.456::numeric(4,2): numeric field overflow */
	CHECK_STR(ev(NTYP(N("99.995"), 4, 2)), "FALLBACK");
	CHECK_STR(ev(NTYP(N("123.456"), 4, 2)), "FALLBACK");
	CHECK_STR(ev(NTYP(N("NaN"), 4, 2)), "NaN");
	CHECK_STR(ev(NTYP(N("-Infinity"), 10, 2)), "FALLBACK");
	CHECK_STR(ev(FN(AP_FN_NUMERIC_TYPMOD, AP_TYPE_NUMERIC, 0, -1, 1, N("Infinity"), NULL, NULL)),
			  "Infinity");
	CHECK_STR(ev(NTYP(N("0.00"), 1, 0)), "0");

	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_NUMERIC, E_i8(INT64_MIN))), "-9223372036854775808");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_NUMERIC, E_i2(-7))), "-7");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT4, N("2.5"))), "3");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT4, N("-2.5"))), "-3");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT4, N("2147483647.49"))), "2147483647");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT4, N("2147483647.5"))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT8, N("NaN"))), "FALLBACK");

	/* exact bytes: 3.00 is short-format 0x8100 with digit 3, 4-byte header 32 */
	msg.project_exprs = exprs;
	msg.n_project_exprs = 3;
	exprs[0] = NMUL(N("1.50"), N("2"));
	exprs[1] = NMUL(N("0.01"), N("0.01"));	/* 0.0001: weight -1, dscale 4 */
	exprs[2] = NMUL(N("0"), N("-1.5"));		/* zero: no digits, positive */
	CHECK_EQ(ap_program_compile(&msg, &desc, &prog), 0);
	CHECK_EQ(ap_program_project(&prog, vals, res), AP_OK);
	{
		const unsigned char b0[] = {32, 0, 0, 0, 0x00, 0x81, 3, 0};
		const unsigned char b1[] = {32, 0, 0, 0, 0x7F, 0x82, 1, 0};
		const unsigned char b2[] = {24, 0, 0, 0, 0x80, 0x80};

		CHECK_EQ(res[0].len, sizeof(b0));
		CHECK_MEM(res[0].ptr, b0, sizeof(b0));
		CHECK_EQ(res[1].len, sizeof(b1));
		CHECK_MEM(res[1].ptr, b1, sizeof(b1));
		CHECK_EQ(res[2].len, sizeof(b2));
		CHECK_MEM(res[2].ptr, b2, sizeof(b2));
		CHECK_EQ(prog.expr_cols[0].attlen, -1);
		CHECK_EQ(prog.expr_cols[0].attalign, 'i');
	}
	ap_program_free(&prog);
	tfree_all();
}

/* Integer arithmetic: widths, overflow, division, modulo. */
static void
test_int_arith(void)
{
	setup();
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_INT4, E_i4(INT32_MAX), E_i4(1))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_INT8, E_i4(INT32_MAX), E_i8(1))), "2147483648");
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_INT2, E_i2(32767), E_i2(1))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_SUB, AP_TYPE_INT2, E_i2(-32767), E_i2(1))), "-32768");
	CHECK_STR(ev(F2(AP_FN_SUB, AP_TYPE_INT8, E_i8(INT64_MIN), E_i8(1))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_MUL, AP_TYPE_INT8, E_i8(INT64_C(1) << 62), E_i4(2))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_MUL, AP_TYPE_INT4, E_i4(-65536), E_i4(32768))), "-2147483648");
	CHECK_STR(ev(F2(AP_FN_MUL, AP_TYPE_INT4, E_i4(65536), E_i4(32768))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_INT4, E_i4(-7), E_i4(2))), "-3");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_INT4, E_i4(7), E_i4(0))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_INT4, E_i4(INT32_MIN), E_i4(-1))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_INT8, E_i4(INT32_MIN), E_i8(-1))), "2147483648");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_INT8, E_i8(INT64_MIN), E_i8(-1))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_INT2, E_i2(-32768), E_i2(-1))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_MOD, AP_TYPE_INT4, E_i4(-7), E_i4(3))), "-1");
	CHECK_STR(ev(F2(AP_FN_MOD, AP_TYPE_INT4, E_i4(7), E_i4(-3))), "1");
	CHECK_STR(ev(F2(AP_FN_MOD, AP_TYPE_INT8, E_i8(INT64_MIN), E_i8(-1))), "0");
	CHECK_STR(ev(F2(AP_FN_MOD, AP_TYPE_INT4, E_i4(7), E_i4(0))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_NEG, AP_TYPE_INT2, E_i2(-32768))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_NEG, AP_TYPE_INT8, E_i8(INT64_MIN))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_NEG, AP_TYPE_INT4, E_i4(5))), "-5");
	/* casts: narrowing is range checked */
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT2, E_i4(32768))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT2, E_i4(-32768))), "-32768");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT4, E_i8(INT64_C(2147483648)))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT8, E_i2(-1))), "-1");
	/* NULL in, NULL out; FALLBACK wins over NULL (PostgreSQL evaluates both) */
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_INT4, NUL(AP_TYPE_INT4), E_i4(1))), "NULL");
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_INT4, NUL(AP_TYPE_INT4),
					F2(AP_FN_DIV, AP_TYPE_INT4, E_i4(1), E_i4(0)))), "FALLBACK");
	/* computed comparison operands */
	{
		int32_t		x = 5;

		vals[0].ptr = (const unsigned char *) &x;
		vals[0].len = 4;
		vals[0].isnull = false;
		CHECK_STR(filt(OP(AP_OP_GT, AP_CMP_INT, F2(AP_FN_ADD, AP_TYPE_INT4, E_var(1), E_i4(1)), E_i8(5))), "t");
		CHECK_STR(filt(OP(AP_OP_GT, AP_CMP_INT, F2(AP_FN_DIV, AP_TYPE_INT4, E_var(1), E_i4(0)), E_i8(5))), "FALLBACK");
		x = INT32_MAX;
		CHECK_STR(filt(OP(AP_OP_GT, AP_CMP_INT, F2(AP_FN_ADD, AP_TYPE_INT4, E_var(1), E_i4(1)), E_i8(5))), "FALLBACK");
		vals[0].isnull = true;
		CHECK_STR(filt(OP(AP_OP_GT, AP_CMP_INT, F2(AP_FN_ADD, AP_TYPE_INT4, E_var(1), E_i4(1)), E_i8(5))), "NULL");
	}
	tfree_all();
}

/* Float arithmetic: float4 in float, PostgreSQL's overflow/underflow errors. */
static void
test_float_arith(void)
{
	setup();
	CHECK_STR(ev(F2(AP_FN_MUL, AP_TYPE_FLOAT8, E_f8(1e308), E_f8(10))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_MUL, AP_TYPE_FLOAT8, E_f8(1e-300), E_f8(1e-300))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_MUL, AP_TYPE_FLOAT8, E_f8(INFINITY), E_f8(2))), "inf");
	CHECK_STR(ev(F2(AP_FN_MUL, AP_TYPE_FLOAT8, E_f8(0), E_f8(1e-300))), "0");
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_FLOAT8, E_f8(1e308), E_f8(1e308))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_SUB, AP_TYPE_FLOAT8, E_f8(INFINITY), E_f8(INFINITY))), "nan");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_FLOAT8, E_f8(NAN), E_f8(0))), "nan");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_FLOAT8, E_f8(1), E_f8(0))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_FLOAT8, E_f8(1), E_f8(INFINITY))), "0");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_FLOAT8, E_f8(1e-300), E_f8(1e300))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_DIV, AP_TYPE_FLOAT8, E_f8(1e300), E_f8(1e-300))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_MUL, AP_TYPE_FLOAT4, E_f4(3e38f), E_f4(10))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_MUL, AP_TYPE_FLOAT4, E_f4(1e-30f), E_f4(1e-30f))), "FALLBACK");
	/* SELECT 1.1::float4 + 2.2::float4 -> 3.3000002 (float precision) */
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_FLOAT4, E_f4(1.1f), E_f4(2.2f))), "3.30000019");
	/* SELECT 0.1::float4 + 0.1::float8 -> 0.20000000149011612 */
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_FLOAT8, E_f4(0.1f), E_f8(0.1))), "0.20000000149011612");
	CHECK_STR(ev(F1(AP_FN_NEG, AP_TYPE_FLOAT8, E_f8(0))), "-0");
	/* casts */
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_FLOAT4, E_i8(16777217))), "16777216");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_FLOAT8, E_i8((INT64_C(1) << 53) + 1))), "9007199254740992");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_FLOAT8, E_f4(0.1f))), "0.10000000149011612");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT4, E_f8(2.5))), "2");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT4, E_f8(3.5))), "4");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT4, E_f8(-0.5))), "0");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT4, E_f8(2147483647.5))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT4, E_f8(-2147483648.4))), "-2147483648");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT8, E_f8(NAN))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_INT2, E_f4(32767.4f))), "32767");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_FLOAT4, E_f8(1e300))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_FLOAT4, E_f8(1e-300))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_FLOAT4, E_f8(INFINITY))), "inf");
	/* computed float compares: NaN above everything */
	CHECK_STR(filt(OP(AP_OP_GT, AP_CMP_FLOAT, F2(AP_FN_SUB, AP_TYPE_FLOAT8, E_f8(INFINITY), E_f8(INFINITY)),
					  E_f8(INFINITY))), "t");
	tfree_all();
}

/* Days since 2000-01-01 of a Gregorian date (independent: count days). */
static int32_t
days_of(int y, int m, int d)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int32_t		n = 0;

	for (int yy = 2000; yy < y; yy++)
		n += (yy % 4 == 0 && (yy % 100 != 0 || yy % 400 == 0)) ? 366 : 365;
	for (int yy = y; yy < 2000; yy++)
		n -= (yy % 4 == 0 && (yy % 100 != 0 || yy % 400 == 0)) ? 366 : 365;
	for (int mm = 1; mm < m; mm++)
		n += mdays[mm - 1] + (mm == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0));
	return n + d - 1;
}

/* Microseconds since 2000-01-01 of a date and time. */
static int64_t
ts_of(int y, int mo, int d, int h, int mi, int s, int us)
{
	return ((int64_t) days_of(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) * 1000000 + us;
}

/* Shorthand: EXTRACT(field) as numeric or date_part as float8. */
static ActivePg__Expr *
EXT(int field, int rkind, ActivePg__Expr *a)
{
	return FN(AP_FN_EXTRACT, rkind, field, -1, 1, a, NULL, NULL);
}

/* Date arithmetic, casts, extract, date_trunc. */
static void
test_dates(void)
{
	char		buf[64];
	int32_t		d29 = days_of(2020, 2, 29);

	setup();
	CHECK_EQ(d29, 7364);		/* SELECT date '2020-02-29' - date '2000-01-01' */
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_DATE, D(0), E_i4(1))), "1");
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_DATE, E_i4(-1), D(0))), "-1");
	CHECK_STR(ev(F2(AP_FN_SUB, AP_TYPE_DATE, D(0), E_i4(1))), "-1");
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_DATE, D(INT32_MIN), E_i4(1))), "-2147483648");	/* -infinity */
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_DATE, D(INT32_MAX), E_i4(-5))), "2147483647");
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_DATE, D(2145031948), E_i4(1))), "FALLBACK");	/* 5874898-01-01 */
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_DATE, D(2145031947), E_i4(1))), "2145031948");
	CHECK_STR(ev(F2(AP_FN_SUB, AP_TYPE_DATE, D(-2451545), E_i4(1))), "FALLBACK");		/* before 4714-11-24 BC */
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_DATE, D(0), E_i4(INT32_MAX))), "FALLBACK");
	CHECK_STR(ev(F2(AP_FN_SUB, AP_TYPE_INT4, D(10), D(3))), "7");
	CHECK_STR(ev(F2(AP_FN_SUB, AP_TYPE_INT4, D(INT32_MAX), D(3))), "FALLBACK");

	/* casts: date -> timestamp keeps infinities, range checked */
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_TIMESTAMP, D(1))), "86400000000");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_TIMESTAMP, D(INT32_MAX))), "9223372036854775807");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_TIMESTAMP, D(INT32_MIN))), "-9223372036854775808");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_TIMESTAMP, D(106751983))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_TIMESTAMP, D(106751982))), "9223371244800000000");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_DATE, TS(-1))), "-1");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_DATE, TS(86400000000 - 1))), "0");

	/* SELECT extract(... from date '2020-02-29'): 2020 1 2 29 6 60 9 1582934400 */
	CHECK_STR(ev(EXT(AP_FIELD_YEAR, AP_TYPE_NUMERIC, D(d29))), "2020");
	CHECK_STR(ev(EXT(AP_FIELD_QUARTER, AP_TYPE_NUMERIC, D(d29))), "1");
	CHECK_STR(ev(EXT(AP_FIELD_MONTH, AP_TYPE_NUMERIC, D(d29))), "2");
	CHECK_STR(ev(EXT(AP_FIELD_DAY, AP_TYPE_NUMERIC, D(d29))), "29");
	CHECK_STR(ev(EXT(AP_FIELD_DOW, AP_TYPE_NUMERIC, D(d29))), "6");
	CHECK_STR(ev(EXT(AP_FIELD_DOY, AP_TYPE_NUMERIC, D(d29))), "60");
	CHECK_STR(ev(EXT(AP_FIELD_WEEK, AP_TYPE_NUMERIC, D(d29))), "9");
	CHECK_STR(ev(EXT(AP_FIELD_EPOCH, AP_TYPE_NUMERIC, D(d29))), "1582934400");
	CHECK_STR(ev(EXT(AP_FIELD_HOUR, AP_TYPE_NUMERIC, D(d29))), "FALLBACK");	/* unit not supported */
	CHECK_STR(ev(EXT(AP_FIELD_DOW, AP_TYPE_NUMERIC, D(0))), "6");		/* 2000-01-01: Saturday */
	CHECK_STR(ev(EXT(AP_FIELD_YEAR, AP_TYPE_NUMERIC, D(-2451545))), "-4714");	/* 4714-11-24 BC */
	CHECK_STR(ev(EXT(AP_FIELD_MONTH, AP_TYPE_NUMERIC, D(-2451545))), "11");
	CHECK_STR(ev(EXT(AP_FIELD_WEEK, AP_TYPE_NUMERIC, D(days_of(2021, 1, 1)))), "53");
	CHECK_STR(ev(EXT(AP_FIELD_WEEK, AP_TYPE_NUMERIC, D(days_of(2024, 12, 30)))), "1");
	CHECK_STR(ev(EXT(AP_FIELD_YEAR, AP_TYPE_NUMERIC, D(2145031947))), "5874897");
	/* infinite dates: year/epoch +-Infinity, other fields NULL, hour an error */
	CHECK_STR(ev(EXT(AP_FIELD_YEAR, AP_TYPE_NUMERIC, D(INT32_MIN))), "-Infinity");
	CHECK_STR(ev(EXT(AP_FIELD_EPOCH, AP_TYPE_NUMERIC, D(INT32_MAX))), "Infinity");
	CHECK_STR(ev(EXT(AP_FIELD_DAY, AP_TYPE_NUMERIC, D(INT32_MAX))), "NULL");
	CHECK_STR(ev(EXT(AP_FIELD_HOUR, AP_TYPE_NUMERIC, D(INT32_MAX))), "FALLBACK");
	/* date_part(text, date) goes through timestamp: hour is 0 */
	CHECK_STR(ev(EXT(AP_FIELD_HOUR, AP_TYPE_FLOAT8, D(d29))), "0");
	CHECK_STR(ev(EXT(AP_FIELD_YEAR, AP_TYPE_FLOAT8, D(d29))), "2020");

	/* SELECT extract(second from timestamp '2000-01-01 10:00:05.5') -> 5.500000 */
	CHECK_STR(ev(EXT(AP_FIELD_SECOND, AP_TYPE_NUMERIC, TS(ts_of(2000, 1, 1, 10, 0, 5, 500000)))), "5.500000");
	CHECK_STR(ev(EXT(AP_FIELD_SECOND, AP_TYPE_FLOAT8, TS(ts_of(2000, 1, 1, 10, 0, 5, 500000)))), "5.5");
	CHECK_STR(ev(EXT(AP_FIELD_EPOCH, AP_TYPE_NUMERIC, TS(ts_of(2000, 1, 1, 10, 0, 5, 500000)))),
			  "946720805.500000");
	CHECK_STR(ev(EXT(AP_FIELD_EPOCH, AP_TYPE_FLOAT8, TS(ts_of(2000, 1, 1, 10, 0, 5, 500000)))),
			  "946720805.5");
	CHECK_STR(ev(EXT(AP_FIELD_HOUR, AP_TYPE_NUMERIC, TS(ts_of(1999, 12, 31, 23, 59, 1, 0)))), "23");
	CHECK_STR(ev(EXT(AP_FIELD_MINUTE, AP_TYPE_NUMERIC, TS(ts_of(1999, 12, 31, 23, 59, 1, 0)))), "59");
	CHECK_STR(ev(EXT(AP_FIELD_DAY, AP_TYPE_NUMERIC, TS(ts_of(1999, 12, 31, 23, 59, 1, 0)))), "31");
	CHECK_STR(ev(EXT(AP_FIELD_WEEK, AP_TYPE_NUMERIC, TS(ts_of(2021, 1, 3, 10, 0, 0, 0)))), "53");
	CHECK_STR(ev(EXT(AP_FIELD_SECOND, AP_TYPE_NUMERIC, TS(INT64_MAX))), "NULL");
	CHECK_STR(ev(EXT(AP_FIELD_YEAR, AP_TYPE_NUMERIC, TS(INT64_MAX))), "Infinity");
	CHECK_STR(ev(EXT(AP_FIELD_EPOCH, AP_TYPE_FLOAT8, TS(INT64_MIN))), "-inf");
	CHECK_STR(ev(EXT(AP_FIELD_DAY, AP_TYPE_FLOAT8, TS(INT64_MIN))), "NULL");
	/* timestamptz depends on the session's zone: not at the disk */
	CHECK_STR(ev(EXT(AP_FIELD_YEAR, AP_TYPE_NUMERIC, E_var(13))), "ERR3");

	/* date_trunc: SELECT date_trunc('week', timestamp '2021-01-03 10:00') -> 2020-12-28 */
	sprintf(buf, "%lld", (long long) ts_of(2020, 12, 28, 0, 0, 0, 0));
	CHECK_STR(ev(FN(AP_FN_DATE_TRUNC, AP_TYPE_TIMESTAMP, AP_FIELD_WEEK, -1, 1,
					TS(ts_of(2021, 1, 3, 10, 0, 0, 0)), NULL, NULL)), buf);
	sprintf(buf, "%lld", (long long) ts_of(2021, 4, 1, 0, 0, 0, 0));
	CHECK_STR(ev(FN(AP_FN_DATE_TRUNC, AP_TYPE_TIMESTAMP, AP_FIELD_QUARTER, -1, 1,
					TS(ts_of(2021, 5, 3, 10, 11, 12, 500000)), NULL, NULL)), buf);
	sprintf(buf, "%lld", (long long) ts_of(2021, 1, 1, 0, 0, 0, 0));
	CHECK_STR(ev(FN(AP_FN_DATE_TRUNC, AP_TYPE_TIMESTAMP, AP_FIELD_YEAR, -1, 1,
					TS(ts_of(2021, 5, 3, 10, 11, 12, 500000)), NULL, NULL)), buf);
	sprintf(buf, "%lld", (long long) ts_of(1999, 12, 31, 23, 59, 0, 0));
	CHECK_STR(ev(FN(AP_FN_DATE_TRUNC, AP_TYPE_TIMESTAMP, AP_FIELD_MINUTE, -1, 1,
					TS(ts_of(1999, 12, 31, 23, 59, 59, 999999)), NULL, NULL)), buf);
	sprintf(buf, "%lld", (long long) ts_of(1999, 12, 31, 23, 59, 59, 0));
	CHECK_STR(ev(FN(AP_FN_DATE_TRUNC, AP_TYPE_TIMESTAMP, AP_FIELD_SECOND, -1, 1,
					TS(ts_of(1999, 12, 31, 23, 59, 59, 999999)), NULL, NULL)), buf);
	CHECK_STR(ev(FN(AP_FN_DATE_TRUNC, AP_TYPE_TIMESTAMP, AP_FIELD_DAY, -1, 1,
					TS(INT64_MAX), NULL, NULL)), "9223372036854775807");
	CHECK_STR(ev(FN(AP_FN_DATE_TRUNC, AP_TYPE_TIMESTAMP, AP_FIELD_DOW, -1, 1,
					TS(0), NULL, NULL)), "ERR3");

	/* date vs computed timestamp */
	CHECK_STR(filt(OP(AP_OP_LT, AP_CMP_DATE_TS, D(0), F1(AP_FN_CAST, AP_TYPE_TIMESTAMP, D(1)))), "t");
	CHECK_STR(filt(OP(AP_OP_EQ, AP_CMP_DATE, F2(AP_FN_ADD, AP_TYPE_DATE, D(0), E_i4(31)), D(31))), "t");
	tfree_all();
}

/* Expr: AND of two arguments. */
static ActivePg__Expr *
AND2(ActivePg__Expr *a, ActivePg__Expr *b)
{
	ActivePg__Expr *args[2] = {a, b};

	return E_boolexpr(AP_BOOL_AND, 2, args);
}

/*
 * A column compared with a constant (the specialised path) must give what
 * the generic path gives for the same value: the column wrapped in a
 * one-argument COALESCE is no longer a Var, so it takes the generic path.
 * Every operator, both argument orders, on the current vals.
 */
static void
check_fast_agrees(int cmp, int attno, ActivePg__Expr *k)
{
	ActivePg__Expr *v = E_var(attno);
	ActivePg__Expr *args[1] = {v};
	ActivePg__Expr *g = COAL(cols[attno - 1].type_kind, 1, args);
	char		fast[32];

	for (int op = AP_OP_EQ; op <= AP_OP_GE; op++)
	{
		strcpy(fast, filt(OP(op, cmp, v, k)));
		CHECK_STR(filt(OP(op, cmp, g, k)), fast);
		strcpy(fast, filt(OP(op, cmp, k, v)));
		CHECK_STR(filt(OP(op, cmp, k, g)), fast);
	}
}

/* Point column attno at bytes (NULL: SQL NULL). */
static void
set_val(int attno, const void *p, uint32_t len)
{
	vals[attno - 1].ptr = (const unsigned char *) p;
	vals[attno - 1].len = len;
	vals[attno - 1].isnull = (p == NULL);
}

/* Column-vs-constant comparisons: specialised path against the generic one. */
static void
test_fast_compare(void)
{
	static const int32_t i4s[] = {INT32_MIN, -1, 0, 5, INT32_MAX};
	static const int16_t i2s[] = {-32768, -1, 5, 32767};
	static const int64_t i8s[] = {INT64_MIN, -7, 5, INT64_MAX};
	/* infinities, ordinary days, and days a timestamp cannot hold */
	static const int32_t dates[] = {INT32_MIN, INT32_MAX, 0, 1, -1, 106751982, 106751983,
	-2451545, -2451546};
	static const int64_t tss[] = {INT64_MIN, INT64_MAX, 0, 86400000000, 86400000000 - 1,
	-86400000000};
	static const double f8s[] = {NAN, -0.0, 0.0, 1.5, -INFINITY, INFINITY};
	static const float f4s[] = {NAN, 1.5f, -0.0f, 2.25f};
	static const char *nums[] = {"NaN", "Infinity", "-Infinity", "0.05", "0.050", "0.07",
		"0.0700001", "-3", "0", "24",
	"123456789012345678901234567890123456789012345.5"};
	unsigned char nbuf[400];
	unsigned char corrupt[5] = {5 << 2, 0, 0, 0, 0};
	unsigned char b;
	int64_t		tz = 0;

	setup();
	for (int i = -1; i < (int) (sizeof(i4s) / sizeof(i4s[0])); i++)
	{
		set_val(1, i < 0 ? NULL : &i4s[i], 4);
		check_fast_agrees(AP_CMP_INT, 1, E_i4(5));
		check_fast_agrees(AP_CMP_INT, 1, E_i8(INT64_MAX));
		check_fast_agrees(AP_CMP_INT, 1, E_i8(INT64_MIN));
		check_fast_agrees(AP_CMP_INT, 1, E_i2(-1));
		check_fast_agrees(AP_CMP_INT, 1, NUL(AP_TYPE_INT4));
	}
	for (int i = -1; i < (int) (sizeof(i2s) / sizeof(i2s[0])); i++)
	{
		set_val(11, i < 0 ? NULL : &i2s[i], 2);
		check_fast_agrees(AP_CMP_INT, 11, E_i4(5));
		check_fast_agrees(AP_CMP_INT, 11, E_i2(-1));
	}
	for (int i = -1; i < (int) (sizeof(i8s) / sizeof(i8s[0])); i++)
	{
		set_val(2, i < 0 ? NULL : &i8s[i], 8);
		check_fast_agrees(AP_CMP_INT, 2, E_i8(5));
		check_fast_agrees(AP_CMP_INT, 2, E_i4(-7));
	}
	for (int i = -1; i < (int) (sizeof(dates) / sizeof(dates[0])); i++)
	{
		set_val(8, i < 0 ? NULL : &dates[i], 4);
		check_fast_agrees(AP_CMP_DATE, 8, D(0));
		check_fast_agrees(AP_CMP_DATE, 8, D(INT32_MAX));
		check_fast_agrees(AP_CMP_DATE, 8, D(INT32_MIN));
		check_fast_agrees(AP_CMP_DATE_TS, 8, TS(0));
		check_fast_agrees(AP_CMP_DATE_TS, 8, TS(86400000000));
		check_fast_agrees(AP_CMP_DATE_TS, 8, TS(INT64_MAX));
		check_fast_agrees(AP_CMP_DATE_TS, 8, TS(INT64_MIN));
	}
	for (int i = -1; i < (int) (sizeof(tss) / sizeof(tss[0])); i++)
	{
		set_val(9, i < 0 ? NULL : &tss[i], 8);
		set_val(13, i < 0 ? NULL : &tss[i], 8);
		check_fast_agrees(AP_CMP_TS, 9, TS(0));
		check_fast_agrees(AP_CMP_TS, 9, TS(INT64_MAX));
		check_fast_agrees(AP_CMP_TS, 13, E_const(AP_TYPE_TIMESTAMPTZ, &tz, 8, false));
		check_fast_agrees(AP_CMP_DATE_TS, 9, D(1));
		check_fast_agrees(AP_CMP_DATE_TS, 9, D(INT32_MAX));
		check_fast_agrees(AP_CMP_DATE_TS, 9, D(INT32_MIN));
		check_fast_agrees(AP_CMP_DATE_TS, 9, D(106751983));	/* constant falls back */
	}
	for (int i = -1; i < 2; i++)
	{
		b = (unsigned char) i;
		set_val(10, i < 0 ? NULL : &b, 1);
		check_fast_agrees(AP_CMP_BOOL, 10, E_bool(true));
		check_fast_agrees(AP_CMP_BOOL, 10, E_bool(false));
	}
	for (int i = -1; i < (int) (sizeof(f8s) / sizeof(f8s[0])); i++)
	{
		set_val(3, i < 0 ? NULL : &f8s[i], 8);
		check_fast_agrees(AP_CMP_FLOAT, 3, E_f8(NAN));
		check_fast_agrees(AP_CMP_FLOAT, 3, E_f8(0.0));
		check_fast_agrees(AP_CMP_FLOAT, 3, E_f8(-INFINITY));
		check_fast_agrees(AP_CMP_FLOAT, 3, E_f4(1.5f));
	}
	for (int i = -1; i < (int) (sizeof(f4s) / sizeof(f4s[0])); i++)
	{
		set_val(4, i < 0 ? NULL : &f4s[i], 4);
		check_fast_agrees(AP_CMP_FLOAT, 4, E_f8(1.5));
		check_fast_agrees(AP_CMP_FLOAT, 4, E_f4(NAN));
		check_fast_agrees(AP_CMP_FLOAT, 4, E_f4(-0.0f));
	}
	for (int i = -2; i < (int) (sizeof(nums) / sizeof(nums[0])); i++)
	{
		if (i == -2)
			set_val(5, corrupt, 5);
		else if (i == -1)
			set_val(5, NULL, 0);
		else
		{
			size_t		n = num_payload(nums[i], nbuf + 4);
			uint32_t	hdr = (uint32_t) (n + 4) << 2;

			memcpy(nbuf, &hdr, 4);
			set_val(5, nbuf, (uint32_t) n + 4);
		}
		check_fast_agrees(AP_CMP_NUMERIC, 5, N("0.05"));
		check_fast_agrees(AP_CMP_NUMERIC, 5, N("0.07"));
		check_fast_agrees(AP_CMP_NUMERIC, 5, N("24"));
		check_fast_agrees(AP_CMP_NUMERIC, 5, N("-3.000"));
		check_fast_agrees(AP_CMP_NUMERIC, 5, N("NaN"));
		check_fast_agrees(AP_CMP_NUMERIC, 5, N("Infinity"));
		check_fast_agrees(AP_CMP_NUMERIC, 5, N("123456789012345678901234567890123456789012345.5"));
	}

	/* fixed expectations: exact results, mirrored operators, fallbacks */
	set_val(5, nbuf, (uint32_t) num_payload("0.06", nbuf + 4) + 4);
	{
		uint32_t	hdr = vals[4].len << 2;

		memcpy(nbuf, &hdr, 4);
	}
	CHECK_STR(filt(OP(AP_OP_GE, AP_CMP_NUMERIC, E_var(5), N("0.05"))), "t");
	CHECK_STR(filt(OP(AP_OP_LE, AP_CMP_NUMERIC, E_var(5), N("0.06"))), "t");
	CHECK_STR(filt(OP(AP_OP_LT, AP_CMP_NUMERIC, E_var(5), N("0.06"))), "f");
	CHECK_STR(filt(OP(AP_OP_GT, AP_CMP_NUMERIC, N("0.07"), E_var(5))), "t");
	CHECK_STR(filt(OP(AP_OP_LT, AP_CMP_NUMERIC, E_var(5), N("NaN"))), "t");
	set_val(8, &dates[6], 4);	/* a date beyond timestamp's range */
	CHECK_STR(filt(OP(AP_OP_LT, AP_CMP_DATE_TS, E_var(8), TS(0))), "FALLBACK");
	CHECK_STR(filt(OP(AP_OP_GT, AP_CMP_DATE_TS, TS(0), E_var(8))), "FALLBACK");
	/* AND in order: a fallback before a FALSE wins, a FALSE before it decides */
	set_val(1, &i4s[3], 4);		/* 5 */
	CHECK_STR(filt(AND2(OP(AP_OP_LT, AP_CMP_DATE_TS, E_var(8), TS(0)),
						OP(AP_OP_LT, AP_CMP_INT, E_var(1), E_i4(0)))), "FALLBACK");
	CHECK_STR(filt(AND2(OP(AP_OP_LT, AP_CMP_INT, E_var(1), E_i4(0)),
						OP(AP_OP_LT, AP_CMP_DATE_TS, E_var(8), TS(0)))), "f");
	set_val(3, NULL, 0);
	CHECK_STR(filt(AND2(OP(AP_OP_LT, AP_CMP_FLOAT, E_var(3), E_f8(0.0)),
						OP(AP_OP_GT, AP_CMP_INT, E_var(1), E_i4(0)))), "NULL");
	CHECK_STR(filt(AND2(OP(AP_OP_LT, AP_CMP_FLOAT, E_var(3), E_f8(0.0)),
						OP(AP_OP_LT, AP_CMP_INT, E_var(1), E_i4(0)))), "f");
	tfree_all();
}

/* Shorthand: a LIKE-family call. */
static const char *
like(int fn, int kind, const char *s, const char *p)
{
	return filt(F2(fn, AP_TYPE_BOOL, T(kind, s), T(AP_TYPE_TEXT, p)));
}

/* LIKE/ILIKE, substring, length, upper/lower, ||, bpchar. */
static void
test_strings(void)
{
	setup();
	utf8 = true;
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "hello", "h%o"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "hello", "h_llo"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "h\xc3\xa9llo", "h_llo"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "h\xc3\xa9llo", "h__llo"), "f");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "\xe2\x82\xac", "_"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "x\xe2\x82\xac", "%_"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "\xe2\x82\xac", "%\xe2\x82\xac"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "ab", "a\\"), "FALLBACK");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "ab", "%\\"), "FALLBACK");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "a%b", "a\\%b"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "axb", "a\\%b"), "f");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "a_b", "%\\_b"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "", "%"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "", "_"), "f");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "", ""), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "abc", "%%c"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "abc", "%b"), "f");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "special requests", "%special%requests%"), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "special request", "%special%requests%"), "f");
	CHECK_STR(like(AP_FN_NOT_LIKE, AP_TYPE_VARCHAR, "PROMO BRUSHED", "PROMO%"), "f");
	/* SELECT 'ab'::char(4) LIKE 'ab' -> f, LIKE 'ab  ' -> t: the padded value */
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_BPCHAR, "ab  ", "ab"), "f");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_BPCHAR, "ab  ", "ab  "), "t");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_BPCHAR, "ab  ", "ab%"), "t");
	/* ILIKE folds ASCII and decides only ASCII: 'ÀB' ILIKE 'àb' goes to the host */
	CHECK_STR(like(AP_FN_ILIKE, AP_TYPE_TEXT, "AbC", "abc"), "t");
	CHECK_STR(like(AP_FN_ILIKE, AP_TYPE_TEXT, "AbC", "A%c"), "t");
	CHECK_STR(like(AP_FN_NOT_ILIKE, AP_TYPE_TEXT, "AbC", "abc"), "f");
	CHECK_STR(like(AP_FN_ILIKE, AP_TYPE_TEXT, "\xc3\x80" "B", "\xc3\xa0" "b"), "FALLBACK");
	CHECK_STR(like(AP_FN_ILIKE, AP_TYPE_TEXT, "AB", "\xc3\xa0" "b"), "FALLBACK");
	CHECK_STR(like(AP_FN_NOT_ILIKE, AP_TYPE_TEXT, "x\xc3\x80", "X%"), "FALLBACK");
	CHECK_STR(filt(F2(AP_FN_LIKE, AP_TYPE_BOOL, NUL(AP_TYPE_TEXT), T(AP_TYPE_TEXT, "%"))), "NULL");
	/* not UTF8: only ASCII values are evaluated */
	utf8 = false;
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "h\xc3\xa9llo", "h%"), "FALLBACK");
	CHECK_STR(like(AP_FN_LIKE, AP_TYPE_TEXT, "hello", "h_llo"), "t");
	CHECK_STR(ev(F1(AP_FN_LENGTH, AP_TYPE_INT4, T(AP_TYPE_TEXT, "h\xc3\xa9llo"))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_OCTET_LENGTH, AP_TYPE_INT4, T(AP_TYPE_TEXT, "h\xc3\xa9llo"))), "6");
	utf8 = true;

	/* SELECT substring('héllo' from 2 for 3), ('hello' from -1 for 3), ('hello' from 0) */
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, T(AP_TYPE_TEXT, "h\xc3\xa9llo"), E_i4(2), E_i4(3))),
			  "'\xc3\xa9ll'");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, T(AP_TYPE_TEXT, "hello"), E_i4(-1), E_i4(3))), "'h'");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 2, T(AP_TYPE_TEXT, "hello"), E_i4(0), NULL)), "'hello'");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 2, T(AP_TYPE_TEXT, "hello"), E_i4(3), NULL)), "'llo'");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 2, T(AP_TYPE_TEXT, "hello"), E_i4(6), NULL)), "''");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, T(AP_TYPE_TEXT, "hello"), E_i4(2), E_i4(-1))), "FALLBACK");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, T(AP_TYPE_TEXT, "hello"), E_i4(-5), E_i4(3))), "''");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, T(AP_TYPE_TEXT, "hello"), E_i4(1), E_i4(INT32_MAX))),
			  "'hello'");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, T(AP_TYPE_TEXT, "hello"), E_i4(INT32_MAX), E_i4(10))), "''");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, T(AP_TYPE_TEXT, "\xe2\x82\xac\xe2\x82\xac"),
					E_i4(2), E_i4(1))), "'\xe2\x82\xac'");
	/* Q22: substring(c_phone from 1 for 2) of a bpchar */
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, T(AP_TYPE_BPCHAR, "13-555  "), E_i4(1), E_i4(2))), "'13'");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, T(AP_TYPE_BPCHAR, "ab  "), E_i4(1), E_i4(4))), "'ab'");

	/* SELECT length('ab  '::char(4)), octet_length(...) -> 2, 4 */
	CHECK_STR(ev(F1(AP_FN_LENGTH, AP_TYPE_INT4, T(AP_TYPE_BPCHAR, "ab  "))), "2");
	CHECK_STR(ev(F1(AP_FN_OCTET_LENGTH, AP_TYPE_INT4, T(AP_TYPE_BPCHAR, "ab  "))), "4");
	CHECK_STR(ev(F1(AP_FN_LENGTH, AP_TYPE_INT4, T(AP_TYPE_TEXT, "h\xc3\xa9llo"))), "5");
	CHECK_STR(ev(F1(AP_FN_LENGTH, AP_TYPE_INT4, T(AP_TYPE_TEXT, "ab  "))), "4");
	CHECK_STR(ev(F1(AP_FN_LENGTH, AP_TYPE_INT4, T(AP_TYPE_TEXT, "\xc3"))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_OCTET_LENGTH, AP_TYPE_INT4, T(AP_TYPE_TEXT, ""))), "0");

	/*
	 * Corrupt text with a NUL byte: PostgreSQL's length() says 4 for
	 * 'abcd\0efgh' in UTF8 and 9 in LATIN1, upper() and substring() stop
	 * there too; the host decides.  Byte-wise operations stay at the disk.
	 */
	CHECK_STR(ev(F1(AP_FN_LENGTH, AP_TYPE_INT4, E_strn(AP_TYPE_TEXT, "abcd\0efgh", 9))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_UPPER, AP_TYPE_TEXT, E_strn(AP_TYPE_TEXT, "ab\0c", 4))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_LOWER, AP_TYPE_TEXT, E_strn(AP_TYPE_BPCHAR, "AB\0 ", 4))), "FALLBACK");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, E_strn(AP_TYPE_TEXT, "ab\0cd", 5), E_i4(2),
					E_i4(3))), "FALLBACK");
	CHECK_STR(filt(F2(AP_FN_ILIKE, AP_TYPE_BOOL, E_strn(AP_TYPE_TEXT, "ab\0c", 4), T(AP_TYPE_TEXT, "AB%"))),
			  "FALLBACK");
	CHECK_STR(filt(F2(AP_FN_LIKE, AP_TYPE_BOOL, E_strn(AP_TYPE_TEXT, "ab\0c", 4), T(AP_TYPE_TEXT, "ab_c"))),
			  "t");
	CHECK_STR(ev(F1(AP_FN_OCTET_LENGTH, AP_TYPE_INT4, E_strn(AP_TYPE_TEXT, "ab\0c", 4))), "4");
	utf8 = false;
	CHECK_STR(ev(F1(AP_FN_LENGTH, AP_TYPE_INT4, E_strn(AP_TYPE_TEXT, "abcd\0efgh", 9))), "FALLBACK");
	utf8 = true;

	/* upper/lower: ASCII letters of all-ASCII values; any other byte goes to the host */
	CHECK_STR(ev(F1(AP_FN_UPPER, AP_TYPE_TEXT, T(AP_TYPE_TEXT, "h\xc3\xa9llo"))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_LOWER, AP_TYPE_TEXT, T(AP_TYPE_TEXT, "\xc4\xb0I"))), "FALLBACK");
	CHECK_STR(ev(F1(AP_FN_UPPER, AP_TYPE_TEXT, T(AP_TYPE_TEXT, "hello, world 1!"))), "'HELLO, WORLD 1!'");
	CHECK_STR(ev(F1(AP_FN_LOWER, AP_TYPE_TEXT, T(AP_TYPE_VARCHAR, "ABC-z"))), "'abc-z'");
	CHECK_STR(ev(F1(AP_FN_UPPER, AP_TYPE_TEXT, T(AP_TYPE_BPCHAR, "ab  "))), "'AB'");
	/* SELECT 'a '::char(2) || 'b' -> ab */
	CHECK_STR(ev(F2(AP_FN_TEXTCAT, AP_TYPE_TEXT, T(AP_TYPE_BPCHAR, "a "), T(AP_TYPE_TEXT, "b"))), "'ab'");
	CHECK_STR(ev(F2(AP_FN_TEXTCAT, AP_TYPE_TEXT, T(AP_TYPE_TEXT, "x"), T(AP_TYPE_TEXT, ""))), "'x'");
	CHECK_STR(ev(F2(AP_FN_TEXTCAT, AP_TYPE_TEXT, T(AP_TYPE_TEXT, "x"), NUL(AP_TYPE_TEXT))), "NULL");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_TEXT, T(AP_TYPE_BPCHAR, "ab  "))), "'ab'");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_TEXT, T(AP_TYPE_VARCHAR, "ab  "))), "'ab  '");
	/* a computed string compared */
	CHECK_STR(filt(OP(AP_OP_EQ, AP_CMP_TEXT, F1(AP_FN_CAST, AP_TYPE_TEXT, T(AP_TYPE_BPCHAR, "ab ")),
					  T(AP_TYPE_TEXT, "ab"))), "t");
	CHECK_STR(filt(OP(AP_OP_EQ, AP_CMP_TEXT, FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 3, T(AP_TYPE_TEXT, "13-555"),
											   E_i4(1), E_i4(2)), T(AP_TYPE_TEXT, "13"))), "t");
	tfree_all();
}

/* x IN (c1..cn) (or NOT IN) as the host encodes it: OR of = (AND of <>). */
static ActivePg__Expr *
in_list(bool negate, int cmp, ActivePg__Expr *(*x) (void), int n, ActivePg__Expr **k)
{
	ActivePg__Expr **items = malloc(sizeof(ActivePg__Expr *) * (size_t) n);
	ActivePg__Expr *e;

	for (int i = 0; i < n; i++)
		items[i] = OP(negate ? AP_OP_NE : AP_OP_EQ, cmp, x(), k[i]);
	e = E_boolexpr(negate ? AP_BOOL_AND : AP_BOOL_OR, n, items);
	free(items);
	return e;
}

static ActivePg__Expr *
x_int4(void)
{
	return E_var(1);
}

static ActivePg__Expr *
x_upper_text(void)
{
	return F1(AP_FN_UPPER, AP_TYPE_TEXT, E_var(6));
}

static ActivePg__Expr *
x_bpchar(void)
{
	return E_var(7);
}

/* Did the filter's root become a sorted set? */
static bool
is_set(ActivePg__Expr *e)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ApProgram	prog;
	bool		r;

	msg.filter = e;
	if (ap_program_compile(&msg, &desc, &prog) != 0)
		return false;
	r = prog.filter->root->set != NULL;
	ap_program_free(&prog);
	return r;
}

/*
 * Long IN lists are searched as sorted sets (vm_opt.c make_set); every
 * answer must be the chain's: the membership, NULL for a NULL x, NULL when a
 * constant is NULL and nothing matches, mixed integer kinds, bpchar padding.
 */
static void
test_value_sets(void)
{
	static const int32_t ks[] = {9, -3, 100, 7, 7, 42, 0, INT32_MAX, -100, 55};
	static const int32_t xs[] = {-100, -3, 0, 1, 7, 8, 42, 55, 100, INT32_MAX, INT32_MIN};
	static const char *const words[] = {"A", "BB", "ABC", "Z", "ZZ", "B", "AB", "", "ABCD"};
	static const char *const inputs[] = {"ab", "abc", "", "b", "y", "zz", "abcde", "a\xc3\xa9"};
	ActivePg__Expr *k[12];

	setup();
	utf8 = true;
	for (size_t xi = 0; xi < sizeof(xs) / sizeof(xs[0]); xi++)
	{
		bool		member = false;

		for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
			member |= ks[i] == xs[xi];
		set_val(1, &xs[xi], 4);
		for (int i = 0; i < 10; i++)
			k[i] = E_i4(ks[i]);
		CHECK_STR(filt(in_list(false, AP_CMP_INT, x_int4, 10, k)), member ? "t" : "f");
		/* int4 column against int8 constants */
		for (int i = 0; i < 10; i++)
			k[i] = E_i8(ks[i]);
		CHECK_STR(filt(in_list(true, AP_CMP_INT, x_int4, 10, k)), member ? "f" : "t");
		/* a NULL among the constants: no set, the chain's NULL when nothing matches */
		for (int i = 0; i < 9; i++)
			k[i] = E_i4(ks[i]);
		k[9] = NUL(AP_TYPE_INT4);
		CHECK_STR(filt(in_list(false, AP_CMP_INT, x_int4, 10, k)),
				  member && xs[xi] != 55 ? "t" : "NULL");
	}
	/* the chains above are sets; one with a NULL constant or of 7 items is not */
	for (int i = 0; i < 10; i++)
		k[i] = E_i4(ks[i]);
	CHECK(is_set(in_list(false, AP_CMP_INT, x_int4, 10, k)));
	CHECK(is_set(in_list(true, AP_CMP_INT, x_int4, 10, k)));
	CHECK(!is_set(in_list(false, AP_CMP_INT, x_int4, 7, k)));
	k[9] = NUL(AP_TYPE_INT4);
	CHECK(!is_set(in_list(false, AP_CMP_INT, x_int4, 10, k)));
	CHECK(!is_set(in_list(true, AP_CMP_INT, x_int4, 10, k)));

	set_val(1, NULL, 0);
	for (int i = 0; i < 10; i++)
		k[i] = E_i4(ks[i]);
	CHECK_STR(filt(in_list(false, AP_CMP_INT, x_int4, 10, k)), "NULL");
	CHECK_STR(filt(in_list(true, AP_CMP_INT, x_int4, 10, k)), "NULL");

	/* a computed x (upper(text)), evaluated once */
	for (size_t xi = 0; xi < sizeof(inputs) / sizeof(inputs[0]); xi++)
	{
		char		up[16];
		bool		member = false;
		bool		ascii;
		unsigned char buf[16];
		size_t		len = strlen(inputs[xi]);

		for (size_t i = 0; i <= len; i++)
			up[i] = (inputs[xi][i] >= 'a' && inputs[xi][i] <= 'z') ?
				(char) (inputs[xi][i] - 'a' + 'A') : inputs[xi][i];
		for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			member |= strcmp(words[i], up) == 0;
		buf[0] = (unsigned char) (((len + 1) << 1) | 1);
		memcpy(buf + 1, inputs[xi], len);
		set_val(6, buf, (uint32_t) len + 1);
		for (int i = 0; i < 9; i++)
			k[i] = T(AP_TYPE_TEXT, words[i]);
		/* upper() decides only ASCII text: 'aé' goes to the host */
		ascii = true;
		for (size_t i = 0; i < len; i++)
			ascii &= ((unsigned char) inputs[xi][i] & 0x80) == 0;
		CHECK_STR(filt(in_list(false, AP_CMP_TEXT, x_upper_text, 9, k)),
				  !ascii ? "FALLBACK" : member ? "t" : "f");
		for (int i = 0; i < 9; i++)
			k[i] = T(AP_TYPE_TEXT, words[i]);
		CHECK_STR(filt(in_list(true, AP_CMP_TEXT, x_upper_text, 9, k)),
				  !ascii ? "FALLBACK" : member ? "f" : "t");
	}

	/* bpchar: trailing spaces are padding on both sides */
	{
		static const unsigned char ab[] = {(5 << 1) | 1, 'a', 'b', ' ', ' '};
		static const char *const pads[] = {"x", "ab ", "c", "d", "e", "f", "g", "h"};

		set_val(7, ab, sizeof(ab));
		for (int i = 0; i < 8; i++)
			k[i] = T(AP_TYPE_BPCHAR, pads[i]);
		CHECK_STR(filt(in_list(false, AP_CMP_BPCHAR, x_bpchar, 8, k)), "t");
		for (int i = 0; i < 8; i++)
			k[i] = T(AP_TYPE_BPCHAR, pads[i]);
		CHECK_STR(filt(in_list(true, AP_CMP_BPCHAR, x_bpchar, 8, k)), "f");
	}
	tfree_all();
}

/* CASE and COALESCE: 3VL conditions, laziness, fallback rules. */
static void
test_case_coalesce(void)
{
	ActivePg__Expr *c[3];
	ActivePg__Expr *r[3];
	ActivePg__Expr *a[3];

	setup();
	c[0] = NUL(AP_TYPE_BOOL);
	c[1] = E_bool(true);
	r[0] = E_i4(1);
	r[1] = E_i4(2);
	CHECK_STR(ev(CASE(AP_TYPE_INT4, 2, c, r, E_i4(3))), "2");
	c[1] = E_bool(false);
	CHECK_STR(ev(CASE(AP_TYPE_INT4, 2, c, r, E_i4(3))), "3");
	CHECK_STR(ev(CASE(AP_TYPE_INT4, 2, c, r, NULL)), "NULL");
	/* only the branch taken is evaluated */
	c[0] = E_bool(true);
	r[1] = F2(AP_FN_DIV, AP_TYPE_INT4, E_i4(1), E_i4(0));
	CHECK_STR(ev(CASE(AP_TYPE_INT4, 2, c, r, E_i4(3))), "1");
	c[0] = E_bool(false);
	c[1] = E_bool(true);
	CHECK_STR(ev(CASE(AP_TYPE_INT4, 2, c, r, E_i4(3))), "FALLBACK");
	/* a condition that falls back decides nothing */
	c[0] = OP(AP_OP_EQ, AP_CMP_INT, F2(AP_FN_DIV, AP_TYPE_INT4, E_i4(1), E_i4(0)), E_i4(1));
	r[1] = E_i4(2);
	CHECK_STR(ev(CASE(AP_TYPE_INT4, 2, c, r, E_i4(3))), "FALLBACK");
	/* text branches of text and varchar; a CASE as a filter */
	c[0] = E_bool(false);
	c[1] = E_bool(true);
	r[0] = T(AP_TYPE_TEXT, "a");
	r[1] = T(AP_TYPE_VARCHAR, "bb");
	CHECK_STR(ev(CASE(AP_TYPE_TEXT, 2, c, r, NULL)), "'bb'");
	r[0] = E_bool(false);
	r[1] = E_bool(true);
	CHECK_STR(filt(CASE(AP_TYPE_BOOL, 2, c, r, NULL)), "t");
	c[1] = E_bool(false);
	CHECK_STR(filt(CASE(AP_TYPE_BOOL, 2, c, r, NULL)), "NULL");
	/* numeric CASE (Q8/Q12/Q14 shape): CASE WHEN x THEN price * (1 - disc) ELSE 0 END */
	c[0] = E_bool(true);
	r[0] = NMUL(N("100.00"), NSUB(N("1"), N("0.06")));
	CHECK_STR(ev(CASE(AP_TYPE_NUMERIC, 1, c, r, N("0"))), "94.0000");
	/* kinds are checked */
	r[0] = E_i8(1);
	CHECK_STR(ev(CASE(AP_TYPE_INT4, 1, c, r, NULL)), "ERR4");
	c[0] = E_i4(1);
	r[0] = E_i4(1);
	CHECK_STR(ev(CASE(AP_TYPE_INT4, 1, c, r, NULL)), "ERR4");
	CHECK_STR(ev(CASE(AP_TYPE_INT4, 0, c, r, NULL)), "ERR4");

	a[0] = NUL(AP_TYPE_INT4);
	a[1] = E_i4(2);
	a[2] = F2(AP_FN_DIV, AP_TYPE_INT4, E_i4(1), E_i4(0));
	CHECK_STR(ev(COAL(AP_TYPE_INT4, 3, a)), "2");
	CHECK_STR(ev(COAL(AP_TYPE_INT4, 1, a)), "NULL");
	a[0] = F2(AP_FN_DIV, AP_TYPE_INT4, E_i4(1), E_i4(0));
	CHECK_STR(ev(COAL(AP_TYPE_INT4, 2, a)), "FALLBACK");
	a[0] = NUL(AP_TYPE_NUMERIC);
	a[1] = NMUL(N("1.5"), N("2"));
	CHECK_STR(ev(COAL(AP_TYPE_NUMERIC, 2, a)), "3.0");
	a[1] = E_i4(1);
	CHECK_STR(ev(COAL(AP_TYPE_NUMERIC, 2, a)), "ERR4");
	CHECK_STR(ev(COAL(AP_TYPE_NUMERIC, 0, a)), "ERR4");
	tfree_all();
}

/* Function signatures are checked at compile time. */
static void
test_compile(void)
{
	setup();
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_INT4, E_i4(1), E_f8(1))), "ERR3");
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_OTHER, E_i4(1), E_i4(1))), "ERR3");
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_FLOAT4, E_f4(1), E_f8(1))), "ERR3");
	CHECK_STR(ev(F2(AP_FN_MOD, AP_TYPE_FLOAT8, E_f8(1), E_f8(1))), "ERR3");
	CHECK_STR(ev(F2(AP_FN_MUL, AP_TYPE_DATE, D(1), E_i4(1))), "ERR3");
	CHECK_STR(ev(F2(AP_FN_ADD, AP_TYPE_DATE, D(1), D(1))), "ERR3");
	CHECK_STR(ev(F2(AP_FN_LIKE, AP_TYPE_BOOL, E_i4(1), T(AP_TYPE_TEXT, "x"))), "ERR3");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_DATE, E_i4(1))), "ERR3");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_NUMERIC, E_f8(1))), "ERR3");
	CHECK_STR(ev(F1(AP_FN_CAST, AP_TYPE_TIMESTAMPTZ, D(1))), "ERR3");
	CHECK_STR(ev(FN(99, AP_TYPE_INT4, 0, -1, 1, E_i4(1), NULL, NULL)), "ERR3");
	CHECK_STR(ev(FN(AP_FN_NEG, AP_TYPE_INT4, 0, -1, 0, NULL, NULL, NULL)), "ERR3");
	CHECK_STR(ev(FN(AP_FN_EXTRACT, AP_TYPE_NUMERIC, 12, -1, 1, D(1), NULL, NULL)), "ERR3");
	CHECK_STR(ev(FN(AP_FN_EXTRACT, AP_TYPE_INT4, AP_FIELD_YEAR, -1, 1, D(1), NULL, NULL)), "ERR3");
	CHECK_STR(ev(FN(AP_FN_SUBSTR, AP_TYPE_TEXT, 0, -1, 2, T(AP_TYPE_TEXT, "x"), E_i8(1), NULL)), "ERR3");
	/* comparison families see the function's result kind */
	CHECK_STR(filt(OP(AP_OP_EQ, AP_CMP_INT, F2(AP_FN_ADD, AP_TYPE_FLOAT8, E_f8(1), E_f8(1)), E_i4(1))), "ERR4");
	CHECK_STR(filt(F2(AP_FN_ADD, AP_TYPE_INT4, E_i4(1), E_i4(1))), "ERR4");
	CHECK_STR(filt(F2(AP_FN_LIKE, AP_TYPE_BOOL, E_var(6), T(AP_TYPE_TEXT, "x"))), "NULL");
	/* nesting depth is limited as before */
	{
		ActivePg__Expr *e = E_var(1);

		for (int i = 1; i < AP_MAX_EXPR_DEPTH; i++)
			e = F1(AP_FN_NEG, AP_TYPE_INT4, e);
		CHECK_STR(ev(e), "NULL");
		CHECK_STR(ev(F1(AP_FN_NEG, AP_TYPE_INT4, e)), "ERR3");
	}
	tfree_all();
}

/* Computed projections in rows: layout after the attributes, nulls, fallback. */
static void
test_projection(void)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__Expr *exprs[4];
	int32_t		proj[1] = {11};
	int16_t		i2 = 7;
	int32_t		i4 = 40;
	ApProgram	prog;
	ApValue		ev4[4];
	ApRowBatchBuf	b;
	ApRowHeader h;

	setup();
	vals[10].ptr = (const unsigned char *) &i2;
	vals[10].len = 2;
	vals[10].isnull = false;
	vals[0].ptr = (const unsigned char *) &i4;
	vals[0].len = 4;
	vals[0].isnull = false;
	exprs[0] = F2(AP_FN_ADD, AP_TYPE_INT8, E_var(1), E_i8(2));		/* 42, int8 'd' */
	exprs[1] = F2(AP_FN_TEXTCAT, AP_TYPE_TEXT, T(AP_TYPE_TEXT, "a"), T(AP_TYPE_TEXT, "b"));
	exprs[2] = F2(AP_FN_ADD, AP_TYPE_INT4, E_var(2), E_i4(1));		/* attr 2 NULL */
	exprs[3] = F1(AP_FN_CAST, AP_TYPE_BOOL, E_i4(1));			/* replaced below */
	exprs[3] = OP(AP_OP_GT, AP_CMP_INT, E_var(1), E_i4(3));			/* bool */
	msg.project = proj;
	msg.n_project = 1;
	msg.project_exprs = exprs;
	msg.n_project_exprs = 4;
	CHECK_EQ(ap_program_compile(&msg, &desc, &prog), 0);
	CHECK_EQ(prog.nexprs, 4);
	CHECK_EQ(prog.max_attno, 11);
	CHECK_EQ(prog.expr_cols[0].attalign, 'd');
	CHECK_EQ(prog.expr_cols[3].attlen, 1);
	CHECK_EQ(ap_program_project(&prog, vals, ev4), AP_OK);
	CHECK_EQ(ap_rowbatch_init(&b, 64), 0);
	CHECK_EQ(ap_rowbatch_append_exprs(&b, &desc, prog.project, prog.nproject, vals,
									prog.expr_cols, prog.nexprs, ev4,
									(int64_t) AP_TID_PACK(70000, 3)), 0);
	/*
	 * natts 5, value 3 null: header 8 + tid 8 + bitmap 1 -> data at 24; int2
	 * 7 at 24; int8 42 at 32; text 'ab' (4-byte header, 'i') at 40..46; bool
	 * at 46
	 */
	memcpy(&h, b.data, sizeof(h));
	CHECK_EQ(h.natts, 5);
	CHECK_EQ(h.flags, AP_ROW_HASNULLS | AP_ROW_HASTID);
	CHECK_EQ(AP_ROW_BITMAP_OFFSET(h.flags), 16);
	CHECK_EQ(AP_ROW_DATA_OFFSET(h.flags, h.natts), 24);
	CHECK_EQ(b.data[16], 0x17);	/* bits 0, 1, 2, 4 */
	CHECK_EQ(h.row_bytes, 47);
	{
		int16_t		v2;
		int64_t		v8;
		uint32_t	vh;
		uint64_t	tid;

		memcpy(&tid, b.data + 8, 8);
		CHECK_EQ(AP_TID_BLOCK(tid), 70000u);
		CHECK_EQ(AP_TID_OFFSET(tid), 3);
		memcpy(&v2, b.data + 24, 2);
		memcpy(&v8, b.data + 32, 8);
		memcpy(&vh, b.data + 40, 4);
		CHECK_EQ(v2, 7);
		CHECK_EQ(v8, 42);
		CHECK_EQ(vh, 6u << 2);
		CHECK_MEM(b.data + 44, "ab", 2);
		CHECK_EQ(b.data[46], 1);
	}
	/* a projection that cannot be computed: the whole tuple falls back */
	i4 = INT32_MAX;
	exprs[0] = F2(AP_FN_ADD, AP_TYPE_INT4, E_var(1), E_i4(1));
	ap_program_free(&prog);
	CHECK_EQ(ap_program_compile(&msg, &desc, &prog), 0);
	CHECK_EQ(ap_program_project(&prog, vals, ev4), AP_FALLBACK);
	ap_program_free(&prog);
	ap_rowbatch_free(&b);

	/* the arena bounds a computed string: a huge concatenation falls back */
	{
		ActivePg__Expr *e = T(AP_TYPE_TEXT, "0123456789012345678901234567890123456789012345678901234567890123");

		for (int i = 0; i < 15; i++)
			e = F2(AP_FN_TEXTCAT, AP_TYPE_TEXT, e, e);
		CHECK_STR(ev(e), "FALLBACK");
	}
	tfree_all();
}

/* Run every test group; nonzero exit on any failure. */
int
main(void)
{
	test_numeric_arith();
	test_numeric_typmod();
	test_int_arith();
	test_float_arith();
	test_dates();
	test_fast_compare();
	test_strings();
	test_case_coalesce();
	test_value_sets();
	test_compile();
	test_projection();
	return TEST_DONE();
}
