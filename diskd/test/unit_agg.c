/*
 * unit_agg.c
 *	  Unit tests of the disk's partial aggregation (agg_*.c): grouping, every
 *	  state kind, FILTER, NULLs, the all-or-nothing fallback of a numeric sum
 *	  beyond 128 bits, and a budget small enough to force flushes, checked by
 *	  decoding the AggPartial rows the table ships.
 *
 * Rules of this file:
 *  - Tuples are given as deformed values (ApValue), as scan.c passes them;
 *    numerics are built from (weight, digits) in PostgreSQL's short format.
 *  - Every shipped row is decoded with the proto/ap_rows.h rules and summed
 *    per group on the test side, so flushes must not change the totals.
 */
#include <stdlib.h>
#include <string.h>

#include "../agg.h"
#include "../agg_internal.h"
#include "testutil.h"
#include "numbuild.h"

#define NATTS		4			/* 1 int4 key, 2 int8, 3 numeric, 4 text */
#define TEST_GROUPS_MAX	4096

static ApColumn cols[NATTS] = {
	{4, 'i', true, false, AP_TYPE_INT4, 0},
	{8, 'd', true, false, AP_TYPE_INT8, 0},
	{-1, 'i', false, false, AP_TYPE_NUMERIC, 0},
	{-1, 'i', false, false, AP_TYPE_TEXT, 0},
};
static ApTupleDesc desc = {NATTS, cols, 0};

/* What the test side sums from shipped rows, per key. */
typedef struct Totals
{
	int64_t		count_star;
	int64_t		count_filtered;
	int64_t		sum_int;		/* from the numeric sum state (small values) */
	int64_t		max_int8;
	bool		has_max;
	int			nrows;
	char		max_text[64];
} Totals;

static Totals totals[TEST_GROUPS_MAX];
static int	frames;
static int	flush_frames;

/* A Var expression. */
static ActivePg__Expr *
var(int attno)
{
	ActivePg__Expr *e = calloc(1, sizeof(ActivePg__Expr));

	active_pg__expr__init(e);
	e->node_case = ACTIVE_PG__EXPR__NODE_VAR;
	e->var = attno;
	return e;
}

/* "attno > 0" over the int8 column (a FILTER). */
static ActivePg__Expr *
positive(int attno)
{
	ActivePg__Expr *e = calloc(1, sizeof(ActivePg__Expr));
	ActivePg__OpExpr *op = calloc(1, sizeof(ActivePg__OpExpr));
	ActivePg__Expr *k = calloc(1, sizeof(ActivePg__Expr));
	ActivePg__Datum *d = calloc(1, sizeof(ActivePg__Datum));
	static int64_t zero = 0;

	active_pg__expr__init(e);
	active_pg__op_expr__init(op);
	active_pg__expr__init(k);
	active_pg__datum__init(d);
	d->type_kind = AP_TYPE_INT8;
	d->value.data = (uint8_t *) &zero;
	d->value.len = 8;
	k->node_case = ACTIVE_PG__EXPR__NODE_KONST;
	k->konst = d;
	op->op = AP_OP_GT;
	op->cmp = AP_CMP_INT;
	op->n_args = 2;
	op->args = calloc(2, sizeof(ActivePg__Expr *));
	op->args[0] = var(attno);
	op->args[1] = k;
	e->node_case = ACTIVE_PG__EXPR__NODE_OP;
	e->op = op;
	return e;
}

/* One AggSpec. */
static ActivePg__AggSpec *
spec(ApAggFn fn, ApTypeKind kind, ActivePg__Expr *arg, ActivePg__Expr *filter)
{
	ActivePg__AggSpec *s = calloc(1, sizeof(ActivePg__AggSpec));

	active_pg__agg_spec__init(s);
	s->fn = fn;
	s->arg_kind = kind;
	s->arg = arg;
	s->filter = filter;
	return s;
}

/* A short-format numeric varlena (1-byte header) of an integer < 10^8. */
static uint32_t
make_numeric(int64_t v, unsigned char *buf)
{
	uint16_t	digits[2];
	int			nd = 0;
	uint16_t	h;
	int64_t		a = v < 0 ? -v : v;
	uint32_t	len;

	if (a >= 10000)
		digits[nd++] = (uint16_t) (a / 10000);
	if (a > 0)
		digits[nd++] = (uint16_t) (a % 10000);
	/* NUMERIC_SHORT, sign, dscale 0, weight nd - 1 */
	h = (uint16_t) (0x8000 | (v < 0 ? 0x2000 : 0) | (nd > 0 ? (nd - 1) : 0));
	len = 1 + 2 + 2 * nd;
	buf[0] = (unsigned char) ((len << 1) | 1);
	memcpy(buf + 1, &h, 2);
	memcpy(buf + 3, digits, 2 * nd);
	return len;
}

