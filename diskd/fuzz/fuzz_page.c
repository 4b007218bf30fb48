/*
 * fuzz_page.c
 *	  libFuzzer target: a heap page as a daemon reads it from a file (the
 *	  input, cut or zero-padded to 8 kB): the page checks with and without
 *	  checksums, every line pointer, tuple header, visibility against a
 *	  snapshot, and the deforming of every attribute (each value's bytes are
 *	  read, so a value pointing outside the tuple is caught).
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static unsigned char page[AP_BLCKSZ] __attribute__((aligned(4096)));
	static uint32_t xip[] = {1000, 1002};
	ApSnapshot	snap;
	ApXidCache	cache;
	ApValue		v[FUZZ_NCOLS];
	uint32_t	blkno = 0;
	int			nitems;
	unsigned	sum = 0;

	memset(page, 0, sizeof(page));
	memcpy(page, data, len < AP_BLCKSZ ? len : AP_BLCKSZ);
	if (len > AP_BLCKSZ + 4)
		memcpy(&blkno, data + AP_BLCKSZ, 4);
	if (fuzz_desc.ncached == 0)
		ap_tupdesc_cache_offsets(&fuzz_desc);

	(void) ap_page_check(page, blkno, true);
	if (ap_page_check(page, blkno, false) != AP_PAGE_OK)
		return 0;
	memset(&snap, 0, sizeof(snap));
	snap.xmin = 990;
	snap.xmax = 1010;
	snap.xip = xip;
	snap.xcnt = 2;
	if (ap_xidcache_init(&cache, 16) < 0)
		return 0;
	(void) ap_xidcache_put(&cache, 995, AP_XID_COMMITTED);

	nitems = ap_page_nitems(page);
	(void) ap_page_all_visible(page);
	for (int off = 1; off <= nitems; off++)
	{
		unsigned	flags;
		unsigned	lp_off;
		unsigned	lp_len;
		ApTupleHeader hdr;
		uint32_t	need = 0;

		ap_page_item(page, off, &flags, &lp_off, &lp_len);
		if (flags != AP_LP_NORMAL || lp_off < AP_PAGE_HEADER_BYTES ||
			lp_len < AP_TUPLE_HEADER_MIN || lp_off + lp_len > AP_BLCKSZ)
			continue;
		if (ap_tuple_header(page + lp_off, lp_len, &hdr) != AP_OK)
			continue;
		(void) ap_tuple_visibility(&hdr, &snap, &cache, &need);
		(void) ap_tuple_fixed_data(&fuzz_desc, page + lp_off, lp_len, &hdr, 2);
		for (int upto = 1; upto <= FUZZ_NCOLS; upto++)
		{
			if (ap_tuple_deform(&fuzz_desc, page + lp_off, lp_len, &hdr, upto, v) != AP_OK)
				break;
			for (int i = 0; i < upto; i++)
				for (uint32_t b = 0; !v[i].isnull && b < v[i].len; b++)
					sum += v[i].ptr[b];
		}
	}
	ap_xidcache_free(&cache);
	return (int) (sum & 0);
}
