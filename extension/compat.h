/*
 * compat.h
 *	  The one place that knows which PostgreSQL major version the extension
 *	  is compiled against: 15, 16, 17 or 18.
 *
 * Every PG_VERSION_NUM test of the host side lives here.  The rest of the
 * code calls the Ap* names below, which map to what each release calls the
 * same thing; where a release changed what an API means, the comment says
 * how the wrapper keeps the behaviour the callers rely on.  Included by
 * active_pg.h right after postgres.h, so every file of the extension sees
 * it.  (diskd does not include PostgreSQL's headers at all: the page format
 * it decodes is checked against the server's in diskd/main.c.)
 */
#ifndef AP_COMPAT_H
#define AP_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 190000
#error "active_pg supports PostgreSQL 15 through 18"
#endif

#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/pathnodes.h"
#include "pgstat.h"
#include "storage/bufpage.h"
#include "storage/latch.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"	/* ExplainProperty*(), split out in 18 */
#include "commands/explain_state.h" /* ExplainState, split out in 18 */
#endif

/*
 * Functions that never return.  18 has pg_noreturn, a C11 function
 * specifier written first in the declaration, and no longer has
 * pg_attribute_noreturn(); GCC and clang accept the attribute in the same
 * place.
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/* ---------- relations: where the files are ---------- */

/*
 * 16 renamed RelFileNode (rd_node: spcNode, dbNode, relNode) to
 * RelFileLocator (rd_locator: spcOid, dbOid, relNumber).
 */
#if PG_VERSION_NUM >= 160000
#define ApRelSpcOid(rel)		((rel)->rd_locator.spcOid)
#define ApRelDbOid(rel)			((rel)->rd_locator.dbOid)
#define ApRelNumber(rel)		((rel)->rd_locator.relNumber)
#else
#define ApRelSpcOid(rel)		((rel)->rd_node.spcNode)
#define ApRelDbOid(rel)			((rel)->rd_node.dbNode)
#define ApRelNumber(rel)		((rel)->rd_node.relNode)
#endif

/*
 * A relation's main-fork block as a shared buffer tag, and ReadRecentBuffer
 * of that block: 16 takes the RelFileLocator (InitBufferTag), 15 the
 * RelFileNode (INIT_BUFFERTAG).  For files that include
 * storage/buf_internals.h.
 */
#if PG_VERSION_NUM >= 160000
#define ApInitBufferTag(tag, rel, blk) \
	InitBufferTag((tag), &(rel)->rd_locator, MAIN_FORKNUM, (blk))
#define ApReadRecentBuffer(rel, blk, buf) \
	ReadRecentBuffer((rel)->rd_locator, MAIN_FORKNUM, (blk), (buf))
#else
#define ApInitBufferTag(tag, rel, blk) \
	INIT_BUFFERTAG(*(tag), (rel)->rd_node, MAIN_FORKNUM, (blk))
#define ApReadRecentBuffer(rel, blk, buf) \
	ReadRecentBuffer((rel)->rd_node, MAIN_FORKNUM, (blk), (buf))
#endif

/*
 * Count a scan's tuples and blocks in the relation's pending statistics
 * (the caller checked pgstat_should_count_relation); 16 renamed the
 * counters (t_counts.t_tuples_returned -> counts.tuples_returned).
 */
static inline void
ApPgstatCountScan(Relation rel, uint64 tuples, uint64 blocks)
{
#if PG_VERSION_NUM >= 160000
	rel->pgstat_info->counts.tuples_returned += tuples;
	rel->pgstat_info->counts.blocks_fetched += blocks;
#else
	rel->pgstat_info->t_counts.t_tuples_returned += tuples;
	rel->pgstat_info->t_counts.t_blocks_fetched += blocks;
#endif
}

/*
 * What ReadBuffer checks of every page (header sanity and checksum); 18
 * folded PageIsVerifiedExtended into PageIsVerified with an out argument
 * for checksum failures, which the callers here do not need.
 */
static inline bool
ApPageIsVerified(Page page, BlockNumber blkno, int flags)
{
#if PG_VERSION_NUM >= 180000
	return PageIsVerified(page, blkno, flags, NULL);
#else
	return PageIsVerifiedExtended(page, blkno, flags);
#endif
}

/* ---------- collations ---------- */

/*
 * Does the collation sort (collate) or classify characters (ctype) as C
 * does?  18 removed lc_collate_is_c/lc_ctype_is_c: its pg_locale_t says so
 * for every collation, the database default included.  InvalidOid is
 * "no" as before (18 would raise an error for it).
 */
static inline bool
ApCollateIsC(Oid collid)
{
	if (!OidIsValid(collid))
		return false;
#if PG_VERSION_NUM >= 180000
	return pg_newlocale_from_collation(collid)->collate_is_c;
#else
	return lc_collate_is_c(collid);
#endif
}

static inline bool
ApCtypeIsC(Oid collid)
{
	if (!OidIsValid(collid))
		return false;
#if PG_VERSION_NUM >= 180000
	return pg_newlocale_from_collation(collid)->ctype_is_c;
#else
	return lc_ctype_is_c(collid);
#endif
}

/* ---------- planner ---------- */

