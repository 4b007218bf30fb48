/*
 * unit.c
 *	  Unit tests of diskd's pure layers (page .. rowenc); no server needed.
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

#include "diskd.h"
#include "testutil.h"
#include "exprbuild.h"

/* ---------------- helpers ---------------- */

/* Store a little-endian u16. */
static void
put16(unsigned char *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

/* Store a little-endian u32. */
static void
put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* Store a little-endian u64. */
static void
put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

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

/* A descriptor column with the given storage properties. */
static ApColumn
col(int16_t attlen, char attalign, uint8_t kind)
{
	ApColumn	c;

	memset(&c, 0, sizeof(c));
	c.attlen = attlen;
	c.attalign = attalign;
	c.attbyval = attlen > 0 && attlen <= 8;
	c.type_kind = kind;
	return c;
}

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

/* ---------------- visibility.c ---------------- */

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

/* ---------------- vm.c ---------------- */

/* Every protobuf node built by the tests, freed at the end. */

/* Expr: NULL constant of a kind. */
static ActivePg__Expr *
E_null(int kind)
{
	return E_const(kind, NULL, 0, true);
}

/* Expr: date constant (days since 2000-01-01). */
static ActivePg__Expr *
E_date(int32_t v)
{
	return E_const(AP_TYPE_DATE, &v, 4, false);
}

/* Expr: timestamp or timestamptz constant (microseconds). */
static ActivePg__Expr *
E_ts(int kind, int64_t v)
{
	return E_const(kind, &v, 8, false);
}

/* Build a varlena (short header if it fits, else 4-byte) into buf. */
static size_t
mk_varlena(unsigned char *buf, const void *payload, size_t n, bool force4)
{
	if (!force4 && n + 1 < 128)
	{
		buf[0] = (unsigned char) (((n + 1) << 1) | 1);
		memcpy(buf + 1, payload, n);
		return n + 1;
	}
	put32(buf, (uint32_t) (n + 4) << 2);
	memcpy(buf + 4, payload, n);
	return n + 4;
}

/* Expr: text-like constant with a short header. */
static ActivePg__Expr *
E_text(int kind, const char *s)
{
	unsigned char buf[600];
	size_t		n = mk_varlena(buf, s, strlen(s), false);

	return E_const(kind, buf, n, false);
}

/* Expr: numeric constant from its payload. */
static ActivePg__Expr *
E_num(const unsigned char *payload, size_t n)
{
	unsigned char buf[100];
	size_t		len = mk_varlena(buf, payload, n, false);

	return E_const(AP_TYPE_NUMERIC, buf, len, false);
}


/* Expr: a AND b. */
static ActivePg__Expr *
E_and2(ActivePg__Expr *a, ActivePg__Expr *b)
{
	ActivePg__Expr *args[2] = {a, b};

	return E_boolexpr(AP_BOOL_AND, 2, args);
}

/* Expr: a OR b. */
static ActivePg__Expr *
E_or2(ActivePg__Expr *a, ActivePg__Expr *b)
{
	ActivePg__Expr *args[2] = {a, b};

	return E_boolexpr(AP_BOOL_OR, 2, args);
}

/* Expr: NOT a. */
static ActivePg__Expr *
E_not(ActivePg__Expr *a)
{
	return E_boolexpr(AP_BOOL_NOT, 1, &a);
}

/* Expr: a IS [NOT] NULL. */
static ActivePg__Expr *
E_nulltest(ActivePg__Expr *a, bool is_not_null)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__NullTest *t = talloc(sizeof(*t));
	ActivePg__Expr einit = ACTIVE_PG__EXPR__INIT;
	ActivePg__NullTest tinit = ACTIVE_PG__NULL_TEST__INIT;

	*e = einit;
	*t = tinit;
	t->arg = a;
	t->is_not_null = is_not_null;
	e->node_case = ACTIVE_PG__EXPR__NODE_NULL_TEST;
	e->null_test = t;
	return e;
}

/* Expr: a IS [NOT] TRUE/FALSE/UNKNOWN. */
static ActivePg__Expr *
E_booltest(ActivePg__Expr *a, int kind)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__BooleanTest *t = talloc(sizeof(*t));
	ActivePg__Expr einit = ACTIVE_PG__EXPR__INIT;
	ActivePg__BooleanTest tinit = ACTIVE_PG__BOOLEAN_TEST__INIT;

	*e = einit;
	*t = tinit;
	t->arg = a;
	t->kind = (uint32_t) kind;
	e->node_case = ACTIVE_PG__EXPR__NODE_BOOL_TEST;
	e->bool_test = t;
	return e;
}

