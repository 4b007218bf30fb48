/*
 * page.c
 *	  Heap page structural checks and PostgreSQL's page checksum.
 *
 * Rules of this file:
 *  - A page is read-only input that may be torn (read while PostgreSQL writes
 *    it) or corrupt.  ap_page_check() must accept every page PostgreSQL itself
 *    would read without complaint, and reject anything whose line pointers or
 *    header could lead a later layer outside the page.  A rejected page is
 *    handed to the host as a whole block, so being strict is always safe.
 *  - Multi-byte fields are read with memcpy (little-endian host, as the
 *    server that wrote the page): no alignment assumptions about the buffer.
 *  - No allocation, no blocking, no errors other than return codes.
 */
#include <string.h>

#include "ap_bytes.h"
#include "diskd.h"

/* Byte offsets of PageHeaderData fields (bufpage.h). */
#define PD_CHECKSUM_OFF		8
#define PD_FLAGS_OFF		10
#define PD_LOWER_OFF		12
#define PD_UPPER_OFF		14
#define PD_SPECIAL_OFF		16
#define PD_PAGESIZE_VERSION_OFF 18

/* pd_flags bits that PostgreSQL defines (PD_VALID_FLAG_BITS). */
#define PD_VALID_FLAG_BITS	0x0007

/* Checksum algorithm parameters (storage/checksum_impl.h): facts, not code. */
#define CHECKSUM_N_SUMS		32
#define CHECKSUM_FNV_PRIME	16777619u

/* Per-lane starting values published with the algorithm. */
static const uint32_t checksum_base_offsets[CHECKSUM_N_SUMS] = {
	0x5B1F36E9, 0xB8525960, 0x02AB50AA, 0x1DE66D2A,
	0x79FF467A, 0x9BB9F8A3, 0x217E7CD2, 0x83E13D2C,
	0xF8D4474F, 0xE39EB970, 0x42C6AE16, 0x993216FA,
	0x7B093B5D, 0x98DAFF3C, 0xF718902A, 0x0B1C9CDB,
	0xE58F764B, 0x187636BC, 0x5D7B3BB1, 0xE73DE7DE,
	0x92BEC979, 0xCCA6C0B2, 0x304A0979, 0x85AA43D4,
	0x783125BB, 0x6CA8EAA2, 0xE407EAC6, 0x4B5CFC3E,
	0x9FBF8C76, 0x15CA20BE, 0xF2CA9FD3, 0x959BD756
};

/* One FNV-1a-derived mixing step; the shift adds diffusion to the high bits. */
static inline uint32_t
checksum_mix(uint32_t sum, uint32_t value)
{
	uint32_t	tmp = sum ^ value;

	return tmp * CHECKSUM_FNV_PRIME ^ (tmp >> 17);
}

/*
 * pg_checksum_page() of PostgreSQL: the page is processed as 32 interleaved
 * lanes of u32 words, followed by two rounds of zeroes so every input bit
 * reaches every output bit.  The checksum field itself counts as zero; we
 * mask it out of its word instead of copying the page.
 */
uint16_t
ap_page_checksum(const unsigned char *page, uint32_t blkno)
{
	uint32_t	sums[CHECKSUM_N_SUMS];
	uint32_t	result = 0;
	int			nrows = AP_BLCKSZ / (int) (sizeof(uint32_t) * CHECKSUM_N_SUMS);

	memcpy(sums, checksum_base_offsets, sizeof(sums));

	for (int row = 0; row < nrows; row++)
	{
		const unsigned char *rp = page + (size_t) row * CHECKSUM_N_SUMS * 4;

		for (int lane = 0; lane < CHECKSUM_N_SUMS; lane++)
		{
			uint32_t	w = ap_read_u32(rp + lane * 4);

			/* word 2 holds pd_checksum (low half) and pd_flags (high half) */
			if (row == 0 && lane == PD_CHECKSUM_OFF / 4)
				w &= 0xFFFF0000u;
			sums[lane] = checksum_mix(sums[lane], w);
		}
	}

	for (int round = 0; round < 2; round++)
		for (int lane = 0; lane < CHECKSUM_N_SUMS; lane++)
			sums[lane] = checksum_mix(sums[lane], 0);

	for (int lane = 0; lane < CHECKSUM_N_SUMS; lane++)
		result ^= sums[lane];

	/* the block number makes a page copied to the wrong place detectable */
	result ^= blkno;

	/* never zero: zero means "no checksum" in PostgreSQL */
	return (uint16_t) ((result % 65535) + 1);
}

