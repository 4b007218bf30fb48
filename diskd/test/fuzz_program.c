/*
 * fuzz_program.c
 *	  Hostile disk programs: random Program messages (filter, projections,
 *	  AggProgram, BloomFilters), mostly well typed, sometimes malformed in
 *	  any field, go through the wire encoding to the daemon's compilers and,
 *	  when they compile, run over real heap tuples as scan.c runs them.
 *
 * Under ASan and UBSan (`make check` in scripts/test.sh) it proves that a
 * refused program comes back as AP_ERR_BAD_REQUEST/UNSUPPORTED with a text,
 * and a compiled one reads nothing outside the tuple or the values the scan
 * deformed (slots beyond are poisoned) and answers within its enums: ApTri,
 * ApStatus with datums of their kind's layout that rowenc.c encodes,
 * ApAggResult (never FULL right after a flush) with flushes of whole rows;
 * the prefilter and batched Bloom verdicts drop nothing kept otherwise.
 * Deterministic: FUZZ_SEED, FUZZ_ITERS, FUZZ_FIRST (a program comes from the
 * seed and its index: it replays alone, alike with and without sanitizers;
 * FUZZ_VERBOSE prints it).  Messages reach the daemon as protobuf-c unpacks
 * them, a tenth with flipped bits.  Tuples are laid out as heap_fill_tuple
 * writes them (alignment, null bitmap, short and 4-byte headers, inline pglz,
 * TOAST pointers, fewer attributes than the descriptor) in buffers of their
 * exact size, so ASan sees a read past one.  Bugs found: test_regressions.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agg.h"
#include "prefilter.h"
#include "vm_internal.h"
#include "testutil.h"
#include "exprbuild.h"
#include "bytes.h"
#include "bloomkeys.h"

/* Per-row checks count only failures: millions of rows would overflow test_checks. */
static long cur_prog;
#define EXPECT(c) \
	do { \
		if (!(c)) \
		{ \
			CHECK(c); \
			fprintf(stderr, "  in program %ld\n", cur_prog); \
		} \
	} while (0)

static uint64_t rng;
static int	bad;				/* percent of codes, kinds, arities made hostile */

#define RND()		next_rand(&rng)
#define RN(n)		((n) > 0 ? (int) (RND() % (uint64_t) (n)) : 0)	/* uniform in [0, n) */
#define PCT(p)		(RN(100) < (p))
#define NKINDS		(AP_TYPE_KIND_COUNT + 3)	/* kind codes a hostile node takes */
#define ANY_KIND()	(1 + RN(AP_TYPE_KIND_COUNT - 1))
#define INT_KIND()	(AP_TYPE_INT2 + RN(3))
/* a code of a node (op, kind, arity ...): valid, or with probability bad any in [0, range) */
#define CODE(valid, range)	(PCT(bad) ? RN(range) : (valid))
/* a kind that delivers a CASE/COALESCE/aggregate value of kind k */
#define DELIVERS(k)	((k) == AP_TYPE_TEXT || (k) == AP_TYPE_VARCHAR ? AP_TYPE_TEXT + RN(2) : (k))

/* ---------------- the fixture: descriptor and heap tuples ---------------- */

#define NCOLS		25
#define NROWS		300
#define ATT_DROPPED	15
#define ATT_LIAR	20			/* says int8, stores 4 bytes */
#define ATT_UUID	19			/* AP_TYPE_OTHER of 16 bytes; the 14th is a varlena */

static const uint8_t kinds[NCOLS] = {AP_TYPE_INT4, AP_TYPE_INT8, AP_TYPE_INT2, AP_TYPE_DATE,
	AP_TYPE_TIMESTAMP, AP_TYPE_FLOAT4, AP_TYPE_FLOAT8, AP_TYPE_BOOL, AP_TYPE_TIMESTAMPTZ,
	AP_TYPE_NUMERIC, AP_TYPE_TEXT, AP_TYPE_BPCHAR, AP_TYPE_VARCHAR, AP_TYPE_OTHER, AP_TYPE_INT4,
	AP_TYPE_NUMERIC, AP_TYPE_TEXT, AP_TYPE_INT4, AP_TYPE_OTHER, AP_TYPE_INT8, AP_TYPE_DATE,
AP_TYPE_TIMESTAMP, AP_TYPE_FLOAT8, AP_TYPE_BPCHAR, AP_TYPE_BOOL};

static ApColumn cols[NCOLS];
static ApTupleDesc desc = {NCOLS, cols, 0};
static unsigned char *tup[NROWS];
static uint32_t tuplen[NROWS];
static ApTupleHeader hdr[NROWS];
/* the columns a well-typed Var of each kind reads (not dropped, not the liar) */
static int	kind_cols[AP_TYPE_KIND_COUNT][4];
static int	nkind_cols[AP_TYPE_KIND_COUNT];
#define KIND_COL(k)	(kind_cols[k][RN(nkind_cols[k])])

/*
 * A fixed-length datum of kind k: an edge (NaN, infinities, infinite dates,
 * range ends, MIN, MAX), any valid value or bits, or an ordinary value.
 */
