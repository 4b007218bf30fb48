/*
 * plan_memo.h
 *	  Values kept while the planner memory they live in lives.
 *
 * A planner hook that wants to remember something for the rest of one
 * planning (a path add_path may free, an estimate it would make again)
 * cannot hang it on PlannerInfo in every supported PostgreSQL version.  An
 * ApMemo keeps pointers to values in the current memory context, each with
 * that context; a reset callback on the context drops its entries before
 * the memory goes, so a value is never seen after it is freed.  Entries are
 * in TopMemoryContext; the values are the caller's.
 */
#ifndef AP_PLAN_MEMO_H
#define AP_PLAN_MEMO_H

#include "nodes/pg_list.h"

typedef struct ApMemo
{
	List	   *entries;		/* of ApMemoEntry *, oldest first */
} ApMemo;

typedef struct ApMemoEntry
{
	MemoryContext cxt;			/* the memory value lives in */
	void	   *value;
} ApMemoEntry;

/* Keep value, which lives in CurrentMemoryContext, until that is reset. */
void		ApMemoKeep(ApMemo *memo, void *value);

/*
 * The first value kept in CurrentMemoryContext that match (NULL: any)
 * accepts with arg, or NULL.
 */
void	   *ApMemoFind(const ApMemo *memo, bool (*match) (const void *value, const void *arg),
					   const void *arg);

#endif							/* AP_PLAN_MEMO_H */