/* A big numeric (9 * 10^36) in the long 4-byte-header format. */
static uint32_t
make_big_numeric(unsigned char *buf)
{
	uint16_t	h = 0;			/* NUMERIC_POS, dscale 0 */
	int16_t		weight = 9;		/* 9 * 10000^9 = 9 * 10^36 */
	uint16_t	digit = 9;
	uint32_t	len = 4 + 2 + 2 + 2;
	uint32_t	hdr = len << 2;

	memcpy(buf, &hdr, 4);
	memcpy(buf + 4, &h, 2);
	memcpy(buf + 6, &weight, 2);
	memcpy(buf + 8, &digit, 2);
	return len;
}

/* Integer value of a shipped numeric (dscale 0, small). */
static int64_t
numeric_int(const unsigned char *p, uint32_t len)
{
	const unsigned char *payload = p + 4;
	uint16_t	h;
	uint64_t	v = 0;
	int			nd;
	int			weight;
	int			off;

	(void) len;
	memcpy(&h, payload, 2);
	if ((h & 0xC000) == 0x8000)
	{
		weight = (h & 0x0040) ? (int) (h & 0x3F) - 64 : (int) (h & 0x3F);
		off = 2;
	}
	else
	{
		int16_t		w;

		memcpy(&w, payload + 2, 2);
		weight = w;
		off = 4;
	}
	nd = (int) ((len - 4 - off) / 2);
	for (int i = 0; i < nd; i++)
	{
		uint16_t	d;

		memcpy(&d, payload + off + 2 * i, 2);
		v = v * 10000 + d;
	}
	for (int i = nd; i <= weight; i++)
		v *= 10000;
	return (h & 0x2000) || (h & 0x4000) ? -(int64_t) v : (int64_t) v;
}

/* Decode AggPartial rows: key int4, count*, count filter, sum numeric, max int8, max text. */
static int
on_send(void *arg, const unsigned char *rows, uint32_t len, uint32_t ngroups, bool memory_flush)
{
	uint32_t	off = 0;

	(void) arg;
	frames++;
	if (memory_flush)
		flush_frames++;
	for (uint32_t r = 0; r < ngroups; r++)
	{
		ApRowHeader hdr;
		const unsigned char *row = rows + off;
		const unsigned char *bitmap;
		const unsigned char *data;
		uint32_t	pos = 0;
		int32_t		key = 0;
		Totals	   *t;
		bool		isnull[6];

		memcpy(&hdr, row, sizeof(hdr));
		CHECK_EQ(hdr.natts, 6);
		bitmap = (hdr.flags & AP_ROW_HASNULLS) ? row + AP_ROW_HEADER_BYTES : NULL;
		data = row + AP_ROW_DATA_OFFSET(hdr.flags, hdr.natts);
		for (int i = 0; i < 6; i++)
			isnull[i] = bitmap != NULL && !(bitmap[i >> 3] & (1 << (i & 7)));
		CHECK(!isnull[0]);
		memcpy(&key, data, 4);
		pos = 4;
		if (key < 0 || key >= TEST_GROUPS_MAX)
		{
			CHECK(false);
			return 0;
		}
		t = &totals[key];
		t->nrows++;
		/* count(*) int8 at 8 */
		pos = (pos + 7) & ~7u;
		{
			int64_t		c;

			memcpy(&c, data + pos, 8);
			t->count_star += c;
			pos += 8;
		}
		if (!isnull[2])
		{
			int64_t		c;

			memcpy(&c, data + pos, 8);
			t->count_filtered += c;
			pos += 8;
		}
		if (!isnull[3])
		{
			uint32_t	h4;

			pos = (pos + 3) & ~3u;
			memcpy(&h4, data + pos, 4);
			t->sum_int += numeric_int(data + pos, h4 >> 2);
			pos += h4 >> 2;
		}
		if (!isnull[4])
		{
			int64_t		m;

			pos = (pos + 7) & ~7u;
			memcpy(&m, data + pos, 8);
			if (!t->has_max || m > t->max_int8)
				t->max_int8 = m;
			t->has_max = true;
			pos += 8;
		}
		if (!isnull[5])
		{
			uint32_t	h4;
			uint32_t	n;

			pos = (pos + 3) & ~3u;
			memcpy(&h4, data + pos, 4);
			n = (h4 >> 2) - 4;
			if (n < sizeof(t->max_text) && strncmp((const char *) data + pos + 4, t->max_text, n) >= 0)
			{
				memcpy(t->max_text, data + pos + 4, n);
				t->max_text[n] = '\0';
			}
			pos += h4 >> 2;
		}
		CHECK_EQ(pos, hdr.row_bytes - AP_ROW_DATA_OFFSET(hdr.flags, hdr.natts));
		off += AP_ROW_ALIGN_UP(hdr.row_bytes);
	}
	CHECK(off >= len);
	return 0;
}