static void
gen_fixed(int k, unsigned char *out)
{
	static const double fedge[] = {NAN, INFINITY, 0.0, 1e308, 4.9e-324, 3.4e38, 1.4e-45, 1e15};
	static const int64_t dedge[] = {AP_DATE_NOBEGIN, AP_DATE_NOEND, AP_DATE_MIN_DAYS,
	AP_DATE_END_DAYS - 1, AP_TS_NOBEGIN, AP_TS_NOEND, AP_TS_MIN, AP_TS_END - 1};
	bool		ts = k == AP_TYPE_TIMESTAMP || k == AP_TYPE_TIMESTAMPTZ;
	bool		dt = ts || k == AP_TYPE_DATE;
	int			len = AP_KIND_ATTLEN(k);
	int64_t		top = (int64_t) (UINT64_MAX >> (65 - 8 * len));	/* the width's maximum */
	int64_t		v = (RN(201) - 100) * (ts ? 200 * AP_USECS_PER_DAY : dt ? 200 : 1);
	int			r = RN(4);
	int			e = RN(16);		/* one draw: edge and sign (copysign: exact for NaN) */
	double		d = r == 0 ? copysign(fedge[e % 8], e - 8) : (double) v / (1 + RN(1000));
	float		f = isfinite(d) && fabs(d) > FLT_MAX ? (float) copysign(INFINITY, d) : (float) d;

	if (r == 0)
		v = dt ? dedge[4 * ts + RN(4)] : PCT(50) ? top - RN(2) : -top - 1 + RN(2);
	else if (r == 1)				/* floats: any bits */
		v = !dt ? (int64_t) RND() : ts ? (int64_t) ((uint64_t) AP_TS_MIN + RND() %
												   ((uint64_t) AP_TS_END - (uint64_t) AP_TS_MIN)) :
			AP_DATE_MIN_DAYS + RN(AP_DATE_END_DAYS - AP_DATE_MIN_DAYS);
	else if (ts)
		v += (int64_t) (RND() % (uint64_t) AP_USECS_PER_DAY);
	if (k == AP_TYPE_BOOL)
		v = RN(2);
	else if (r != 1 && k == AP_TYPE_FLOAT4)
		memcpy(&v, &f, 4);
	else if (r != 1 && k == AP_TYPE_FLOAT8)
		memcpy(&v, &d, 8);
	memcpy(out, &v, (size_t) len);	/* little-endian: the low bytes */
}

/*
 * A datum of kind for a column of attlen (raw bytes if attlen is not the
 * kind's).  Numerics: NaN or an infinity, a fixed-point value as the daemon
 * encodes it (make_result's format, zero at any scale), or long-format digits
 * at any weight, beyond 38 digits.  Text: LIKE metacharacters, multibyte
 * UTF-8, spaces, rarely long or not UTF-8.  A short or 4-byte header; stored
 * values (not constants) sometimes inline pglz or an on-disk TOAST pointer.
 */
static size_t
gen_datum(int kind, int attlen, unsigned char *out, bool stored)
{
	static const char *const pieces[] = {"a", "b", "Z", "MAIL", "ship", " ", "%", "_", "\\",
	"0", "9", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "ab%", "_x", "Ab", "."};
	unsigned char p[1024];
	int			digits[24];
	int			nd = 1 + (PCT(10) ? RN(20) : RN(5));
	int			weight = PCT(10) ? RN(400) - 200 : RN(10) - 4;
	int			r = RN(10);
	int			mode = RN(100);
	size_t		n = 0;
	size_t		o = 8;
	ApFixed		f = {(ap_i128) (RND() >> 4), 0};

	for (int i = 0; i < attlen; i++)
		out[i] = (unsigned char) RND();
	if (attlen == AP_KIND_ATTLEN(kind) && attlen > 0)
		gen_fixed(kind, out);
	if (attlen > 0)
		return (size_t) attlen;
	if (kind == AP_TYPE_NUMERIC && r == 0)
		n = ap_numeric_encode_special((ApNumSpecial) (1 + RN(3)), p);
	else if (kind == AP_TYPE_NUMERIC && r <= 4)
	{
		f.coef >>= RN(60);
		f.coef *= PCT(30) ? (ap_i128) (RND() >> 8) : 1;
		f.coef *= PCT(40) ? -1 : 1;
		f.dscale = PCT(5) ? RN(2000) : RN(20);
		n = ap_numeric_encode_fixed(&f, p);
	}
	else if (kind == AP_TYPE_NUMERIC)
	{
		/* normalized: no leading or trailing zero digit, dscale to the last one */
		for (int i = 0; i < nd; i++)
			digits[i] = i == 0 || i == nd - 1 ? 1 + RN(9999) : RN(10000);
		n = num_long(p, PCT(40), RN(4) + (nd - 1 - weight > 0 ? 4 * (nd - 1 - weight) : 0),
					 (int16_t) weight, digits, nd);
	}
	for (int i = AP_IS_STR_KIND(kind) ? (PCT(3) ? 40 + RN(60) : RN(8)) : 0; i > 0; i--)
	{
		const char *s = pieces[RN(18)];

		memcpy(p + n, s, strlen(s));
		n += strlen(s);
	}
	/* other kinds: any bytes; text: rarely one that is not UTF-8 */
	for (int i = kind == AP_TYPE_NUMERIC ? 0 : AP_IS_STR_KIND(kind) ? PCT(2) : RN(24); i > 0; i--)
		p[n++] = (unsigned char) (0x80 + RN(128));
	while (kind == AP_TYPE_BPCHAR && PCT(40))
		p[n++] = ' ';
	if (stored && mode < 4)
	{
		/* a TOAST pointer: VARTAG_ONDISK, a varatt_external */
		memcpy(out, (const unsigned char[18]) {0x01, 18, 64}, 18);
		return 18;
	}
	for (size_t i = 0; stored && mode < 10 && i < n; i++)
	{
		if (i % 8 == 0)
			out[o++] = 0;		/* pglz control byte: eight literals */
		out[o++] = p[i];
	}
	if (!stored || mode >= 10)
		return mk_varlena(out, p, n, mode < 40);
	put32(out, ((uint32_t) o << 2) | 0x02);
	put32(out + 4, (uint32_t) n);	/* raw size, method pglz */
	return o;
}

