/*
 * ap_heap.h
 *	  Facts of PostgreSQL's heap page and tuple header formats.
 *
 * The disk daemon decodes pages without PostgreSQL's headers; these are
 * its copies of the constants it needs, shared with the host code that
 * reuses its decoders.  extension/layout_check.c proves at compile time
 * that each equals the server's.
 */
#ifndef AP_HEAP_H
#define AP_HEAP_H

#include <stdint.h>

/* Facts of PostgreSQL's heap page format (bufpage.h, itemid.h). */
#define AP_PAGE_HEADER_BYTES	24
#define AP_ITEMID_BYTES			4
#define AP_LP_UNUSED			0
#define AP_LP_NORMAL			1
#define AP_LP_REDIRECT			2
#define AP_LP_DEAD				3
#define AP_PD_ALL_VISIBLE		0x0004
#define AP_PG_PAGE_LAYOUT_VERSION 4

/* Heap tuple header facts (htup_details.h). */
#define AP_HEAP_HASNULL			0x0001
#define AP_HEAP_HASVARWIDTH		0x0002
#define AP_HEAP_HASEXTERNAL		0x0004
#define AP_HEAP_XMAX_KEYSHR_LOCK 0x0010
#define AP_HEAP_COMBOCID		0x0020
#define AP_HEAP_XMAX_EXCL_LOCK	0x0040
#define AP_HEAP_XMAX_LOCK_ONLY	0x0080
#define AP_HEAP_XMIN_COMMITTED	0x0100
#define AP_HEAP_XMIN_INVALID	0x0200
#define AP_HEAP_XMIN_FROZEN		(AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMIN_INVALID)
#define AP_HEAP_XMAX_COMMITTED	0x0400
#define AP_HEAP_XMAX_INVALID	0x0800
#define AP_HEAP_XMAX_IS_MULTI	0x1000
#define AP_HEAP_UPDATED			0x2000
#define AP_HEAP_MOVED_OFF		0x4000
#define AP_HEAP_MOVED_IN		0x8000
#define AP_HEAP_MOVED			(AP_HEAP_MOVED_OFF | AP_HEAP_MOVED_IN)
#define AP_HEAP_LOCK_MASK		(AP_HEAP_XMAX_KEYSHR_LOCK | AP_HEAP_XMAX_EXCL_LOCK)
#define AP_HEAP_NATTS_MASK		0x07FF
#define AP_SPEC_TOKEN_OFFSET	0xfffe
#define AP_TUPLE_HEADER_MIN		23	/* offsetof(HeapTupleHeaderData, t_bits) */

/* What the decoder reads out of a tuple header. */
typedef struct ApTupleHeader
{
	uint32_t	xmin;
	uint32_t	xmax;
	uint16_t	infomask;
	uint16_t	infomask2;
	uint16_t	ctid_offset;	/* ip_posid of t_ctid (speculative token check) */
	uint8_t		hoff;
	int			natts;			/* HeapTupleHeaderGetNatts */
} ApTupleHeader;

#endif							/* AP_HEAP_H */
