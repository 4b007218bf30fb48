/*
 * agg_merge.c
 *	  ActiveAgg's host merge: partial groups shipped by the disks and
 *	  fallback tuples aggregated on the host go into one hash table keyed by
 *	  PostgreSQL's GROUP BY equality (agg_exec.c's rules).
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

/* datumCopy in a given context. */
static Datum
ap_datum_copy_in(Datum v, bool byval, int len, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	Datum		r = datumCopy(v, byval, len);

	MemoryContextSwitchTo(old);
	return r;
}

/* Replace a by-reference state with a copy of v made in the group's memory. */
static void
ap_set_state(ApAggSpec *sp, ApGroupState *g, Datum v, MemoryContext cxt)
{
	Datum		old = g->value;
	bool		had = g->has_value;

	g->value = sp->state_byval ? v : ap_datum_copy_in(v, sp->state_byval, sp->state_len, cxt);
	g->has_value = true;
	if (had && !sp->state_byval)
		pfree(DatumGetPointer(old));
}

/* An integer argument value as numeric (the sum's state type). */
static Datum
ap_int_to_numeric(Oid type, Datum v)
{
	int64		x;

	switch (type)
	{
		case INT2OID:
			x = DatumGetInt16(v);
			break;
		case INT4OID:
			x = DatumGetInt32(v);
			break;
		default:
			x = DatumGetInt64(v);
			break;
	}
	return DirectFunctionCall1(int8_numeric, Int64GetDatum(x));
}

/*
 * Merge one value into a group's state.  raw: v is an argument value (a
 * host-evaluated row), otherwise a disk's partial state.  Runs in tmp_cxt;
 * results that outlive the row are copied into cxt.
 */
static void
ap_merge(ApAggSpec *sp, ApGroupState *g, Datum v, bool isnull, bool raw, MemoryContext cxt)
{
	switch (sp->fn)
	{
		case AP_AGG_COUNT_STAR:
			if (raw)
				g->count++;
			else if (!isnull)
				g->count += DatumGetInt64(v);
			return;
		case AP_AGG_COUNT:
			if (isnull)
				return;
			g->count += raw ? 1 : DatumGetInt64(v);
			return;
		default:
			break;
	}
	/* a NULL argument is skipped; a NULL state means "no rows" */
	if (isnull)
		return;

	switch (sp->fn)
	{
		case AP_AGG_SUM:
			if (sp->state_type == NUMERICOID)
			{
				if (raw && sp->arg_type != NUMERICOID)
					v = ap_int_to_numeric(sp->arg_type, v);
				if (g->has_value)
					v = DirectFunctionCall2(numeric_add, g->value, v);
			}
			else if (sp->state_type == FLOAT8OID)
			{
				if (raw && sp->widen_float4)
					v = Float8GetDatum((float8) DatumGetFloat4(v));
				if (g->has_value)
					v = DirectFunctionCall2(float8pl, g->value, v);
			}
			else
			{
				if (g->has_value)
					v = DirectFunctionCall2(float4pl, g->value, v);
			}
			ap_set_state(sp, g, v, cxt);
			break;
		case AP_AGG_MIN:
		case AP_AGG_MAX:
			if (!g->has_value ||
				DatumGetBool(FunctionCall2Coll(&sp->better, sp->collation, v, g->value)))
				ap_set_state(sp, g, v, cxt);
			break;
		case AP_AGG_BOOL_AND:
			ap_set_state(sp, g, BoolGetDatum(g->has_value ?
											 (DatumGetBool(g->value) && DatumGetBool(v)) :
											 DatumGetBool(v)), cxt);
			break;
		case AP_AGG_BOOL_OR:
			ap_set_state(sp, g, BoolGetDatum(g->has_value ?
											 (DatumGetBool(g->value) || DatumGetBool(v)) :
											 DatumGetBool(v)), cxt);
			break;
		default:
			elog(ERROR, "unrecognized ActiveAgg aggregate %d", (int) sp->fn);
	}
}

/* Measure the table's memory every this many new groups. */
#define AP_AGG_MEASURE_EVERY		64

/*
 * The group of the keys in key_slot (stored), created if new.  NULL when
 * the table is full (agg_spill.c) and has no such group: *hash is the keys'
 * hash, for the spill partition.
 */