/* Heap tuple r, as heap_fill_tuple lays it out, in a buffer of its exact size. */
static void
build_tuple(int r)
{
	static unsigned char data[AP_BLCKSZ];
	unsigned char d[1200];
	bool		isnull[NCOLS];
	bool		hasnull = false;
	uint16_t	infomask = 0;
	int			natts = PCT(3) ? 1 + RN(NCOLS - 1) : NCOLS;
	int			nullpct = PCT(40) ? 0 : 15;
	uint32_t	off = 0;
	uint32_t	hoff;
	ApValue		v[NCOLS];

	for (int i = 0; i < natts; i++)
	{
		const ApColumn *c = &cols[i];
		size_t		n;

		isnull[i] = PCT(nullpct) || (c->attisdropped && PCT(70));
		hasnull |= isnull[i];
		if (isnull[i])
			continue;
		n = gen_datum(c->type_kind, c->attlen, d, true);
		/* fixed-length and 4-byte-header values are aligned (zero padding), short ones not */
		while ((c->attlen > 0 || !ap_varlena_is_1b(d)) &&
			   off % (c->attalign == 'd' ? 8 : c->attalign == 'i' ? 4 : c->attalign == 's' ? 2 : 1))
			data[off++] = 0;
		if (c->attlen < 0)
			infomask |= AP_HEAP_HASVARWIDTH | (ap_varlena_is_external(d) ? AP_HEAP_HASEXTERNAL : 0);
		memcpy(data + off, d, n);
		off += (uint32_t) n;
	}
	infomask |= hasnull ? AP_HEAP_HASNULL : 0;
	hoff = (AP_TUPLE_HEADER_MIN + (hasnull ? (natts + 7) / 8 : 0) + 7) & ~7u;
	free(tup[r]);
	if ((tup[r] = calloc(1, hoff + off)) == NULL)
		exit(2);
	put16(tup[r] + 18, (uint16_t) natts);
	put16(tup[r] + 20, infomask);
	tup[r][22] = (unsigned char) hoff;
	for (int i = 0; hasnull && i < natts; i++)
		tup[r][AP_TUPLE_HEADER_MIN + i / 8] |= (unsigned char) (!isnull[i] << (i % 8));
	memcpy(tup[r] + hoff, data, off);
	tuplen[r] = hoff + off;
	/* the fixture itself must be what a disk reads */
	EXPECT(ap_tuple_header(tup[r], tuplen[r], &hdr[r]) == AP_OK);
	EXPECT(ap_tuple_deform(&desc, tup[r], tuplen[r], &hdr[r], natts, v) == AP_OK);
}

/* FuncCall (fn >= 0) or OpExpr (of op -1 - fn, comparison rk) of any arity: exprbuild.h's lack. */
static ActivePg__Expr *
call_node(int fn, int rk, int field, int32_t typmod, int n, ActivePg__Expr **a)
{
	ActivePg__Expr *e = fn >= 0 ? FN(fn, rk, field, typmod, 0, NULL, NULL, NULL) :
		OP(-1 - fn, rk, NULL, NULL);
	ActivePg__Expr **args = talloc((size_t) (n > 0 ? n : 1) * sizeof(*args));

	memcpy(args, a, (size_t) n * sizeof(*args));
	*(fn >= 0 ? &e->func->n_args : &e->op->n_args) = (size_t) n;
	*(fn >= 0 ? &e->func->args : &e->op->args) = args;
	return e;
}

/* NullTest (kind < 0) or BooleanTest of kind, over arg (may be absent). */
static ActivePg__Expr *
test_node(int kind, bool is_not_null, ActivePg__Expr *arg)
{
	ActivePg__Expr *e = E_var(0);

	e->node_case = kind < 0 ? ACTIVE_PG__EXPR__NODE_NULL_TEST : ACTIVE_PG__EXPR__NODE_BOOL_TEST;
	if (kind < 0)
		*(e->null_test = talloc(sizeof(ActivePg__NullTest))) = (ActivePg__NullTest)
		{PROTOBUF_C_MESSAGE_INIT(&active_pg__null_test__descriptor), .arg = arg,
		.is_not_null = is_not_null};
	else
		*(e->bool_test = talloc(sizeof(ActivePg__BooleanTest))) = (ActivePg__BooleanTest)
		{PROTOBUF_C_MESSAGE_INIT(&active_pg__boolean_test__descriptor), .arg = arg,
		.kind = (uint32_t) kind};
	return e;
}

/* CASE of result kind rk: n conditions and results, and an ELSE if dflt. */
static ActivePg__Expr *
case_node(int rk, int n, ActivePg__Expr **cond, ActivePg__Expr **res, ActivePg__Expr *dflt)
{
	ActivePg__Expr *e = E_var(0);
	ActivePg__CaseExpr *ce = talloc(sizeof(*ce));

	active_pg__case_expr__init(ce);
	ce->whens = talloc((size_t) (n > 0 ? n : 1) * sizeof(ActivePg__CaseWhen *));
	for (ce->n_whens = 0; ce->n_whens < (size_t) n; ce->n_whens++)
		*(ce->whens[ce->n_whens] = talloc(sizeof(ActivePg__CaseWhen))) = (ActivePg__CaseWhen)
		{PROTOBUF_C_MESSAGE_INIT(&active_pg__case_when__descriptor), .cond = cond[ce->n_whens],
		.result = res[ce->n_whens]};
	ce->default_result = dflt;
	ce->result_kind = (uint32_t) rk;
	e->node_case = ACTIVE_PG__EXPR__NODE_CASE_EXPR;
	e->case_expr = ce;
	return e;
}

/* ---------------- the expression generator ---------------- */

/*
 * The signatures the compiler accepts, found by asking it (main): the
 * comparisons (fn 0, the ApCmp in rk) first, then the functions.
 */
typedef struct Sig
{
	uint8_t		fn;
	uint8_t		rk;
	uint8_t		nargs;
	uint8_t		ak[3];
} Sig;

static Sig	sigs[1024];			/* the last: scratch for refused probes */
static int	nsigs;
static int	ncmps;

/* Record s if the compiler takes it over columns of its argument kinds. */
static bool
probe(Sig s)
{
	ActivePg__Expr *a[3] = {E_var(kind_cols[s.ak[0]][0]), E_var(kind_cols[s.ak[1]][0]),
	E_var(kind_cols[s.ak[2]][0])};
	ActivePg__Expr *e = call_node(s.fn > 0 ? s.fn : -1 - AP_OP_LT, s.rk, AP_FIELD_YEAR, -1,
								  s.nargs, a);
	ActivePg__Program m = {PROTOBUF_C_MESSAGE_INIT(&active_pg__program__descriptor),
	.n_project_exprs = 1, .project_exprs = &e};
	ApProgram	prog;
	bool		ok = ap_program_compile(&m, &desc, &prog) == 0;

	if (ok)
		ap_program_free(&prog);
	sigs[ok && nsigs < 1023 ? nsigs++ : 1023] = s;
	tfree_all();
	return ok;
}

static ActivePg__Expr *gen(int k, int d);

