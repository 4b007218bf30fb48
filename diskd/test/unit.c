/*
 * unit.c
 *	  Unit tests of diskd's pure layers (page .. rowenc, but the expression
 *	  VM: unit_vm.c, and visibility: unit_vis.c); no server needed.
 *
 * Rules of this file:
 *  - Inputs are built byte by byte from the documented formats, not with the
 *    code under test, so a wrong decoder cannot agree with a wrong encoder.
 *    The one exception is rowenc, checked by an independent decoder here.
 *  - Expected results are written out as literal tables (3VL, visibility),
 *    not recomputed with the same logic.
 *  - Every allocation is freed so valgrind runs clean.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskd.h"
#include "testutil.h"
#include "exprbuild.h"
#include "bytes.h"

/* ---------------- helpers ---------------- */




/* An empty, valid heap page. */
static void
page_init(unsigned char *page)
{
	memset(page, 0, AP_BLCKSZ);
	put16(page + 12, 24);
	put16(page + 14, AP_BLCKSZ);
	put16(page + 16, AP_BLCKSZ);
	put16(page + 18, AP_BLCKSZ | 4);
}

/* Add an item (as PageAddItem would: MAXALIGN'd from the top); returns offnum. */
static int
page_add(unsigned char *page, const unsigned char *item, unsigned len)
{
	uint16_t	lower,
				upper;
	unsigned	aligned = (len + 7) & ~7u;
	uint32_t	lp;

	memcpy(&lower, page + 12, 2);
	memcpy(&upper, page + 14, 2);
	upper -= aligned;
	memcpy(page + upper, item, len);
	lp = (uint32_t) upper | (1u << 15) | ((uint32_t) len << 17);
	put32(page + lower, lp);
	lower += 4;
	put16(page + 12, lower);
	put16(page + 14, upper);
	return (lower - 24) / 4;
}

/* Write a heap tuple header: natts, infomask, hoff; returns hoff. */
static void
tup_header(unsigned char *t, uint32_t xmin, uint32_t xmax, int natts,
		   uint16_t infomask, uint8_t hoff)
{
	memset(t, 0, hoff);
	put32(t + 0, xmin);
	put32(t + 4, xmax);
	put16(t + 16, 1);			/* ctid offset */
	put16(t + 18, (uint16_t) natts);
	put16(t + 20, infomask);
	t[22] = hoff;
}

/* ---------------- page.c ---------------- */

/* Deterministic page used for the golden checksum (see test_page). */
static void
golden_page(unsigned char *p)
{
	for (int i = 0; i < AP_BLCKSZ; i++)
		p[i] = (unsigned char) ((i * 131 + 7) & 0xFF);
}

/* page.c: structure checks, line pointers, checksum (incl. golden values). */
static void
test_page(void)
{
	static unsigned char page[AP_BLCKSZ];
	unsigned char tup[64];
	unsigned	fl,
				off,
				len;
	uint16_t	ck;

	/* all zero: a new page */
	memset(page, 0, sizeof(page));
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_NEW);
	CHECK_EQ(ap_page_check(page, 0, true), AP_PAGE_NEW);

	/* valid page with two tuples */
	page_init(page);
	tup_header(tup, 100, 0, 1, AP_HEAP_XMAX_INVALID, 24);
	put32(tup + 24, 42);
	CHECK_EQ(page_add(page, tup, 28), 1);
	CHECK_EQ(page_add(page, tup, 28), 2);
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_OK);
	CHECK_EQ(ap_page_nitems(page), 2);
	ap_page_item(page, 1, &fl, &off, &len);
	CHECK_EQ(fl, AP_LP_NORMAL);
	CHECK_EQ(off, AP_BLCKSZ - 32);
	CHECK_EQ(len, 28);
	ap_page_item(page, 2, &fl, &off, &len);
	CHECK_EQ(off, AP_BLCKSZ - 64);
	CHECK(!ap_page_all_visible(page));
	put16(page + 10, AP_PD_ALL_VISIBLE);
	CHECK(ap_page_all_visible(page));
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_OK);

	/* bad pd_lower: inside the header, and above pd_upper */
	put16(page + 12, 20);
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_BAD);
	put16(page + 12, AP_BLCKSZ - 32);
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_BAD);
	put16(page + 12, 32);
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_OK);

	/* special space / version / page size / unknown flags */
	put16(page + 16, AP_BLCKSZ - 8);
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_BAD);
	put16(page + 16, AP_BLCKSZ);
	put16(page + 18, AP_BLCKSZ | 3);
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_BAD);
	put16(page + 18, 4096 | 4);
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_BAD);
	put16(page + 18, AP_BLCKSZ | 4);
	put16(page + 10, 0x0100);
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_BAD);
	put16(page + 10, 0);
	CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_OK);

	/* item running off the page; item below pd_upper; too short; unaligned */
	{
		uint32_t	saved;

		memcpy(&saved, page + 24, 4);
		put32(page + 24, (uint32_t) (AP_BLCKSZ - 16) | (1u << 15) | (28u << 17));
		CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_BAD);
		put32(page + 24, (uint32_t) 64 | (1u << 15) | (28u << 17));
		CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_BAD);
		put32(page + 24, (uint32_t) (AP_BLCKSZ - 32) | (1u << 15) | (20u << 17));
		CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_BAD);
		put32(page + 24, (uint32_t) (AP_BLCKSZ - 36) | (1u << 15) | (28u << 17));
		CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_BAD);
		/* the same bogus values in an LP_DEAD/UNUSED pointer are ignored */
		put32(page + 24, (uint32_t) (AP_BLCKSZ - 16) | (3u << 15) | (28u << 17));
		CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_OK);
		put32(page + 24, saved);
		CHECK_EQ(ap_page_check(page, 0, false), AP_PAGE_OK);
	}

	/* checksum: right, wrong after a flipped byte, wrong block number */
	ck = ap_page_checksum(page, 7);
	put16(page + 8, ck);
	CHECK_EQ(ap_page_checksum(page, 7), ck);	/* the field itself is excluded */
	CHECK_EQ(ap_page_check(page, 7, true), AP_PAGE_OK);
	CHECK_EQ(ap_page_check(page, 8, true), AP_PAGE_BAD);
	page[AP_BLCKSZ - 10] ^= 0x01;
	CHECK(ap_page_checksum(page, 7) != ck);
	CHECK_EQ(ap_page_check(page, 7, true), AP_PAGE_BAD);
	CHECK_EQ(ap_page_check(page, 7, false), AP_PAGE_OK);
	page[AP_BLCKSZ - 10] ^= 0x01;
	CHECK_EQ(ap_page_check(page, 7, true), AP_PAGE_OK);
	CHECK(ap_page_checksum(page, 7) >= 1);

	/*
	 * Golden values: PostgreSQL 15's pg_checksum_page() on golden_page()
	 * gives 39725 for block 0 and 43860 for block 12345 (computed once with
	 * the server's own implementation; kept here as constants).
	 */
	golden_page(page);
	CHECK_EQ(ap_page_checksum(page, 0), 39725);
	CHECK_EQ(ap_page_checksum(page, 12345), 43860);
	page[100] ^= 0x80;
	CHECK(ap_page_checksum(page, 0) != 39725);
}

