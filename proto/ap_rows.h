/*
 * ap_rows.h
 *	  Layout of the rows inside RowBatch.rows, shared by both sides.
 *
 * The disk writes projected values in PostgreSQL's own on-disk datum format,
 * so the host points slot values straight into the (MAXALIGN'd) batch buffer.
 *
 *   batch := row*            each row starts at an 8-byte-aligned offset
 *   row   := header [tid] [bitmap] pad data
 *   header:  uint32 row_bytes   bytes from the row start to the end of its data
 *            uint16 flags       AP_ROW_HASNULLS, AP_ROW_HASTID
 *            uint16 natts       number of projected values (= Program.project)
 *   tid:     present iff AP_ROW_HASTID: uint64 AP_TID_PACK(block, offset) of
 *            the heap tuple the row was made of.  Every scan row has one (the
 *            host's scan slot carries it, as a sequential scan's does, for
 *            WHERE CURRENT OF); aggregation rows have none.
 *   bitmap:  present iff AP_ROW_HASNULLS; (natts + 7) / 8 bytes, bit i set
 *            means value i is NOT null (as heap tuples' t_bits)
 *   data:    starts at AP_ROW_DATA_OFFSET(flags, natts) from the row start;
 *            non-null values in order, placed by heap_fill_tuple's rules:
 *            fixed-length values aligned to their attalign; varlena values
 *            with a 1-byte header (short or external TOAST pointer) unaligned,
 *            others aligned to attalign; padding bytes are zero.
 *
 * Values are copied exactly as stored in the heap tuple (short headers,
 * inline-compressed values and external TOAST pointers included), so the
 * host's slot holds what a sequential scan's slot would.
 */
#ifndef AP_ROWS_H
#define AP_ROWS_H

#include <stdint.h>

#define AP_ROW_ALIGN				8
#define AP_ROW_HEADER_BYTES			8
#define AP_ROW_HASNULLS				0x0001
#define AP_ROW_HASTID				0x0002
#define AP_ROW_TID_BYTES			8

#define AP_ROW_ALIGN_UP(n)			(((n) + (AP_ROW_ALIGN - 1)) & ~((uint32_t) (AP_ROW_ALIGN - 1)))
#define AP_ROW_BITMAP_BYTES(natts)	(((natts) + 7) / 8)
#define AP_ROW_BITMAP_OFFSET(flags) \
	(AP_ROW_HEADER_BYTES + (((flags) & AP_ROW_HASTID) ? AP_ROW_TID_BYTES : 0))
#define AP_ROW_DATA_OFFSET(flags, natts) \
	AP_ROW_ALIGN_UP(AP_ROW_BITMAP_OFFSET(flags) + \
					(((flags) & AP_ROW_HASNULLS) ? AP_ROW_BITMAP_BYTES(natts) : 0))

typedef struct ApRowHeader
{
	uint32_t	row_bytes;
	uint16_t	flags;
	uint16_t	natts;
} ApRowHeader;

#endif							/* AP_ROWS_H */
