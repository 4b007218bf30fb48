/*
 * agg_exec.h
 *	  ActiveAgg's execution state, shared by its executor (agg_exec.c:
 *	  setup, the disk program, the groups' output, EXPLAIN) and the host
 *	  merge (agg_merge.c: partial groups from the disks and fallback tuples
 *	  into one hash table).
 */
#ifndef AP_AGG_EXEC_H
#define AP_AGG_EXEC_H

#include "postgres.h"

#include "nodes/execnodes.h"
#include "fmgr.h"

#include "activeagg.h"
#include "activescan.h"

/* Partitions of groups that did not fit hash_mem (agg_spill.c). */
typedef struct ApSpillSet ApSpillSet;
typedef struct ApSpillPart ApSpillPart;

/* One AggSpec shipped to the disks and merged on the host. */
typedef struct ApAggSpec
{
	ApAggFn		fn;
	ApTypeKind	arg_kind;		/* what the disk accumulates */
	Expr	   *arg;			/* NULL for count(*) */
	Expr	   *filter;			/* NULL: every row */
	bool		widen_float4;	/* avg(float4): sum float8 of the values */
	ExprState  *arg_state;		/* host evaluation (fallback, host mode) */
	ExprState  *filter_state;
	Oid			arg_type;		/* PostgreSQL type of arg */
	Oid			state_type;		/* PostgreSQL type of the state column */
	int16		state_len;
	bool		state_byval;
	FmgrInfo	better;			/* min/max: sortop(new, current) */
	Oid			collation;
} ApAggSpec;

/* One Aggref of custom_scan_tlist. */
typedef struct ApAggOut
{
	ApAggFinal	final;
	int			spec;			/* main state */
	int			count_spec;		/* avg: the count of the same argument */
} ApAggOut;

/* Merged state of one spec in one group (NULL state: has_value false). */
typedef struct ApGroupState
{
	Datum		value;
	int64		count;
	bool		has_value;
} ApGroupState;

typedef struct ApAggState
{
	CustomScanState css;

	/* from the plan */
	int			nkeys;
	int			naggs;
	int			nspecs;
	List	   *disk_quals;		/* over the final scanrelid */
	List	   *keys;			/* key expressions (custom_scan_tlist) */
	List	   *aggrefs;
	ApAggSpec  *specs;
	ApAggOut   *outs;
	long		ngroups_est;

	/* host evaluation */
	ExprContext *host_econtext;
	ExprState  *disk_qual_state;
	ExprState **key_states;
	TupleTableSlot *heap_slot;	/* fallback and host-mode tuples */
	TupleTableSlot *key_slot;	/* probe slot of the hash table */
	TupleTableSlot *entry_slot; /* reading a hash entry's keys */
	TupleDesc	partial_desc;	/* keys + states, as the disks ship them */
	Oid		   *eq_funcs;
	FmgrInfo   *hash_funcs;
	Oid		   *key_collations;
	AttrNumber *key_cols;

	/* per execution */
	MemoryContext exec_cxt;		/* sockets, spill partitions */
	MemoryContext hash_cxt;		/* the merge table and its groups' states */
	MemoryContext tmp_cxt;		/* per row */
	MemoryContext out_cxt;		/* finalized values of the current group */
	bool		filled;
	bool		plain_done;
	TupleHashTable hashtable;
	TupleHashIterator iter;
	ApGroupState *plain;		/* nkeys == 0: the one group */
	ApDiskScan	ds;

	/* the merge table within hash_mem (agg_spill.c) */
	Size		mem_limit;		/* hash_mem */
	uint64		table_groups;	/* groups in the table */
	long		groups_expected;	/* of this table's input (estimate, or a partition's rows) */
	int			spill_used_bits;	/* top hash bits the table's keys share */
	ApSpillSet *spill_out;		/* non-NULL: the table is full, new groups go here */
	List	   *spill_pending;	/* ApSpillPart * still to merge */
	ApSpillPart *spill_reading; /* the partition being merged */
	TupleTableSlot *spill_slot; /* a partial group read back (partial_desc) */

	/* buffers flushed in this run of the plan, kept across rescans (ApDiskScan.flushed) */
	bool		rel_flushed;

	/* statistics for EXPLAIN ANALYZE, kept across rescans */
	ActivePg__ScanStats *disk_stats;
	bool	   *disk_stats_valid;
	int			stats_ndisks;
	ApHostStats host;
	uint64		partial_frames;
	uint64		partial_groups;	/* partial groups received */
	uint64		host_tuples;	/* tuples aggregated on the host */
	uint64		groups_out;
	uint64		spilled_groups; /* partial groups written to partitions */
	uint64		spill_sets;		/* times the table filled */
	uint64		spill_passes;	/* partitions merged after the first table */
} ApAggState;

/*
 * Aggregate the tuple in s->heap_slot on the host (a fallback tuple, or
 * every tuple in host mode), if it passes the disk quals.
 */
void		ApAggHostTuple(ApAggState *s);

/* Data frame callback of the disk scan: merge an AggPartial frame at once. */
ApFrameUse	ApAggOnFrame(void *arg, ApDiskConn *conn, ActivePg__Frame *f);

/*
 * Merge one partial group (keys then states, in partial_desc's layout) into
 * the table, or into a spill partition if the table is full and has not
 * its keys.
 */
void		ApAggMergePartial(ApAggState *s, Datum *values, bool *isnull);

/* agg_spill.c: the merge table within hash_mem */

/*
 * The table is full: open partitions on the next bits of the hash, enough
 * for groups_expected groups in tables of groups_in_table.  Nothing when
 * the table spills already or all 32 bits are used (the table grows).
 */
void		ApAggSpillStart(ApAggState *s, double groups_in_table, double groups_expected);

/* Write one partial group (partial_desc's layout) of this key hash. */
void		ApAggSpillWrite(ApAggState *s, uint32 hash, Datum *values, bool *isnull);

/*
 * The input of the current table is complete: make the next non-empty
 * partition the one to read.  Its partial groups, or 0 when none is left.
 */
long		ApAggSpillNextPartition(ApAggState *s);

/* The next partial group of the partition being read; false at its end. */
bool		ApAggSpillRead(ApAggState *s, Datum **values, bool **isnull);

/* Close every partition (end or rescan of the execution). */
void		ApAggSpillEnd(ApAggState *s);

#endif							/* AP_AGG_EXEC_H */