/*
 * The VM's test descriptor:
 *  1 int4  2 int8  3 float8  4 float4  5 numeric  6 text  7 bpchar  8 date
 *  9 timestamp  10 bool  11 int2  12 varchar  13 timestamptz  14 other
 *  15 dropped int4
 */
#define VM_NATTS 15
static ApColumn vm_cols[VM_NATTS];
static ApTupleDesc vm_desc = {VM_NATTS, vm_cols, 0};
static ApValue vm_vals[VM_NATTS];

/* Fill the VM test descriptor and make every value NULL. */
static void
vm_setup(void)
{
	vm_cols[0] = col(4, 'i', AP_TYPE_INT4);
	vm_cols[1] = col(8, 'd', AP_TYPE_INT8);
	vm_cols[2] = col(8, 'd', AP_TYPE_FLOAT8);
	vm_cols[3] = col(4, 'i', AP_TYPE_FLOAT4);
	vm_cols[4] = col(-1, 'i', AP_TYPE_NUMERIC);
	vm_cols[5] = col(-1, 'i', AP_TYPE_TEXT);
	vm_cols[6] = col(-1, 'i', AP_TYPE_BPCHAR);
	vm_cols[7] = col(4, 'i', AP_TYPE_DATE);
	vm_cols[8] = col(8, 'd', AP_TYPE_TIMESTAMP);
	vm_cols[9] = col(1, 'c', AP_TYPE_BOOL);
	vm_cols[10] = col(2, 's', AP_TYPE_INT2);
	vm_cols[11] = col(-1, 'i', AP_TYPE_VARCHAR);
	vm_cols[12] = col(8, 'd', AP_TYPE_TIMESTAMPTZ);
	vm_cols[13] = col(4, 'i', AP_TYPE_OTHER);
	vm_cols[14] = col(4, 'i', AP_TYPE_INT4);
	vm_cols[14].attisdropped = true;
	for (int i = 0; i < VM_NATTS; i++)
	{
		vm_vals[i].isnull = true;
		vm_vals[i].ptr = NULL;
		vm_vals[i].len = 0;
	}
}

/* Point value attno at bytes. */
static void
setval(int attno, const void *p, uint32_t len)
{
	vm_vals[attno - 1].ptr = p;
	vm_vals[attno - 1].len = len;
	vm_vals[attno - 1].isnull = false;
}

/* Make value attno NULL. */
static void
setnull(int attno)
{
	vm_vals[attno - 1].ptr = NULL;
	vm_vals[attno - 1].isnull = true;
}

/* Compile a filter (no projection) and evaluate it on vm_vals; -1 on error. */
static int
run_filter(ActivePg__Expr *filter)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ApProgram	prog;
	int			rc;
	ApTri		t;

	msg.filter = filter;
	rc = ap_program_compile(&msg, &vm_desc, &prog);
	if (rc != 0)
	{
		fprintf(stderr, "unexpected compile error %d: %s\n", rc, prog.error);
		return -1;
	}
	t = ap_program_filter(&prog, vm_vals);
	ap_program_free(&prog);
	return (int) t;
}

/* Compile and return the error code (0 if it compiled). */
static int
compile_rc(ActivePg__Expr *filter, const int32_t *project, size_t nproject)
{
	ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
	ApProgram	prog;
	int			rc;

	msg.filter = filter;
	msg.project = (int32_t *) project;
	msg.n_project = nproject;
	rc = ap_program_compile(&msg, &vm_desc, &prog);
	if (rc != 0)
		CHECK(prog.error[0] != '\0');
	else
		ap_program_free(&prog);
	return rc;
}

/* External TOAST pointer used to force FALLBACK through a text comparison. */
static unsigned char ext_ptr[18] = {0x01, 18};

/* A leaf evaluating to t: TRUE, FALSE, NULL, or FALLBACK. */
static ActivePg__Expr *
tri_leaf(ApTri t)
{
	switch (t)
	{
		case AP_TRUE:
			return E_bool(true);
		case AP_FALSE:
			return E_bool(false);
		case AP_NULL:
			return E_null(AP_TYPE_BOOL);
		default:
			/* var 6 holds an external pointer: cannot be compared at the disk */
			return OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_text(AP_TYPE_TEXT, "x"));
	}
}