/* ---------------- tuple.c ---------------- */


/* tuple.c: header checks, alignment, nulls, varlena forms, truncation. */
static void
test_tuple(void)
{
	unsigned char t[256];
	ApTupleHeader h;
	ApValue		v[8];
	ApColumn	cols[8];
	ApTupleDesc desc = {0, cols, 0};
	unsigned char *d;

	/* header fields */
	tup_header(t, 1234, 5678, 3, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_INVALID, 24);
	put16(t + 16, 0xfffe);
	CHECK_EQ(ap_tuple_header(t, 40, &h), AP_OK);
	CHECK_EQ(h.xmin, 1234);
	CHECK_EQ(h.xmax, 5678);
	CHECK_EQ(h.natts, 3);
	CHECK_EQ(h.infomask, AP_HEAP_XMIN_COMMITTED | AP_HEAP_XMAX_INVALID);
	CHECK_EQ(h.ctid_offset, 0xfffe);
	CHECK_EQ(h.hoff, 24);
	CHECK_EQ(ap_tuple_header(t, 22, &h), AP_FALLBACK);	/* shorter than a header */
	CHECK_EQ(ap_tuple_header(t, 23, &h), AP_FALLBACK);	/* hoff 24 > len */
	t[22] = 16;
	CHECK_EQ(ap_tuple_header(t, 40, &h), AP_FALLBACK);	/* hoff < 23 */
	t[22] = 28;
	CHECK_EQ(ap_tuple_header(t, 40, &h), AP_FALLBACK);	/* not MAXALIGN'd */
	/* HASNULL with 9 attributes needs 2 bitmap bytes: 23 + 2 > 24 */
	tup_header(t, 1, 0, 9, AP_HEAP_HASNULL, 24);
	CHECK_EQ(ap_tuple_header(t, 40, &h), AP_FALLBACK);
	tup_header(t, 1, 0, 8, AP_HEAP_HASNULL, 24);
	CHECK_EQ(ap_tuple_header(t, 40, &h), AP_OK);

	/*
	 * Alignment: int2 @0, int4 @4, int8 @8, short text @16 (unaligned
	 * allowed), int2 @22 ('s' after a 5-byte value at 16 ends at 21 -> 22).
	 */
	cols[0] = col(2, 's', AP_TYPE_INT2);
	cols[1] = col(4, 'i', AP_TYPE_INT4);
	cols[2] = col(8, 'd', AP_TYPE_INT8);
	cols[3] = col(-1, 'i', AP_TYPE_TEXT);
	cols[4] = col(2, 's', AP_TYPE_INT2);
	desc.natts = 5;
	memset(t, 0, sizeof(t));
	tup_header(t, 1, 0, 5, 0, 24);
	d = t + 24;
	put16(d + 0, (uint16_t) -7);
	put32(d + 4, 100000);
	put64(d + 8, UINT64_C(0x0102030405060708));
	d[16] = (5 << 1) | 1;		/* short varlena, 4 payload bytes */
	memcpy(d + 17, "abcd", 4);
	put16(d + 22, 77);
	CHECK_EQ(ap_tuple_header(t, 24 + 24, &h), AP_OK);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 24, &h, 5, v), AP_OK);
	CHECK(v[0].ptr == d && v[0].len == 2 && !v[0].isnull);
	CHECK(v[1].ptr == d + 4 && v[1].len == 4);
	CHECK(v[2].ptr == d + 8 && v[2].len == 8);
	CHECK(v[3].ptr == d + 16 && v[3].len == 5);
	CHECK(v[4].ptr == d + 22 && v[4].len == 2);
	/* partial deform and truncation */
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 24, &h, 3, v), AP_OK);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 23, &h, 5, v), AP_FALLBACK);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 15, &h, 3, v), AP_FALLBACK);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 19, &h, 4, v), AP_FALLBACK);	/* varlena cut */
	/* the same through the cached offsets of the leading fixed attributes */
	ap_tupdesc_cache_offsets(&desc);
	CHECK_EQ(desc.ncached, 3);
	CHECK_EQ(cols[1].cacheoff, 4);
	CHECK_EQ(cols[2].cacheoff, 8);
	memset(v, 0, sizeof(v));
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 24, &h, 5, v), AP_OK);
	CHECK(v[0].ptr == d && v[0].len == 2 && !v[0].isnull);
	CHECK(v[1].ptr == d + 4 && v[1].len == 4 && !v[1].isnull);
	CHECK(v[2].ptr == d + 8 && v[2].len == 8 && !v[2].isnull);
	CHECK(v[3].ptr == d + 16 && v[3].len == 5);
	CHECK(v[4].ptr == d + 22 && v[4].len == 2);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 24, &h, 2, v), AP_OK);
	CHECK(v[1].ptr == d + 4 && v[1].len == 4);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 15, &h, 3, v), AP_FALLBACK);	/* int8 cut */
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 15, &h, 2, v), AP_OK);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 23, &h, 5, v), AP_FALLBACK);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 19, &h, 4, v), AP_FALLBACK);
	desc.ncached = 0;
	/* missing attribute: the tuple has 5, ask for 6 */
	cols[5] = col(4, 'i', AP_TYPE_INT4);
	desc.natts = 6;
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 24, &h, 6, v), AP_FALLBACK);
	/* a dropped column still occupies its bytes */
	cols[1].attisdropped = true;
	desc.natts = 5;
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 24, &h, 5, v), AP_OK);
	CHECK(v[2].ptr == d + 8 && v[3].ptr == d + 16);
	cols[1].attisdropped = false;

	/* long (4-byte header) varlena after an int2: aligned to 4 over zero padding */
	cols[0] = col(2, 's', AP_TYPE_INT2);
	cols[1] = col(-1, 'i', AP_TYPE_TEXT);
	cols[2] = col(-1, 'i', AP_TYPE_TEXT);
	desc.natts = 3;
	memset(t, 0, sizeof(t));
	tup_header(t, 1, 0, 3, AP_HEAP_HASVARWIDTH, 24);
	d = t + 24;
	put16(d, 1);
	put32(d + 4, (uint32_t) (4 + 130) << 2);	/* 4-byte header, 130 bytes */
	memset(d + 8, 'x', 130);
	d[138] = (3 << 1) | 1;		/* short "yz" right after, unaligned */
	d[139] = 'y';
	d[140] = 'z';
	CHECK_EQ(ap_tuple_header(t, 24 + 141, &h), AP_OK);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 141, &h, 3, v), AP_OK);
	CHECK(v[1].ptr == d + 4 && v[1].len == 134);
	CHECK(v[2].ptr == d + 138 && v[2].len == 3);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 140, &h, 3, v), AP_FALLBACK);
	/* in two steps, resuming after the long value */
	memset(v, 0, sizeof(v));
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 141, &h, 2, v), AP_OK);
	CHECK_EQ(ap_tuple_deform_more(&desc, t, 24 + 141, &h, 2, 3, v), AP_OK);
	CHECK(v[1].ptr == d + 4 && v[1].len == 134);
	CHECK(v[2].ptr == d + 138 && v[2].len == 3);
	CHECK_EQ(ap_tuple_deform_more(&desc, t, 24 + 140, &h, 2, 3, v), AP_FALLBACK);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 137, &h, 2, v), AP_FALLBACK);
	/* a 4-byte header claiming less than its own size */
	put32(d + 4, 2u << 2);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 141, &h, 2, v), AP_FALLBACK);

	/* nulls: bitmap 0b101 -> attribute 2 null; data: int4, int4 */
	cols[0] = col(4, 'i', AP_TYPE_INT4);
	cols[1] = col(8, 'd', AP_TYPE_INT8);
	cols[2] = col(4, 'i', AP_TYPE_INT4);
	desc.natts = 3;
	memset(t, 0, sizeof(t));
	tup_header(t, 1, 0, 3, AP_HEAP_HASNULL, 24);
	t[23] = 0x05;
	d = t + 24;
	put32(d, 11);
	put32(d + 4, 33);
	CHECK_EQ(ap_tuple_header(t, 32, &h), AP_OK);
	CHECK_EQ(ap_tuple_deform(&desc, t, 32, &h, 3, v), AP_OK);
	CHECK(!v[0].isnull && v[0].ptr == d);
	CHECK(v[1].isnull && v[1].ptr == NULL);
	CHECK(!v[2].isnull && v[2].ptr == d + 4);	/* no int8 alignment: it was null */
	/* a tuple with nulls never uses the cached offsets */
	ap_tupdesc_cache_offsets(&desc);
	CHECK_EQ(desc.ncached, 3);
	CHECK_EQ(ap_tuple_deform(&desc, t, 32, &h, 3, v), AP_OK);
	CHECK(v[1].isnull && v[1].ptr == NULL);
	CHECK(!v[2].isnull && v[2].ptr == d + 4);
	/* resuming after a null attribute continues from the last non-null one */
	memset(v, 0, sizeof(v));
	CHECK_EQ(ap_tuple_deform(&desc, t, 32, &h, 2, v), AP_OK);
	CHECK_EQ(ap_tuple_deform_more(&desc, t, 32, &h, 2, 3, v), AP_OK);
	CHECK(v[1].isnull && !v[2].isnull && v[2].ptr == d + 4);
	CHECK_EQ(ap_tuple_deform_more(&desc, t, 32, &h, 3, 3, v), AP_OK);
	CHECK_EQ(ap_tuple_deform_more(&desc, t, 32, &h, 1, 4, v), AP_FALLBACK);	/* past natts */
	desc.ncached = 0;

	/* cstring (attlen -2) and external TOAST pointer */
	cols[0] = col(-2, 'c', AP_TYPE_OTHER);
	cols[1] = col(-1, 'i', AP_TYPE_TEXT);
	cols[2] = col(1, 'c', AP_TYPE_BOOL);
	desc.natts = 3;
	memset(t, 0, sizeof(t));
	tup_header(t, 1, 0, 3, AP_HEAP_HASEXTERNAL, 24);
	d = t + 24;
	memcpy(d, "hi", 3);
	d[3] = 0x01;
	d[4] = 18;					/* VARTAG_ONDISK */
	memset(d + 5, 0xAA, 16);
	d[21] = 1;
	CHECK_EQ(ap_tuple_header(t, 24 + 22, &h), AP_OK);
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 22, &h, 3, v), AP_OK);
	CHECK(v[0].ptr == d && v[0].len == 3);
	CHECK(v[1].ptr == d + 3 && v[1].len == 18);
	CHECK(v[2].ptr == d + 21 && v[2].len == 1);
	d[4] = 1;					/* VARTAG_INDIRECT cannot be on disk */
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 22, &h, 3, v), AP_FALLBACK);
	d[4] = 18;
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 20, &h, 2, v), AP_FALLBACK);	/* pointer cut */
	memset(d, 'q', 3);			/* unterminated cstring */
	CHECK_EQ(ap_tuple_deform(&desc, t, 24 + 3, &h, 1, v), AP_FALLBACK);
}

