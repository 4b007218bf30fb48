/*
 * expr_fixture.h
 *	  unit_expr.c's fixture: protobuf builders for value expressions, the
 *	  test descriptor, and a decoder that renders computed datums the way
 *	  PostgreSQL prints them (numeric_out and friends), written from the
 *	  documented formats.  Included by unit_expr.c only.
 */
#ifndef DISKD_TEST_EXPR_FIXTURE_H
#define DISKD_TEST_EXPR_FIXTURE_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskd.h"
#include "testutil.h"
#include "exprbuild.h"

#define CHECK_STR(a, b) \
	do { \
		const char *_a = (a); \
		const char *_b = (b); \
		test_checks++; \
		if (strcmp(_a, _b) != 0) \
		{ \
			test_failures++; \
			fprintf(stderr, "%s:%d: CHECK_STR failed: %s gave \"%s\", expected \"%s\"\n", \
					__FILE__, __LINE__, #a, _a, _b); \
		} \
	} while (0)

/* ---------------- protobuf builders ---------------- */


static ActivePg__Expr *
NUL(int kind)
{
	return E_const(kind, NULL, 0, true);
}

static ActivePg__Expr *
D(int32_t days)
{
	return E_const(AP_TYPE_DATE, &days, 4, false);
}

static ActivePg__Expr *
TS(int64_t us)
{
	return E_const(AP_TYPE_TIMESTAMP, &us, 8, false);
}

/* Text-like constant (short varlena header). */
static ActivePg__Expr *
T(int kind, const char *s)
{
	return E_str(kind, s);
}

/*
 * Numeric payload (long format) from a decimal string: "-12.340" has
 * dscale 3; "NaN", "Infinity", "-Infinity" are the specials.
 */
static size_t
num_payload(const char *s, unsigned char *out)
{
	char		ip[200] = "",
				fp[200] = "";
	const char *dot;
	bool		neg = false;
	int			ni,
				nf,
				dscale,
				ngroups,
				weight,
				first,
				last;
	int			dig[200];
	uint16_t	h;
	int16_t		w;

	if (strcmp(s, "NaN") == 0 || strcmp(s, "Infinity") == 0 || strcmp(s, "-Infinity") == 0)
	{
		h = s[0] == 'N' ? 0xC000 : s[0] == 'I' ? 0xD000 : 0xF000;
		memcpy(out, &h, 2);
		return 2;
	}
	if (*s == '-')
	{
		neg = true;
		s++;
	}
	dot = strchr(s, '.');
	if (dot)
	{
		memcpy(ip, s, dot - s);
		strcpy(fp, dot + 1);
	}
	else
		strcpy(ip, s);
	ni = (int) strlen(ip);
	nf = (int) strlen(fp);
	dscale = nf;
	/* integer groups: pad left to a multiple of 4; fraction: pad right */
	{
		char		all[500] = "";
		int			padl = (4 - ni % 4) % 4,
					padr = (4 - nf % 4) % 4;

		for (int i = 0; i < padl; i++)
			strcat(all, "0");
		strcat(all, ip);
		strcat(all, fp);
		for (int i = 0; i < padr; i++)
			strcat(all, "0");
		ngroups = (int) strlen(all) / 4;
		for (int g = 0; g < ngroups; g++)
			dig[g] = (all[4 * g] - '0') * 1000 + (all[4 * g + 1] - '0') * 100 +
				(all[4 * g + 2] - '0') * 10 + (all[4 * g + 3] - '0');
		weight = (ni + padl) / 4 - 1;
	}
	first = 0;
	while (first < ngroups && dig[first] == 0)
		first++;
	last = ngroups;
	while (last > first && dig[last - 1] == 0)
		last--;
	weight -= first;
	if (first == last)
	{
		weight = 0;
		neg = false;
	}
	h = (uint16_t) ((neg ? 0x4000 : 0) | dscale);
	w = (int16_t) weight;
	memcpy(out, &h, 2);
	memcpy(out + 2, &w, 2);
	for (int g = first; g < last; g++)
	{
		int16_t		d = (int16_t) dig[g];

		memcpy(out + 4 + 2 * (g - first), &d, 2);
	}
	return 4 + 2 * (size_t) (last - first);
}

/* Numeric constant from a decimal string, with a 4-byte varlena header. */
static ActivePg__Expr *
N(const char *s)
{
	unsigned char buf[400];
	size_t		n = num_payload(s, buf + 4);
	uint32_t	hdr = (uint32_t) (n + 4) << 2;

	memcpy(buf, &hdr, 4);
	return E_const(AP_TYPE_NUMERIC, buf, n + 4, false);
}


/* Expr: CASE WHEN c[i] THEN r[i] ... ELSE dflt END. */
static ActivePg__Expr *
CASE(int rkind, int n, ActivePg__Expr **c, ActivePg__Expr **r, ActivePg__Expr *dflt)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__CaseExpr *ce = talloc(sizeof(*ce));
	ActivePg__Expr einit = ACTIVE_PG__EXPR__INIT;
	ActivePg__CaseExpr cinit = ACTIVE_PG__CASE_EXPR__INIT;

	*e = einit;
	*ce = cinit;
	ce->n_whens = (size_t) n;
	ce->whens = talloc((n > 0 ? n : 1) * sizeof(ActivePg__CaseWhen *));
	for (int i = 0; i < n; i++)
	{
		ActivePg__CaseWhen winit = ACTIVE_PG__CASE_WHEN__INIT;

		ce->whens[i] = talloc(sizeof(ActivePg__CaseWhen));
		*ce->whens[i] = winit;
		ce->whens[i]->cond = c[i];
		ce->whens[i]->result = r[i];
	}
	ce->default_result = dflt;
	ce->result_kind = (uint32_t) rkind;
	e->node_case = ACTIVE_PG__EXPR__NODE_CASE_EXPR;
	e->case_expr = ce;
	return e;
}