/* Free an expression tree built by var() or positive() (constants are static). */
static void
free_expr(ActivePg__Expr *e)
{
	if (e == NULL)
		return;
	if (e->node_case == ACTIVE_PG__EXPR__NODE_OP)
	{
		for (size_t i = 0; i < e->op->n_args; i++)
			free_expr(e->op->args[i]);
		free(e->op->args);
		free(e->op);
	}
	else if (e->node_case == ACTIVE_PG__EXPR__NODE_KONST)
		free(e->konst);
	free(e);
}

/* Compile GROUP BY 1 (the int4 column) with these aggregates. */
static ApAgg *
compile_specs(ActivePg__AggSpec **specs, int nspecs, uint64_t budget)
{
	ActivePg__AggProgram msg = ACTIVE_PG__AGG_PROGRAM__INIT;
	ActivePg__Expr *keys[1] = {var(1)};
	uint32_t	kinds[1] = {AP_TYPE_INT4};
	char		err[256];
	ApAgg	   *a = NULL;
	int			rc;

	msg.n_group_keys = 1;
	msg.group_keys = keys;
	msg.n_key_kinds = 1;
	msg.key_kinds = kinds;
	msg.n_aggs = nspecs;
	msg.aggs = specs;
	msg.memory_bytes = budget;
	rc = ap_agg_compile(&msg, &desc, false, budget, &a, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "compile: %s\n", err);
	CHECK_EQ(rc, 0);
	/* the compiled program keeps nothing of the message (checked under ASan) */
	free_expr(keys[0]);
	for (int i = 0; i < nspecs; i++)
	{
		free_expr(specs[i]->arg);
		free_expr(specs[i]->filter);
		free(specs[i]);
	}
	return a;
}

/* Compile the test program: GROUP BY 1; count(*), count(2) FILTER (2 > 0), sum(3), max(2), max(4). */
static ApAgg *
compile(uint64_t budget)
{
	ActivePg__AggSpec *specs[5];

	specs[0] = spec(AP_AGG_COUNT_STAR, AP_TYPE_OTHER, NULL, NULL);
	specs[1] = spec(AP_AGG_COUNT, AP_TYPE_INT8, var(2), positive(2));
	specs[2] = spec(AP_AGG_SUM, AP_TYPE_NUMERIC, var(3), NULL);
	specs[3] = spec(AP_AGG_MAX, AP_TYPE_INT8, var(2), NULL);
	specs[4] = spec(AP_AGG_MAX, AP_TYPE_TEXT, var(4), NULL);
	return compile_specs(specs, 5, budget);
}

