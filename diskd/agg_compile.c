/*
 * agg_compile.c
 *	  Partial aggregation at the disk, compiling a request's AggProgram: the
 *	  keys, aggregates and their kinds checked, one VM program for every
 *	  value, the group table sized by the memory budget.  The group table is
 *	  agg_table.c, the state transitions agg_state.c, the shipping of groups
 *	  to the host agg_flush.c.
 *
 * Rules of the disk aggregation (every agg_*.c file keeps them):
 *  - Keys and aggregate arguments are evaluated by the VM (ap_program_eval
 *    over a program whose computed projections are the keys, then each
 *    AggSpec's argument and FILTER), so they are exactly the expressions the
 *    host would evaluate, with the same fallback rules.  They arrive typed
 *    (ApVal): computed numerics are summed as fixed point, never encoded
 *    into datums and decoded again.
 *  - A tuple is aggregated all or nothing: every value is checked and every
 *    new state computed before any group changes.  Whatever cannot be done
 *    exactly (a numeric beyond the 128-bit fixed range, NaN or infinity in a
 *    numeric sum, a float sum that overflows where PostgreSQL would raise an
 *    error, a value the VM cannot compute, a group that does not fit an empty
 *    table) hands the tuple back (AP_FALLBACK); the host aggregates it into
 *    the same result.
 *  - Groups are keyed by the exact bytes of their key datums.  That is at
 *    least as fine as PostgreSQL's equality (1.5 and 1.50, 'a ' and 'a' stay
 *    apart), never coarser; the host merges with the real equality.
 *  - Memory: groups, their variable-length states and the index all come out
 *    of one budget.  A tuple that needs more than is left makes the caller
 *    flush every group (memory_flush) and retry it on the empty table.
 *  - States travel in the proto/ap_rows.h layout (keys, then one state per
 *    AggSpec, AP_AGG_STATE_KIND), encoded by rowenc.c (agg_flush.c).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg_internal.h"

/* Record an error for the caller; returns code. */
static int
agg_error(char *err, size_t errlen, int code, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}



/* Check one AggSpec against the kind its argument evaluates to. */
static int
check_spec(const ActivePg__AggSpec *m, int expr_kind, AggSpec *sp, char *err, size_t errlen)
{
	int			k = (int) m->arg_kind;
	bool		is_int = (k == AP_TYPE_INT2 || k == AP_TYPE_INT4 || k == AP_TYPE_INT8);

	sp->fn = (uint8_t) m->fn;
	sp->arg_kind = (uint8_t) k;
	sp->widen = false;
	switch (m->fn)
	{
		case AP_AGG_COUNT_STAR:
			sp->state_kind = AP_TYPE_INT8;
			return 0;
		case AP_AGG_COUNT:
			sp->state_kind = AP_TYPE_INT8;
			return 0;
		case AP_AGG_SUM:
			if (!(is_int || k == AP_TYPE_NUMERIC || k == AP_TYPE_FLOAT4 || k == AP_TYPE_FLOAT8))
				return agg_error(err, errlen, AP_ERR_UNSUPPORTED, "sum of type kind %d", k);
			/* a float4 argument summed as float8: float4_accum's rule for avg */
			if (k == AP_TYPE_FLOAT8 && expr_kind == AP_TYPE_FLOAT4)
				sp->widen = true;
			else if (is_int ? !(expr_kind == AP_TYPE_INT2 || expr_kind == AP_TYPE_INT4 ||
								expr_kind == AP_TYPE_INT8) : expr_kind != k)
				return agg_error(err, errlen, AP_ERR_BAD_REQUEST,
								 "sum argument has kind %d, arg_kind says %d", expr_kind, k);
			break;
		case AP_AGG_MIN:
		case AP_AGG_MAX:
			if (k == AP_TYPE_OTHER || k == AP_TYPE_BOOL || k >= AP_TYPE_KIND_COUNT)
				return agg_error(err, errlen, AP_ERR_UNSUPPORTED, "min/max of type kind %d", k);
			if (expr_kind != k &&
				!((k == AP_TYPE_TEXT || k == AP_TYPE_VARCHAR) &&
				  (expr_kind == AP_TYPE_TEXT || expr_kind == AP_TYPE_VARCHAR)))
				return agg_error(err, errlen, AP_ERR_BAD_REQUEST,
								 "min/max argument has kind %d, arg_kind says %d", expr_kind, k);
			break;
		case AP_AGG_BOOL_AND:
		case AP_AGG_BOOL_OR:
			if (k != AP_TYPE_BOOL || expr_kind != AP_TYPE_BOOL)
				return agg_error(err, errlen, AP_ERR_BAD_REQUEST, "bool_and/bool_or needs bool");
			break;
		default:
			return agg_error(err, errlen, AP_ERR_UNSUPPORTED, "unknown aggregate %u", m->fn);
	}
	sp->state_kind = (uint8_t) AP_AGG_STATE_KIND(m->fn, k);
	return 0;
}

