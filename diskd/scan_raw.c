/*
 * scan_raw.c
 *	  The distributed-device mode of a scan (AP_SCAN_MODE_PAGES): the disk
 *	  reads its stripe units as in active mode and ships the raw pages,
 *	  unchecked, in PageBatch frames; the host decides everything.
 */
#include <stdlib.h>
#include <string.h>

#include "scan_state.h"

/* Ship the buffered raw pages as one PageBatch. */
int
scan_flush_pages(Scan *s)
{
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__PageBatch batch = ACTIVE_PG__PAGE_BATCH__INIT;

	if (s->npages == 0)
		return 0;
	batch.n_blocks = s->npages;
	batch.blocks = s->page_blocks;
	batch.pages.len = (size_t) s->npages * AP_BLCKSZ;
	batch.pages.data = s->pages;
	frame.msg_case = ACTIVE_PG__FRAME__MSG_PAGE_BATCH;
	frame.page_batch = &batch;
	if (scan_send(s, &frame) < 0)
		return -1;
	s->npages = 0;
	return 0;
}

/*
 * Distributed-device mode: queue one page for the host as it is, with no
 * checks (the host verifies it as it verifies any page it reads).  Only
 * all-zero pages stay home: PostgreSQL accepts them silently and they hold
 * no tuples, so the host would do nothing with them.
 */
int
scan_ship_page(Scan *s, const unsigned char *page, uint32_t blkno)
{
	if (ap_page_is_new(page))
		return 0;
	memcpy(s->pages + (size_t) s->npages * AP_BLCKSZ, page, AP_BLCKSZ);
	s->page_blocks[s->npages++] = blkno;
	return s->npages == s->max_pages ? scan_flush_pages(s) : 0;
}

/* Buffers of the distributed-device mode; the program is ignored. */
int
scan_prepare_pages(Scan *s)
{
	s->max_pages = s->batch_bytes / AP_BLCKSZ;
	if (s->max_pages == 0)
		s->max_pages = 1;
	s->pages = malloc((size_t) s->max_pages * AP_BLCKSZ);
	s->page_blocks = malloc(s->max_pages * sizeof(uint32_t));
	if (s->pages == NULL || s->page_blocks == NULL)
		return scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory");
	return 0;
}