/* Number of line pointers the header claims (pd_lower past the header). */
int
ap_page_nitems(const unsigned char *page)
{
	uint16_t	lower = ap_read_u16(page + PD_LOWER_OFF);

	if (lower <= AP_PAGE_HEADER_BYTES)
		return 0;
	return (lower - AP_PAGE_HEADER_BYTES) / AP_ITEMID_BYTES;
}

/* PD_ALL_VISIBLE: every tuple on the page is visible to every snapshot. */
bool
ap_page_all_visible(const unsigned char *page)
{
	return (ap_read_u16(page + PD_FLAGS_OFF) & AP_PD_ALL_VISIBLE) != 0;
}

/*
 * Decode line pointer `off` (1-based).  ItemIdData is a 32-bit bitfield word
 * laid out by gcc on little-endian: lp_off:15, lp_flags:2, lp_len:15.
 */
void
ap_page_item(const unsigned char *page, int off,
			 unsigned *lp_flags, unsigned *lp_off, unsigned *lp_len)
{
	uint32_t	w = ap_read_u32(page + AP_PAGE_HEADER_BYTES +
							(size_t) (off - 1) * AP_ITEMID_BYTES);

	*lp_off = w & 0x7FFFu;
	*lp_flags = (w >> 15) & 0x3u;
	*lp_len = w >> 17;
}

/* True if all AP_BLCKSZ bytes are zero (a new page extended but never written). */
static bool
page_is_all_zero(const unsigned char *page)
{
	static const unsigned char zeroes[256];

	for (int i = 0; i < AP_BLCKSZ; i += (int) sizeof(zeroes))
		if (memcmp(page + i, zeroes, sizeof(zeroes)) != 0)
			return false;
	return true;
}

/* An all-zero page: PageIsNew with nothing written, valid and without tuples. */
bool
ap_page_is_new(const unsigned char *page)
{
	return page_is_all_zero(page);
}

/*
 * Structural check (plus checksum when asked).  An all-zero page is a valid
 * empty page (PageIsNew with nothing written); any other page must have a
 * sane header and every LP_NORMAL item must lie inside the tuple area with at
 * least a tuple header's worth of bytes, so tuple.c can trust lp_off/lp_len.
 */
ApPageStatus
ap_page_check(const unsigned char *page, uint32_t blkno, bool checksums)
{
	uint16_t	flags = ap_read_u16(page + PD_FLAGS_OFF);
	uint16_t	lower = ap_read_u16(page + PD_LOWER_OFF);
	uint16_t	upper = ap_read_u16(page + PD_UPPER_OFF);
	uint16_t	special = ap_read_u16(page + PD_SPECIAL_OFF);
	uint16_t	sizever = ap_read_u16(page + PD_PAGESIZE_VERSION_OFF);
	int			nitems;

	if (page_is_all_zero(page))
		return AP_PAGE_NEW;

	/* verify the checksum first: a torn page must not reach the item checks */
	if (checksums && ap_page_checksum(page, blkno) != ap_read_u16(page + PD_CHECKSUM_OFF))
		return AP_PAGE_BAD;

	if ((flags & ~PD_VALID_FLAG_BITS) != 0)
		return AP_PAGE_BAD;
	if ((sizever & 0x00FF) != AP_PG_PAGE_LAYOUT_VERSION ||
		(sizever & 0xFF00) != AP_BLCKSZ)
		return AP_PAGE_BAD;
	/* heap pages have no special space */
	if (lower < AP_PAGE_HEADER_BYTES || lower > upper ||
		upper > special || special != AP_BLCKSZ)
		return AP_PAGE_BAD;
	if ((lower - AP_PAGE_HEADER_BYTES) % AP_ITEMID_BYTES != 0)
		return AP_PAGE_BAD;

	nitems = ap_page_nitems(page);
	for (int i = 1; i <= nitems; i++)
	{
		unsigned	lpflags,
					lpoff,
					lplen;

		ap_page_item(page, i, &lpflags, &lpoff, &lplen);
		if (lpflags != AP_LP_NORMAL)
			continue;
		/*
		 * PostgreSQL places tuples at MAXALIGN'd offsets; tuple.c relies on
		 * that to align attributes relative to the tuple's data area.
		 */
		if (lpoff < upper || lpoff % 8 != 0 ||
			lplen < AP_TUPLE_HEADER_MIN ||
			(uint32_t) lpoff + lplen > special)
			return AP_PAGE_BAD;
	}
	return AP_PAGE_OK;
}