/* Two expressions with the same encoding (sum(x) and count(x) of avg(x)). */
static bool
same_expr(const ActivePg__Expr *x, const ActivePg__Expr *y)
{
	size_t		nx = active_pg__expr__get_packed_size(x);
	size_t		ny = active_pg__expr__get_packed_size(y);
	uint8_t    *bx;
	uint8_t    *by;
	bool		same = false;

	if (nx != ny)
		return false;
	bx = malloc(nx + 1);
	by = malloc(ny + 1);
	if (bx != NULL && by != NULL)
	{
		active_pg__expr__pack(x, bx);
		active_pg__expr__pack(y, by);
		same = memcmp(bx, by, nx) == 0;
	}
	free(bx);
	free(by);
	return same;
}

/*
 * Index of e among the argument expressions (after the nkeys keys), added
 * if new: every distinct argument is evaluated once per tuple.
 */
static int
add_expr(ActivePg__Expr **exprs, size_t *nexprs, int nkeys, ActivePg__Expr *e)
{
	for (size_t i = (size_t) nkeys; i < *nexprs; i++)
	{
		if (same_expr(exprs[i], e))
			return (int) i;
	}
	exprs[*nexprs] = e;
	return (int) (*nexprs)++;
}

/*
 * The aggregation's arrays, sized by the message: one kind per key, one spec
 * and one pending state per aggregate, and the partial row's description.
 */
static int
alloc_agg(const ActivePg__AggProgram *msg, ApAgg *a, char *err, size_t errlen)
{
	int			natts;

	a->nkeys = (int) msg->n_group_keys;
	a->nspecs = (int) msg->n_aggs;
	/* grouped tables stream while their keys come clustered (agg_table.c) */
	a->stream_on = a->nkeys > 0;
	a->key_kinds = calloc(a->nkeys + 1, 1);
	a->specs = calloc(a->nspecs + 1, sizeof(AggSpec));
	a->next = calloc(a->nspecs + 1, sizeof(AggNext));
	natts = a->nkeys + a->nspecs;
	a->out_cols = calloc(natts + 1, sizeof(ApColumn));
	a->out_project = calloc(natts + 1, sizeof(int));
	a->out_values = calloc(natts + 1, sizeof(ApValue));
	if (a->key_kinds == NULL || a->specs == NULL || a->next == NULL ||
		a->out_cols == NULL || a->out_project == NULL || a->out_values == NULL)
		return agg_error(err, errlen, AP_ERR_OUT_OF_MEMORY, "out of memory");
	return 0;
}

/*
 * Gather every expression the aggregation evaluates into one list: the keys
 * first (so key i is value i), then each aggregate's argument and FILTER,
 * an expression that repeats sharing one slot.  The VM then computes them
 * all in one pass over the tuple.
 */
static int
collect_exprs(const ActivePg__AggProgram *msg, ApAgg *a, ActivePg__Expr **exprs,
			  size_t *nexprs, char *err, size_t errlen)
{
	for (int i = 0; i < a->nkeys; i++)
	{
		if (msg->key_kinds[i] == AP_TYPE_OTHER || msg->key_kinds[i] >= AP_TYPE_KIND_COUNT)
			return agg_error(err, errlen, AP_ERR_UNSUPPORTED, "agg: key %d has kind %u",
							 i, msg->key_kinds[i]);
		a->key_kinds[i] = (uint8_t) msg->key_kinds[i];
		exprs[(*nexprs)++] = msg->group_keys[i];
	}
	for (int j = 0; j < a->nspecs; j++)
	{
		const ActivePg__AggSpec *m = msg->aggs[j];

		if (m == NULL)
			return agg_error(err, errlen, AP_ERR_BAD_REQUEST, "agg: aggs[%d] missing", j);
		a->specs[j].arg = -1;
		a->specs[j].filter = -1;
		if (m->fn != AP_AGG_COUNT_STAR)
		{
			if (m->arg == NULL)
				return agg_error(err, errlen, AP_ERR_BAD_REQUEST, "agg: aggs[%d].arg missing", j);
			a->specs[j].arg = add_expr(exprs, nexprs, a->nkeys, m->arg);
		}
		if (m->filter != NULL)
			a->specs[j].filter = add_expr(exprs, nexprs, a->nkeys, m->filter);
		if (a->specs[j].arg < 0 && m->fn != AP_AGG_COUNT_STAR)
			return agg_error(err, errlen, AP_ERR_OUT_OF_MEMORY, "out of memory");
	}
	return 0;
}

