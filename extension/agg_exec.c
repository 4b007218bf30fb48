/*
 * agg_exec.c
 *	  Executor of ActiveAgg: every disk aggregates its stripe per group and
 *	  ships partial groups; the host merges them with the fallback tuples
 *	  and finalizes each aggregate exactly as PostgreSQL does.
 *
 * Rules of this file:
 *   - BeginCustomScan contacts no disk (plain EXPLAIN works with the disks
 *     down); the first ExecCustomScan consumes the whole input, then groups
 *     are returned one per call in the scan slot, in the layout of
 *     custom_scan_tlist (keys, then one FINAL value per Aggref); ExecScan
 *     applies HAVING (plan.qual) and the projection.
 *   - The host merge is a TupleHashTable keyed by the group keys with the
 *     GROUP BY equality operators and their hash functions, so groups the
 *     disks kept apart (1.5 and 1.50, 'a ' and 'a', partials of several
 *     disks and of several memory flushes) become one, as in PostgreSQL.
 *   - A fallback tuple (visibility the disk could not decide, a value it
 *     could not compute exactly) is read through the buffer manager, checked
 *     against the disk quals, and aggregated on the host from the same
 *     expressions, as a one-row partial group.  Host mode (no pushdown
 *     possible at execution: SERIALIZABLE, non-MVCC snapshot, recovery, no
 *     disks) aggregates every tuple of a plain heap scan that way.
 *   - Host-side expressions are compiled without a parent plan node: the
 *     node's scan slot describes groups, not heap tuples, and a parent would
 *     make the compiled Vars skip the deform step (see activescan.c).
 *   - Finalization calls PostgreSQL's own functions: numeric_add for sums,
 *     numeric_div(sum, count) for avg of integers and numeric (exactly
 *     int8_avg / numeric_avg), float4pl/float8pl (with their overflow
 *     errors), the aggregate's sort operator for min/max.
 *   - Per-execution memory (sockets, hash table) lives in exec_cxt: reset on
 *     rescan, released with the query on ERROR.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tableam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type_d.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "activeagg.h"
#include "activescan.h"
#include "model.h"

/* Poll the disks (non-blocking) every this many host-aggregated tuples. */
#define AP_AGG_POLL_EVERY			1024

#include "agg_exec.h"


static void ap_agg_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *ap_agg_exec(CustomScanState *node);
static void ap_agg_end(CustomScanState *node);
static void ap_agg_rescan(CustomScanState *node);
static void ap_agg_explain(CustomScanState *node, List *ancestors, ExplainState *es);

static CustomExecMethods ap_agg_exec_methods = {
	.CustomName = AP_AGG_NAME,
	.BeginCustomScan = ap_agg_begin,
	.ExecCustomScan = ap_agg_exec,
	.EndCustomScan = ap_agg_end,
	.ReScanCustomScan = ap_agg_rescan,
	.ExplainCustomScan = ap_agg_explain,
};

/* CreateCustomScanState callback of ApAggPlanMethods. */
Node *
ApAggCreateScanState(CustomScan *cscan)
{
	ApAggState *s = (ApAggState *) newNode(sizeof(ApAggState), T_CustomScanState);

	s->css.methods = &ap_agg_exec_methods;
	s->css.flags = cscan->flags;
	return (Node *) s;
}

/* ---------------- setup ---------------- */

/* PostgreSQL type of a state column (AP_AGG_STATE_KIND). */
static Oid
ap_state_type(ApAggFn fn, ApTypeKind arg_kind, Oid arg_type)
{
	switch (fn)
	{
		case AP_AGG_COUNT_STAR:
		case AP_AGG_COUNT:
			return INT8OID;
		case AP_AGG_SUM:
			if (arg_kind == AP_TYPE_FLOAT4)
				return FLOAT4OID;
			if (arg_kind == AP_TYPE_FLOAT8)
				return FLOAT8OID;
			return NUMERICOID;
		case AP_AGG_BOOL_AND:
		case AP_AGG_BOOL_OR:
			return BOOLOID;
		case AP_AGG_MIN:
		case AP_AGG_MAX:
			return arg_type;
	}
	elog(ERROR, "unrecognized ActiveAgg aggregate %d", (int) fn);
	return InvalidOid;			/* keep compiler quiet */
}