/* ---------------- varlena.c ---------------- */

/* varlena.c: headers, payloads and pglz streams, well-formed and corrupt. */
static void
test_pglz(void)
{
	unsigned char out[512];
	unsigned char dat[600];
	unsigned char scratch[256];
	const unsigned char *data;
	uint32_t	dlen;

	/* 9 literals: control byte 0x00 covers 8, then another control byte */
	{
		const unsigned char s[] = {0x00, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 0x00, 'i'};

		CHECK_EQ(ap_pglz_decompress(s, sizeof(s), out, 9), 9);
		CHECK_MEM(out, "abcdefghi", 9);
		/* rawsize too big: output ends early */
		CHECK_EQ(ap_pglz_decompress(s, sizeof(s), out, 10), -1);
		/* rawsize too small: input left over */
		CHECK_EQ(ap_pglz_decompress(s, sizeof(s), out, 8), -1);
	}
	/* "ab" then a tag off=2 len=10 overlapping its own output */
	{
		const unsigned char s[] = {0x04, 'a', 'b', (unsigned char) (10 - 3), 0x02};

		CHECK_EQ(ap_pglz_decompress(s, sizeof(s), out, 12), 12);
		CHECK_MEM(out, "abababababab", 12);
		/* a copy past rawsize is clipped, as PostgreSQL does */
		CHECK_EQ(ap_pglz_decompress(s, sizeof(s), out, 7), 7);
		CHECK_MEM(out, "abababa", 7);
	}
	/* run of 101 'z': literal then a long tag (len 18 + extra byte 82 = 100) */
	{
		const unsigned char s[] = {0x02, 'z', 0x0f, 0x01, 82};

		CHECK_EQ(ap_pglz_decompress(s, sizeof(s), out, 101), 101);
		CHECK(out[0] == 'z' && out[100] == 'z' && memchr(out, 'y', 101) == NULL);
	}
	/* a 12-bit offset: 300 literals then copy 5 bytes from 300 back */
	{
		unsigned char s[400];
		int			n = 0;
		int			lit = 0;

		while (lit < 300)
		{
			s[n++] = 0x00;
			for (int k = 0; k < 8 && lit < 300; k++, lit++)
				s[n++] = (unsigned char) ('A' + lit % 26);
		}
		/* 300 = 37*8 + 4: last control byte has 4 literals, bit 4 is the tag */
		s[n - 5] = 0x10;
		s[n++] = (unsigned char) (((300 >> 4) & 0xf0) | (5 - 3));
		s[n++] = (unsigned char) (300 & 0xff);
		CHECK_EQ(ap_pglz_decompress(s, n, out, 305), 305);
		CHECK_MEM(out + 300, "ABCDE", 5);
	}
	/* corrupt streams */
	{
		const unsigned char off0[] = {0x02, 'a', 0x00, 0x00};
		const unsigned char offbig[] = {0x02, 'a', 0x00, 0x02};
		const unsigned char cut1[] = {0x02, 'a', 0x00};
		const unsigned char cut2[] = {0x02, 'a', 0x0f, 0x01};
		const unsigned char first[] = {0x01, 0x00, 0x01};

		CHECK_EQ(ap_pglz_decompress(off0, sizeof(off0), out, 4), -1);
		CHECK_EQ(ap_pglz_decompress(offbig, sizeof(offbig), out, 4), -1);
		CHECK_EQ(ap_pglz_decompress(cut1, sizeof(cut1), out, 4), -1);
		CHECK_EQ(ap_pglz_decompress(cut2, sizeof(cut2), out, 40), -1);
		CHECK_EQ(ap_pglz_decompress(first, sizeof(first), out, 3), -1);
		CHECK_EQ(ap_pglz_decompress(first, -1, out, 3), -1);
		CHECK_EQ(ap_pglz_decompress(first, 0, out, 0), 0);
	}
	/* random garbage: must never crash or overrun (valgrind watches) */
	{
		unsigned	seed = 12345;

		for (int iter = 0; iter < 20000; iter++)
		{
			unsigned char *src;
			unsigned char *dst;
			int			slen,
						rlen,
						r;

			seed = seed * 1103515245 + 12345;
			slen = (int) ((seed >> 16) % 40);
			seed = seed * 1103515245 + 12345;
			rlen = (int) ((seed >> 16) % 80);
			src = malloc(slen > 0 ? slen : 1);
			dst = malloc(rlen > 0 ? rlen : 1);
			for (int k = 0; k < slen; k++)
			{
				seed = seed * 1103515245 + 12345;
				src[k] = (unsigned char) (seed >> 16);
			}
			r = ap_pglz_decompress(src, slen, dst, rlen);
			CHECK(r == -1 || r == rlen);
			free(src);
			free(dst);
		}
	}

	/* headers */
	dat[0] = 0x01;
	dat[1] = 18;
	CHECK(ap_varlena_is_1b(dat) && ap_varlena_is_external(dat));
	CHECK_EQ(ap_varlena_size_any(dat), 18);
	CHECK_EQ(ap_varlena_payload(dat, scratch, sizeof(scratch), &data, &dlen), AP_FALLBACK);
	dat[0] = (4 << 1) | 1;
	memcpy(dat + 1, "xyz", 3);
	CHECK(ap_varlena_is_1b(dat) && !ap_varlena_is_external(dat) && !ap_varlena_is_compressed(dat));
	CHECK_EQ(ap_varlena_size_any(dat), 4);
	CHECK_EQ(ap_varlena_payload(dat, scratch, sizeof(scratch), &data, &dlen), AP_OK);
	CHECK(data == dat + 1 && dlen == 3);
	put32(dat, (uint32_t) 304 << 2);
	CHECK(!ap_varlena_is_1b(dat) && !ap_varlena_is_compressed(dat));
	CHECK_EQ(ap_varlena_size_any(dat), 304);
	CHECK_EQ(ap_varlena_payload(dat, scratch, sizeof(scratch), &data, &dlen), AP_OK);
	CHECK(data == dat + 4 && dlen == 300);

	/* inline-compressed datum: "ab" x 6 via pglz */
	{
		const unsigned char s[] = {0x04, 'a', 'b', (unsigned char) (10 - 3), 0x02};

		put32(dat, ((uint32_t) (8 + sizeof(s)) << 2) | 0x02);
		put32(dat + 4, 12);
		memcpy(dat + 8, s, sizeof(s));
		CHECK(ap_varlena_is_compressed(dat));
		CHECK_EQ(ap_varlena_size_any(dat), 8 + sizeof(s));
		CHECK_EQ(ap_varlena_payload(dat, scratch, sizeof(scratch), &data, &dlen), AP_OK);
		CHECK(data == scratch && dlen == 12);
		CHECK_MEM(scratch, "abababababab", 12);
		CHECK_EQ(ap_varlena_payload(dat, scratch, 11, &data, &dlen), AP_FALLBACK);
		put32(dat + 4, 12 | (1u << 30));	/* lz4 */
		CHECK_EQ(ap_varlena_payload(dat, scratch, sizeof(scratch), &data, &dlen), AP_FALLBACK);
		put32(dat + 4, 13);		/* wrong raw size: corrupt */
		CHECK_EQ(ap_varlena_payload(dat, scratch, sizeof(scratch), &data, &dlen), AP_FALLBACK);
	}
}