/* Feed ntuples tuples over ngroups keys; returns the tuples that fell back. */
static int
feed(ApAgg *a, int ntuples, int ngroups, int *fellback_big)
{
	int			fallbacks = 0;

	for (int i = 0; i < ntuples; i++)
	{
		int32_t		key = i % ngroups;
		int64_t		v8 = (i % 5 == 0) ? -i : i;
		unsigned char page[24];	/* a tuple header's bytes precede a value */
		unsigned char *num = page + 8;
		unsigned char text[16];
		ApValue		values[NATTS];
		ApAggResult r;
		bool		big = (fellback_big != NULL && i == ntuples / 2);

		values[0] = (ApValue) {(const unsigned char *) &key, 4, false};
		values[1] = (ApValue) {(const unsigned char *) &v8, 8, i % 7 == 3};
		if (big)
			values[2] = (ApValue) {num, make_big_numeric(num), false};
		else
			values[2] = (ApValue) {num, make_numeric(i, num), false};
		snprintf((char *) text + 1, sizeof(text) - 1, "t%05d", i % 977);
		text[0] = (unsigned char) (((1 + strlen((char *) text + 1)) << 1) | 1);
		values[3] = (ApValue) {text, 1 + (uint32_t) strlen((char *) text + 1), false};

		r = ap_agg_add(a, values);
		if (r == AP_AGG_FULL)
		{
			CHECK_EQ(ap_agg_flush(a, true, 8192, on_send, NULL), 0);
			r = ap_agg_add(a, values);
		}
		if (r == AP_AGG_FALLBACK)
		{
			fallbacks++;
			if (big)
				(*fellback_big)++;
		}
	}
	CHECK_EQ(ap_agg_flush(a, false, 8192, on_send, NULL), 0);
	return fallbacks;
}

/* Expected totals, computed directly. */
static void
check_totals(int ntuples, int ngroups, int skip)
{
	for (int g = 0; g < ngroups; g++)
	{
		int64_t		cs = 0,
					cf = 0,
					sum = 0,
					mx = INT64_MIN;
		char		mt[64] = "";

		for (int i = g; i < ntuples; i += ngroups)
		{
			int64_t		v8 = (i % 5 == 0) ? -i : i;
			char		t[16];

			if (i == skip)
				continue;
			cs++;
			if (i % 7 != 3 && v8 > 0)
				cf++;
			sum += i;
			if (i % 7 != 3 && v8 > mx)
				mx = v8;
			snprintf(t, sizeof(t), "t%05d", i % 977);
			if (strcmp(t, mt) > 0)
				strcpy(mt, t);
		}
		CHECK_EQ(totals[g].count_star, cs);
		CHECK_EQ(totals[g].count_filtered, cf);
		CHECK_EQ(totals[g].sum_int, sum);
		CHECK_EQ(totals[g].max_int8, mx);
		CHECK(strcmp(totals[g].max_text, mt) == 0);
	}
}

/*
 * The batched simple path over many groups (the scan's way: a batch of rows
 * evaluated together, then added one by one; from AGG_PREFETCH_GROUPS
 * groups on, their slots and groups prefetched first): GROUP BY int4 with
 * count(*) and sum(int8), against totals computed directly, with a roomy
 * table and with one small enough to flush in the middle of batches.  The
 * keys come scattered (each of the MANY_GROUPS keys again every MANY_GROUPS
 * tuples) or clustered (in order, five tuples each): a roomy table streams
 * the clustered keys (an early flush at AGG_STREAM_GROUPS groups, nothing
 * shipped twice) and stops streaming the scattered ones after one early
 * flush, when its keys come back.
 */
#define MANY_GROUPS		20000
static int64_t many_count[MANY_GROUPS];
static int64_t many_sum[MANY_GROUPS];

/* Decode rows of (key int4, count(*) int8, sum numeric). */
static int
on_send_many(void *arg, const unsigned char *rows, uint32_t len, uint32_t ngroups,
			 bool memory_flush)
{
	uint32_t	off = 0;

	(void) arg;
	(void) memory_flush;
	for (uint32_t r = 0; r < ngroups; r++)
	{
		ApRowHeader hdr;
		const unsigned char *row = rows + off;
		const unsigned char *data;
		int32_t		key;
		int64_t		c;
		uint32_t	h4;

		memcpy(&hdr, row, sizeof(hdr));
		CHECK_EQ(hdr.natts, 3);
		CHECK_EQ(hdr.flags, 0);
		data = row + AP_ROW_DATA_OFFSET(hdr.flags, hdr.natts);
		memcpy(&key, data, 4);
		if (key < 0 || key >= MANY_GROUPS)
		{
			CHECK(false);
			return 0;
		}
		memcpy(&c, data + 8, 8);
		many_count[key] += c;
		memcpy(&h4, data + 16, 4);
		many_sum[key] += numeric_int(data + 16, h4 >> 2);
		off += AP_ROW_ALIGN_UP(hdr.row_bytes);
	}
	CHECK(off >= len);
	return 0;
}

/* Tuple i's key. */
static int32_t
many_key(int i, int ntuples, bool clustered)
{
	if (clustered)
		return (int32_t) ((int64_t) i * MANY_GROUPS / ntuples);
	return (int32_t) (((uint32_t) i * 7919u) % MANY_GROUPS);
}