/* Index of the spec (fn, arg, filter), added if new. */
static int
ap_spec_index(ApAggState *s, int *cap, ApAggFn fn, const ApAggInfo *info,
			  Oid inputcollid, Oid sortop)
{
	ApAggSpec  *sp;
	ApTypeKind	arg_kind = (fn == AP_AGG_COUNT_STAR || fn == AP_AGG_COUNT) ?
		ApTypeKindOf(info->arg ? exprType((Node *) info->arg) : InvalidOid) : info->arg_kind;

	for (int i = 0; i < s->nspecs; i++)
	{
		sp = &s->specs[i];
		if (sp->fn == fn && sp->arg_kind == arg_kind && sp->collation == inputcollid &&
			equal(sp->arg, info->arg) && equal(sp->filter, info->filter))
			return i;
	}
	if (s->nspecs == *cap)
	{
		*cap *= 2;
		s->specs = repalloc(s->specs, sizeof(ApAggSpec) * *cap);
	}
	sp = &s->specs[s->nspecs];
	memset(sp, 0, sizeof(*sp));
	sp->fn = fn;
	sp->arg_kind = arg_kind;
	sp->arg = info->arg;
	sp->filter = info->filter;
	sp->widen_float4 = (fn == AP_AGG_SUM && info->widen_float4);
	sp->arg_type = info->arg ? exprType((Node *) info->arg) : InvalidOid;
	sp->state_type = ap_state_type(fn, arg_kind, sp->arg_type);
	get_typlenbyval(sp->state_type, &sp->state_len, &sp->state_byval);
	sp->collation = inputcollid;
	if (fn == AP_AGG_MIN || fn == AP_AGG_MAX)
		fmgr_info(get_opcode(sortop), &sp->better);
	sp->arg_state = sp->arg ? ExecInitExpr(sp->arg, NULL) : NULL;
	sp->filter_state = sp->filter ? ExecInitExpr(sp->filter, NULL) : NULL;
	return s->nspecs++;
}

/* The aggregate's sort operator (min: <, max: >). */
static Oid
ap_agg_sortop(Oid aggfnoid)
{
	HeapTuple	tp = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	Oid			sortop;

	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for aggregate %u", aggfnoid);
	sortop = ((Form_pg_aggregate) GETSTRUCT(tp))->aggsortop;
	ReleaseSysCache(tp);
	if (!OidIsValid(sortop))
		elog(ERROR, "aggregate %u has no sort operator", aggfnoid);
	return sortop;
}

/*
 * Is e a column of the scanned relation declared NOT NULL?  count(e) is then
 * count(*) (ActiveAgg reads one base relation: no outer join can null it).
 */
static bool
ap_agg_arg_not_null(ApAggState *s, Expr *e)
{
	Relation	rel = s->css.ss.ss_currentRelation;
	TupleDesc	desc = RelationGetDescr(rel);
	Var		   *var;
	Form_pg_attribute att;

	if (e == NULL || !IsA(e, Var))
		return false;
	var = (Var *) e;
	if (var->varlevelsup != 0 || var->varattno <= 0 || var->varattno > desc->natts)
		return false;
	att = TupleDescAttr(desc, var->varattno - 1);
	return att->attnotnull && !att->attisdropped;
}

/*
 * The spec of count(x) under the aggregate's FILTER: count(*)'s when x is a
 * NOT NULL column (avg's count of TPC-H Q1's columns shares count(*)'s
 * state instead of adding one per avg).
 */
static int
ap_count_spec_index(ApAggState *s, int *cap, const ApAggInfo *info, Oid inputcollid)
{
	if (ap_agg_arg_not_null(s, info->arg))
	{
		ApAggInfo	star = *info;

		star.arg = NULL;
		return ap_spec_index(s, cap, AP_AGG_COUNT_STAR, &star, InvalidOid, InvalidOid);
	}
	return ap_spec_index(s, cap, AP_AGG_COUNT, info, inputcollid, InvalidOid);
}