/* ---------------- numeric.c ---------------- */

/* Build a short-form numeric payload; returns its length. */
static uint32_t
num_short(unsigned char *p, bool neg, int dscale, int weight, const int *dig, int n)
{
	uint16_t	h = 0x8000 | (neg ? 0x2000 : 0) | (uint16_t) (dscale << 7) |
		(weight < 0 ? 0x0040 : 0) | (uint16_t) (weight & 0x3F);

	put16(p, h);
	for (int i = 0; i < n; i++)
		put16(p + 2 + 2 * i, (uint16_t) dig[i]);
	return 2 + 2 * n;
}

/* Build a long-form numeric payload; returns its length. */
static uint32_t
num_long(unsigned char *p, bool neg, int dscale, int weight, const int *dig, int n)
{
	put16(p, (uint16_t) ((neg ? 0x4000 : 0) | dscale));
	put16(p + 2, (uint16_t) (int16_t) weight);
	for (int i = 0; i < n; i++)
		put16(p + 4 + 2 * i, (uint16_t) dig[i]);
	return 4 + 2 * n;
}

/* Decode a payload, expecting success. */
static ApNumeric
dec(const unsigned char *p, uint32_t len)
{
	ApNumeric	n;

	CHECK_EQ(ap_numeric_decode(p, len, &n), AP_OK);
	return n;
}