/* vm.c: AND/OR/NOT/BooleanTest/NullTest tables over TRUE/FALSE/NULL/FALLBACK. */
static void
test_vm_logic(void)
{
	/* indices: 0 FALSE 1 TRUE 2 NULL 3 FALLBACK */
	const ApTri F = AP_FALSE,
				T = AP_TRUE,
				N = AP_NULL,
				X = AP_TRI_FALLBACK;
	const ApTri and_tab[4][4] = {
		/* F  T  N  X */
		{F, F, F, F},			/* F */
		{F, T, N, X},			/* T */
		{F, N, N, X},			/* N */
		{X, X, X, X},			/* X: PostgreSQL would have raised its error first */
	};
	const ApTri or_tab[4][4] = {
		{F, T, N, X},
		{T, T, T, T},
		{N, T, N, X},
		{X, X, X, X},
	};
	const ApTri not_tab[4] = {T, F, N, X};
	/* IS TRUE, IS NOT TRUE, IS FALSE, IS NOT FALSE, IS UNKNOWN, IS NOT UNKNOWN */
	const ApTri bt_tab[4][6] = {
		{F, T, T, F, F, T},		/* F */
		{T, F, F, T, F, T},		/* T */
		{F, T, F, T, T, F},		/* N */
		{X, X, X, X, X, X},		/* X */
	};

	vm_setup();
	setval(6, ext_ptr, sizeof(ext_ptr));

	for (int a = 0; a < 4; a++)
	{
		for (int b = 0; b < 4; b++)
		{
			CHECK_EQ(run_filter(E_and2(tri_leaf((ApTri) a), tri_leaf((ApTri) b))), and_tab[a][b]);
			CHECK_EQ(run_filter(E_or2(tri_leaf((ApTri) a), tri_leaf((ApTri) b))), or_tab[a][b]);
		}
		CHECK_EQ(run_filter(E_not(tri_leaf((ApTri) a))), not_tab[a]);
		for (int k = 0; k < 6; k++)
			CHECK_EQ(run_filter(E_booltest(tri_leaf((ApTri) a), AP_IS_TRUE + k)), bt_tab[a][k]);
	}
	/*
	 * three-argument AND/OR decide in order, as the executor: a FALSE (TRUE)
	 * after a FALLBACK does not decide, because PostgreSQL evaluating the
	 * earlier argument may have raised an error there
	 */
	{
		ActivePg__Expr *args[3] = {tri_leaf(X), tri_leaf(N), tri_leaf(F)};

		CHECK_EQ(run_filter(E_boolexpr(AP_BOOL_AND, 3, args)), X);
		args[2] = tri_leaf(T);
		CHECK_EQ(run_filter(E_boolexpr(AP_BOOL_AND, 3, args)), X);
		CHECK_EQ(run_filter(E_boolexpr(AP_BOOL_OR, 3, args)), X);
		args[0] = tri_leaf(N);
		args[1] = tri_leaf(F);
		args[2] = tri_leaf(X);
		CHECK_EQ(run_filter(E_boolexpr(AP_BOOL_AND, 3, args)), F);
		args[1] = tri_leaf(T);
		CHECK_EQ(run_filter(E_boolexpr(AP_BOOL_OR, 3, args)), T);
	}

	/* NullTest never yields NULL */
	setnull(1);
	CHECK_EQ(run_filter(E_nulltest(E_var(1), false)), T);
	CHECK_EQ(run_filter(E_nulltest(E_var(1), true)), F);
	setval(1, "\1\0\0\0", 4);
	CHECK_EQ(run_filter(E_nulltest(E_var(1), false)), F);
	CHECK_EQ(run_filter(E_nulltest(E_var(1), true)), T);
	CHECK_EQ(run_filter(E_nulltest(tri_leaf(N), false)), T);
	CHECK_EQ(run_filter(E_nulltest(tri_leaf(F), false)), F);
	CHECK_EQ(run_filter(E_nulltest(tri_leaf(X), false)), X);
	/* external values are still known to be non-null */
	CHECK_EQ(run_filter(E_nulltest(E_var(6), true)), T);

	/* a boolean column as a qual */
	setval(10, "\1", 1);
	CHECK_EQ(run_filter(E_var(10)), T);
	setval(10, "\0", 1);
	CHECK_EQ(run_filter(E_var(10)), F);
	setnull(10);
	CHECK_EQ(run_filter(E_var(10)), N);

	/* no filter: everything passes */
	CHECK_EQ(compile_rc(NULL, NULL, 0), 0);
	{
		ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
		ApProgram	prog;

		CHECK_EQ(ap_program_compile(&msg, &vm_desc, &prog), 0);
		CHECK_EQ(ap_program_filter(&prog, vm_vals), T);
		ap_program_free(&prog);
	}
	tfree_all();
}