/* ---------------- descriptor and rendering ---------------- */

/*
 * 1 int4  2 int8  3 float8  4 float4  5 numeric  6 text  7 bpchar  8 date
 * 9 timestamp  10 bool  11 int2  12 varchar  13 timestamptz
 */
#define NATTS 13
static ApColumn cols[NATTS];
static ApTupleDesc desc = {NATTS, cols, 0};
static ApValue vals[NATTS];
static bool utf8 = true;

/* Column of a kind. */
static ApColumn
col(int16_t attlen, char attalign, uint8_t kind)
{
	ApColumn	c;

	memset(&c, 0, sizeof(c));
	c.attlen = attlen;
	c.attalign = attalign;
	c.attbyval = attlen > 0;
	c.type_kind = kind;
	return c;
}

/* The descriptor; every value NULL. */
static void
setup(void)
{
	cols[0] = col(4, 'i', AP_TYPE_INT4);
	cols[1] = col(8, 'd', AP_TYPE_INT8);
	cols[2] = col(8, 'd', AP_TYPE_FLOAT8);
	cols[3] = col(4, 'i', AP_TYPE_FLOAT4);
	cols[4] = col(-1, 'i', AP_TYPE_NUMERIC);
	cols[5] = col(-1, 'i', AP_TYPE_TEXT);
	cols[6] = col(-1, 'i', AP_TYPE_BPCHAR);
	cols[7] = col(4, 'i', AP_TYPE_DATE);
	cols[8] = col(8, 'd', AP_TYPE_TIMESTAMP);
	cols[9] = col(1, 'c', AP_TYPE_BOOL);
	cols[10] = col(2, 's', AP_TYPE_INT2);
	cols[11] = col(-1, 'i', AP_TYPE_VARCHAR);
	cols[12] = col(8, 'd', AP_TYPE_TIMESTAMPTZ);
	for (int i = 0; i < NATTS; i++)
		vals[i].isnull = true;
}

/* Render a numeric payload as numeric_out does (dscale digits after the point). */
static void
num_out(const unsigned char *p, uint32_t len, char *out)
{
	uint16_t	h;
	int			weight,
				dscale,
				ndig,
				hdr;
	bool		neg;
	char		digits[400];
	int			nd = 0,
				point;

	memcpy(&h, p, 2);
	if ((h & 0xC000) == 0xC000)
	{
		strcpy(out, h == 0xC000 ? "NaN" : h == 0xD000 ? "Infinity" : "-Infinity");
		return;
	}
	if ((h & 0xC000) == 0x8000)
	{
		neg = (h & 0x2000) != 0;
		dscale = (h >> 7) & 0x3F;
		weight = h & 0x3F;
		if (h & 0x40)
			weight -= 64;
		hdr = 2;
	}
	else
	{
		int16_t		w;

		neg = (h & 0xC000) == 0x4000;
		dscale = h & 0x3FFF;
		memcpy(&w, p + 2, 2);
		weight = w;
		hdr = 4;
	}
	ndig = (int) (len - hdr) / 2;
	/* decimal digits from 10000^weight down to 10^-dscale */
	point = 4 * (weight + 1);
	{
		int			lowexp = -dscale;
		int			hiexp = point > 1 ? point - 1 : 0;

		for (int e = hiexp; e >= lowexp; e--)
		{
			/* digit of 10^e: group index g = weight - floor(e / 4) */
			int			ge = e >= 0 ? e / 4 : -((-e + 3) / 4);
			int			g = weight - ge;
			int			pos = e - 4 * ge;
			int			d = 0;

			if (g >= 0 && g < ndig)
			{
				int16_t		v;

				memcpy(&v, p + hdr + 2 * g, 2);
				d = v;
				for (int k = 0; k < pos; k++)
					d /= 10;
				d %= 10;
			}
			digits[nd++] = (char) ('0' + d);
			if (e == 0 && dscale > 0)
				digits[nd++] = '.';
		}
	}
	digits[nd] = '\0';
	{
		char	   *s = digits;

		/* strip leading zeros of the integer part, keep one */
		while (s[0] == '0' && s[1] != '\0' && s[1] != '.')
			s++;
		sprintf(out, "%s%s", (neg && ndig > 0) ? "-" : "", s);
	}
}