static void
test_batched_many_groups(uint64_t budget, int ntuples, bool clustered)
{
	ActivePg__AggSpec *specs[2];
	ApAgg	   *a;
	int32_t		key[32];
	int64_t		v8[32];
	ApValue		vals[32][NATTS];
	const ApValue *rows[32];
	uint64_t	shipped,
				flushes,
				streamed;

	specs[0] = spec(AP_AGG_COUNT_STAR, AP_TYPE_OTHER, NULL, NULL);
	specs[1] = spec(AP_AGG_SUM, AP_TYPE_INT8, var(2), NULL);
	a = compile_specs(specs, 2, budget);
	CHECK(ap_agg_batch_size(a) >= 32);
	memset(many_count, 0, sizeof(many_count));
	memset(many_sum, 0, sizeof(many_sum));
	for (int base = 0; base < ntuples; base += 32)
	{
		int			n = ntuples - base < 32 ? ntuples - base : 32;

		for (int r = 0; r < n; r++)
		{
			int			i = base + r;

			key[r] = many_key(i, ntuples, clustered);
			v8[r] = (i % 3 == 0) ? -i : i;
			vals[r][0] = (ApValue) {(const unsigned char *) &key[r], 4, false};
			vals[r][1] = (ApValue) {(const unsigned char *) &v8[r], 8, false};
			vals[r][2] = vals[r][3] = (ApValue) {NULL, 0, true};
			rows[r] = vals[r];
		}
		ap_agg_eval_batch(a, rows, n);
		for (int r = 0; r < n; r++)
		{
			ApAggResult res = ap_agg_add_evaluated(a, r, vals[r]);

			if (res == AP_AGG_FULL)
			{
				CHECK_EQ(ap_agg_flush(a, true, 8192, on_send_many, NULL), 0);
				res = ap_agg_add_evaluated(a, r, vals[r]);
			}
			CHECK_EQ(res, AP_AGG_ADDED);
		}
	}
	CHECK_EQ(ap_agg_flush(a, false, 8192, on_send_many, NULL), 0);
	/* take the expected totals off what came back: every group ends at zero */
	for (int i = 0; i < ntuples; i++)
	{
		int32_t		g = many_key(i, ntuples, clustered);

		many_count[g]--;
		many_sum[g] -= (i % 3 == 0) ? -i : i;
	}
	for (int g = 0; g < MANY_GROUPS; g++)
	{
		CHECK_EQ(many_count[g], 0);
		CHECK_EQ(many_sum[g], 0);
	}
	ap_agg_stats(a, &shipped, &flushes, &streamed);
	if (budget >= (64u << 20))
	{
		CHECK_EQ(flushes, 0);
		CHECK_EQ(streamed, 1);
		/* scattered: the early flush's groups came back, each once more */
		CHECK_EQ(shipped, clustered ? MANY_GROUPS : MANY_GROUPS + AGG_STREAM_GROUPS);
	}
	else
		CHECK(flushes > 0);
	ap_agg_free(a);
}

/*
 * The batch path against the tuple-at-a-time path: the same random tuples
 * (a few groups, so the key cache holds them; NULLs; numerics at
 * one scale, but mixed in one group in some batches; now and then a value of
 * 9e36 in one group, which the flat program declines and which takes its sums
 * past the batch path's safe range, so that the exact checks decide the
 * overflows) fed to two aggregations, one by ap_agg_add and one a batch at
 * a time: every tuple gets the same answer and the shipped groups are the
 * same bytes.
 */
#define DIFF_TUPLES		60000
#define DIFF_GROUPS		6

typedef struct Shipped
{
	unsigned char *bytes;
	size_t		len;
	size_t		cap;
} Shipped;

static int
on_send_bytes(void *arg, const unsigned char *rows, uint32_t len, uint32_t ngroups,
			  bool memory_flush)
{
	Shipped    *sh = arg;

	(void) ngroups;
	(void) memory_flush;
	if (sh->len + len > sh->cap)
	{
		sh->cap = (sh->len + len) * 2;
		sh->bytes = realloc(sh->bytes, sh->cap);
		CHECK(sh->bytes != NULL);
	}
	memcpy(sh->bytes + sh->len, rows, len);
	sh->len += len;
	return 0;
}