static ApGroupState *
ap_lookup_group(ApAggState *s, uint32 *hash)
{
	Size		size = sizeof(ApGroupState) * Max(s->nspecs, 1);
	TupleHashEntry entry;
	bool		isnew;

	if (s->nkeys == 0)
		return s->plain;
	*hash = TupleHashTableHash(s->hashtable, s->key_slot);
	if (s->spill_out != NULL)
	{
		entry = LookupTupleHashEntryHash(s->hashtable, s->key_slot, NULL, *hash);
		return entry == NULL ? NULL :
			(ApGroupState *) ApTupleHashEntryState(s->hashtable, entry, false, size);
	}
	entry = LookupTupleHashEntryHash(s->hashtable, s->key_slot, &isnew, *hash);
	if (isnew && ++s->table_groups % AP_AGG_MEASURE_EVERY == 0 &&
		MemoryContextMemAllocated(s->hash_cxt, true) > s->mem_limit)
		ApAggSpillStart(s, (double) s->table_groups,
						(double) Max(s->groups_expected, 2 * s->table_groups));
	return (ApGroupState *) ApTupleHashEntryState(s->hashtable, entry, isnew, size);
}

/*
 * A fallback tuple of a group the full table has not: its one-row partial
 * group, from the states its values make (scratch), into the spill.
 */
static void
ap_spill_host_tuple(ApAggState *s, uint32 hash, ApGroupState *scratch)
{
	int			natts = s->nkeys + s->nspecs;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *isnull = palloc(sizeof(bool) * natts);

	memcpy(values, s->key_slot->tts_values, sizeof(Datum) * s->nkeys);
	memcpy(isnull, s->key_slot->tts_isnull, sizeof(bool) * s->nkeys);
	for (int j = 0; j < s->nspecs; j++)
	{
		ApAggSpec  *sp = &s->specs[j];
		ApGroupState *g = &scratch[j];

		if (sp->fn == AP_AGG_COUNT_STAR || sp->fn == AP_AGG_COUNT)
		{
			values[s->nkeys + j] = Int64GetDatum(g->count);
			isnull[s->nkeys + j] = false;
		}
		else
		{
			values[s->nkeys + j] = g->has_value ? g->value : (Datum) 0;
			isnull[s->nkeys + j] = !g->has_value;
		}
	}
	ApAggSpillWrite(s, hash, values, isnull);
}

/*
 * Aggregate the heap tuple in heap_slot on the host, if it passes the disk
 * quals: keys and arguments from the same expressions the disks evaluate.
 */
void
ApAggHostTuple(ApAggState *s)
{
	ExprContext *econtext = s->host_econtext;
	MemoryContext oldcxt;
	ApGroupState *groups;
	uint32		hash = 0;
	bool		spill;

	ResetExprContext(econtext);
	MemoryContextReset(s->tmp_cxt);
	econtext->ecxt_scantuple = s->heap_slot;
	if (s->disk_qual_state != NULL && !ExecQual(s->disk_qual_state, econtext))
		return;
	s->host_tuples++;

	oldcxt = MemoryContextSwitchTo(s->tmp_cxt);
	ExecClearTuple(s->key_slot);
	for (int i = 0; i < s->nkeys; i++)
		s->key_slot->tts_values[i] = ExecEvalExpr(s->key_states[i], econtext,
												  &s->key_slot->tts_isnull[i]);
	ExecStoreVirtualTuple(s->key_slot);
	groups = ap_lookup_group(s, &hash);
	spill = groups == NULL;
	if (spill)
		groups = palloc0(sizeof(ApGroupState) * s->nspecs);

	for (int j = 0; j < s->nspecs; j++)
	{
		ApAggSpec  *sp = &s->specs[j];
		Datum		v = (Datum) 0;
		bool		isnull = false;

		if (sp->filter_state != NULL)
		{
			Datum		pass = ExecEvalExpr(sp->filter_state, econtext, &isnull);

			if (isnull || !DatumGetBool(pass))
				continue;
		}
		if (sp->arg_state != NULL)
			v = ExecEvalExpr(sp->arg_state, econtext, &isnull);
		ap_merge(sp, &groups[j], v, isnull, true, spill ? s->tmp_cxt : s->hash_cxt);
	}
	if (spill)
		ap_spill_host_tuple(s, hash, groups);
	MemoryContextSwitchTo(oldcxt);
}