/* numeric.c: both storage forms, specials, numeric_cmp ordering. */
static void
test_numeric(void)
{
	/* buffers start at odd addresses: digits must be read unaligned */
	static unsigned char mem[16][80];
	unsigned char *b[16];
	uint32_t	l[16];
	ApNumeric	n[16];
	const int	d1_5[] = {1, 5000};
	const int	d2[] = {2};
	const int	dsmall[] = {1};
	const int	many1[] = {1234, 5678, 9012, 3456, 7890, 1234};
	const int	many2[] = {1234, 5678, 9012, 3456, 7890, 1235};
	const int	d10000a[] = {1, 0};
	const int	bad[] = {10000};

	for (int i = 0; i < 16; i++)
		b[i] = mem[i] + 1;

	l[0] = num_short(b[0], false, 2, 0, d1_5, 2);	/* 1.50 */
	l[1] = num_short(b[1], false, 1, 0, d1_5, 2);	/* 1.5 */
	l[2] = num_long(b[2], false, 1, 0, d1_5, 2);	/* 1.5 long form */
	l[3] = num_short(b[3], true, 1, 0, d1_5, 2);	/* -1.5 */
	l[4] = num_short(b[4], true, 0, 0, d2, 1);	/* -2 */
	l[5] = num_short(b[5], false, 0, 0, NULL, 0);	/* 0 */
	l[6] = num_short(b[6], true, 3, 0, NULL, 0);	/* zero with sign bit */
	l[7] = num_short(b[7], false, 4, -1, dsmall, 1);	/* 0.0001 */
	put16(b[8], 0xC000);
	l[8] = 2;					/* NaN */
	put16(b[9], 0xD000);
	l[9] = 2;					/* +inf */
	put16(b[10], 0xF000);
	l[10] = 2;					/* -inf */
	l[11] = num_long(b[11], false, 4, 5, many1, 6);
	l[12] = num_long(b[12], false, 4, 5, many2, 6);
	l[13] = num_long(b[13], false, 0, 1, d10000a, 2);	/* 10000, trailing zero digit */
	l[14] = num_short(b[14], false, 0, 1, dsmall, 1);	/* 10000 */
	l[15] = num_long(b[15], false, 0, 25, dsmall, 1);	/* 1e100 */
	for (int i = 0; i < 16; i++)
		n[i] = dec(b[i], l[i]);

	CHECK_EQ(n[0].dscale, 2);
	CHECK_EQ(n[0].weight, 0);
	CHECK_EQ(n[0].ndigits, 2);
	CHECK_EQ(n[7].weight, -1);
	CHECK(n[3].negative && !n[1].negative);
	CHECK_EQ(n[8].special, AP_NUM_NAN);
	CHECK_EQ(n[9].special, AP_NUM_PINF);
	CHECK_EQ(n[10].special, AP_NUM_NINF);
	CHECK_EQ(n[15].weight, 25);

	CHECK_EQ(ap_numeric_cmp(&n[0], &n[1]), 0);	/* 1.50 = 1.5 */
	CHECK_EQ(ap_numeric_cmp(&n[1], &n[2]), 0);	/* short = long */
	CHECK_EQ(ap_numeric_cmp(&n[3], &n[1]), -1);
	CHECK_EQ(ap_numeric_cmp(&n[1], &n[3]), 1);
	CHECK_EQ(ap_numeric_cmp(&n[4], &n[3]), -1);	/* -2 < -1.5 */
	CHECK_EQ(ap_numeric_cmp(&n[3], &n[4]), 1);
	CHECK_EQ(ap_numeric_cmp(&n[5], &n[6]), 0);	/* 0 = -0 */
	CHECK_EQ(ap_numeric_cmp(&n[6], &n[3]), 1);	/* 0 > -1.5 */
	CHECK_EQ(ap_numeric_cmp(&n[5], &n[7]), -1);	/* 0 < 0.0001 */
	CHECK_EQ(ap_numeric_cmp(&n[7], &n[1]), -1);
	CHECK_EQ(ap_numeric_cmp(&n[8], &n[8]), 0);	/* NaN = NaN */
	CHECK_EQ(ap_numeric_cmp(&n[8], &n[9]), 1);	/* NaN > +inf */
	CHECK_EQ(ap_numeric_cmp(&n[9], &n[8]), -1);
	CHECK_EQ(ap_numeric_cmp(&n[9], &n[15]), 1);	/* +inf > 1e100 */
	CHECK_EQ(ap_numeric_cmp(&n[9], &n[9]), 0);
	CHECK_EQ(ap_numeric_cmp(&n[10], &n[4]), -1);	/* -inf < -2 */
	CHECK_EQ(ap_numeric_cmp(&n[10], &n[10]), 0);
	CHECK_EQ(ap_numeric_cmp(&n[8], &n[10]), 1);
	CHECK_EQ(ap_numeric_cmp(&n[11], &n[12]), -1);	/* last of many digits */
	CHECK_EQ(ap_numeric_cmp(&n[12], &n[11]), 1);
	CHECK_EQ(ap_numeric_cmp(&n[11], &n[11]), 0);
	CHECK_EQ(ap_numeric_cmp(&n[13], &n[14]), 0);	/* missing digits are zero */
	CHECK_EQ(ap_numeric_cmp(&n[14], &n[1]), 1);
	CHECK_EQ(ap_numeric_cmp(&n[15], &n[11]), 1);

	/* invalid input */
	{
		ApNumeric	x;
		unsigned char p[8];

		CHECK_EQ(ap_numeric_decode(p, 1, &x), AP_FALLBACK);
		num_short(p, false, 0, 0, bad, 1);
		CHECK_EQ(ap_numeric_decode(p, 4, &x), AP_FALLBACK);
		put16(p, 0xE000);
		CHECK_EQ(ap_numeric_decode(p, 2, &x), AP_FALLBACK);
		put16(p, 0x0000);
		CHECK_EQ(ap_numeric_decode(p, 3, &x), AP_FALLBACK);	/* long form cut */
	}
}