/* Map every Aggref onto specs and build the partial-row descriptor. */
static void
ap_agg_setup_specs(ApAggState *s)
{
	int			cap = Max(4, s->naggs * 2);
	int			i = 0;
	ListCell   *lc;

	s->specs = palloc(sizeof(ApAggSpec) * cap);
	s->outs = palloc0(sizeof(ApAggOut) * Max(s->naggs, 1));
	foreach(lc, s->aggrefs)
	{
		Aggref	   *aggref = lfirst_node(Aggref, lc);
		ApAggInfo	info;
		ApAggOut   *out = &s->outs[i++];
		Oid			sortop = InvalidOid;

		if (!ApAggClassify(NULL, NULL, aggref, &info))
			elog(ERROR, "aggregate %u is not supported by ActiveAgg", aggref->aggfnoid);
		if (info.fn == AP_AGG_MIN || info.fn == AP_AGG_MAX)
			sortop = ap_agg_sortop(aggref->aggfnoid);
		out->final = info.final;
		if (info.fn == AP_AGG_COUNT)
			out->spec = ap_count_spec_index(s, &cap, &info, aggref->inputcollid);
		else
			out->spec = ap_spec_index(s, &cap, info.fn, &info, aggref->inputcollid, sortop);
		out->count_spec = -1;
		if (info.final == AP_FINAL_AVG_NUMERIC || info.final == AP_FINAL_AVG_FLOAT)
			out->count_spec = ap_count_spec_index(s, &cap, &info, InvalidOid);
	}

	/* partial rows: the keys, then one state per spec */
	s->partial_desc = CreateTemplateTupleDesc(s->nkeys + s->nspecs);
	i = 0;
	foreach(lc, s->keys)
	{
		Expr	   *key = (Expr *) lfirst(lc);

		i++;
		TupleDescInitEntry(s->partial_desc, i, NULL, exprType((Node *) key),
						   exprTypmod((Node *) key), 0);
	}
	for (int j = 0; j < s->nspecs; j++)
		TupleDescInitEntry(s->partial_desc, s->nkeys + j + 1, NULL,
						   s->specs[j].state_type, -1, 0);
}