/* Evaluate op(cmp, a, b) for all six operators; returns the results as "ftf..." */
static void
six(int cmp, ActivePg__Expr *(*mk_a) (void), ActivePg__Expr *(*mk_b) (void),
	char out[7])
{
	for (int op = AP_OP_EQ; op <= AP_OP_GE; op++)
	{
		int			r = run_filter(OP(op, cmp, mk_a(), mk_b()));

		out[op - 1] = r == AP_TRUE ? 't' : r == AP_FALSE ? 'f' : r == AP_NULL ? 'n' : 'x';
	}
	out[6] = '\0';
}

/* Result strings for six(): = <> < <= > >= */
#define LESS	"ftttff"
#define EQUAL	"tfftft"
#define GREATER	"ftfftt"

/* A quiet NaN (a function so the MK() makers below stay one-liners). */
static double
nan_val(void)
{
	return NAN;
}

/* Operand makers for six(): each returns a fresh expression. */
#define MK(name, expr) static ActivePg__Expr *name(void) { return (expr); }
MK(mk_v1, E_var(1))
MK(mk_v2, E_var(2))
MK(mk_v11, E_var(11))
MK(mk_i8big, E_i8(INT64_C(3000000000)))
MK(mk_i2m5, E_i2(-5))
MK(mk_i4m5, E_i4(-5))
MK(mk_v3, E_var(3))
MK(mk_v4, E_var(4))
MK(mk_f8nan, E_f8(nan_val()))
MK(mk_f8inf, E_f8(INFINITY))
MK(mk_f8zero, E_f8(0.0))
MK(mk_f8mzero, E_f8(-0.0))
MK(mk_f8tenth, E_f8(0.1))
MK(mk_f4tenth, E_f4(0.1f))
MK(mk_f4half, E_f4(0.5f))
MK(mk_v5, E_var(5))
MK(mk_v6, E_var(6))
MK(mk_v7, E_var(7))
MK(mk_v8, E_var(8))
MK(mk_v9, E_var(9))
MK(mk_v10, E_var(10))
MK(mk_v12, E_var(12))
MK(mk_v13, E_var(13))
MK(mk_t_abc, E_text(AP_TYPE_TEXT, "abc"))
MK(mk_t_abd, E_text(AP_TYPE_TEXT, "abd"))
MK(mk_t_ab, E_text(AP_TYPE_TEXT, "ab"))
MK(mk_t_b, E_text(AP_TYPE_TEXT, "b"))
MK(mk_t_utf, E_text(AP_TYPE_TEXT, "\xc3\xa9"))
MK(mk_t_z, E_text(AP_TYPE_TEXT, "z"))
MK(mk_t_null, E_null(AP_TYPE_TEXT))
MK(mk_vc_abc, E_text(AP_TYPE_VARCHAR, "abc"))
MK(mk_bp_ab, E_text(AP_TYPE_BPCHAR, "ab"))
MK(mk_bp_ab3, E_text(AP_TYPE_BPCHAR, "ab   "))
MK(mk_bp_ab1, E_text(AP_TYPE_BPCHAR, "ab\x01"))
MK(mk_bp_empty, E_text(AP_TYPE_BPCHAR, ""))
MK(mk_bp_sp, E_text(AP_TYPE_BPCHAR, "  "))
MK(mk_d0, E_date(0))
MK(mk_d1, E_date(1))
MK(mk_dpinf, E_date(INT32_MAX))
MK(mk_dninf, E_date(INT32_MIN))
MK(mk_dbig, E_date(106751983))
MK(mk_dlast, E_date(106751982))
MK(mk_dlow, E_date(-2451546))
MK(mk_ts0, E_ts(AP_TYPE_TIMESTAMP, 0))
MK(mk_tsday, E_ts(AP_TYPE_TIMESTAMP, INT64_C(86400000000)))
MK(mk_tsdaym1, E_ts(AP_TYPE_TIMESTAMP, INT64_C(86399999999)))
MK(mk_tspinf, E_ts(AP_TYPE_TIMESTAMP, INT64_MAX))
MK(mk_tsninf, E_ts(AP_TYPE_TIMESTAMP, INT64_MIN))
MK(mk_tsmin1, E_ts(AP_TYPE_TIMESTAMP, INT64_MIN + 1))
MK(mk_tstz5, E_ts(AP_TYPE_TIMESTAMPTZ, 5))
MK(mk_btrue, E_bool(true))
MK(mk_bfalse, E_bool(false))
MK(mk_lt_true, OP(AP_OP_LT, AP_CMP_INT, E_i4(1), E_i4(2)))