/* Render a datum of a kind. */
static void
render(int kind, const unsigned char *p, uint32_t len, char *out)
{
	switch (kind)
	{
		case AP_TYPE_BOOL:
			strcpy(out, p[0] ? "t" : "f");
			break;
		case AP_TYPE_INT2:
			{
				int16_t		v;

				memcpy(&v, p, 2);
				sprintf(out, "%d", v);
				break;
			}
		case AP_TYPE_INT4:
		case AP_TYPE_DATE:
			{
				int32_t		v;

				memcpy(&v, p, 4);
				sprintf(out, "%d", v);
				break;
			}
		case AP_TYPE_FLOAT4:
			{
				float		v;

				memcpy(&v, p, 4);
				sprintf(out, "%.9g", v);
				break;
			}
		case AP_TYPE_FLOAT8:
			{
				double		v;

				memcpy(&v, p, 8);
				if (isnan(v))
					strcpy(out, "nan");	/* any NaN: PostgreSQL prints NaN */
				else
					sprintf(out, "%.17g", v);
				break;
			}
		case AP_TYPE_NUMERIC:
			{
				uint32_t	h;

				memcpy(&h, p, 4);
				if ((h & 3) != 0 || (h >> 2) != len)
					strcpy(out, "BAD-VARLENA");
				else
					num_out(p + 4, len - 4, out);
				break;
			}
		case AP_TYPE_TEXT:
		case AP_TYPE_VARCHAR:
		case AP_TYPE_BPCHAR:
			{
				uint32_t	h;

				memcpy(&h, p, 4);
				if ((h & 3) != 0 || (h >> 2) != len)
					strcpy(out, "BAD-VARLENA");
				else
					sprintf(out, "'%.*s'", (int) (len - 4), (const char *) p + 4);
				break;
			}
		default:
			{
				int64_t		v;

				memcpy(&v, p, 8);
				sprintf(out, "%lld", (long long) v);
				break;
			}
	}
}

/*
 * Compile e as the one computed projection and run it on vals: the rendered
 * value, "NULL", "FALLBACK", or "ERR<code>" when it does not compile.
 */
static const char *
ev(ActivePg__Expr *e)
{
	static char out[600];
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__Expr *exprs[1] = {e};
	ApProgram	prog;
	ApValue		res;
	int			rc;

	msg.project_exprs = exprs;
	msg.n_project_exprs = 1;
	rc = ap_program_compile(&msg, &desc, &prog);
	if (rc != 0)
	{
		sprintf(out, "ERR%d", rc);
		return out;
	}
	prog.encoding_utf8 = utf8;
	if (ap_program_project(&prog, vals, &res) != AP_OK)
		strcpy(out, "FALLBACK");
	else if (res.isnull)
		strcpy(out, "NULL");
	else
		render(prog.expr_cols[0].type_kind, res.ptr, res.len, out);
	ap_program_free(&prog);
	return out;
}

/* Compile e as the filter and run it: "t", "f", "NULL", "FALLBACK", "ERR<code>". */
static const char *
filt(ActivePg__Expr *e)
{
	static char out[32];
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ApProgram	prog;
	int			rc;
	ApTri		t;

	msg.filter = e;
	rc = ap_program_compile(&msg, &desc, &prog);
	if (rc != 0)
	{
		CHECK(prog.error[0] != '\0');
		sprintf(out, "ERR%d", rc);
		return out;
	}
	prog.encoding_utf8 = utf8;
	t = ap_program_filter(&prog, vals);
	ap_program_free(&prog);
	strcpy(out, t == AP_TRUE ? "t" : t == AP_FALSE ? "f" : t == AP_NULL ? "NULL" : "FALLBACK");
	return out;
}

/* The numeric typmod of numeric(p, s). */
static int32_t
typmod(int p, int s)
{
	return ((p << 16) | (s & 0x7ff)) + 4;
}

/* Shorthands for numeric arithmetic. */
static ActivePg__Expr *
NADD(ActivePg__Expr *a, ActivePg__Expr *b)
{
	return F2(AP_FN_ADD, AP_TYPE_NUMERIC, a, b);
}

static ActivePg__Expr *
NSUB(ActivePg__Expr *a, ActivePg__Expr *b)
{
	return F2(AP_FN_SUB, AP_TYPE_NUMERIC, a, b);
}

static ActivePg__Expr *
NMUL(ActivePg__Expr *a, ActivePg__Expr *b)
{
	return F2(AP_FN_MUL, AP_TYPE_NUMERIC, a, b);
}

static ActivePg__Expr *
NDIV(ActivePg__Expr *a, ActivePg__Expr *b)
{
	return F2(AP_FN_DIV, AP_TYPE_NUMERIC, a, b);
}

static ActivePg__Expr *
NTYP(ActivePg__Expr *a, int p, int s)
{
	return FN(AP_FN_NUMERIC_TYPMOD, AP_TYPE_NUMERIC, 0, typmod(p, s), 1, a, NULL, NULL);
}

#endif							/* DISKD_TEST_EXPR_FIXTURE_H */