/* BeginCustomScan: expressions, descriptors and contexts; no disk contact. */
static void
ap_agg_begin(CustomScanState *node, EState *estate, int eflags)
{
	ApAggState *s = (ApAggState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;
	Index		plan_relid;
	List	   *eqops;
	TupleDesc	key_desc;
	ListCell   *lc;
	int			i;

	if (list_length(cscan->custom_private) != AP_AGG_PRIV_COUNT || rel == NULL)
		elog(ERROR, "ActiveAgg plan is malformed");

	plan_relid = intVal(list_nth(cscan->custom_private, AP_AGG_PRIV_RELID));
	s->disk_quals = copyObject(list_nth(cscan->custom_private, AP_AGG_PRIV_DISK_QUALS));
	/* setrefs skips custom_private: name the relation as the plan does now */
	if (plan_relid != cscan->scan.scanrelid)
		ChangeVarNodes((Node *) s->disk_quals, plan_relid, cscan->scan.scanrelid, 0);
	fix_opfuncids((Node *) s->disk_quals);
	s->nkeys = intVal(list_nth(cscan->custom_private, AP_AGG_PRIV_NKEYS));
	eqops = list_nth(cscan->custom_private, AP_AGG_PRIV_EQOPS);
	s->ngroups_est = Max(intVal(list_nth(cscan->custom_private, AP_AGG_PRIV_NGROUPS)), 16);

	s->keys = NIL;
	s->aggrefs = NIL;
	foreach(lc, cscan->custom_scan_tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (foreach_current_index(lc) < s->nkeys)
			s->keys = lappend(s->keys, tle->expr);
		else
			s->aggrefs = lappend(s->aggrefs, tle->expr);
	}
	s->naggs = list_length(s->aggrefs);
	if (list_length(s->keys) != s->nkeys || list_length(eqops) != s->nkeys)
		elog(ERROR, "ActiveAgg plan has inconsistent group keys");

	s->host_econtext = CreateExprContext(estate);
	s->disk_qual_state = ExecInitQual(s->disk_quals, NULL);
	s->key_states = palloc(sizeof(ExprState *) * Max(s->nkeys, 1));
	i = 0;
	foreach(lc, s->keys)
		s->key_states[i++] = ExecInitExpr((Expr *) lfirst(lc), NULL);
	ap_agg_setup_specs(s);

	/* the hash table's key columns */
	key_desc = CreateTemplateTupleDesc(s->nkeys);
	s->key_cols = palloc(sizeof(AttrNumber) * Max(s->nkeys, 1));
	s->key_collations = palloc(sizeof(Oid) * Max(s->nkeys, 1));
	i = 0;
	foreach(lc, s->keys)
	{
		Node	   *key = (Node *) lfirst(lc);

		TupleDescInitEntry(key_desc, i + 1, NULL, exprType(key), exprTypmod(key), 0);
		s->key_cols[i] = i + 1;
		s->key_collations[i] = exprCollation(key);
		i++;
	}
	if (s->nkeys > 0)
	{
		Oid		   *ops = palloc(sizeof(Oid) * s->nkeys);

		i = 0;
		foreach(lc, eqops)
			ops[i++] = lfirst_oid(lc);
		execTuplesHashPrepare(s->nkeys, ops, &s->eq_funcs, &s->hash_funcs);
	}
	s->key_slot = ExecAllocTableSlot(&estate->es_tupleTable, key_desc, &TTSOpsMinimalTuple);
	s->spill_slot = ExecAllocTableSlot(&estate->es_tupleTable, s->partial_desc,
									   &TTSOpsMinimalTuple);
	s->entry_slot = ExecAllocTableSlot(&estate->es_tupleTable, key_desc, &TTSOpsMinimalTuple);
	s->heap_slot = ExecAllocTableSlot(&estate->es_tupleTable, RelationGetDescr(rel),
									  table_slot_callbacks(rel));

	s->exec_cxt = AllocSetContextCreate(estate->es_query_cxt, "active_pg agg",
										ALLOCSET_DEFAULT_SIZES);
	s->tmp_cxt = AllocSetContextCreate(estate->es_query_cxt, "active_pg agg row",
									   ALLOCSET_SMALL_SIZES);
	s->out_cxt = AllocSetContextCreate(estate->es_query_cxt, "active_pg agg output",
									   ALLOCSET_SMALL_SIZES);
	s->disk_stats = palloc0(sizeof(ActivePg__ScanStats) * AP_NDISKS_MAX);
	s->disk_stats_valid = palloc0(sizeof(bool) * AP_NDISKS_MAX);
	s->filled = false;
}

/* ---------------- the disk program ---------------- */

/* One expression encoded for the disk (Params evaluated now). */
static ActivePg__Expr *
ap_encode_one(ApAggState *s, Expr *expr)
{
	size_t		n;

	return ApEncodeValues(list_make1(expr), s->css.ss.ps.ps_ExprContext, &n)[0];
}

/* The Program: disk quals, no projection, the aggregation. */
static ActivePg__Program *
ap_agg_program(ApAggState *s)
{
	ActivePg__Program *prog = palloc(sizeof(ActivePg__Program));
	ActivePg__AggProgram *agg = palloc(sizeof(ActivePg__AggProgram));
	ListCell   *lc;
	int			i = 0;

	active_pg__program__init(prog);
	active_pg__agg_program__init(agg);
	ResetExprContext(s->css.ss.ps.ps_ExprContext);
	prog->filter = ApEncodeQuals(s->disk_quals, s->css.ss.ps.ps_ExprContext);
	prog->n_project = 0;
	prog->agg = agg;

	agg->n_group_keys = s->nkeys;
	agg->n_key_kinds = s->nkeys;
	agg->group_keys = palloc(sizeof(ActivePg__Expr *) * Max(s->nkeys, 1));
	agg->key_kinds = palloc(sizeof(uint32) * Max(s->nkeys, 1));
	foreach(lc, s->keys)
	{
		Expr	   *key = (Expr *) lfirst(lc);

		agg->group_keys[i] = ap_encode_one(s, key);
		agg->key_kinds[i] = ApTypeKindOf(exprType((Node *) key));
		i++;
	}
	agg->n_aggs = s->nspecs;
	agg->aggs = palloc(sizeof(ActivePg__AggSpec *) * Max(s->nspecs, 1));
	for (int j = 0; j < s->nspecs; j++)
	{
		ApAggSpec  *sp = &s->specs[j];
		ActivePg__AggSpec *m = palloc(sizeof(ActivePg__AggSpec));

		active_pg__agg_spec__init(m);
		m->fn = sp->fn;
		m->arg_kind = sp->arg_kind;
		m->arg = sp->arg ? ap_encode_one(s, sp->arg) : NULL;
		m->filter = sp->filter ? ap_encode_one(s, sp->filter) : NULL;
		agg->aggs[j] = m;
	}
	agg->memory_bytes = (uint64) active_pg_disk_agg_mem * 1024;
	return prog;
}

/* ---------------- execution ---------------- */

/*
 * An empty merge table in a fresh hash_cxt (the previous table's memory is
 * released), sized for about nbuckets groups, but no more than hash_mem
 * could hold.
 */
static void
ap_agg_new_table(ApAggState *s, long nbuckets)
{
	Size		entry = MAXALIGN(SizeofMinimalTupleHeader) + 16 +
		sizeof(ApGroupState) * Max(s->nspecs, 1);

	if (s->hash_cxt == NULL)
		s->hash_cxt = AllocSetContextCreate(s->exec_cxt, "active_pg agg table",
											ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(s->hash_cxt);
	s->hashtable = NULL;
	s->plain = NULL;
	s->table_groups = 0;
	s->groups_expected = nbuckets;
	s->mem_limit = get_hash_memory_limit();
	if (s->nkeys > 0)
		s->hashtable = ApBuildTupleHashTable(&s->css.ss.ps, s->key_slot->tts_tupleDescriptor,
											 s->key_slot->tts_ops,
											 s->nkeys, s->key_cols, s->eq_funcs,
											 s->hash_funcs, s->key_collations,
											 Max(Min(nbuckets, (long) (s->mem_limit / entry)), 16),
											 sizeof(ApGroupState) * Max(s->nspecs, 1),
											 s->hash_cxt, s->hash_cxt, s->tmp_cxt, false);
	else
		s->plain = MemoryContextAllocZero(s->hash_cxt, sizeof(ApGroupState) * Max(s->nspecs, 1));
}

/*
 * The current table is returned: merge the next spilled partition into a
 * new one (agg_spill.c).  False when no partition is left.
 */
static bool
ap_agg_next_pass(ApAggState *s)
{
	long		rows = ApAggSpillNextPartition(s);
	Datum	   *values;
	bool	   *isnull;
	uint64		n = 0;

	if (rows == 0)
		return false;
	ap_agg_new_table(s, Min(rows, s->ngroups_est));
	while (ApAggSpillRead(s, &values, &isnull))
	{
		if (++n % AP_AGG_POLL_EVERY == 0)
		{
			CHECK_FOR_INTERRUPTS();
			MemoryContextReset(s->tmp_cxt);
		}
		ApAggMergePartial(s, values, isnull);
	}
	MemoryContextReset(s->tmp_cxt);
	InitTupleHashIterator(s->hashtable, &s->iter);
	return true;
}

/* Aggregate the whole input: on the disks, or on the host (host mode). */
static void
ap_agg_fill(ApAggState *s)
{
	ScanState  *ss = &s->css.ss;
	Snapshot	snapshot = ss->ps.state->es_snapshot;
	MemoryContext oldcxt = MemoryContextSwitchTo(s->exec_cxt);

	ap_agg_new_table(s, s->ngroups_est);

	ApDiskScanInit(&s->ds, ss->ss_currentRelation, snapshot, s->exec_cxt,
				   ApAggOnFrame, s, s->disk_stats, s->disk_stats_valid,
				   &s->stats_ndisks, &s->host);
	s->ds.flushed = &s->rel_flushed;
	/* a cached plan in the distributed-device mode: the host aggregates */
	if (!ApDiskScanPossible(snapshot) || active_pg_scan_mode == AP_SCAN_MODE_PAGES ||
		!ApInitPlansAllowPushdown(ss->ss_currentRelation, snapshot, s->disk_quals,
								  s->disk_quals,
								  (Node *) ((CustomScan *) ss->ps.plan)->custom_scan_tlist,
								  ss->ps.ps_ExprContext) ||
		!ApDiskScanShip(&s->ds, ap_agg_program(s), AP_CAP_AGG | AP_CAP_EXPRESSIONS))
	{
		TableScanDesc scan = table_beginscan(ss->ss_currentRelation, snapshot, 0, NULL);

		s->host.host_mode_scans++;
		while (table_scan_getnextslot(scan, ForwardScanDirection, s->heap_slot))
		{
			CHECK_FOR_INTERRUPTS();
			s->host.host_mode_tuples++;
			ApAggHostTuple(s);
		}
		table_endscan(scan);
		ExecClearTuple(s->heap_slot);
	}
	else
	{
		uint64		since_poll = 0;

		for (;;)
		{
			if (ApDiskScanNextFallback(&s->ds, s->heap_slot))
			{
				ApAggHostTuple(s);
				/* keep answering the disks' xid questions meanwhile */
				if (++since_poll % AP_AGG_POLL_EVERY == 0)
					ApDiskScanPoll(&s->ds, false);
				continue;
			}
			if (ApDiskScanDisksDone(&s->ds))
				break;
			ApDiskScanPoll(&s->ds, true);
		}
		ExecClearTuple(s->heap_slot);
		ApDiskScanClose(&s->ds);
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(s->tmp_cxt);

	s->filled = true;
	s->plain_done = false;
	if (s->hashtable != NULL)
		InitTupleHashIterator(s->hashtable, &s->iter);
}

/* Final value of one Aggref from its group's states. */
static Datum
ap_finalize(ApAggState *s, ApAggOut *out, ApGroupState *groups, bool *isnull)
{
	ApGroupState *g = &groups[out->spec];
	int64		n;

	*isnull = false;
	switch (out->final)
	{
		case AP_FINAL_COUNT:
			return Int64GetDatum(g->count);
		case AP_FINAL_SUM_INT8:
			if (!g->has_value)
				break;
			return DirectFunctionCall1(numeric_int8, g->value);
		case AP_FINAL_SUM_NUMERIC:
		case AP_FINAL_SUM_FLOAT:
		case AP_FINAL_STATE:
			if (!g->has_value)
				break;
			return g->value;
		case AP_FINAL_AVG_NUMERIC:
			n = groups[out->count_spec].count;
			if (n == 0 || !g->has_value)
				break;
			return DirectFunctionCall2(numeric_div, g->value,
									   DirectFunctionCall1(int8_numeric, Int64GetDatum(n)));
		case AP_FINAL_AVG_FLOAT:
			n = groups[out->count_spec].count;
			if (n == 0 || !g->has_value)
				break;
			return Float8GetDatum(DatumGetFloat8(g->value) / (float8) n);
	}
	*isnull = true;
	return (Datum) 0;
}

/* Store one group (keys from keyslot or none, finalized aggregates) in the scan slot. */
static TupleTableSlot *
ap_emit(ApAggState *s, TupleTableSlot *keyslot, ApGroupState *groups)
{
	TupleTableSlot *slot = s->css.ss.ss_ScanTupleSlot;
	MemoryContext oldcxt;

	ExecClearTuple(slot);
	MemoryContextReset(s->out_cxt);
	if (keyslot != NULL)
	{
		slot_getallattrs(keyslot);
		memcpy(slot->tts_values, keyslot->tts_values, sizeof(Datum) * s->nkeys);
		memcpy(slot->tts_isnull, keyslot->tts_isnull, sizeof(bool) * s->nkeys);
	}
	oldcxt = MemoryContextSwitchTo(s->out_cxt);
	for (int i = 0; i < s->naggs; i++)
		slot->tts_values[s->nkeys + i] = ap_finalize(s, &s->outs[i], groups,
													 &slot->tts_isnull[s->nkeys + i]);
	MemoryContextSwitchTo(oldcxt);
	s->groups_out++;
	return ExecStoreVirtualTuple(slot);
}

/* ExecScan access method: the next group. */
static TupleTableSlot *
ap_agg_next(ScanState *ss)
{
	ApAggState *s = (ApAggState *) ss;
	TupleHashEntry entry;

	if (!s->filled)
		ap_agg_fill(s);

	if (s->nkeys == 0)
	{
		/* a plain aggregate returns one row, even on empty input */
		if (s->plain_done)
			return ExecClearTuple(ss->ss_ScanTupleSlot);
		s->plain_done = true;
		return ap_emit(s, NULL, s->plain);
	}
	/* the table's groups, then each spilled partition's */
	while ((entry = ScanTupleHashTable(s->hashtable, &s->iter)) == NULL)
	{
		if (!ap_agg_next_pass(s))
			return ExecClearTuple(ss->ss_ScanTupleSlot);
	}
	ExecStoreMinimalTuple(entry->firstTuple, s->entry_slot, false);
	return ap_emit(s, s->entry_slot,
				   (ApGroupState *) ApTupleHashEntryState(s->hashtable, entry, false,
														  sizeof(ApGroupState) * Max(s->nspecs, 1)));
}

/* EvalPlanQual never substitutes a group: the relation is not a target. */
static bool
ap_agg_recheck(ScanState *ss, TupleTableSlot *slot)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("ActiveAgg cannot recheck a row for EvalPlanQual")));
	return false;				/* keep compiler quiet */
}