/* numeric constants 1.5, NaN, +inf and -inf */
static const unsigned char num_1_5[] = {0x80, 0x80, 1, 0, 0x88, 0x13};	/* short: dscale 1, weight 0, [1, 5000] */
static const unsigned char num_nan[] = {0x00, 0xC0};
static const unsigned char num_pinf[] = {0x00, 0xD0};
static const unsigned char num_ninf[] = {0x00, 0xF0};
MK(mk_n15, E_num(num_1_5, sizeof(num_1_5)))
MK(mk_nnan, E_num(num_nan, sizeof(num_nan)))
MK(mk_npinf, E_num(num_pinf, sizeof(num_pinf)))
MK(mk_nninf, E_num(num_ninf, sizeof(num_ninf)))

/* vm.c: every comparison family with all six operators. */
static void
test_vm_compare(void)
{
	char		r[7];
	int32_t		i4;
	int64_t		i8;
	int16_t		i2;
	double		f8;
	float		f4;
	int32_t		date;
	int64_t		ts;
	unsigned char numv[16];
	unsigned char txt[64];
	unsigned char bp[64];
	unsigned char vc[64];
	unsigned char cmpd[64];
	unsigned char b;

	vm_setup();

	/* INT: int4 var vs int8 const, int2 var vs int4 const */
	i4 = -5;
	setval(1, &i4, 4);
	six(AP_CMP_INT, mk_v1, mk_i8big, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_INT, mk_v1, mk_i2m5, r);
	CHECK(strcmp(r, EQUAL) == 0);
	i8 = INT64_C(3000000001);
	setval(2, &i8, 8);
	six(AP_CMP_INT, mk_v2, mk_i8big, r);
	CHECK(strcmp(r, GREATER) == 0);
	i2 = -6;
	setval(11, &i2, 2);
	six(AP_CMP_INT, mk_v11, mk_i4m5, r);
	CHECK(strcmp(r, LESS) == 0);
	setnull(1);
	six(AP_CMP_INT, mk_v1, mk_i8big, r);
	CHECK(strcmp(r, "nnnnnn") == 0);

	/* FLOAT: NaN = NaN, NaN > inf, -0 = 0, float4 widened exactly */
	f8 = NAN;
	setval(3, &f8, 8);
	six(AP_CMP_FLOAT, mk_v3, mk_f8nan, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_FLOAT, mk_v3, mk_f8inf, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_FLOAT, mk_f8inf, mk_v3, r);
	CHECK(strcmp(r, LESS) == 0);
	f8 = 0.0;
	six(AP_CMP_FLOAT, mk_v3, mk_f8mzero, r);
	CHECK(strcmp(r, EQUAL) == 0);
	f4 = 0.1f;
	setval(4, &f4, 4);
	six(AP_CMP_FLOAT, mk_v4, mk_f8tenth, r);	/* (double) 0.1f > 0.1 */
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_FLOAT, mk_v4, mk_f4tenth, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_FLOAT, mk_f4half, mk_v3, r);
	CHECK(strcmp(r, GREATER) == 0);
	f4 = NAN;
	six(AP_CMP_FLOAT, mk_v4, mk_f8nan, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_FLOAT, mk_v4, mk_f8zero, r);
	CHECK(strcmp(r, GREATER) == 0);

	/* NUMERIC: 1.50 (long form, 4-byte header) = 1.5; specials */
	put32(numv, (uint32_t) (4 + 8) << 2);
	put16(numv + 4, 2);			/* long form, positive, dscale 2 */
	put16(numv + 6, 0);			/* weight 0 */
	put16(numv + 8, 1);
	put16(numv + 10, 5000);
	setval(5, numv, 12);
	six(AP_CMP_NUMERIC, mk_v5, mk_n15, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_NUMERIC, mk_v5, mk_nnan, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_NUMERIC, mk_nnan, mk_npinf, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_NUMERIC, mk_nnan, mk_nnan, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_NUMERIC, mk_nninf, mk_v5, r);
	CHECK(strcmp(r, LESS) == 0);
	put16(numv + 10, 10000);	/* invalid digit: the host decides */
	six(AP_CMP_NUMERIC, mk_v5, mk_n15, r);
	CHECK(strcmp(r, "xxxxxx") == 0);

	/* TEXT: byte order, prefix shorter first, bytes unsigned; varchar mix */
	setval(6, txt, (uint32_t) mk_varlena(txt, "abc", 3, true));	/* 4-byte header */
	six(AP_CMP_TEXT, mk_v6, mk_t_abc, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_TEXT, mk_v6, mk_t_abd, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_TEXT, mk_v6, mk_t_ab, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_TEXT, mk_v6, mk_t_b, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_TEXT, mk_t_utf, mk_t_z, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_TEXT, mk_v6, mk_t_null, r);
	CHECK(strcmp(r, "nnnnnn") == 0);
	setval(12, vc, (uint32_t) mk_varlena(vc, "abc", 3, false));
	six(AP_CMP_TEXT, mk_v12, mk_v6, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_TEXT, mk_vc_abc, mk_t_abd, r);
	CHECK(strcmp(r, LESS) == 0);
	/* compressed inline value: "ababababab ab" decompressed via scratch */
	{
		const unsigned char s[] = {0x04, 'a', 'b', (unsigned char) (10 - 3), 0x02};

		put32(cmpd, ((uint32_t) (8 + sizeof(s)) << 2) | 0x02);
		put32(cmpd + 4, 12);
		memcpy(cmpd + 8, s, sizeof(s));
		setval(6, cmpd, 8 + sizeof(s));
		CHECK_EQ(run_filter(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6),
								 E_text(AP_TYPE_TEXT, "abababababab"))), AP_TRUE);
		CHECK_EQ(run_filter(OP(AP_OP_LT, AP_CMP_TEXT, E_var(6),
								 E_text(AP_TYPE_TEXT, "abababababab"))), AP_FALSE);
		put32(cmpd + 4, 12 | (1u << 30));	/* lz4: fallback */
		CHECK_EQ(run_filter(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6),
								 E_text(AP_TYPE_TEXT, "abababababab"))), AP_TRI_FALLBACK);
	}

	/* BPCHAR: trailing spaces are not significant */
	setval(7, bp, (uint32_t) mk_varlena(bp, "ab  ", 4, false));
	six(AP_CMP_BPCHAR, mk_v7, mk_bp_ab, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_BPCHAR, mk_v7, mk_bp_ab3, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_BPCHAR, mk_v7, mk_bp_ab1, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_BPCHAR, mk_bp_empty, mk_bp_sp, r);
	CHECK(strcmp(r, EQUAL) == 0);

	/* DATE */
	date = 1;
	setval(8, &date, 4);
	six(AP_CMP_DATE, mk_v8, mk_d0, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_DATE, mk_dninf, mk_v8, r);
	CHECK(strcmp(r, LESS) == 0);

	/* DATE_TS: either order, infinities, out-of-range finite dates */
	six(AP_CMP_DATE_TS, mk_d0, mk_ts0, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_DATE_TS, mk_v8, mk_tsdaym1, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_DATE_TS, mk_tsday, mk_v8, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_DATE_TS, mk_d1, mk_tsday, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_DATE_TS, mk_dpinf, mk_tspinf, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_DATE_TS, mk_dninf, mk_tsninf, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_DATE_TS, mk_dninf, mk_tsmin1, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_DATE_TS, mk_tspinf, mk_dlast, r);
	CHECK(strcmp(r, GREATER) == 0);
	six(AP_CMP_DATE_TS, mk_dbig, mk_ts0, r);
	CHECK(strcmp(r, "xxxxxx") == 0);
	six(AP_CMP_DATE_TS, mk_ts0, mk_dlow, r);
	CHECK(strcmp(r, "xxxxxx") == 0);
	ts = INT64_C(86400000000) * 2;
	setval(9, &ts, 8);
	six(AP_CMP_DATE_TS, mk_v9, mk_v8, r);
	CHECK(strcmp(r, GREATER) == 0);

	/* TS */
	six(AP_CMP_TS, mk_v9, mk_tsday, r);
	CHECK(strcmp(r, GREATER) == 0);
	ts = 5;
	setval(13, &ts, 8);
	six(AP_CMP_TS, mk_v13, mk_tstz5, r);
	CHECK(strcmp(r, EQUAL) == 0);

	/* BOOL: false < true; boolean subexpressions as operands */
	b = 0;
	setval(10, &b, 1);
	six(AP_CMP_BOOL, mk_v10, mk_btrue, r);
	CHECK(strcmp(r, LESS) == 0);
	six(AP_CMP_BOOL, mk_bfalse, mk_v10, r);
	CHECK(strcmp(r, EQUAL) == 0);
	six(AP_CMP_BOOL, mk_lt_true, mk_btrue, r);
	CHECK(strcmp(r, EQUAL) == 0);

	tfree_all();
}