/*
 * The host sent the kind of every key and aggregate argument; the compiled
 * program must agree, or the host would decode the partial rows wrongly.
 * text and varchar share one byte format, so either stands for the other.
 */
static int
check_kinds(const ActivePg__AggProgram *msg, ApAgg *a, char *err, size_t errlen)
{
	for (int i = 0; i < a->nkeys; i++)
	{
		int			k = a->prog.expr_cols[i].type_kind;

		if (k != a->key_kinds[i] &&
			!((k == AP_TYPE_TEXT || k == AP_TYPE_VARCHAR) &&
			  (a->key_kinds[i] == AP_TYPE_TEXT || a->key_kinds[i] == AP_TYPE_VARCHAR)))
			return agg_error(err, errlen, AP_ERR_BAD_REQUEST,
							 "agg: key %d evaluates to kind %d, key_kinds says %d",
							 i, k, a->key_kinds[i]);
	}
	for (int j = 0; j < a->nspecs; j++)
	{
		AggSpec    *sp = &a->specs[j];
		int			ek = sp->arg >= 0 ? a->prog.expr_cols[sp->arg].type_kind : AP_TYPE_OTHER;
		int			rc = check_spec(msg->aggs[j], ek, sp, err, errlen);

		if (rc != 0)
			return rc;
		if (sp->filter >= 0 && a->prog.expr_cols[sp->filter].type_kind != AP_TYPE_BOOL)
			return agg_error(err, errlen, AP_ERR_BAD_REQUEST, "agg: aggs[%d].filter is not boolean", j);
	}
	return 0;
}

/* The partial row the host receives: the keys, then one state per aggregate. */
static void
describe_partial_row(ApAgg *a)
{
	int			natts = a->nkeys + a->nspecs;

	for (int i = 0; i < natts; i++)
	{
		int			k = i < a->nkeys ? a->key_kinds[i] : a->specs[i - a->nkeys].state_kind;

		a->out_cols[i].attlen = (int16_t) AP_KIND_ATTLEN(k);
		a->out_cols[i].attalign = (char) AP_KIND_ALIGN(k);
		a->out_cols[i].attbyval = AP_KIND_ATTLEN(k) > 0;
		a->out_cols[i].type_kind = (uint8_t) k;
		a->out_project[i] = i + 1;
	}
}

/*
 * The group table and the per-tuple scratch, all bounded by the request's
 * memory budget (clamped to what the table's 16-byte references can reach).
 */
static int
alloc_groups(ApAgg *a, size_t nexprs, uint64_t budget, char *err, size_t errlen)
{
	a->evals = calloc(nexprs + 1, sizeof(ApVal));
	a->enull = calloc(nexprs + 1, sizeof(bool));
	a->keycap = 256;
	a->keybuf = malloc(a->keycap);
	a->group_bytes = AGG_ALIGN(sizeof(AggGroup) + sizeof(AggState) * a->nspecs);
	a->fixed_bound = 1;
	for (int i = 0; i < 38; i++)
		a->fixed_bound *= 10;
	a->budget = budget < AGG_MIN_BUDGET ? AGG_MIN_BUDGET :
		(size_t) (budget > AGG_MAX_BUDGET ? AGG_MAX_BUDGET : budget);
	a->index_cap = AGG_INDEX_INITIAL;
	a->index = calloc(a->index_cap, sizeof(AggSlot));
	/* untouched pages of the arena cost nothing */
	a->arena_cap = a->budget;
	a->arena = ap_agg_alloc_table(a->arena_cap, false);
	if (a->evals == NULL || a->enull == NULL || a->keybuf == NULL || a->index == NULL ||
		a->arena == NULL)
		return agg_error(err, errlen, AP_ERR_OUT_OF_MEMORY, "out of memory for the aggregation");
	return 0;
}

/*
 * The fast path: when every value is flat-compilable, no key is a numeric
 * and every aggregate is a count or a numeric sum, tuples are added a batch
 * at a time over packed keys (agg_table.c).  It is an accelerator only: the
 * general path gives the same groups, so failing to set it up is fine.
 */