/* ---------------- rowenc.c ---------------- */

/*
 * Independent decoder of proto/ap_rows.h rows: walks the batch like the host
 * would and compares every value with the original bytes.
 */
static void
check_rows(const ApRowBatchBuf *b, const ApTupleDesc *desc, const int *project,
		   int nproject, ApValue rows[][8], int nrows)
{
	uint32_t	pos = 0;

	CHECK_EQ(b->nrows, nrows);
	for (int r = 0; r < nrows; r++)
	{
		ApRowHeader h;
		const unsigned char *row;
		uint32_t	off;
		bool		hasnull = false;

		/* gap before the row is zero */
		while (pos % 8 != 0)
		{
			CHECK(pos < b->len);
			CHECK_EQ(b->data[pos], 0);
			pos++;
		}
		row = b->data + pos;
		memcpy(&h, row, sizeof(h));
		CHECK_EQ(h.natts, nproject);
		for (int i = 0; i < nproject; i++)
			if (rows[r][project[i] - 1].isnull)
				hasnull = true;
		CHECK_EQ(h.flags, hasnull ? AP_ROW_HASNULLS : 0);
		off = 8 + (hasnull ? (uint32_t) (nproject + 7) / 8 : 0);
		off = (off + 7) & ~7u;
		for (int i = 0; i < nproject; i++)
		{
			const ApColumn *c = &desc->cols[project[i] - 1];
			const ApValue *v = &rows[r][project[i] - 1];
			uint32_t	al = c->attalign == 'd' ? 8 : c->attalign == 'i' ? 4 :
				c->attalign == 's' ? 2 : 1;
			uint32_t	len;

			if (hasnull)
			{
				bool		notnull = (row[8 + i / 8] >> (i % 8)) & 1;

				CHECK_EQ(notnull, !v->isnull);
				if (!notnull)
					continue;
			}
			if (c->attlen > 0)
			{
				while (off % al)
					CHECK_EQ(row[off++], 0);
				len = (uint32_t) c->attlen;
			}
			else if (c->attlen == -1)
			{
				/* heap_deform's rule: a zero byte is padding */
				if (row[off] == 0)
					while (off % al)
						CHECK_EQ(row[off++], 0);
				len = ap_varlena_size_any(row + off);
				/* 4-byte headers must land aligned */
				if ((row[off] & 1) == 0)
					CHECK_EQ(off % al, 0);
			}
			else
				len = (uint32_t) strlen((const char *) row + off) + 1;
			CHECK_EQ(len, v->len);
			CHECK_MEM(row + off, v->ptr, v->len);
			off += len;
		}
		CHECK_EQ(h.row_bytes, off);
		pos += off;
	}
	CHECK_EQ(pos, b->len);
}

