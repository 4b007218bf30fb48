/*
 * visibility.c
 *	  Three-valued MVCC visibility against the shipped snapshot.
 *
 * Rules of this file:
 *  - ap_tuple_visibility() is HeapTupleSatisfiesMVCC() restricted to what a
 *    disk can know: the tuple header's hint bits, the snapshot, and the
 *    host's answers about individual xids (the cache).  It never guesses:
 *    whatever needs the scanning transaction's identity, a multixact, a
 *    pre-9.0 moved tuple or a speculative insertion is AP_VIS_UNDECIDED, and
 *    an xid without a hint and without a cached answer is AP_VIS_NEED_XID.
 *  - xids compare modulo 2^32 like TransactionIdPrecedes(); the permanent
 *    xids (0 invalid, 1 bootstrap, 2 frozen) compare as plain integers and
 *    1 and 2 count as committed.
 *  - The xid cache is a flat open-addressing table (linear probing) keyed by
 *    xid, status 0 marking an empty slot; it only grows, between tuples.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ap_visibility.h"
#include "ap_wire.h"

#define INVALID_XID			0
#define BOOTSTRAP_XID		1
#define FROZEN_XID			2
#define FIRST_NORMAL_XID	3

/* TransactionIdPrecedes: circular comparison for normal xids. */
static inline bool
xid_precedes(uint32_t a, uint32_t b)
{
	if (a < FIRST_NORMAL_XID || b < FIRST_NORMAL_XID)
		return a < b;
	return (int32_t) (a - b) < 0;
}

/* Slot hash: Fibonacci hashing spreads consecutive xids over the table. */
static inline uint32_t
xid_hash(uint32_t xid, uint32_t cap)
{
	return (xid * 2654435761u) & (cap - 1);
}

/* Allocate an empty cache with at least cap slots (rounded to a power of 2). */
int
ap_xidcache_init(ApXidCache *c, uint32_t cap)
{
	uint32_t	n = 16;

	while (n < cap && n < (1u << 30))
		n <<= 1;
	c->xids = calloc(n, sizeof(uint32_t));
	c->status = calloc(n, sizeof(uint8_t));
	c->cap = n;
	c->count = 0;
	if (c->xids == NULL || c->status == NULL)
	{
		ap_xidcache_free(c);
		return -ENOMEM;
	}
	return 0;
}

/* Release the cache's arrays; safe on a zeroed or already freed cache. */
void
ap_xidcache_free(ApXidCache *c)
{
	free(c->xids);
	free(c->status);
	c->xids = NULL;
	c->status = NULL;
	c->cap = 0;
	c->count = 0;
}

/* Cached ApXidStatus for xid, or 0 if the host has not told us. */
int
ap_xidcache_get(const ApXidCache *c, uint32_t xid)
{
	uint32_t	i;

	if (c == NULL || c->cap == 0)
		return 0;
	for (i = xid_hash(xid, c->cap);; i = (i + 1) & (c->cap - 1))
	{
		if (c->status[i] == 0)
			return 0;
		if (c->xids[i] == xid)
			return c->status[i];
	}
}

/* Insert without growing; the caller guarantees a free slot exists. */
static void
cache_insert(uint32_t *xids, uint8_t *status, uint32_t cap,
			 uint32_t xid, uint8_t st, uint32_t *count)
{
	uint32_t	i;

	for (i = xid_hash(xid, cap);; i = (i + 1) & (cap - 1))
	{
		if (status[i] == 0)
		{
			xids[i] = xid;
			status[i] = st;
			(*count)++;
			return;
		}
		if (xids[i] == xid)
		{
			status[i] = st;
			return;
		}
	}
}

/* Double the table, rehashing every entry, to keep probes short. */
static int
cache_grow(ApXidCache *c)
{
	uint32_t	ncap = c->cap * 2;
	uint32_t   *nx;
	uint8_t    *ns;
	uint32_t	ncount = 0;

	if (ncap == 0 || ncap > (1u << 30))
		return -ENOMEM;
	nx = calloc(ncap, sizeof(uint32_t));
	ns = calloc(ncap, sizeof(uint8_t));
	if (nx == NULL || ns == NULL)
	{
		free(nx);
		free(ns);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->cap; i++)
		if (c->status[i] != 0)
			cache_insert(nx, ns, ncap, c->xids[i], c->status[i], &ncount);
	free(c->xids);
	free(c->status);
	c->xids = nx;
	c->status = ns;
	c->cap = ncap;
	c->count = ncount;
	return 0;
}

/* Remember the host's answer for xid (status must be a nonzero ApXidStatus). */
int
ap_xidcache_put(ApXidCache *c, uint32_t xid, int status)
{
	if (status <= 0 || status > 255)
		return -EINVAL;
	if (c->cap == 0)
	{
		int			rc = ap_xidcache_init(c, 16);

		if (rc != 0)
			return rc;
	}
	/* keep the load factor at or below 3/4 so lookups always terminate */
	if ((uint64_t) (c->count + 1) * 4 > (uint64_t) c->cap * 3)
	{
		int			rc = cache_grow(c);

		if (rc != 0)
			return rc;
	}
	cache_insert(c->xids, c->status, c->cap, xid, (uint8_t) status, &c->count);
	return 0;
}