void
ApAggMergePartial(ApAggState *s, Datum *values, bool *isnull)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(s->tmp_cxt);
	ApGroupState *groups;
	uint32		hash = 0;

	ExecClearTuple(s->key_slot);
	memcpy(s->key_slot->tts_values, values, sizeof(Datum) * s->nkeys);
	memcpy(s->key_slot->tts_isnull, isnull, sizeof(bool) * s->nkeys);
	ExecStoreVirtualTuple(s->key_slot);
	groups = ap_lookup_group(s, &hash);
	if (groups == NULL)
		ApAggSpillWrite(s, hash, values, isnull);
	else
	{
		for (int j = 0; j < s->nspecs; j++)
			ap_merge(&s->specs[j], &groups[j], values[s->nkeys + j],
					 isnull[s->nkeys + j], false, s->hash_cxt);
	}
	MemoryContextSwitchTo(oldcxt);
}

/* Decode one partial row at *off into values/isnull; advances *off. */
static void
ap_decode_partial(ApAggState *s, ApDiskConn *conn, const char *buf, size_t len,
				  size_t *off, Datum *values, bool *isnull)
{
	TupleDesc	desc = s->partial_desc;
	ApRowView	row;
	const char *why;
	size_t		pos = 0;

	why = ApRowOpen(buf, len, *off, desc->natts, false, &row);
	if (why != NULL)
		ApProtocolError(conn, psprintf("A partial group does not fit: %s.", why));

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		isnull[i] = true;
		values[i] = (Datum) 0;
		if (ApRowIsNull(&row, i))
			continue;
		if (!ApRowFetchValue(att, row.data, row.datalen, &pos, &values[i]))
			goto bad;
		/* states and keys are computed values: never TOAST pointers or compressed */
		if (att->attlen == -1 &&
			(VARATT_IS_EXTERNAL(DatumGetPointer(values[i])) ||
			 VARATT_IS_COMPRESSED(DatumGetPointer(values[i]))))
			goto bad;
		isnull[i] = false;
	}
	if (pos != row.datalen)
		goto bad;
	*off += AP_ROW_ALIGN_UP(row.hdr.row_bytes);
	return;

bad:
	ApProtocolError(conn, "A partial group does not match the keys' and states' layout.");
}

/* Data frame callback of the disk scan: merge an AggPartial frame at once. */
ApFrameUse
ApAggOnFrame(void *arg, ApDiskConn *conn, ActivePg__Frame *f)
{
	ApAggState *s = (ApAggState *) arg;
	ActivePg__AggPartial *ap;
	const char *buf;
	char	   *copy = NULL;
	size_t		off = 0;
	Datum	   *values;
	bool	   *isnull;
	int			natts = s->partial_desc->natts;

	if (f->msg_case == ACTIVE_PG__FRAME__MSG_ROWS)
		ApProtocolError(conn, "A disk sent rows to an aggregating scan.");
	if (f->msg_case != ACTIVE_PG__FRAME__MSG_AGG_PARTIAL)
		return AP_FRAME_UNEXPECTED;
	ap = f->agg_partial;
	if (ap->ngroups == 0)
		return AP_FRAME_FREE;
	if (ap->groups.len < (size_t) ap->ngroups * AP_ROW_HEADER_BYTES)
		ApProtocolError(conn, psprintf("A partial aggregate claims %u groups in %zu bytes.",
									   ap->ngroups, ap->groups.len));
	/* the previous frame's (or tuple's) scratch is garbage now */
	MemoryContextReset(s->tmp_cxt);
	s->partial_frames++;
	s->host.batches++;
	s->host.bytes_received += ap->groups.len;

	/* values point into the rows: they need MAXALIGN'd memory */
	buf = (const char *) ap->groups.data;
	if (((uintptr_t) buf) % MAXIMUM_ALIGNOF != 0)
	{
		copy = MemoryContextAlloc(s->tmp_cxt, ap->groups.len);
		memcpy(copy, buf, ap->groups.len);
		buf = copy;
	}
	values = palloc(sizeof(Datum) * natts);
	isnull = palloc(sizeof(bool) * natts);
	for (uint32 r = 0; r < ap->ngroups; r++)
	{
		ap_decode_partial(s, conn, buf, ap->groups.len, &off, values, isnull);
		ApAggMergePartial(s, values, isnull);
	}
	/* the last row's alignment padding is not sent */
	if (off < ap->groups.len)
		ApProtocolError(conn, psprintf("A partial aggregate of %u groups has %zu trailing bytes.",
									   ap->ngroups, ap->groups.len - off));
	s->partial_groups += ap->ngroups;
	s->host.rows_from_disks += ap->ngroups;
	pfree(values);
	pfree(isnull);
	if (copy != NULL)
		pfree(copy);
	return AP_FRAME_FREE;
}