/* rowenc.c: round trip through an independent decoder, exact layout. */
static void
test_rowenc(void)
{
	ApColumn	cols[6];
	ApTupleDesc desc = {6, cols, 0};
	ApValue		rows[4][8];
	ApRowBatchBuf	b;
	const int	proj[] = {2, 1, 3, 4, 5, 6};
	const int	proj2[] = {4};
	int16_t		i2 = 7;
	int64_t		i8 = -99;
	unsigned char shortv[8];
	unsigned char longv[300];
	unsigned char ext[18] = {0x01, 18, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	unsigned char zerolead[68];

	cols[0] = col(2, 's', AP_TYPE_INT2);
	cols[1] = col(-1, 'i', AP_TYPE_TEXT);
	cols[2] = col(8, 'd', AP_TYPE_INT8);
	cols[3] = col(-1, 'i', AP_TYPE_TEXT);
	cols[4] = col(-2, 'c', AP_TYPE_OTHER);
	cols[5] = col(1, 'c', AP_TYPE_BOOL);
	memset(rows, 0, sizeof(rows));

	mk_varlena(shortv, "hey", 3, false);
	mk_varlena(longv, "0123456789", 10, true);
	memset(zerolead, 'z', sizeof(zerolead));
	put32(zerolead, 64u << 2);	/* 4-byte header whose first byte is zero */

	/* row 0: no nulls, short varlena first (unaligned) */
	rows[0][0] = (ApValue) {(const unsigned char *) &i2, 2, false};
	rows[0][1] = (ApValue) {shortv, 4, false};
	rows[0][2] = (ApValue) {(const unsigned char *) &i8, 8, false};
	rows[0][3] = (ApValue) {longv, 14, false};
	rows[0][4] = (ApValue) {(const unsigned char *) "cs", 3, false};
	rows[0][5] = (ApValue) {(const unsigned char *) "\1", 1, false};
	/* row 1: nulls, external pointer, zero-first-byte 4-byte header */
	rows[1][0] = (ApValue) {NULL, 0, true};
	rows[1][1] = (ApValue) {ext, 18, false};
	rows[1][2] = (ApValue) {NULL, 0, true};
	rows[1][3] = (ApValue) {zerolead, 64, false};
	rows[1][4] = (ApValue) {(const unsigned char *) "", 1, false};
	rows[1][5] = (ApValue) {NULL, 0, true};
	/* row 2: all null */
	for (int i = 0; i < 6; i++)
		rows[2][i] = (ApValue) {NULL, 0, true};
	/* row 3: like row 0 but a 4-byte varlena right after the short one */
	memcpy(rows[3], rows[0], sizeof(rows[0]));
	rows[3][3] = (ApValue) {longv, 14, false};

	CHECK_EQ(ap_rowbatch_init(&b, 16), 0);	/* small: forces growth */
	for (int r = 0; r < 4; r++)
		CHECK_EQ(ap_rowbatch_append(&b, &desc, proj, 6, rows[r]), 0);
	check_rows(&b, &desc, proj, 6, rows, 4);

	/* the short value goes unaligned right after the header */
	{
		ApRowHeader h;

		memcpy(&h, b.data, sizeof(h));
		CHECK_EQ(h.flags, 0);
		CHECK_MEM(b.data + 8, shortv, 4);
		CHECK_MEM(b.data + 12, &i2, 2);	/* int2: 12 is already 2-aligned */
		CHECK_MEM(b.data + 16, &i8, 8);	/* int8 at 16 */
	}

	/* exact layout: int2 at 8, then a short varlena unaligned at 10 */
	{
		const int	proj3[] = {1, 2};
		ApRowHeader h;

		ap_rowbatch_reset(&b);
		CHECK_EQ(ap_rowbatch_append(&b, &desc, proj3, 2, rows[0]), 0);
		memcpy(&h, b.data, sizeof(h));
		CHECK_EQ(h.row_bytes, 14);
		CHECK_EQ(b.len, 14);
		CHECK_MEM(b.data + 8, &i2, 2);
		CHECK_MEM(b.data + 10, shortv, 4);
	}

	/* reset keeps memory; a projection of one attribute */
	ap_rowbatch_reset(&b);
	CHECK_EQ(b.len, 0);
	CHECK_EQ(b.nrows, 0);
	for (int r = 0; r < 4; r++)
		CHECK_EQ(ap_rowbatch_append(&b, &desc, proj2, 1, rows[r]), 0);
	check_rows(&b, &desc, proj2, 1, rows, 4);
	/* zero projected attributes (count(*)) still makes rows */
	ap_rowbatch_reset(&b);
	CHECK_EQ(ap_rowbatch_append(&b, &desc, proj2, 0, rows[0]), 0);
	CHECK_EQ(b.len, 8);
	ap_rowbatch_free(&b);
	ap_rowbatch_free(&b);
}

/*
 * rowenc.c on random rows: short and long strings of every length up to 40
 * bytes between fixed-length values, random nulls, written into a reused
 * buffer full of garbage (padding must still come out zero).
 */
static void
test_rowenc_random(void)
{
	ApColumn	cols[8] = {col(4, 'i', AP_TYPE_INT4), col(-1, 'i', AP_TYPE_TEXT),
		col(1, 'c', AP_TYPE_BOOL), col(8, 'd', AP_TYPE_INT8), col(-1, 'i', AP_TYPE_TEXT),
	col(2, 's', AP_TYPE_INT2), col(-1, 'd', AP_TYPE_OTHER), col(-1, 'i', AP_TYPE_TEXT)};
	ApTupleDesc desc = {8, cols, 0};
	const int	proj[] = {1, 2, 3, 4, 5, 6, 7, 8};
	static unsigned char store[64][8][64];
	ApValue		rows[64][8];
	ApRowBatchBuf	b;
	uint32_t	seed = 12345;

	CHECK_EQ(ap_rowbatch_init(&b, 64), 0);
	for (int round = 0; round < 50; round++)
	{
		ap_rowbatch_reset(&b);
		memset(b.data, 0xAA, b.cap);
		for (int r = 0; r < 64; r++)
		{
			for (int c = 0; c < 8; c++)
			{
				unsigned char *p = store[r][c];
				uint32_t	len;

				seed = seed * 1103515245u + 12345u;
				if ((seed >> 16) % 7 == 0)
				{
					rows[r][c] = (ApValue) {NULL, 0, true};
					continue;
				}
				for (int k = 0; k < 64; k++)
					p[k] = (unsigned char) (seed >> (k % 24)) | 0x02;
				if (cols[c].attlen > 0)
					len = (uint32_t) cols[c].attlen;
				else
				{
					/* a short (1-byte) header, or a 4-byte one for column 7 */
					len = (seed >> 8) % 41;
					if (c == 6)
					{
						len = len < 4 ? 4 : len;
						put32(p, len << 2);
					}
					else
					{
						len = len < 1 ? 1 : len;
						p[0] = (unsigned char) ((len << 1) | 1);
					}
				}
				rows[r][c] = (ApValue) {p, len, false};
			}
			CHECK_EQ(ap_rowbatch_append(&b, &desc, proj, 8, rows[r]), 0);
		}
		check_rows(&b, &desc, proj, 8, rows, 64);
	}
	ap_rowbatch_free(&b);
}

/* Run every test group; nonzero exit on any failure. */
/* Write dir/name with len bytes of data. */
static void
put_file(const char *dir, const char *name, const void *data, size_t len)
{
	char		path[512];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f == NULL)
		return;
	CHECK_EQ(fwrite(data, 1, len, f), len);
	fclose(f);
}

