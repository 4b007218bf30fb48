/*
 * layout_check.c
 *	  Compile-time proof that the disk daemon's copies of PostgreSQL's page
 *	  and tuple constants equal the server's.
 *
 * diskd decodes heap pages without PostgreSQL's headers (it is a program
 * of its own), so it keeps the facts it needs in common/ap_heap.h.  This unit
 * is compiled with both: a constant that differs in the server the
 * extension is built against stops the build here, instead of a daemon
 * misreading pages.  It holds no code.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "storage/bufpage.h"
#include "storage/itemid.h"
#include "storage/itemptr.h"

#include "ap_heap.h"
#include "ap_wire.h"

/* the relation files (pg_config.h) */
StaticAssertDecl(BLCKSZ == AP_BLCKSZ, "diskd reads 8 kB pages");
StaticAssertDecl(RELSEG_SIZE == AP_RELSEG_BLOCKS, "diskd reads 1 GB segment files");

/* the page (bufpage.h, itemid.h) */
StaticAssertDecl(AP_PAGE_HEADER_BYTES == SizeOfPageHeaderData, "page header size");
StaticAssertDecl(AP_ITEMID_BYTES == sizeof(ItemIdData), "line pointer size");
StaticAssertDecl(AP_LP_UNUSED == LP_UNUSED && AP_LP_NORMAL == LP_NORMAL &&
				 AP_LP_REDIRECT == LP_REDIRECT && AP_LP_DEAD == LP_DEAD,
				 "line pointer states");
StaticAssertDecl(AP_PD_ALL_VISIBLE == PD_ALL_VISIBLE, "page flag all-visible");
StaticAssertDecl(AP_PG_PAGE_LAYOUT_VERSION == PG_PAGE_LAYOUT_VERSION, "page layout version");

/* the tuple header (htup_details.h) */
StaticAssertDecl(AP_TUPLE_HEADER_MIN == offsetof(HeapTupleHeaderData, t_bits),
				 "tuple header size before the null bitmap");
StaticAssertDecl(AP_HEAP_HASNULL == HEAP_HASNULL && AP_HEAP_HASVARWIDTH == HEAP_HASVARWIDTH &&
				 AP_HEAP_HASEXTERNAL == HEAP_HASEXTERNAL, "infomask: attribute flags");
StaticAssertDecl(AP_HEAP_XMAX_KEYSHR_LOCK == HEAP_XMAX_KEYSHR_LOCK &&
				 AP_HEAP_COMBOCID == HEAP_COMBOCID &&
				 AP_HEAP_XMAX_EXCL_LOCK == HEAP_XMAX_EXCL_LOCK &&
				 AP_HEAP_XMAX_LOCK_ONLY == HEAP_XMAX_LOCK_ONLY &&
				 AP_HEAP_LOCK_MASK == HEAP_LOCK_MASK, "infomask: locks");
StaticAssertDecl(AP_HEAP_XMIN_COMMITTED == HEAP_XMIN_COMMITTED &&
				 AP_HEAP_XMIN_INVALID == HEAP_XMIN_INVALID &&
				 AP_HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN &&
				 AP_HEAP_XMAX_COMMITTED == HEAP_XMAX_COMMITTED &&
				 AP_HEAP_XMAX_INVALID == HEAP_XMAX_INVALID &&
				 AP_HEAP_XMAX_IS_MULTI == HEAP_XMAX_IS_MULTI, "infomask: hint bits");
StaticAssertDecl(AP_HEAP_UPDATED == HEAP_UPDATED && AP_HEAP_MOVED_OFF == HEAP_MOVED_OFF &&
				 AP_HEAP_MOVED_IN == HEAP_MOVED_IN && AP_HEAP_MOVED == HEAP_MOVED,
				 "infomask: updated and moved");
StaticAssertDecl(AP_HEAP_NATTS_MASK == HEAP_NATTS_MASK, "infomask2: number of attributes");
StaticAssertDecl(AP_SPEC_TOKEN_OFFSET == SpecTokenOffsetNumber, "speculative insertion token");