/* A constant of kind k; spoiled: another kind's code, bytes garbled or cut short, NULL. */
static ActivePg__Expr *
gen_const(int k, bool spoil)
{
	unsigned char buf[1200];
	size_t		n = gen_datum(k, AP_KIND_ATTLEN(k), buf, false);

	for (size_t i = 0; spoil && i < n; i++)
		buf[i] = PCT(15) ? (unsigned char) RND() : buf[i];
	return E_const(spoil ? RN(NKINDS) : k, buf, spoil && PCT(30) ? (size_t) RN((int) n + 1) : n,
				   spoil && PCT(10));
}

/* A column or constant of kind k; hostile: any attribute number, an empty node. */
static ActivePg__Expr *
leaf(int k)
{
	ActivePg__Expr *e = E_var(RN(NCOLS + 3) - 1);

	e->node_case = PCT(80) ? e->node_case : ACTIVE_PG__EXPR__NODE__NOT_SET;
	if (PCT(bad))
		return PCT(50) ? e : gen_const(k, true);
	if (PCT(55) && k < AP_TYPE_KIND_COUNT && nkind_cols[k] > 0)
		return E_var(KIND_COL(k));
	return PCT(80) ? gen_const(k, false) : E_const(k, NULL, 0, true);
}

/*
 * A function call of result kind k, or (k = BOOL, three times in four) a
 * comparison; a leaf when nothing yields k.  The codes, the arity and the
 * arguments' kinds may be hostile.
 */
static ActivePg__Expr *
gen_call(int k, int d)
{
	static const int tfields[] = {AP_FIELD_YEAR, AP_FIELD_QUARTER, AP_FIELD_MONTH,
	AP_FIELD_DAY, AP_FIELD_HOUR, AP_FIELD_MINUTE, AP_FIELD_SECOND, AP_FIELD_WEEK};
	int			match[1024];
	int			nmatch = 0;
	ActivePg__Expr *a[4];
	const Sig  *s;
	int			n,
				p = 1 + RN(38),
				typmod = -1;
	bool		cmp = k == AP_TYPE_BOOL && PCT(75);

	for (int i = cmp ? 0 : ncmps; i < (cmp ? ncmps : nsigs); i++)
		if (cmp || sigs[i].rk == k)
			match[nmatch++] = i;
	if (nmatch == 0)
		return leaf(k);
	s = &sigs[match[RN(nmatch)]];
	n = CODE(s->nargs, 5);
	/* a column against a constant: the fast paths' and the prefilter's comparisons */
	for (int i = 0, vc = cmp && PCT(40); i < n; i++)
		a[i] = i >= s->nargs ? gen(ANY_KIND(), d - 1) : !vc ? gen(s->ak[i], d - 1) :
			i == 0 ? E_var(KIND_COL(s->ak[0])) : gen_const(s->ak[i], false);
	if (cmp)
		return call_node(-1 - CODE(1 + RN(6), 9), CODE(s->rk, 12), 0, 0, n, a);
	/* numeric(p,s) typmods: usually valid, sometimes any scale or anything */
	if (s->fn == AP_FN_NUMERIC_TYPMOD || PCT(bad))
		typmod = PCT(10) ? (int32_t) RND() :
			((p << 16) | ((PCT(80) ? RN(p + 1) : RN(2001) - 1000) & 0x7ff)) + 4;
	return call_node(CODE(s->fn, bad < 50 ? 23 : 300), CODE(k, NKINDS),
					 CODE(s->fn == AP_FN_EXTRACT ? 1 + RN(AP_FIELD_WEEK) :
						  s->fn == AP_FN_DATE_TRUNC ? tfields[RN(8)] : 0, bad < 50 ? 14 : 300),
					 typmod, n, a);
}

/*
 * An expression of kind k and depth at most d.  Hostile with probability
 * bad at every node: of another kind, and every code may be anything.
 */
static ActivePg__Expr *
gen(int k, int d)
{
	ActivePg__Expr *a[4];
	ActivePg__Expr *c[4];
	int			n = CODE(1 + RN(4), 5);
	bool		dflt = n > 1 && PCT(60);
	int			r = RN(10);

	k = PCT(bad) ? RN(NKINDS) : k;
	if (d <= 0 || PCT(30))
		return leaf(k);
	if (k == AP_TYPE_BOOL || k >= AP_TYPE_KIND_COUNT)
	{
		/* logic, tests, then comparisons, LIKE, CASE and COALESCE below */
		for (int i = 0; r < 2 && i < n; i++)
			a[i] = gen(AP_TYPE_BOOL, d - 1);
		if (r < 2)
			return E_boolexpr(CODE(n == 1 ? AP_BOOL_NOT : 1 + RN(2), 5), n, a);
		if (r == 2)
			return test_node(-1, PCT(50), PCT(bad) ? NULL : gen(ANY_KIND(), d - 1));
		if (r == 3)
			return test_node(CODE(1 + RN(6), 9), false, PCT(bad) ? NULL : gen(AP_TYPE_BOOL, d - 1));
		k = AP_TYPE_BOOL;
	}
	if (r < 8)
		return gen_call(k, d);
	/* COALESCE of one to four, or CASE of that many branches (the last maybe ELSE) */
	for (int i = 0; i < n; i++)
	{
		a[i] = gen(DELIVERS(k), d - 1);
		c[i] = r == 8 || PCT(bad) ? NULL : gen(AP_TYPE_BOOL, d - 1);
	}
	if (r == 8)
		return COAL(CODE(k, NKINDS), n, a);
	return case_node(CODE(k, NKINDS), n - dflt, c, a, dflt ? a[n - 1] : NULL);
}

/*
 * A whole Program message: a fifth of the filters an AND of comparisons (the
 * prefilter's material), an aggregation, Bloom filters (keys mostly columns
 * of a hashable kind, bits of any length, empty, full, sparse, half full).
 */