/* vm.c: compile-time validation errors and limits. */
static void
test_vm_compile(void)
{
	const int32_t proj_ok[] = {3, 1, 14};
	const int32_t proj_bad[] = {1, 16};
	const int32_t proj_dropped[] = {15};
	unsigned char buf[8] = {0};

	vm_setup();

	/* attribute numbers */
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(0), E_i4(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(16), E_i4(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(15), E_i4(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(14), E_i4(1)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(E_nulltest(E_var(14), false), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(NULL, proj_ok, 3), 0);
	CHECK_EQ(compile_rc(NULL, proj_bad, 2), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(NULL, proj_dropped, 1), AP_ERR_BAD_REQUEST);

	/* operators and comparison families */
	CHECK_EQ(compile_rc(OP(0, AP_CMP_INT, E_var(1), E_i4(1)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(OP(7, AP_CMP_INT, E_var(1), E_i4(1)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, 10, E_var(1), E_i4(1)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, 0, E_var(1), E_i4(1)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_f8(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_FLOAT, E_var(1), E_i4(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TS, E_var(9), E_var(13)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_DATE_TS, E_var(8), E_var(13)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_DATE_TS, E_var(8), E_var(8)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(7), E_var(6)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_BPCHAR, E_var(7), E_var(6)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_NUMERIC, E_var(5), E_i4(1)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(12), E_var(6)), NULL, 0), 0);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_DATE_TS, E_var(9), E_var(8)), NULL, 0), 0);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(11), E_var(2)), NULL, 0), 0);
	{
		/* operator with three arguments */
		ActivePg__Expr *e = OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_i4(1));

		e->op->n_args = 1;
		CHECK_EQ(compile_rc(e, NULL, 0), AP_ERR_BAD_REQUEST);
	}

	/* constant sizes */
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_const(AP_TYPE_INT4, buf, 8, false)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_const(AP_TYPE_INT8, buf, 4, false)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_const(AP_TYPE_INT2, buf, 2, false)), NULL, 0), 0);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_null(AP_TYPE_INT4)), NULL, 0), 0);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_BOOL, E_var(10), E_const(AP_TYPE_BOOL, buf, 2, false)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_const(AP_TYPE_OTHER, buf, 4, false)), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_INT, E_var(1), E_const(99, buf, 4, false)), NULL, 0), AP_ERR_UNSUPPORTED);
	{
		unsigned char v[8];

		v[0] = (4 << 1) | 1;	/* short header says 4 bytes */
		memcpy(v + 1, "abcdef", 6);
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 5, false)), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 4, false)), NULL, 0), 0);
		put32(v, 8u << 2);		/* 4-byte header, 8 bytes */
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 8, false)), NULL, 0), 0);
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 7, false)), NULL, 0), AP_ERR_BAD_REQUEST);
		put32(v, (8u << 2) | 2);	/* compressed constant */
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 8, false)), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, ext_ptr, 18, false)), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(OP(AP_OP_EQ, AP_CMP_TEXT, E_var(6), E_const(AP_TYPE_TEXT, v, 0, false)), NULL, 0), AP_ERR_BAD_REQUEST);
	}

	/* boolean positions */
	CHECK_EQ(compile_rc(E_var(1), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(E_i4(1), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(E_not(E_var(6)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(E_and2(E_var(10), E_var(2)), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(E_booltest(E_var(2), AP_IS_TRUE), NULL, 0), AP_ERR_BAD_REQUEST);
	CHECK_EQ(compile_rc(E_booltest(E_var(10), 7), NULL, 0), AP_ERR_UNSUPPORTED);
	CHECK_EQ(compile_rc(E_and2(E_var(10), E_nulltest(E_var(2), true)), NULL, 0), 0);

	/* structure */
	{
		ActivePg__Expr *args[2] = {E_var(10), E_var(10)};
		ActivePg__Expr *e;

		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_NOT, 2, args), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_NOT, 0, args), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_AND, 0, args), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_OR, 0, args), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_AND, 1, args), NULL, 0), 0);
		CHECK_EQ(compile_rc(E_boolexpr(4, 1, args), NULL, 0), AP_ERR_UNSUPPORTED);
		CHECK_EQ(compile_rc(E_nulltest(NULL, false), NULL, 0), AP_ERR_BAD_REQUEST);
		CHECK_EQ(compile_rc(E_booltest(NULL, AP_IS_TRUE), NULL, 0), AP_ERR_BAD_REQUEST);
		e = E_var(1);
		e->node_case = ACTIVE_PG__EXPR__NODE__NOT_SET;
		CHECK_EQ(compile_rc(E_nulltest(e, false), NULL, 0), AP_ERR_BAD_REQUEST);

		/* depth: 200 levels compile, 201 do not */
		e = E_var(10);
		for (int i = 1; i < AP_MAX_EXPR_DEPTH; i++)
			e = E_not(e);
		CHECK_EQ(compile_rc(e, NULL, 0), 0);
		CHECK_EQ(compile_rc(E_not(e), NULL, 0), AP_ERR_UNSUPPORTED);
	}
	/* node count: an AND of 100000 arguments is 100001 nodes */
	{
		int			n = AP_MAX_EXPR_NODES;
		ActivePg__Expr **args = malloc(sizeof(ActivePg__Expr *) * n);
		ActivePg__Expr *leaf = E_var(10);

		for (int i = 0; i < n; i++)
			args[i] = leaf;
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_AND, n, args), NULL, 0), AP_ERR_UNSUPPORTED);
		CHECK_EQ(compile_rc(E_boolexpr(AP_BOOL_AND, n - 1, args), NULL, 0), 0);
		free(args);
	}

	/* max_attno covers both the filter and the projection */
	{
		ActivePg__Program msg = ACTIVE_PG__PROGRAM__INIT;
		ApProgram	prog;

		msg.filter = OP(AP_OP_LT, AP_CMP_INT, E_var(11), E_var(1));
		msg.project = (int32_t *) proj_ok;
		msg.n_project = 2;		/* 3, 1 */
		CHECK_EQ(ap_program_compile(&msg, &vm_desc, &prog), 0);
		CHECK_EQ(prog.max_attno, 11);
		CHECK_EQ(prog.nproject, 2);
		CHECK(prog.project[0] == 3 && prog.project[1] == 1);
		ap_program_free(&prog);
		msg.filter = NULL;
		msg.n_project = 3;
		CHECK_EQ(ap_program_compile(&msg, &vm_desc, &prog), 0);
		CHECK_EQ(prog.max_attno, 14);
		CHECK(prog.filter == NULL);
		ap_program_free(&prog);
	}
	tfree_all();
}

