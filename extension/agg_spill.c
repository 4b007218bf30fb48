/*
 * agg_spill.c
 *	  ActiveAgg's host merge within hash_mem.
 *
 * The merge table (agg_merge.c) holds one entry per group.  When its
 * memory passes hash_mem (work_mem * hash_mem_multiplier, what PostgreSQL's
 * HashAggregate allows itself), the table stops taking new groups: a
 * partial group from a disk, or a fallback tuple made into a one-row
 * partial group, whose keys are not in the table already is written to one
 * of 2^bits partitions chosen by the next top bits of its hash (as many as
 * make each partition fit a table of that size), while groups already in
 * the table keep merging there.  After the input, the table's groups are
 * returned, then each partition is merged in a fresh table, and returned in
 * turn (agg_exec.c drives the passes).  A partition that does not fit
 * either spills again, on further bits; once all 32 are used the table is
 * let grow rather than fail (every key of that partition has the same hash).
 *
 * A partial group is written in the layout the disks ship (partial_desc:
 * keys, then one state per spec), so reading a partition back is merging
 * partial groups again, as from a disk.  The partitions are tuplestores
 * that keep AP_SPILL_BUFFER_KB in memory and the rest in temporary files;
 * they belong to the execution (exec_cxt) and are closed when it is reset.
 */
#include "postgres.h"

#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "agg_exec.h"

/*
 * Bits of the hash one spill partitions on: enough partitions that each
 * fits a table of the size that filled (with half again to spare), at
 * most 2^AP_SPILL_MAX_BITS of them.
 */
#define AP_SPILL_MIN_BITS			2
#define AP_SPILL_MAX_BITS			8
/* Memory the partitions of one spill keep before writing to their files. */
#define AP_SPILL_BUFFER_KB			1024
#define AP_SPILL_PART_MIN_KB		16

/* One partition: partial groups whose hashes share the bits of its level. */
struct ApSpillPart
{
	Tuplestorestate *store;
	int			used_bits;		/* its rows' hashes agree on this many top bits */
	uint64		rows;
};

/* The partitions of one spill, being written. */
struct ApSpillSet
{
	int			used_bits;		/* top hash bits the spills before used */
	int			bits;			/* the next ones, this spill's partition number */
	ApSpillPart *parts[FLEXIBLE_ARRAY_MEMBER];
};

void
ApAggSpillStart(ApAggState *s, double groups_in_table, double groups_expected)
{
	MemoryContext old;
	double		need = groups_expected * 1.5 / Max(groups_in_table, 1.0);
	int			bits = AP_SPILL_MIN_BITS;
	int			nparts;
	int			part_kb;
	ApSpillSet *set;

	if (s->spill_out != NULL || s->spill_used_bits >= 32)
		return;
	old = MemoryContextSwitchTo(s->exec_cxt);
	while (bits < AP_SPILL_MAX_BITS && (double) (1 << bits) < need)
		bits++;
	bits = Min(bits, 32 - s->spill_used_bits);
	nparts = 1 << bits;
	part_kb = Max(AP_SPILL_BUFFER_KB / nparts, AP_SPILL_PART_MIN_KB);

	set = palloc0(offsetof(ApSpillSet, parts) + sizeof(ApSpillPart *) * nparts);
	set->used_bits = s->spill_used_bits;
	set->bits = bits;
	for (int i = 0; i < nparts; i++)
	{
		ApSpillPart *p = palloc0(sizeof(ApSpillPart));

		p->store = tuplestore_begin_heap(false, false, part_kb);
		p->used_bits = set->used_bits + bits;
		set->parts[i] = p;
		s->spill_pending = lappend(s->spill_pending, p);
	}
	s->spill_out = set;
	s->spill_sets++;
	MemoryContextSwitchTo(old);
}

void
ApAggSpillWrite(ApAggState *s, uint32 hash, Datum *values, bool *isnull)
{
	ApSpillSet *set = s->spill_out;
	/* the top bits first: the table's buckets use the low ones */
	uint32		below = (uint32) (32 - set->used_bits - set->bits);
	ApSpillPart *p = set->parts[(uint32) (((uint64) hash >> below) &
										  ((UINT64CONST(1) << set->bits) - 1))];
	MemoryContext old = MemoryContextSwitchTo(s->exec_cxt);

	tuplestore_putvalues(p->store, s->partial_desc, values, isnull);
	MemoryContextSwitchTo(old);
	p->rows++;
	s->spilled_groups++;
}

/* Close a partition and forget it. */
static void
ap_spill_part_end(ApSpillPart *p)
{
	tuplestore_end(p->store);
	pfree(p);
}

long
ApAggSpillNextPartition(ApAggState *s)
{
	if (s->spill_reading != NULL)
	{
		ap_spill_part_end(s->spill_reading);
		s->spill_reading = NULL;
	}
	/* the partitions being written are complete once their input is */
	s->spill_out = NULL;
	while (s->spill_pending != NIL)
	{
		ApSpillPart *p = linitial(s->spill_pending);

		s->spill_pending = list_delete_first(s->spill_pending);
		if (p->rows == 0)
		{
			ap_spill_part_end(p);
			continue;
		}
		s->spill_reading = p;
		s->spill_used_bits = p->used_bits;
		s->spill_passes++;
		return (long) Min(p->rows, (uint64) LONG_MAX);
	}
	return 0;
}

bool
ApAggSpillRead(ApAggState *s, Datum **values, bool **isnull)
{
	TupleTableSlot *slot = s->spill_slot;

	if (!tuplestore_gettupleslot(s->spill_reading->store, true, false, slot))
		return false;
	slot_getallattrs(slot);
	*values = slot->tts_values;
	*isnull = slot->tts_isnull;
	return true;
}

void
ApAggSpillEnd(ApAggState *s)
{
	ListCell   *lc;

	if (s->spill_slot != NULL)
		ExecClearTuple(s->spill_slot);
	if (s->spill_reading != NULL)
		ap_spill_part_end(s->spill_reading);
	foreach(lc, s->spill_pending)
		ap_spill_part_end(lfirst(lc));
	s->spill_reading = NULL;
	s->spill_pending = NIL;
	s->spill_out = NULL;
	s->spill_used_bits = 0;
}