static ActivePg__Program *
gen_program(void)
{
	static const int bkinds[] = {AP_TYPE_INT2, AP_TYPE_INT4, AP_TYPE_INT8, AP_TYPE_DATE,
	AP_TYPE_NUMERIC, AP_TYPE_TEXT, AP_TYPE_VARCHAR, AP_TYPE_BPCHAR};
	static const size_t sizes[] = {8, 16, 32, 64, 128, 512, 4096, 0};
	static const int sums[] = {AP_TYPE_INT2, AP_TYPE_INT4, AP_TYPE_INT8, AP_TYPE_NUMERIC,
	AP_TYPE_FLOAT4, AP_TYPE_FLOAT8};
	static const uint64_t budgets[] = {0, 1, 4096, 16384, 65536, 1 << 20, 64 << 20};
	ActivePg__Program *m = talloc(sizeof(*m));
	ActivePg__Expr *a[4];
	int			d = 1 + RN(6);
	int			n = 1 + RN(4);

	active_pg__program__init(m);
	for (int i = 0; i < n; i++)
		a[i] = gen_call(AP_TYPE_BOOL, 1);
	m->filter = PCT(20) ? E_boolexpr(AP_BOOL_AND, n, a) :
		PCT(80) ? gen(PCT(95) ? AP_TYPE_BOOL : ANY_KIND(), d) : NULL;
	m->project = talloc(4 * sizeof(int32_t));
	for (; m->n_project < (size_t) n - 1; m->n_project++)
		m->project[m->n_project] = PCT(90) ? 1 + RN(NCOLS) : RN(NCOLS + 3) - 1;
	m->project_exprs = talloc(5 * sizeof(ActivePg__Expr *));
	for (int i = RN(5); i > 0; i--)
		m->project_exprs[m->n_project_exprs++] = gen(ANY_KIND(), d);
	if (PCT(40))
	{
		ActivePg__AggProgram *ag = m->agg = talloc(sizeof(*ag));
		int			nk = PCT(5) ? RN(40) : RN(4);
		int			nkk = PCT(5) ? RN(6) : nk;
		int			na = PCT(5) ? RN(30) : RN(6);

		active_pg__agg_program__init(ag);
		ag->group_keys = talloc((size_t) (nk + 1) * sizeof(ActivePg__Expr *));
		ag->key_kinds = talloc((size_t) (nkk + 1) * sizeof(uint32_t));
		for (int i = 0, k = ANY_KIND(); i < nk || i < nkk; i++, k = ANY_KIND())
		{
			if (i < nk)
				ag->group_keys[ag->n_group_keys++] = gen(DELIVERS(k), 1 + d % 3);
			if (i < nkk)
				ag->key_kinds[ag->n_key_kinds++] = (uint32_t) CODE(k, NKINDS);
		}
		ag->aggs = talloc((size_t) (na + 1) * sizeof(ActivePg__AggSpec *));
		for (; ag->n_aggs < (size_t) na; ag->n_aggs++)
		{
			ActivePg__AggSpec *s = ag->aggs[ag->n_aggs] = talloc(sizeof(*s));
			int			fn = PCT(bad + 2) ? RN(10) : 1 + RN(7);
			int			k = fn == AP_AGG_SUM ? sums[RN(6)] :
				fn == AP_AGG_MIN || fn == AP_AGG_MAX ? 2 + RN(AP_TYPE_KIND_COUNT - 2) :
				fn == AP_AGG_BOOL_AND || fn == AP_AGG_BOOL_OR ? AP_TYPE_BOOL : ANY_KIND();
			/* sum of int2 over an int8 argument; float4_accum's float4 summed as float8 */
			int			ek = fn == AP_AGG_SUM && AP_IS_INT_KIND(k) && PCT(30) ? INT_KIND() :
				fn == AP_AGG_SUM && k == AP_TYPE_FLOAT8 && PCT(30) ? AP_TYPE_FLOAT4 : DELIVERS(k);

			active_pg__agg_spec__init(s);
			s->fn = (uint32_t) fn;
			s->arg_kind = (uint32_t) CODE(k, NKINDS);
			s->arg = fn != AP_AGG_COUNT_STAR || PCT(10) ? gen(ek, 1 + d % 3) : NULL;
			s->filter = PCT(30) ? gen(AP_TYPE_BOOL, 1 + d % 3) : NULL;
		}
		ag->memory_bytes = PCT(5) ? RND() : budgets[RN(7)];
	}
	n = PCT(65) ? 0 : PCT(3) ? AP_BLOOM_FILTERS_MAX + 1 : 1 + RN(3);
	m->blooms = talloc((size_t) (n + 1) * sizeof(ActivePg__BloomFilter *));
	for (; m->n_blooms < (size_t) n; m->n_blooms++)
	{
		ActivePg__BloomFilter *bf = m->blooms[m->n_blooms] = talloc(sizeof(*bf));
		int			nk = PCT(3) ? RN(10) : 1 + RN(3);
		int			nkk = PCT(3) ? RN(10) : nk;
		int			fill = RN(4);

		active_pg__bloom_filter__init(bf);
		bf->keys = talloc((size_t) (nk + 1) * sizeof(ActivePg__Expr *));
		bf->key_kinds = talloc((size_t) (nkk + 1) * sizeof(uint32_t));
		for (int i = 0, k = bkinds[RN(8)]; i < nk || i < nkk;
			 i++, k = PCT(2) ? ANY_KIND() : bkinds[RN(8)])
		{
			if (i < nk)
				bf->keys[bf->n_keys++] = PCT(3) ? gen(k, 2) :
					E_var(PCT(2) ? RN(NCOLS + 3) - 1 : KIND_COL(k));
			if (i < nkk)
				bf->key_kinds[bf->n_key_kinds++] = (uint32_t) (PCT(2) ? RN(NKINDS) : k);
		}
		bf->bits.len = PCT(8) ? (size_t) RN(300) : sizes[RN(8)];
		bf->bits.data = talloc(bf->bits.len + 1);
		for (size_t i = 0; i < bf->bits.len; i++)
			bf->bits.data[i] = fill == 0 ? 0 : fill == 1 ? 0xff :
				(uint8_t) (fill == 2 ? RND() & RND() & RND() : RND());
		bf->nhashes = (uint32_t) (PCT(90) ? 1 + RN(16) : RN(41));
		bf->seed = RND();
	}
	m->bloom_measure = PCT(30);
	return m;
}

