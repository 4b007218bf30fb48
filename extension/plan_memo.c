/*
 * plan_memo.c
 *	  Values kept while the planner memory they live in lives (plan_memo.h).
 *
 * Used by planner.c (the ActiveScans kept for Bloom paths, index probes'
 * prices), bloom_keys.c (a filter's estimates) and bloom_planner.c (which
 * relations hold volatile clauses).  One reset callback per memo and
 * context.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "plan_memo.h"

typedef struct ApMemoWatch
{
	MemoryContextCallback cb;
	ApMemo	   *memo;
	MemoryContext cxt;
} ApMemoWatch;

/* The context is being reset or deleted: forget its entries. */
static void
ap_memo_forget(void *arg)
{
	ApMemoWatch *w = (ApMemoWatch *) arg;
	ListCell   *lc;

	foreach(lc, w->memo->entries)
	{
		ApMemoEntry *e = lfirst(lc);

		if (e->cxt == w->cxt)
		{
			w->memo->entries = foreach_delete_current(w->memo->entries, lc);
			pfree(e);
		}
	}
}

void
ApMemoKeep(ApMemo *memo, void *value)
{
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext old;
	ApMemoEntry *e;
	bool		watched = false;
	ListCell   *lc;

	/* a context holding an entry has this memo's callback already */
	foreach(lc, memo->entries)
	{
		if (((ApMemoEntry *) lfirst(lc))->cxt == cxt)
		{
			watched = true;
			break;
		}
	}
	if (!watched)
	{
		ApMemoWatch *w = palloc0(sizeof(ApMemoWatch));

		w->memo = memo;
		w->cxt = cxt;
		w->cb.func = ap_memo_forget;
		w->cb.arg = w;
		MemoryContextRegisterResetCallback(cxt, &w->cb);
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	e = palloc(sizeof(ApMemoEntry));
	e->cxt = cxt;
	e->value = value;
	memo->entries = lappend(memo->entries, e);
	MemoryContextSwitchTo(old);
}

void *
ApMemoFind(const ApMemo *memo, bool (*match) (const void *value, const void *arg),
		   const void *arg)
{
	ListCell   *lc;

	foreach(lc, memo->entries)
	{
		ApMemoEntry *e = lfirst(lc);

		if (e->cxt == CurrentMemoryContext && (match == NULL || match(e->value, arg)))
			return e->value;
	}
	return NULL;
}