/*
 * Is an equivalence class, or one member of it, nulled by an outer join?
 * Up to 15 the class said so (ec_below_outer_join) and the member listed
 * the relations whose outer joins null it (em_nullable_relids).  From 16 a
 * Var that an outer join nulls carries that join in varnullingrels (and its
 * member's em_relids include the join), and a class no longer mixes nulled
 * and unnulled values; the callers accept only plain Vars as members.
 */
static inline bool
ApEcBelowOuterJoin(EquivalenceClass *ec)
{
#if PG_VERSION_NUM >= 160000
	return false;
#else
	return ec->ec_below_outer_join;
#endif
}

static inline bool
ApEmNulledByOuterJoin(EquivalenceMember *em)
{
#if PG_VERSION_NUM >= 160000
	Expr	   *expr = em->em_expr;

	while (expr && IsA(expr, RelabelType))
		expr = ((RelabelType *) expr)->arg;
	return expr != NULL && IsA(expr, Var) &&
		!bms_is_empty(((Var *) expr)->varnullingrels);
#else
	return !bms_is_empty(em->em_nullable_relids);
#endif
}

/*
 * The base relations among a relation's relids.  From 16 a join relation's
 * relids also hold the range table indexes of the outer joins it contains
 * (root->outer_join_rels), which are no tables.
 */
static inline Relids
ApBaseRelids(PlannerInfo *root, Relids relids)
{
#if PG_VERSION_NUM >= 160000
	return bms_difference(relids, root->outer_join_rels);
#else
	(void) root;
	return relids;
#endif
}

/* Disabled nodes in a path (0 before 18, where disable_cost is in its costs). */
static inline int
ApPathDisabledNodes(const Path *a)
{
#if PG_VERSION_NUM >= 180000
	return a->disabled_nodes;
#else
	(void) a;
	return 0;
#endif
}

/*
 * Do two paths count the same number of disabled plan nodes?  18 counts
 * them (disabled_nodes), and add_path compares that count before any cost;
 * before 18 a disabled node only adds disable_cost to the costs.
 */
static inline bool
ApPathsDisabledAlike(const Path *a, const Path *b)
{
#if PG_VERSION_NUM >= 180000
	return a->disabled_nodes == b->disabled_nodes;
#else
	(void) a;
	(void) b;
	return true;
#endif
}

/* ---------- EXPLAIN ---------- */

/*
 * Qualify column names with their relation in a node's expressions, as
 * EXPLAIN does for its own: with VERBOSE, or when the query has more than
 * one relation.  18 adds a range table entry for the grouping step of a
 * GROUP BY query and counts relations without it (rtable_size).
 */
static inline bool
ApExplainUsePrefix(ExplainState *es)
{
#if PG_VERSION_NUM >= 180000
	return es->rtable_size > 1 || es->verbose;
#else
	return list_length(es->rtable) > 1 || es->verbose;
#endif
}

/* ---------- executor ---------- */

/*
 * A tuple hash table whose entries carry additionalsize zeroed bytes of
 * per-group state.  18 dropped BuildTupleHashTableExt (BuildTupleHashTable
 * took its arguments and an input slot type) and allocates the additional
 * space with each entry; before, an entry had a pointer (additional) that
 * the caller filled on insertion.  ApTupleHashEntryState returns that space
 * either way: pass isnew from LookupTupleHashEntry (false when iterating).
 */
static inline TupleHashTable
ApBuildTupleHashTable(PlanState *parent, TupleDesc desc,
					  const TupleTableSlotOps *ops, int numCols,
					  AttrNumber *keyColIdx, const Oid *eqfuncoids,
					  FmgrInfo *hashfunctions, Oid *collations,
					  long nbuckets, Size additionalsize,
					  MemoryContext metacxt, MemoryContext tablecxt,
					  MemoryContext tempcxt, bool use_variable_hash_iv)
{
#if PG_VERSION_NUM >= 180000
	return BuildTupleHashTable(parent, desc, ops, numCols, keyColIdx,
							   eqfuncoids, hashfunctions, collations,
							   nbuckets, additionalsize, metacxt, tablecxt,
							   tempcxt, use_variable_hash_iv);
#else
	return BuildTupleHashTableExt(parent, desc, numCols, keyColIdx,
								  eqfuncoids, hashfunctions, collations,
								  nbuckets, additionalsize, metacxt, tablecxt,
								  tempcxt, use_variable_hash_iv);
#endif
}

static inline void *
ApTupleHashEntryState(TupleHashTable hashtable, TupleHashEntry entry,
					  bool isnew, Size additionalsize)
{
#if PG_VERSION_NUM >= 180000
	(void) isnew;
	(void) additionalsize;
	return TupleHashEntryGetAdditional(hashtable, entry);
#else
	if (isnew)
		entry->additional = MemoryContextAllocZero(hashtable->tablecxt,
												   additionalsize);
	return entry->additional;
#endif
}

/* ---------- waiting ---------- */

/*
 * A WaitEventSet that its owner frees (FreeWaitEventSet, from a memory
 * context reset callback).  17 tracks sets by ResourceOwner instead of
 * allocating them in a memory context; NULL leaves the freeing to us, as
 * before.
 */
static inline WaitEventSet *
ApCreateWaitEventSet(MemoryContext cxt, int nevents)
{
#if PG_VERSION_NUM >= 170000
	(void) cxt;
	return CreateWaitEventSet(NULL, nevents);
#else
	return CreateWaitEventSet(cxt, nevents);
#endif
}

#endif							/* AP_COMPAT_H */