/* ---------------- running a program ---------------- */

static long n_unparsable, n_prog[2], n_agg[2], n_bloom[2];	/* [0] compiled, [1] refused */
static long n_tri[4], n_proj[2], n_aggres[3], n_bloompass[2], n_prerej;	/* what we saw */

/* The aggregation's flushes: the rows' width (keys + aggregates), batch_bytes, groups. */
static int	agg_natts;
static uint32_t agg_batch;
static uint64_t agg_groups;

/* An AggPartial frame's rows: whole rows of the aggregation's width. */
static int
on_partial(void *arg, const unsigned char *rows, uint32_t len, uint32_t ngroups, bool mflush)
{
	uint32_t	off = 0;
	ApRowHeader h;

	(void) mflush;
	for (uint32_t g = 0; g < ngroups && off + AP_ROW_HEADER_BYTES <= len; g++)
	{
		memcpy(&h, rows + off, sizeof(h));
		EXPECT(h.natts == agg_natts);
		EXPECT(h.row_bytes >= AP_ROW_DATA_OFFSET(h.flags, h.natts) && h.row_bytes <= len - off);
		off += AP_ROW_ALIGN_UP(h.row_bytes);
		(*(uint64_t *) arg)++;
	}
	EXPECT(off >= len);
	return 0;
}

/* Add a tuple (r: its row of the evaluated batch, or -1), flushing a full table. */
static void
agg_add(ApAgg *a, int r, const ApValue *v)
{
	ApAggResult res = r >= 0 ? ap_agg_add_evaluated(a, r, v) : ap_agg_add(a, v);

	if (res == AP_AGG_FULL)
	{
		n_aggres[AP_AGG_FULL]++;
		EXPECT(ap_agg_flush(a, true, agg_batch, on_partial, &agg_groups) == 0);
		res = r >= 0 ? ap_agg_add_evaluated(a, r, v) : ap_agg_add(a, v);
		/* on an empty table a tuple is added or falls back */
		EXPECT(res == AP_AGG_ADDED || res == AP_AGG_FALLBACK);
	}
	EXPECT(res <= AP_AGG_FULL);
	n_aggres[res % 3]++;
}

/*
 * Every tuple through whatever compiled, in scan.c's order: Bloom filters
 * (the first's verdicts batched when its keys are fixed), prefilter, filter,
 * projections, aggregation (batched or not); deformed as far as scan.c would.
 */
static void
run_rows(ApProgram *prog, ApBloomSet *bs, ApAgg *agg, bool batch)
{
	static ApValue vals[AP_AGG_BATCH_MAX][NCOLS];
	static ApValue out[AP_MAX_COLUMNS];
	const ApValue *rows[AP_AGG_BATCH_MAX];
	const unsigned char *data[NROWS];
	uint8_t		verdict[NROWS];
	ApPrefilter *pre = prog != NULL ? ap_prefilter_build(prog, &desc) : NULL;
	ApRowBatchBuf	rb;
	int			need = prog != NULL ? prog->max_attno : 0;
	int			nb = 0;
	uint64_t	stats[3];

	bs = bs != NULL && bs->nfilters > 0 ? bs : NULL;
	need = bs != NULL && bs->max_attno > need ? bs->max_attno : need;
	need = agg != NULL && ap_agg_max_attno(agg) > need ? ap_agg_max_attno(agg) : need;
	EXPECT(need <= NCOLS);
	batch = batch && agg != NULL && ap_agg_batch_size(agg) > 0;
	memset(verdict, AP_BLOOM_UNKNOWN, sizeof(verdict));
	for (int r = 0; bs != NULL && bs->fixed && r < NROWS; r++)
		data[r] = ap_tuple_fixed_data(&desc, tup[r], tuplen[r], &hdr[r], bs->max_attno);
	if (bs != NULL && bs->fixed)
		ap_bloom_first_batch(bs, data, NROWS, verdict);
	EXPECT(ap_rowbatch_init(&rb, 4096) == 0);
	for (int r = 0; r < NROWS; r++)
	{
		ApValue    *v = vals[nb];
		ApTri		t = AP_TRUE;
		ApStatus	s;
		bool		passes = true;

		/* slots the scan would not deform: reading one faults */
		for (int i = 0; i < NCOLS; i++)
			v[i] = (ApValue) {NULL, 0xdeadbeef, false};
		if (ap_tuple_deform(&desc, tup[r], tuplen[r], &hdr[r], need, v) != AP_OK)
			continue;
		if (verdict[r] != AP_BLOOM_UNKNOWN)
			ap_bloom_count_first(bs, verdict[r] == AP_BLOOM_PASSES);
		/* the batch drops only what the filter itself drops */
		EXPECT(verdict[r] != AP_BLOOM_DROPS || !ap_bloom_pass(bs, v));
		passes = bs == NULL || (verdict[r] == AP_BLOOM_PASSES ? ap_bloom_pass_rest(bs, v) :
								verdict[r] == AP_BLOOM_UNKNOWN && ap_bloom_pass(bs, v));
		if (!passes && bs->measure)
			EXPECT(ap_bloom_sole_rejection(bs, v) < bs->nfilters);
		n_bloompass[!passes] += bs != NULL;
		if (!passes)
			continue;
		if (prog != NULL && prog->filter != NULL)
		{
			t = ap_program_filter(prog, v);
			EXPECT(t >= AP_FALSE && t <= AP_TRI_FALLBACK);
			n_tri[t & 3]++;
		}
		/*
		 * The prefilter rejects no tuple the filter passes; it may reject one
		 * the filter hands to the host (a date beyond the timestamp range
		 * against a timestamp, which PostgreSQL compares without error).
		 */
		if (pre != NULL && ap_prefilter_rejects(pre, tup[r], tuplen[r], &hdr[r]))
		{
			n_prerej++;
			EXPECT(t != AP_TRUE);
		}
		if (t != AP_TRUE)
			continue;
		/* the computed projections: datums of their kinds' layout, encoded as a row */
		s = prog != NULL ? ap_program_project(prog, v, out) : AP_FALLBACK;
		EXPECT(s == AP_OK || s == AP_FALLBACK);
		n_proj[s != AP_OK] += prog != NULL;
		for (int j = 0, len; s == AP_OK && j < prog->nexprs; j++)
			EXPECT(out[j].isnull ||
				   (out[j].ptr != NULL && ((len = prog->expr_cols[j].attlen) > 0 ?
										   out[j].len == (uint32_t) len :
										   out[j].len >= 4 && (out[j].ptr[0] & 3) == 0 &&
										   ap_varlena_size_any(out[j].ptr) == out[j].len)));
		ap_rowbatch_reset(&rb);
		if (s == AP_OK)
			EXPECT(ap_rowbatch_append_exprs(&rb, &desc, prog->project, prog->nproject, v,
										  prog->expr_cols, prog->nexprs, out, -1) == 0);
		if (agg != NULL && !batch)
			agg_add(agg, -1, v);
		if (!batch)
			continue;
		rows[nb++] = v;
		if (nb < ap_agg_batch_size(agg))
			continue;
		ap_agg_eval_batch(agg, rows, nb);
		for (int i = ap_agg_add_batch(agg, nb); i < nb; i++)
			agg_add(agg, i, rows[i]);
		nb = 0;
	}
	if (nb > 0)
		ap_agg_eval_batch(agg, rows, nb);
	for (int i = 0; i < nb; i++)
		agg_add(agg, i, rows[i]);
	if (agg != NULL)
	{
		EXPECT(ap_agg_flush(agg, false, agg_batch, on_partial, &agg_groups) == 0);
		ap_agg_stats(agg, &stats[0], &stats[1], &stats[2]);
		EXPECT(stats[0] == agg_groups);
	}
	ap_rowbatch_free(&rb);
	free(pre);
}