static void
choose_fast_path(ApAgg *a)
{
	a->flat = ap_flat_compile(&a->prog);
	a->simple = a->flat != NULL && a->nspecs <= AGG_SIMPLE_SPECS;
	for (int i = 0; a->simple && i < a->nkeys; i++)
		a->simple = a->key_kinds[i] != AP_TYPE_NUMERIC;
	for (int j = 0; a->simple && j < a->nspecs; j++)
		a->simple = a->specs[j].fn == AP_AGG_COUNT_STAR || a->specs[j].fn == AP_AGG_COUNT ||
			(a->specs[j].fn == AP_AGG_SUM && a->specs[j].state_kind == AP_TYPE_NUMERIC);
	if (a->simple)
	{
		a->fnum = calloc((size_t) a->prog.nexprs, sizeof(ApFlatNum));
		a->simple = a->fnum != NULL;
	}
	a->keycache_on = a->simple && a->nkeys <= AGG_KEYCACHE_KEYS;
	if (a->keycache_on)
	{
		a->fcols = calloc((size_t) a->prog.nexprs, sizeof(ApFlatCol));
		a->bops = calloc((size_t) a->nspecs + 1, sizeof(AggBatchOp));
		a->keycache_on = a->fcols != NULL && a->bops != NULL;
	}
}

/*
 * Compile the aggregation of a request: keys, arguments and filters become
 * the computed projections of one VM program.  0 or an ApErrCode with err
 * set; on an error after *out is set the caller still frees it
 * (ap_agg_free copes with a half-built aggregation).
 */
int
ap_agg_compile(const ActivePg__AggProgram *msg, const ApTupleDesc *desc, bool encoding_utf8,
			   uint64_t budget, ApAgg **out, char *err, size_t errlen)
{
	ActivePg__Program pm = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__Expr **exprs;
	ApAgg	   *a;
	size_t		nexprs = 0;
	int			rc;

	*out = NULL;
	if (msg->n_group_keys != msg->n_key_kinds)
		return agg_error(err, errlen, AP_ERR_BAD_REQUEST,
						 "agg: %zu group keys with %zu kinds", msg->n_group_keys, msg->n_key_kinds);
	if (msg->n_group_keys + msg->n_aggs > AP_MAX_COLUMNS)
		return agg_error(err, errlen, AP_ERR_BAD_REQUEST, "agg: too many keys and aggregates");
	a = calloc(1, sizeof(ApAgg));
	exprs = calloc(msg->n_group_keys + 2 * msg->n_aggs + 1, sizeof(ActivePg__Expr *));
	if (a == NULL || exprs == NULL)
	{
		free(a);
		free(exprs);
		return agg_error(err, errlen, AP_ERR_OUT_OF_MEMORY, "out of memory");
	}
	*out = a;
	rc = alloc_agg(msg, a, err, errlen);
	if (rc == 0)
		rc = collect_exprs(msg, a, exprs, &nexprs, err, errlen);
	if (rc != 0)
	{
		free(exprs);
		return rc;
	}

	pm.n_project_exprs = nexprs;
	pm.project_exprs = exprs;
	rc = ap_program_compile(&pm, desc, &a->prog);
	free(exprs);
	if (rc != 0)
	{
		agg_error(err, errlen, rc, "agg: %s", a->prog.error);
		ap_program_free(&a->prog);
		return rc;
	}
	a->prog_ok = true;
	a->prog.encoding_utf8 = encoding_utf8;

	rc = check_kinds(msg, a, err, errlen);
	if (rc != 0)
		return rc;
	describe_partial_row(a);
	rc = alloc_groups(a, nexprs, budget, err, errlen);
	if (rc != 0)
		return rc;
	choose_fast_path(a);
	return 0;
}

/* Release everything; safe on a partially compiled aggregation. */
void
ap_agg_free(ApAgg *a)
{
	if (a == NULL)
		return;
	if (a->prog_ok)
		ap_program_free(&a->prog);
	ap_flat_free(a->flat);
	free(a->fnum);
	free(a->fcols);
	free(a->bops);
	free(a->key_kinds);
	free(a->specs);
	free(a->next);
	free(a->out_cols);
	free(a->out_project);
	free(a->out_values);
	free(a->evals);
	free(a->enull);
	free(a->keybuf);
	free(a->index);
	free(a->arena);
	free(a->stream_bits);
	free(a);
}

/* Highest attribute the keys and arguments read. */
int
ap_agg_max_attno(const ApAgg *a)
{
	return a->prog.max_attno;
}
