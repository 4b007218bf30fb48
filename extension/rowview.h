/*
 * rowview.h
 *	  The host's reader of shipped rows (proto/ap_rows.h): the rows of a
 *	  RowBatch (ActiveScan, activescan.c) and the partial groups of an AggPartial
 *	  (ActiveAgg, agg_merge.c).
 *
 * rowview.c needs PostgreSQL's headers and psprintf only, so that the
 * libFuzzer target diskd/fuzz/fuzz_rows.c compiles it outside a backend and
 * walks row batches exactly as the executor does.
 */
#ifndef AP_ROWVIEW_H
#define AP_ROWVIEW_H

#include "postgres.h"

#include "catalog/pg_attribute.h"

#include "ap_rows.h"

/*
 * One row as the disks encode it, opened by ApRowOpen: its header, where its
 * null bitmap and data area lie.
 */
typedef struct ApRowView
{
	ApRowHeader hdr;
	const bits8 *nulls;			/* NULL: the row has no NULLs */
	const char *data;			/* the non-null values (ApRowFetchValue) */
	size_t		datalen;
	uint64		tid;			/* with AP_ROW_HASTID: AP_TID_PACK'ed */
} ApRowView;

/*
 * Open the row at off of buf (len bytes): natts values, with a TID or
 * without (tid).  NULL, or what is wrong with it (for a protocol error).
 */
const char *ApRowOpen(const char *buf, size_t len, size_t off, int natts, bool tid,
					  ApRowView *row);

/* Is value i (< the row's natts) of the row NULL? */
static inline bool
ApRowIsNull(const ApRowView *row, int i)
{
	return row->nulls != NULL && !(row->nulls[i >> 3] & (1 << (i & 7)));
}

/*
 * Fetch the value of att at *off in a shipped row's data area of datalen
 * bytes (heap_fill_tuple's placement rules), checking that it lies inside and
 * that a varlena's header is one a heap tuple may hold; advances *off past
 * it.  False if the bytes do not fit the layout.
 */
bool		ApRowFetchValue(Form_pg_attribute att, const char *data, size_t datalen,
							size_t *off, Datum *value);

#endif							/* AP_ROWVIEW_H */