/*
 * Send msg over the wire (a tenth with flipped bits), compile what arrives
 * as scan_setup.c does (program, Bloom filters, aggregation) and run every
 * part that compiled: a refused part hides nothing of the others.
 */
static void
run_program(const ActivePg__Program *msg)
{
	static ApBloomSet bs;
	size_t		n = active_pg__program__get_packed_size(msg);
	uint8_t    *buf = talloc(n + 1);	/* freed with the message */
	ActivePg__Program *m;
	ApProgram	prog;
	ApAgg	   *agg = NULL;
	char		err[256] = "";
	bool		utf8 = PCT(50);
	int			rc,
				brc,
				arc = -1;

	active_pg__program__pack(msg, buf);
	for (int i = n > 0 && PCT(10) ? 1 + RN(4) : 0, x; i > 0 && (x = RN(8 * (int) n)) >= 0; i--)
		buf[x / 8] ^= (uint8_t) (1 << (x % 8));
	m = active_pg__program__unpack(NULL, n, buf);
	n_unparsable += m == NULL;
	if (m == NULL)
		return;
	rc = ap_program_compile(m, &desc, &prog);
	EXPECT(rc == 0 || ((rc == AP_ERR_BAD_REQUEST || rc == AP_ERR_UNSUPPORTED) && prog.error[0]));
	prog.encoding_utf8 = utf8;
	n_prog[rc != 0]++;
	memset(&bs, 0, sizeof(bs));
	brc = ap_bloom_compile(m, &desc, &bs);
	EXPECT(brc == 0 || ((brc == AP_ERR_BAD_REQUEST || brc == AP_ERR_UNSUPPORTED) && bs.error[0]));
	n_bloom[brc != 0] += m->n_blooms > 0;
	if (m->agg != NULL)
	{
		/* the scan caps the table at what its budget leaves */
		arc = ap_agg_compile(m->agg, &desc, utf8, m->agg->memory_bytes > (64u << 20) ?
							 64u << 20 : m->agg->memory_bytes, &agg, err, sizeof(err));
		EXPECT(arc == 0 || ((arc == AP_ERR_BAD_REQUEST || arc == AP_ERR_UNSUPPORTED) && err[0]));
		n_agg[arc != 0]++;
		agg_natts = (int) (m->agg->n_group_keys + m->agg->n_aggs);
	}
	agg_batch = (const uint32_t[]) {1, 64, 8192, 262144}[RN(4)];
	agg_groups = 0;
	run_rows(rc == 0 ? &prog : NULL, brc == 0 ? &bs : NULL, arc == 0 ? agg : NULL, PCT(50));
	if (rc == 0)
		ap_program_free(&prog);
	ap_bloom_free(&bs);
	ap_agg_free(agg);
	active_pg__program__free_unpacked(m, NULL);
}

/* A numeric constant coef * 10^-dscale, as the daemon encodes it (4-byte header). */
static ActivePg__Expr *
num_const(ap_i128 coef, int dscale)
{
	ApFixed		f = {coef, dscale};
	unsigned char p[AP_NUMERIC_FIXED_MAX_BYTES];
	unsigned char buf[AP_NUMERIC_FIXED_MAX_BYTES + 4];

	return E_const(AP_TYPE_NUMERIC, buf, mk_varlena(buf, p, ap_numeric_encode_fixed(&f, p), true),
				   false);
}

/*
 * Each falls back: ap_fixed_div of 5 * 10^-1300 by 3 (rounded to 1000 places,
 * PostgreSQL's cap, fewer than the dividend's) read pow10_u64[-284];
 * ap_fixed_add and agg_state.c's sum of two below 10^38 overflowed int128;
 * vm_date.c's ts_split overflowed int64 on a timestamp next to -infinity.
 */