/* ---------------- rowenc.c ---------------- */

/*
 * Independent decoder of proto/ap_rows.h rows: walks the batch like the host
 * would and compares every value with the original bytes.
 */
static void
check_rows(const ApRowBuf *b, const ApTupleDesc *desc, const int *project,
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
	ApRowBuf	b;
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

	CHECK_EQ(ap_rowbuf_init(&b, 16), 0);	/* small: forces growth */
	for (int r = 0; r < 4; r++)
		CHECK_EQ(ap_rowbuf_append(&b, &desc, proj, 6, rows[r]), 0);
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

		ap_rowbuf_reset(&b);
		CHECK_EQ(ap_rowbuf_append(&b, &desc, proj3, 2, rows[0]), 0);
		memcpy(&h, b.data, sizeof(h));
		CHECK_EQ(h.row_bytes, 14);
		CHECK_EQ(b.len, 14);
		CHECK_MEM(b.data + 8, &i2, 2);
		CHECK_MEM(b.data + 10, shortv, 4);
	}

	/* reset keeps memory; a projection of one attribute */
	ap_rowbuf_reset(&b);
	CHECK_EQ(b.len, 0);
	CHECK_EQ(b.nrows, 0);
	for (int r = 0; r < 4; r++)
		CHECK_EQ(ap_rowbuf_append(&b, &desc, proj2, 1, rows[r]), 0);
	check_rows(&b, &desc, proj2, 1, rows, 4);
	/* zero projected attributes (count(*)) still makes rows */
	ap_rowbuf_reset(&b);
	CHECK_EQ(ap_rowbuf_append(&b, &desc, proj2, 0, rows[0]), 0);
	CHECK_EQ(b.len, 8);
	ap_rowbuf_free(&b);
	ap_rowbuf_free(&b);
}

/* Run every test group; nonzero exit on any failure. */
int
main(void)
{
	test_page();
	test_tuple();
	test_pglz();
	test_numeric();
	test_visibility();
	test_vm_logic();
	test_vm_compare();
	test_vm_compile();
	test_rowenc();
	return TEST_DONE();
}