/* bsearch comparator over raw uint32 values. */
static int
cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* Membership in a sorted xid array. */
static bool
xid_in_array(uint32_t xid, const uint32_t *arr, uint32_t n)
{
	if (n == 0 || arr == NULL)
		return false;
	return bsearch(&xid, arr, n, sizeof(uint32_t), cmp_u32) != NULL;
}

/*
 * XidInMVCCSnapshot() as far as the disk can decide it; see diskd.h.  Our
 * own xid is never in xip, so anything at or past xmax might be ours and
 * only the host can say; with suboverflowed, a subtransaction of a running
 * transaction may be missing from subxip.
 */
bool
ap_xid_in_snapshot(uint32_t xid, const ApSnapshot *snap, bool *unsure)
{
	*unsure = false;

	if (xid < FIRST_NORMAL_XID)
		return false;
	if (xid_precedes(xid, snap->xmin))
		return false;
	if (!xid_precedes(xid, snap->xmax))
	{
		*unsure = true;
		return false;
	}
	if (xid_in_array(xid, snap->xip, snap->xcnt))
		return true;
	if (snap->suboverflowed)
	{
		*unsure = true;
		return false;
	}
	return xid_in_array(xid, snap->subxip, snap->subxcnt);
}

/* Host's verdict on xid: permanent xids are committed, else the cache. */
static int
xid_status(uint32_t xid, const ApXidCache *cache)
{
	if (xid == BOOTSTRAP_XID || xid == FROZEN_XID)
		return AP_XID_COMMITTED;
	if (xid == INVALID_XID)
		return AP_XID_NOT_COMMITTED;
	return ap_xidcache_get(cache, xid);
}

/*
 * Visibility of one tuple for the snapshot: see the rules at the top of the
 * file.  The order of tests mirrors HeapTupleSatisfiesMVCC().
 */
ApVis
ap_tuple_visibility(const ApTupleHeader *hdr, const ApSnapshot *snap,
					const ApXidCache *cache, uint32_t *need_xid)
{
	uint16_t	im = hdr->infomask;
	bool		running;
	bool		unsure;
	int			st;

	if (im & AP_HEAP_MOVED)
		return AP_VIS_UNDECIDED;
	if (hdr->ctid_offset == AP_SPEC_TOKEN_OFFSET)
		return AP_VIS_UNDECIDED;

	/* ---- inserter ---- */
	if ((im & AP_HEAP_XMIN_FROZEN) == AP_HEAP_XMIN_FROZEN)
		;						/* frozen: committed for every snapshot */
	else if (im & AP_HEAP_XMIN_INVALID)
		return AP_VIS_INVISIBLE;
	else
	{
		running = ap_xid_in_snapshot(hdr->xmin, snap, &unsure);
		if (running)
			return AP_VIS_INVISIBLE;
		/* the hint says "committed", not "committed before our snapshot" */
		if (unsure || !(im & AP_HEAP_XMIN_COMMITTED))
		{
			st = xid_status(hdr->xmin, cache);
			switch (st)
			{
				case AP_XID_COMMITTED:
					break;
				case AP_XID_NOT_COMMITTED:
					return AP_VIS_INVISIBLE;
				case AP_XID_CURRENT:
					return AP_VIS_UNDECIDED;
				case 0:
					*need_xid = hdr->xmin;
					return AP_VIS_NEED_XID;
				default:
					return AP_VIS_UNDECIDED;
			}
		}
	}

	/* ---- deleter / locker ---- */
	if (im & AP_HEAP_XMAX_INVALID)
		return AP_VIS_VISIBLE;
	if ((im & AP_HEAP_XMAX_LOCK_ONLY) ||
		(im & (AP_HEAP_XMAX_IS_MULTI | AP_HEAP_LOCK_MASK)) == AP_HEAP_XMAX_EXCL_LOCK)
		return AP_VIS_VISIBLE;	/* a row lock does not hide the row */
	if (im & AP_HEAP_XMAX_IS_MULTI)
		return AP_VIS_UNDECIDED;
	if (hdr->xmax == INVALID_XID && !(im & AP_HEAP_XMAX_COMMITTED))
		return AP_VIS_VISIBLE;

	running = ap_xid_in_snapshot(hdr->xmax, snap, &unsure);
	if (running)
		return AP_VIS_VISIBLE;
	if (!unsure && (im & AP_HEAP_XMAX_COMMITTED))
		return AP_VIS_INVISIBLE;

	st = xid_status(hdr->xmax, cache);
	switch (st)
	{
		case AP_XID_COMMITTED:
			return AP_VIS_INVISIBLE;
		case AP_XID_NOT_COMMITTED:
			return AP_VIS_VISIBLE;
		case AP_XID_CURRENT:
			return AP_VIS_UNDECIDED;
		case 0:
			*need_xid = hdr->xmax;
			return AP_VIS_NEED_XID;
		default:
			return AP_VIS_UNDECIDED;
	}
}