static void
test_regressions(void)
{
	ap_i128		big = (ap_i128) 9999999999999999999u * (ap_i128) 10000000000000000000u +
		(ap_i128) 9999999999999999999u;	/* 10^38 - 1, the largest coefficient */
	int64_t		ts = AP_TS_NOBEGIN + 1;
	ActivePg__Expr *e[4] = {F2(AP_FN_DIV, AP_TYPE_NUMERIC, num_const(5, 1300), num_const(3, 0)),
		F2(AP_FN_ADD, AP_TYPE_NUMERIC, num_const(big, 0), num_const(big, 0)),
		FN(AP_FN_EXTRACT, AP_TYPE_FLOAT8, AP_FIELD_HOUR, -1, 1,
		   E_const(AP_TYPE_TIMESTAMP, &ts, 8, false), NULL, NULL),
	COAL1(AP_TYPE_NUMERIC, num_const(big, 0))};	/* no flat form: the general path */
	ActivePg__Program m = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__AggProgram am = ACTIVE_PG__AGG_PROGRAM__INIT;
	ActivePg__AggSpec spec = ACTIVE_PG__AGG_SPEC__INIT;
	ActivePg__AggSpec *specs[1] = {&spec};
	ApValue		out[1],
				none[1] = {{NULL, 0, true}};
	ApProgram	prog;
	ApAgg	   *agg = NULL;
	char		err[256];

	for (int i = 0; i < 3; i++)
	{
		m.project_exprs = &e[i];
		m.n_project_exprs = 1;
		CHECK_EQ(ap_program_compile(&m, &desc, &prog), 0);
		CHECK_EQ(ap_program_project(&prog, none, out), AP_FALLBACK);
		ap_program_free(&prog);
	}
	spec.fn = AP_AGG_SUM;
	spec.arg_kind = AP_TYPE_NUMERIC;
	spec.arg = e[3];
	am.aggs = specs;
	am.n_aggs = 1;
	CHECK_EQ(ap_agg_compile(&am, &desc, false, 1 << 20, &agg, err, sizeof(err)), 0);
	CHECK_EQ(ap_agg_add(agg, none), AP_AGG_ADDED);
	CHECK_EQ(ap_agg_add(agg, none), AP_AGG_FALLBACK);
	ap_agg_free(agg);
	tfree_all();
}

#define ENV(name, dflt)	(getenv(name) != NULL ? (long) strtoull(getenv(name), NULL, 0) : (dflt))

int
main(void)
{
	uint64_t	seed = (uint64_t) ENV("FUZZ_SEED", 0x5EEDF00D);
	long		iters = ENV("FUZZ_ITERS", 60000);	/* ~5 s optimized, ~50 s under ASan */
	long		first = ENV("FUZZ_FIRST", 0);
	clock_t		t0 = clock();

	setvbuf(stdout, NULL, _IOLBF, 0);	/* lines in order with stderr's */
	printf("fuzz_program: seed %#" PRIx64 ", programs %ld..%ld\n", seed, first, first + iters - 1);
	for (int i = 0; i < NCOLS; i++)
	{
		cols[i] = col(i + 1 == ATT_UUID ? 16 : i + 1 == ATT_LIAR ? 4 : AP_KIND_ATTLEN(kinds[i]),
					  i + 1 == ATT_UUID ? 'c' : AP_KIND_ALIGN(kinds[i]), kinds[i]);
		cols[i].attisdropped = i + 1 == ATT_DROPPED;
		if (i + 1 != ATT_DROPPED && i + 1 != ATT_LIAR && kinds[i] != AP_TYPE_OTHER)
			kind_cols[kinds[i]][nkind_cols[kinds[i]]++] = i + 1;
	}
	ap_tupdesc_cache_offsets(&desc);
	/* signatures: one or two arguments of every kind, a third after two accepted */
	for (int fn = 0; fn <= AP_FN_TEXTCAT; fn++)
		for (int rk = 1; rk < AP_TYPE_KIND_COUNT; rk++)
			for (int x = 0; x < 13 + 13 * 13; x++)
			{
				Sig			s = {fn, rk, x < 13 ? 1 : 2, {1 + x % 13, 1 + (x - 13) / 13, 0}};

				if (probe(s) && s.nargs == 2)
					for (s.nargs = 3, s.ak[2] = 1; s.ak[2] < AP_TYPE_KIND_COUNT; s.ak[2]++)
						probe(s);
				ncmps = fn == 0 ? nsigs : ncmps;
			}
	CHECK(ncmps > 10 && nsigs > 200);
	test_regressions();
	for (long i = first; i < first + iters; i++)
	{
		cur_prog = i;
		/* new tuples every 200 programs, from the seed and the index alone */
		rng = seed ^ (uint64_t) (i / 200 + 1) * UINT64_C(0xD1B54A32D192ED03);
		for (int r = 0; (i == first || i % 200 == 0) && r < NROWS; r++)
			build_tuple(r);
		if (getenv("FUZZ_VERBOSE") != NULL)
			fprintf(stderr, "program %ld\n", i);
		rng = seed ^ ((uint64_t) (i + 1) * UINT64_C(0x9E3779B97F4A7C15));
		bad = (const int[]) {0, 0, 0, 1, 1, 3, 3, 10, 15, 50}[RN(10)];
		run_program(gen_program());
		tfree_all();
	}
	for (int r = 0; r < NROWS; r++)
		free(tup[r]);

	printf("compiled/refused: programs %ld/%ld (%ld unparsable), aggregations %ld/%ld, Bloom "
		   "sets %ld/%ld\nBloom pass/drop %ld/%ld, prefilter rejected %ld, filter f/t/null/"
		   "fallback %ld/%ld/%ld/%ld, projections ok/fallback %ld/%ld, aggregation added/fallback/"
		   "full %ld/%ld/%ld; %.1f s CPU\n", n_prog[0], n_prog[1], n_unparsable, n_agg[0], n_agg[1],
		   n_bloom[0], n_bloom[1], n_bloompass[0], n_bloompass[1], n_prerej, n_tri[0], n_tri[1],
		   n_tri[2], n_tri[3], n_proj[0], n_proj[1], n_aggres[0], n_aggres[1], n_aggres[2],
		   (double) (clock() - t0) / CLOCKS_PER_SEC);
	/* the generator reaches both sides of every compiler and every verdict */
	CHECK(iters < 500 || (n_prog[0] > iters / 10 && n_prog[1] > iters / 10 &&
						  n_agg[0] > iters / 50 && n_agg[1] > iters / 50 &&
						  n_bloom[0] > iters / 50 && n_bloom[1] > iters / 50 && n_tri[AP_TRUE] &&
						  n_tri[AP_FALSE] && n_tri[AP_TRI_FALLBACK] && n_aggres[AP_AGG_FULL] &&
						  n_bloompass[1] && n_prerej));
	return TEST_DONE();
}