/* ExecCustomScan: ExecScan applies HAVING and the projection. */
static TupleTableSlot *
ap_agg_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, ap_agg_next, ap_agg_recheck);
}

/* Forget the current execution (closes the sockets with exec_cxt). */
static void
ap_agg_reset(ApAggState *s)
{
	ExecClearTuple(s->css.ss.ss_ScanTupleSlot);
	ExecClearTuple(s->heap_slot);
	ExecClearTuple(s->key_slot);
	ExecClearTuple(s->entry_slot);
	ApAggSpillEnd(s);
	MemoryContextReset(s->exec_cxt);
	s->hash_cxt = NULL;			/* was exec_cxt's child */
	MemoryContextReset(s->tmp_cxt);
	MemoryContextReset(s->out_cxt);
	s->hashtable = NULL;
	s->plain = NULL;
	s->filled = false;
	memset(&s->ds, 0, sizeof(s->ds));
}

/* ReScanCustomScan: the next Exec aggregates again (Params may differ). */
static void
ap_agg_rescan(CustomScanState *node)
{
	ap_agg_reset((ApAggState *) node);
	ExecScanReScan(&node->ss);
}

/* EndCustomScan. */
static void
ap_agg_end(CustomScanState *node)
{
	ApAggState *s = (ApAggState *) node;

	ap_agg_reset(s);
	MemoryContextDelete(s->exec_cxt);
	MemoryContextDelete(s->tmp_cxt);
	MemoryContextDelete(s->out_cxt);
	s->exec_cxt = s->tmp_cxt = s->out_cxt = NULL;
}

