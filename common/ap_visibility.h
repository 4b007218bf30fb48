/*
 * ap_visibility.h
 *	  Three-valued MVCC visibility of a heap tuple against a shipped
 *	  snapshot (common/visibility.c).
 *
 * One implementation serves both programs: the disks decide visibility
 * with it, and the host decides it with the same rules on the page copies
 * of the distributed-device mode (extension/pages_mode.c), so the two cannot
 * disagree.
 */
#ifndef AP_VISIBILITY_H
#define AP_VISIBILITY_H

#include <stdbool.h>
#include <stdint.h>

#include "ap_heap.h"

typedef struct ApSnapshot
{
	uint32_t	xmin;
	uint32_t	xmax;
	uint32_t   *xip;			/* sorted ascending by raw value for bsearch */
	uint32_t	xcnt;
	uint32_t   *subxip;			/* sorted */
	uint32_t	subxcnt;
	bool		suboverflowed;
} ApSnapshot;

/* Per-scan cache of host answers (ApXidStatus), open addressing. */
typedef struct ApXidCache
{
	uint32_t   *xids;
	uint8_t    *status;			/* 0 = empty slot */
	uint32_t	cap;			/* power of two */
	uint32_t	count;
} ApXidCache;

int			ap_xidcache_init(ApXidCache *c, uint32_t cap);	/* 0 or -ENOMEM */
void		ap_xidcache_free(ApXidCache *c);
int			ap_xidcache_get(const ApXidCache *c, uint32_t xid);	/* status or 0 */
int			ap_xidcache_put(ApXidCache *c, uint32_t xid, int status);	/* 0 or -ENOMEM */

typedef enum ApVis
{
	AP_VIS_VISIBLE = 0,
	AP_VIS_INVISIBLE = 1,
	AP_VIS_UNDECIDED = 2,		/* hand the TID to the host */
	AP_VIS_NEED_XID = 3			/* ask the host about *need_xid, then retry */
} ApVis;

/*
 * HeapTupleSatisfiesMVCC decided at the disk.  Hint bits and the snapshot
 * decide most tuples; an xid the disk cannot decide and that is not in the
 * cache gives AP_VIS_NEED_XID with *need_xid set.  The scanning transaction's
 * own xids (AP_XID_CURRENT), non-lock-only multixacts, moved tuples and
 * speculative insertions are AP_VIS_UNDECIDED.
 */
ApVis		ap_tuple_visibility(const ApTupleHeader *hdr, const ApSnapshot *snap,
								const ApXidCache *cache, uint32_t *need_xid);
/*
 * True if xid is certainly running for the snapshot (in xip or subxip).
 * *unsure is set when the disk cannot tell and must ask the host: xid >=
 * snap->xmax (it may be the scanning transaction's own xid, assigned after the
 * snapshot was taken -- own writes are never in xip), or suboverflowed and
 * xid in [xmin, xmax) but not in xip.  Otherwise the xid finished before the
 * snapshot was taken and hint bits (or the host) tell whether it committed.
 */
bool		ap_xid_in_snapshot(uint32_t xid, const ApSnapshot *snap, bool *unsure);

#endif							/* AP_VISIBILITY_H */
