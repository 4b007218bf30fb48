/*
 * unit_vis.c
 *	  Unit tests of diskd's MVCC visibility (visibility.c): snapshot
 *	  membership, the truth table of tuple visibility, the xid cache; no
 *	  server needed.  Split from unit.c.
 *
 * Rules of this file:
 *  - Expected results are written out as literal tables, not recomputed
 *    with the same logic.
 *  - Every allocation is freed so valgrind runs clean.
 */
#include <stdlib.h>
#include <string.h>

#include "diskd.h"
#include "testutil.h"

/* A tuple header with the given xids and infomask (ctid offset 1). */
static ApTupleHeader
hdr(uint32_t xmin, uint32_t xmax, uint16_t infomask)
{
	ApTupleHeader h;

	memset(&h, 0, sizeof(h));
	h.xmin = xmin;
	h.xmax = xmax;
	h.infomask = infomask;
	h.ctid_offset = 1;
	h.hoff = 24;
	return h;
}

/* visibility.c: snapshot membership, the MVCC truth table, the xid cache. */
static void
test_visibility(void)
{
	uint32_t	xip[] = {120, 150};
	uint32_t	subxip[] = {160};
	ApSnapshot	snap = {100, 200, xip, 2, subxip, 1, false};
	ApXidCache	cache;
	ApTupleHeader h;
	uint32_t	need;
	bool		unsure;

	CHECK_EQ(ap_xidcache_init(&cache, 4), 0);

#define VIS(h_)		(need = 0, ap_tuple_visibility(&(h_), &snap, &cache, &need))

	/* ap_xid_in_snapshot */
	CHECK(!ap_xid_in_snapshot(50, &snap, &unsure) && !unsure);
	CHECK(ap_xid_in_snapshot(120, &snap, &unsure) && !unsure);
	CHECK(ap_xid_in_snapshot(160, &snap, &unsure) && !unsure);
	CHECK(!ap_xid_in_snapshot(130, &snap, &unsure) && !unsure);
	CHECK(!ap_xid_in_snapshot(200, &snap, &unsure) && unsure);
	CHECK(!ap_xid_in_snapshot(2, &snap, &unsure) && !unsure);
	snap.suboverflowed = true;
	CHECK(!ap_xid_in_snapshot(130, &snap, &unsure) && unsure);
	CHECK(ap_xid_in_snapshot(150, &snap, &unsure) && !unsure);
	snap.suboverflowed = false;
	/* wraparound: xmin near 2^32, xmax just past zero */
	{
		uint32_t	wxip[] = {40, 4294967100u};
		ApSnapshot	w = {4294967000u, 100, wxip, 2, NULL, 0, false};

		CHECK(!ap_xid_in_snapshot(4294967050u, &w, &unsure) && !unsure);
		CHECK(ap_xid_in_snapshot(4294967100u, &w, &unsure) && !unsure);
		CHECK(ap_xid_in_snapshot(40, &w, &unsure) && !unsure);
		CHECK(!ap_xid_in_snapshot(60, &w, &unsure) && !unsure);
		CHECK(!ap_xid_in_snapshot(150, &w, &unsure) && unsure);
		CHECK(!ap_xid_in_snapshot(4294966000u, &w, &unsure) && !unsure);
	}

	/* inserter */
	h = hdr(50, 0, AP_HEAP_XMIN_FROZEN | AP_HEAP_XMAX_INVALID);
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	h = hdr(150, 0, AP_HEAP_XMIN_FROZEN | AP_HEAP_XMAX_INVALID);	/* frozen beats xip */
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	h = hdr(50, 0, AP_HEAP_XMIN_INVALID | AP_HEAP_XMAX_INVALID);
	CHECK_EQ(VIS(h), AP_VIS_INVISIBLE);
	h = hdr(50, 0, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_INVALID);
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	h = hdr(150, 0, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_INVALID);	/* in xip */
	CHECK_EQ(VIS(h), AP_VIS_INVISIBLE);
	h = hdr(160, 0, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_INVALID);	/* in subxip */
	CHECK_EQ(VIS(h), AP_VIS_INVISIBLE);
	h = hdr(2, 0, AP_HEAP_XMAX_INVALID);	/* FrozenTransactionId, no hint */
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	h = hdr(0, 0, AP_HEAP_XMAX_INVALID);	/* invalid xmin, no hint */
	CHECK_EQ(VIS(h), AP_VIS_INVISIBLE);

	/* xmin >= snapshot xmax: ask, whatever the hint says */
	h = hdr(250, 0, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_INVALID);
	CHECK_EQ(VIS(h), AP_VIS_NEED_XID);
	CHECK_EQ(need, 250);
	CHECK_EQ(ap_xidcache_put(&cache, 250, AP_XID_NOT_COMMITTED), 0);
	CHECK_EQ(VIS(h), AP_VIS_INVISIBLE);
	CHECK_EQ(ap_xidcache_put(&cache, 250, AP_XID_CURRENT), 0);
	CHECK_EQ(VIS(h), AP_VIS_UNDECIDED);
	CHECK_EQ(ap_xidcache_put(&cache, 250, AP_XID_COMMITTED), 0);
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);

	/* no hint, finished before the snapshot: ask */
	h = hdr(60, 0, AP_HEAP_XMAX_INVALID);
	CHECK_EQ(VIS(h), AP_VIS_NEED_XID);
	CHECK_EQ(need, 60);
	CHECK_EQ(ap_xidcache_put(&cache, 60, AP_XID_COMMITTED), 0);
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	CHECK_EQ(ap_xidcache_put(&cache, 61, AP_XID_NOT_COMMITTED), 0);
	h = hdr(61, 0, AP_HEAP_XMAX_INVALID);
	CHECK_EQ(VIS(h), AP_VIS_INVISIBLE);
	CHECK_EQ(ap_xidcache_put(&cache, 62, AP_XID_CURRENT), 0);
	h = hdr(62, 0, AP_HEAP_XMAX_INVALID);
	CHECK_EQ(VIS(h), AP_VIS_UNDECIDED);

	/* suboverflowed: committed hint but maybe a running subxact's */
	snap.suboverflowed = true;
	h = hdr(170, 0, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_INVALID);
	CHECK_EQ(VIS(h), AP_VIS_NEED_XID);
	CHECK_EQ(need, 170);
	snap.suboverflowed = false;
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);

	/* moved and speculative tuples go to the host */
	h = hdr(50, 0, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_INVALID | AP_HEAP_MOVED_OFF);
	CHECK_EQ(VIS(h), AP_VIS_UNDECIDED);
	h = hdr(50, 0, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_INVALID | AP_HEAP_MOVED_IN);
	CHECK_EQ(VIS(h), AP_VIS_UNDECIDED);
	h = hdr(50, 0, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_INVALID);
	h.ctid_offset = AP_SPEC_TOKEN_OFFSET;
	CHECK_EQ(VIS(h), AP_VIS_UNDECIDED);

	/* deleter / locker */
	h = hdr(50, 170, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_LOCK_ONLY);
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	h = hdr(50, 170, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_EXCL_LOCK);
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	h = hdr(50, 170, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_KEYSHR_LOCK | AP_HEAP_XMAX_EXCL_LOCK);
	CHECK_EQ(VIS(h), AP_VIS_NEED_XID);	/* share lock bits without LOCK_ONLY: an update */
	h = hdr(50, 170, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_IS_MULTI | AP_HEAP_XMAX_LOCK_ONLY);
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	h = hdr(50, 170, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_IS_MULTI | AP_HEAP_XMAX_EXCL_LOCK);
	CHECK_EQ(VIS(h), AP_VIS_UNDECIDED);
	h = hdr(50, 170, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_IS_MULTI);
	CHECK_EQ(VIS(h), AP_VIS_UNDECIDED);
	h = hdr(50, 60, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_COMMITTED);
	CHECK_EQ(VIS(h), AP_VIS_INVISIBLE);
	h = hdr(50, 150, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_COMMITTED);	/* xmax in xip */
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	h = hdr(50, 150, AP_HEAP_XMIN_COMMITTED);
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	h = hdr(50, 0, AP_HEAP_XMIN_COMMITTED);	/* xmax 0 without hint */
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	h = hdr(50, 300, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_COMMITTED);	/* >= xmax */
	CHECK_EQ(VIS(h), AP_VIS_NEED_XID);
	CHECK_EQ(need, 300);
	CHECK_EQ(ap_xidcache_put(&cache, 300, AP_XID_COMMITTED), 0);
	CHECK_EQ(VIS(h), AP_VIS_INVISIBLE);
	CHECK_EQ(ap_xidcache_put(&cache, 300, AP_XID_NOT_COMMITTED), 0);
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	CHECK_EQ(ap_xidcache_put(&cache, 300, AP_XID_CURRENT), 0);
	CHECK_EQ(VIS(h), AP_VIS_UNDECIDED);
	h = hdr(50, 70, AP_HEAP_XMIN_COMMITTED);	/* no hint: ask about xmax */
	CHECK_EQ(VIS(h), AP_VIS_NEED_XID);
	CHECK_EQ(need, 70);
	CHECK_EQ(ap_xidcache_put(&cache, 70, AP_XID_NOT_COMMITTED), 0);
	CHECK_EQ(VIS(h), AP_VIS_VISIBLE);
	CHECK_EQ(ap_xidcache_put(&cache, 70, AP_XID_COMMITTED), 0);
	CHECK_EQ(VIS(h), AP_VIS_INVISIBLE);
	/* xmin undecided wins over anything about xmax */
	h = hdr(80, 70, 0);
	CHECK_EQ(VIS(h), AP_VIS_NEED_XID);
	CHECK_EQ(need, 80);
#undef VIS

	/* cache: grow through many entries, then read all back */
	for (uint32_t x = 1000; x < 21000; x++)
		CHECK_EQ(ap_xidcache_put(&cache, x * 7, (int) (x % 3) + 1), 0);
	{
		int			wrong = 0;

		for (uint32_t x = 1000; x < 21000; x++)
			if (ap_xidcache_get(&cache, x * 7) != (int) (x % 3) + 1)
				wrong++;
		CHECK_EQ(wrong, 0);
	}
	CHECK_EQ(ap_xidcache_get(&cache, 5), 0);
	CHECK_EQ(ap_xidcache_get(&cache, 60), AP_XID_COMMITTED);
	CHECK((cache.cap & (cache.cap - 1)) == 0 && cache.count * 4 <= cache.cap * 3);
	ap_xidcache_free(&cache);
	CHECK_EQ(ap_xidcache_get(&cache, 60), 0);
}

/* Run the visibility tests; nonzero exit on any failure. */
int
main(void)
{
	test_visibility();
	return TEST_DONE();
}