/* ---------------- EXPLAIN ---------------- */

/* Counters of the disks and the host (ANALYZE). */
static void
ap_agg_explain_analyze(ApAggState *s, ExplainState *es)
{
	ActivePg__ScanStats t;
	ApHostStats *h = &s->host;

	ApDiskScanSumStats(s->disk_stats, s->disk_stats_valid, s->stats_ndisks, &t);

	if (es->format != EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyUInteger("Pushdown Executions", NULL, h->pushdown_scans, es);
		ExplainPropertyUInteger("Host Mode Executions", NULL, h->host_mode_scans, es);
		ExplainPropertyUInteger("Disk Pages Read", NULL, t.pages_read, es);
		ExplainPropertyUInteger("Disk Tuples Seen", NULL, t.tuples_seen, es);
		ExplainPropertyUInteger("Disk Tuples Visible", NULL, t.tuples_visible, es);
		ExplainPropertyUInteger("Disk Tuples Aggregated", NULL, t.tuples_passed, es);
		ExplainPropertyUInteger("Disk Groups Shipped", NULL, t.groups_shipped, es);
		ExplainPropertyUInteger("Disk Memory Flushes", NULL, t.agg_flushes, es);
		ExplainPropertyUInteger("Disk Streamed Flushes", NULL, t.agg_stream_flushes, es);
		ExplainPropertyUInteger("Host Groups Merged", NULL, s->partial_groups, es);
		ExplainPropertyUInteger("Host Tuples Aggregated", NULL, s->host_tuples, es);
		ExplainPropertyUInteger("Host Merge Spills", NULL, s->spill_sets, es);
		ExplainPropertyUInteger("Host Merge Spilled Groups", NULL, s->spilled_groups, es);
		ExplainPropertyUInteger("Host Merge Partitions Merged", NULL, s->spill_passes, es);
		ExplainPropertyUInteger("Fallback Tuples", NULL, h->fallback_tids, es);
		ExplainPropertyUInteger("Fallback Pages", NULL, h->fallback_blocks, es);
		ExplainPropertyUInteger("Xids Resolved", NULL, h->xids_answered, es);
		ExplainPropertyUInteger("Disks Taken Over", NULL, h->disks_taken_over, es);
		ExplainPropertyUInteger("Blocks Taken Over", NULL, h->blocks_taken_over, es);
		if (h->disks_taken_over > 0)
			ExplainPropertyText("Takeover Reason", h->takeover_reason, es);
		ExplainPropertyUInteger("Interconnect Bytes Shipped", "bytes", t.bytes_shipped, es);
		ExplainPropertyUInteger("Disk Bytes Read", "bytes", t.bytes_read, es);
		ExplainPropertyFloat("Interconnect Reduction", NULL, ApBytesReduction(&t), 1, es);
		ApExplainTimes(&t, h, es);
		if (es->verbose)
		{
			ExplainOpenGroup("Per Disk", "Per Disk", false, es);
			for (int i = 0; i < s->stats_ndisks; i++)
			{
				if (!s->disk_stats_valid[i])
					continue;
				ExplainOpenGroup("Disk", NULL, true, es);
				ExplainPropertyInteger("Disk", NULL, i, es);
				ExplainPropertyUInteger("Groups Shipped", NULL, s->disk_stats[i].groups_shipped, es);
				ExplainPropertyUInteger("Memory Flushes", NULL, s->disk_stats[i].agg_flushes, es);
				ExplainPropertyUInteger("Streamed Flushes", NULL,
										s->disk_stats[i].agg_stream_flushes, es);
				ExplainPropertyUInteger("Bytes Shipped", "bytes", s->disk_stats[i].bytes_shipped, es);
				ExplainPropertyUInteger("Bytes Read", "bytes", s->disk_stats[i].bytes_read, es);
				ExplainCloseGroup("Disk", NULL, true, es);
			}
			ExplainCloseGroup("Per Disk", "Per Disk", false, es);
		}
		return;
	}

	if (h->pushdown_scans > 0)
	{
		ApExplainTextLine(es, "Disk Tuples");
		appendStringInfo(es->str, "seen " UINT64_FORMAT ", visible " UINT64_FORMAT
						 ", aggregated " UINT64_FORMAT "\n",
						 t.tuples_seen, t.tuples_visible, t.tuples_passed);
		ApExplainTextLine(es, "Disk Groups");
		appendStringInfo(es->str, "shipped " UINT64_FORMAT " (", t.groups_shipped);
		for (int i = 0; i < s->stats_ndisks; i++)
			appendStringInfo(es->str, "%s" UINT64_FORMAT, i > 0 ? ", " : "",
							 s->disk_stats_valid[i] ? s->disk_stats[i].groups_shipped : 0);
		appendStringInfo(es->str, " per disk), memory flushes " UINT64_FORMAT, t.agg_flushes);
		/* tables shipped early while their keys came clustered (diskd/agg_table.c) */
		if (t.agg_stream_flushes > 0)
			appendStringInfo(es->str, ", streamed flushes " UINT64_FORMAT, t.agg_stream_flushes);
		appendStringInfoChar(es->str, '\n');
		ApExplainTextFallback(h, es);
		ApExplainTextInterconnect(&t, es);
		ApExplainTextDiskTime(&t, h, es);
	}
	if (s->spill_sets > 0)
	{
		/* the merge table outgrew hash_mem (agg_spill.c) */
		ApExplainTextLine(es, "Host Merge");
		appendStringInfo(es->str, "table full " UINT64_FORMAT " times, "
						 UINT64_FORMAT " groups spilled, " UINT64_FORMAT
						 " partitions merged\n",
						 s->spill_sets, s->spilled_groups, s->spill_passes);
	}
	ApExplainTextHostMode(h, es);
}