/* A short-format numeric varlena (1-byte header) of coef * 10^-dscale. */
static uint32_t
make_scaled(int64_t coef, int dscale, unsigned char *buf)
{
	uint32_t	len = 1 + (uint32_t) short_numeric(coef, dscale, buf + 1);

	buf[0] = (unsigned char) ((len << 1) | 1);
	return len;
}

static ApAgg *
compile_diff(void)
{
	ActivePg__AggSpec *specs[5];

	/* (a FILTER of a comparison has no flat form: the general path's, tested above) */
	specs[0] = spec(AP_AGG_COUNT_STAR, AP_TYPE_OTHER, NULL, NULL);
	specs[1] = spec(AP_AGG_COUNT, AP_TYPE_NUMERIC, var(3), NULL);
	specs[2] = spec(AP_AGG_SUM, AP_TYPE_NUMERIC, var(3), NULL);
	specs[3] = spec(AP_AGG_SUM, AP_TYPE_INT8, var(2), NULL);
	specs[4] = spec(AP_AGG_COUNT, AP_TYPE_INT8, var(2), NULL);
	return compile_specs(specs, 5, 64u << 20);
}

static void
test_batch_path_differential(void)
{
	/* each row's values in its own "page": 8 bytes precede every value */
	static unsigned char store[32][64];
	static int32_t key[32];
	static int64_t v8[32];
	ApAgg	   *one = compile_diff();
	ApAgg	   *bat = compile_diff();
	ApAgg	   *whole = compile_diff();
	Shipped		s1 = {0},
				s2 = {0},
				s3 = {0};
	uint64_t	rng = 12345;
	int			fallbacks = 0;
	uint64_t	prefixed = 0;

	CHECK(ap_agg_batch_size(bat) >= 32);
	for (int base = 0; base < DIFF_TUPLES;)
	{
		ApValue		vals[32][NATTS];
		const ApValue *rows[32];
		int			n;
		int			k;
		bool		mixed;

		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		n = 1 + (int) ((rng >> 33) % 32);
		mixed = (rng >> 20) % 10 < 3;
		for (int r = 0; r < n; r++)
		{
			unsigned char *num = store[r] + 8;
			unsigned pick;

			rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
			pick = (unsigned) (rng >> 40);
			key[r] = (int32_t) (pick % DIFF_GROUPS);
			v8[r] = (int64_t) ((rng >> 8) % 2001) - 1000;
			vals[r][0] = (ApValue) {(const unsigned char *) &key[r], 4, false};
			vals[r][1] = (ApValue) {(const unsigned char *) &v8[r], 8, (pick >> 4) % 10 == 0};
			if ((pick >> 8) % 10 == 0)
				vals[r][2] = (ApValue) {NULL, 0, true};
			else if (key[r] == 0 && (pick >> 12) % 100 < 5)
				vals[r][2] = (ApValue) {num, make_big_numeric(num), false};
			else
			{
				int64_t		c = (int64_t) ((rng >> 3) % 20000001) - 10000000;
				int			ds = mixed && key[r] == 1 ? (int) ((pick >> 16) % 4) : 2;

				vals[r][2] = (ApValue) {num, make_scaled(c, ds, num), false};
			}
			vals[r][3] = (ApValue) {NULL, 0, true};
			rows[r] = vals[r];
		}
		ap_agg_eval_batch(bat, rows, n);
		ap_agg_eval_batch(whole, rows, n);
		/* the whole-batch path: its leading tuples at once, the rest as before */
		k = ap_agg_add_batch(whole, n);
		CHECK(k >= 0 && k <= n);
		prefixed += (uint64_t) k;
		for (int r = 0; r < n; r++)
		{
			ApAggResult x = ap_agg_add(one, vals[r]);
			ApAggResult y = ap_agg_add_evaluated(bat, r, vals[r]);

			CHECK_EQ(x, y);
			if (r < k)
				CHECK_EQ(x, AP_AGG_ADDED);
			else
				CHECK_EQ(ap_agg_add_evaluated(whole, r, vals[r]), x);
			if (x == AP_AGG_FALLBACK)
				fallbacks++;
		}
		base += n;
	}
	CHECK_EQ(ap_agg_flush(one, false, 8192, on_send_bytes, &s1), 0);
	CHECK_EQ(ap_agg_flush(bat, false, 8192, on_send_bytes, &s2), 0);
	CHECK_EQ(ap_agg_flush(whole, false, 8192, on_send_bytes, &s3), 0);
	CHECK_EQ(s1.len, s2.len);
	CHECK(s1.len > 0 && memcmp(s1.bytes, s2.bytes, s1.len) == 0);
	CHECK_EQ(s1.len, s3.len);
	CHECK(memcmp(s1.bytes, s3.bytes, s1.len) == 0);
	/* a run of leading tuples in many batches (about a fifth of the tuples) */
	CHECK(prefixed > DIFF_TUPLES / 10);
	CHECK_EQ(whole->batched, bat->batched);
	/* the big values overflowed some sums, and most tuples took the batch path */
	CHECK(fallbacks > 0);
	CHECK(bat->batched > DIFF_TUPLES / 2);
	CHECK(bat->batched < DIFF_TUPLES);
	free(s1.bytes);
	free(s2.bytes);
	free(s3.bytes);
	ap_agg_free(one);
	ap_agg_free(bat);
	ap_agg_free(whole);
}