/*
 * A pg_control of PostgreSQL 18's layout as far as diskd reads it: the
 * version at 8, floatFormat at 208, blcksz and relseg_size after it.
 */
static void
put_pg_control(const char *dir, uint32_t version, uint32_t blcksz, uint32_t relseg)
{
	unsigned char buf[8192];
	double		ff = 1234567.0;

	memset(buf, 0, sizeof(buf));
	memcpy(buf + 8, &version, 4);
	memcpy(buf + 208, &ff, 8);
	memcpy(buf + 216, &blcksz, 4);
	memcpy(buf + 220, &relseg, 4);
	put_file(dir, "global/pg_control", buf, sizeof(buf));
}

/* The data directories diskd refuses at startup (datadir.c). */
static void
test_datadir(void)
{
	char		dir[] = "/tmp/diskd-unit-XXXXXX";
	char		sub[600];
	char		msg[512];
	uint32_t	major = 0;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(sub, sizeof(sub), "%s/global", dir);
	CHECK(mkdir(sub, 0700) == 0);

	/* no PG_VERSION: not a data directory */
	CHECK(!ap_check_data_directory(dir, 0, &major, msg, sizeof(msg)));
	CHECK(strstr(msg, "not a PostgreSQL data directory") != NULL);

	put_file(dir, "PG_VERSION", "18\n", 3);
	put_pg_control(dir, 1800, 8192, 131072);
	CHECK(ap_check_data_directory(dir, 0, &major, msg, sizeof(msg)));
	CHECK_EQ(major, 18);
	CHECK(ap_check_data_directory(dir, 18, &major, msg, sizeof(msg)));
	/* the launcher's server is another major */
	CHECK(!ap_check_data_directory(dir, 15, &major, msg, sizeof(msg)));
	CHECK(strstr(msg, "is of PostgreSQL 18, but the server is PostgreSQL 15") != NULL);
	/* another page size or segment size */
	put_pg_control(dir, 1800, 16384, 131072);
	CHECK(!ap_check_data_directory(dir, 0, &major, msg, sizeof(msg)));
	CHECK(strstr(msg, "16384-byte blocks") != NULL);
	put_pg_control(dir, 1800, 8192, 262144);
	CHECK(!ap_check_data_directory(dir, 0, &major, msg, sizeof(msg)));
	/* pg_control of another major than PG_VERSION says */
	put_pg_control(dir, 1700, 8192, 131072);
	CHECK(!ap_check_data_directory(dir, 0, &major, msg, sizeof(msg)));
	CHECK(strstr(msg, "pg_control version 1700") != NULL);
	/* 15 and 16 share pg_control version 1300 */
	put_file(dir, "PG_VERSION", "16\n", 3);
	put_pg_control(dir, 1300, 8192, 131072);
	CHECK(ap_check_data_directory(dir, 0, &major, msg, sizeof(msg)));
	CHECK_EQ(major, 16);
	/* majors whose pages diskd was not checked against */
	put_file(dir, "PG_VERSION", "14\n", 3);
	CHECK(!ap_check_data_directory(dir, 0, &major, msg, sizeof(msg)));
	CHECK(strstr(msg, "PostgreSQL 14; this diskd reads the pages of PostgreSQL 15 to 18") != NULL);
	put_file(dir, "PG_VERSION", "19\n", 3);
	CHECK(!ap_check_data_directory(dir, 0, &major, msg, sizeof(msg)));
	put_file(dir, "PG_VERSION", "x\n", 2);
	CHECK(!ap_check_data_directory(dir, 0, &major, msg, sizeof(msg)));

	snprintf(sub, sizeof(sub), "%s/global/pg_control", dir);
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/PG_VERSION", dir);
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/global", dir);
	rmdir(sub);
	rmdir(dir);
}

int
main(void)
{
	test_datadir();
	test_page();
	test_tuple();
	test_pglz();
	test_numeric();
	test_rowenc();
	test_rowenc_random();
	return TEST_DONE();
}