/* ExplainCustomScan callback of ActiveAgg. */
static void
ap_agg_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ApAggState *s = (ApAggState *) node;
	int			ndisks = s->stats_ndisks > 0 ? s->stats_ndisks : ApConfiguredDiskCount();

	ApExplainQuals(&s->css.ss, s->disk_quals, "Disk Filter", ancestors, es);
	if (es->analyze && s->host.pushdown_scans > 0)
	{
		ActivePg__ScanStats t;

		ApDiskScanSumStats(s->disk_stats, s->disk_stats_valid, s->stats_ndisks, &t);
		ApExplainDiskRemoved(&s->css.ss.ps, s->disk_quals, &t, es);
	}
	if (s->keys != NIL)
		ExplainPropertyList("Disk Group Key",
							ApDeparseList(&s->css.ss, s->keys, ancestors, es), es);
	if (s->aggrefs != NIL)
		ExplainPropertyList("Disk Aggregate",
							ApDeparseList(&s->css.ss, s->aggrefs, ancestors, es), es);
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ApExplainTextLine(es, "Disks");
		appendStringInfo(es->str, "%d  Memory: %d kB per disk\n", ndisks,
						 active_pg_disk_agg_mem);
	}
	else
	{
		ExplainPropertyInteger("Disks", NULL, ndisks, es);
		ExplainPropertyInteger("Disk Aggregate Memory", "kB", active_pg_disk_agg_mem, es);
	}
	/* the prediction is a cost: shown with costs only (tests use COSTS OFF) */
	if (es->verbose && es->costs)
		ApModelExplain((List *) list_nth(((CustomScan *) node->ss.ps.plan)->custom_private,
										 AP_AGG_PRIV_MODEL),
					   AP_SCAN_MODE_ACTIVE, es);
	if (es->analyze && (s->host.pushdown_scans > 0 || s->host.host_mode_scans > 0))
		ap_agg_explain_analyze(s, es);
}