int
main(void)
{
	ApAgg	   *a;
	int			big = 0;

	/* the key cache's varlena test is the kind's attlen, for every kind */
	for (int k = -1; k <= AP_TYPE_KIND_COUNT; k++)
		CHECK_EQ(kind_varlena(k), k < 0 || k >= AP_TYPE_KIND_COUNT || AP_KIND_ATTLEN(k) < 0);

	/* a roomy table: one row per group, no flush */
	memset(totals, 0, sizeof(totals));
	frames = flush_frames = 0;
	a = compile(64u << 20);
	CHECK_EQ(feed(a, 20000, 100, NULL), 0);
	check_totals(20000, 100, -1);
	for (int g = 0; g < 100; g++)
		CHECK_EQ(totals[g].nrows, 1);
	CHECK_EQ(flush_frames, 0);
	{
		uint64_t	shipped,
					flushes,
					streamed;

		ap_agg_stats(a, &shipped, &flushes, &streamed);
		CHECK_EQ(shipped, 100);
		CHECK_EQ(flushes, 0);
		CHECK_EQ(streamed, 0);
	}
	ap_agg_free(a);

	/* the smallest budget: many flushes, same totals */
	memset(totals, 0, sizeof(totals));
	frames = flush_frames = 0;
	a = compile(1);
	CHECK_EQ(feed(a, 30000, 3000, NULL), 0);
	check_totals(30000, 3000, -1);
	CHECK(flush_frames > 5);
	{
		uint64_t	shipped,
					flushes,
					streamed;

		ap_agg_stats(a, &shipped, &flushes, &streamed);
		CHECK(flushes > 5);
		CHECK(shipped > 3000);
		CHECK_EQ(streamed, 0);
	}
	ap_agg_free(a);

	/* a sum beyond 128 bits: that tuple alone goes back, nothing half-applied */
	memset(totals, 0, sizeof(totals));
	a = compile(64u << 20);
	{
		/* two big values in one group overflow the second time */
		unsigned char page[24];	/* a tuple header's bytes precede a value */
		unsigned char *num = page + 8;
		int32_t		key = 7;
		int64_t		v8 = 1;
		unsigned char text[8] = {(unsigned char) ((3 << 1) | 1), 'z', 'z'};
		ApValue		values[NATTS] = {
			{(const unsigned char *) &key, 4, false},
			{(const unsigned char *) &v8, 8, false},
			{num, 0, false},
			{text, 3, false},
		};

		values[2].len = make_big_numeric(num);
		for (int i = 0; i < 20; i++)
		{
			ApAggResult r = ap_agg_add(a, values);

			if (r == AP_AGG_FALLBACK)
				big++;
		}
		/* 9e36 * 11 >= 10^38: the 12th and later go back */
		CHECK_EQ(big, 9);
		CHECK_EQ(ap_agg_flush(a, false, 8192, on_send, NULL), 0);
		CHECK_EQ(totals[7].count_star, 11);
		CHECK_EQ(totals[7].count_filtered, 11);
		CHECK(strcmp(totals[7].max_text, "zz") == 0);
	}
	ap_agg_free(a);

	test_batched_many_groups(64u << 20, 100000, false);
	test_batched_many_groups(64u << 20, 100000, true);
	test_batched_many_groups(512u << 10, 100000, false);
	test_batched_many_groups(512u << 10, 100000, true);
	test_batch_path_differential();
	return TEST_DONE();
}
