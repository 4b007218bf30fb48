/*
 * fuzz_rows.c
 *	  libFuzzer target: the host's reader of shipped rows
 *	  (extension/rowview.c), walked as the executor walks a RowBatch
 *	  (activescan.c) or an AggPartial (agg_merge.c).
 *
 * The input starts with a made-up column list, the rest is the batch:
 *
 *   byte 0      number of values, 1 + (byte % 12)
 *   byte 1      bit 0: the rows carry a TID (a scan's rows) or not (groups)
 *   one byte per value: bits 0-2 the length (-1 varlena, -2 cstring, 1, 2,
 *               4, 8, 6 or 16 bytes), bits 3-4 the alignment (c, s, i, d),
 *               bit 5 passed by value (lengths 1, 2, 4 and 8 only); as
 *               PostgreSQL's types are, a varlena is aligned at least to
 *               int and a value passed by value at least to its length
 *   the rows    copied into memory of exactly their size, so that a read
 *               past the batch's end is an AddressSanitizer report
 *
 * Every row is opened, its values fetched in order, the data area must end
 * where the last value does, and the next row starts at the aligned end.
 * Every byte of every value fetched by reference is read, and a varlena's
 * length as a backend function would see it (VARSIZE_ANY_EXHDR) must lie
 * inside the row.
 *
 * Built with PostgreSQL's server headers and nothing of the backend but
 * psprintf and elog's entry points (fuzz_backend.c).
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>

#include "access/tupmacs.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

#include "rowview.h"

#define FUZZ_MAX_ATTS	12

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static const int16 fuzz_lens[8] = {-1, -2, 1, 2, 4, 8, 6, 16};
static const char fuzz_aligns[4] = {TYPALIGN_CHAR, TYPALIGN_SHORT, TYPALIGN_INT, TYPALIGN_DOUBLE};

/* Read every byte of the value fetched for att, as its consumer would. */
static unsigned
fuzz_touch(Form_pg_attribute att, Datum value, const char *data, size_t datalen)
{
	const char *p;
	size_t		n;
	unsigned	sum = 0;

	if (att->attbyval)
		return (unsigned) value;
	p = DatumGetPointer(value);
	if (att->attlen > 0)
		n = att->attlen;
	else if (att->attlen == -2)
		n = strlen(p) + 1;
	else if (VARATT_IS_EXTERNAL(p))
	{
		if (!VARATT_IS_EXTERNAL_ONDISK(p))
			abort();			/* a pointer into some backend's memory */
		n = VARSIZE_EXTERNAL(p);
	}
	else
	{
		/* what text, bytea or numeric functions take as the value's bytes */
		if (VARSIZE_ANY_EXHDR(p) < 0 ||
			VARDATA_ANY(p) + VARSIZE_ANY_EXHDR(p) > data + datalen)
			abort();
		n = VARSIZE_ANY(p);
	}
	if (p < data || p + n > data + datalen)
		abort();				/* the value does not lie inside its row */
	for (size_t i = 0; i < n; i++)
		sum += (unsigned char) p[i];
	return sum;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	FormData_pg_attribute atts[FUZZ_MAX_ATTS];
	int			natts;
	bool		tid;
	size_t		hdr;
	char	   *buf;
	size_t		buflen;
	size_t		off = 0;
	unsigned	sum = 0;

	if (len < 2)
		return 0;
	natts = 1 + data[0] % FUZZ_MAX_ATTS;
	tid = (data[1] & 1) != 0;
	hdr = 2 + natts;
	if (len < hdr)
		return 0;
	memset(atts, 0, sizeof(atts));
	for (int i = 0; i < natts; i++)
	{
		uint8		b = data[2 + i];

		atts[i].attnum = i + 1;
		atts[i].attlen = fuzz_lens[b & 7];
		atts[i].attalign = fuzz_aligns[(b >> 3) & 3];
		atts[i].attbyval = (b & 0x20) != 0 &&
			(atts[i].attlen == 1 || atts[i].attlen == 2 ||
			 atts[i].attlen == 4 || atts[i].attlen == 8);
		if (atts[i].attlen == -1 && (b >> 3 & 3) < 2)
			atts[i].attalign = TYPALIGN_INT;
		if (atts[i].attbyval)
			atts[i].attalign = atts[i].attlen == 8 ? TYPALIGN_DOUBLE :
				atts[i].attlen == 4 ? TYPALIGN_INT :
				atts[i].attlen == 2 ? TYPALIGN_SHORT : TYPALIGN_CHAR;
	}

	/* the batch, in memory of its exact size (malloc: MAXALIGN'd) */
	buflen = len - hdr;
	buf = malloc(buflen > 0 ? buflen : 1);
	memcpy(buf, data + hdr, buflen);

	while (off < buflen)
	{
		ApRowView	row;
		size_t		pos = 0;
		bool		ok = true;

		if (ApRowOpen(buf, buflen, off, natts, tid, &row) != NULL)
			break;
		if ((const char *) row.data < buf ||
			row.data + row.datalen > buf + buflen)
			abort();
		sum += (unsigned) row.tid;
		for (int i = 0; i < row.hdr.natts && ok; i++)
		{
			Datum		value;

			if (ApRowIsNull(&row, i))
				continue;
			if (!ApRowFetchValue(&atts[i], row.data, row.datalen, &pos, &value))
				ok = false;
			else
				sum += fuzz_touch(&atts[i], value, row.data, row.datalen);
		}
		if (!ok || pos != row.datalen)
			break;
		off += AP_ROW_ALIGN_UP(row.hdr.row_bytes);
	}
	free(buf);
	return (int) (sum & 0);
}
