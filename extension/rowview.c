/*
 * rowview.c
 *	  The host's reader of shipped rows (see rowview.h and proto/ap_rows.h).
 *
 * Every byte comes from a disk daemon and is checked before it is read: a
 * row's header against its frame, each value against the row's data area, a
 * varlena's header against what a heap tuple may hold.  Nothing here calls
 * into the backend except psprintf, so diskd/fuzz/fuzz_rows.c builds this
 * file on its own.
 */
#include "postgres.h"

#include "access/tupmacs.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

#include "rowview.h"

/* Open one shipped row (see rowview.h). */
const char *
ApRowOpen(const char *buf, size_t len, size_t off, int natts, bool tid, ApRowView *row)
{
	size_t		dataoff;

	if (off > len || len - off < AP_ROW_HEADER_BYTES)
		return psprintf("it starts beyond its frame's %zu bytes", len);
	memcpy(&row->hdr, buf + off, sizeof(row->hdr));
	if (row->hdr.natts != natts ||
		(row->hdr.flags & ~AP_ROW_HASNULLS) != (tid ? AP_ROW_HASTID : 0))
		return psprintf("it has %u values and flags 0x%x; %d values%s were requested",
						row->hdr.natts, row->hdr.flags, natts, tid ? " and a TID" : "");
	dataoff = AP_ROW_DATA_OFFSET(row->hdr.flags, row->hdr.natts);
	if (row->hdr.row_bytes < dataoff || row->hdr.row_bytes > len - off)
		return psprintf("it claims %u bytes; %zu remain in its frame",
						row->hdr.row_bytes, len - off);
	row->tid = 0;
	if (tid)
		memcpy(&row->tid, buf + off + AP_ROW_HEADER_BYTES, sizeof(row->tid));
	row->nulls = (row->hdr.flags & AP_ROW_HASNULLS) ?
		(const bits8 *) (buf + off + AP_ROW_BITMAP_OFFSET(row->hdr.flags)) : NULL;
	row->data = buf + off + dataoff;
	row->datalen = row->hdr.row_bytes - dataoff;
	return NULL;
}

/*
 * The size of the varlena at p, of which avail bytes lie inside the row, or
 * 0 if its header is not one a heap tuple holds or it does not fit.  Only
 * on-disk TOAST pointers are accepted among external ones: the other kinds
 * (indirect, expanded) hold addresses in a backend's memory.
 */
static size_t
ap_varlena_size(const char *p, size_t avail)
{
	size_t		size;

	if (VARATT_IS_1B_E(p))
	{
		if (avail < VARHDRSZ_EXTERNAL || VARTAG_EXTERNAL(p) != VARTAG_ONDISK)
			return 0;
		size = VARHDRSZ_EXTERNAL + sizeof(varatt_external);
	}
	else if (VARATT_IS_1B(p))
		size = VARSIZE_1B(p);
	else
	{
		if (avail < VARHDRSZ)
			return 0;
		size = VARSIZE_4B(p);
		if (size < (VARATT_IS_4B_C(p) ? VARHDRSZ_COMPRESSED : VARHDRSZ))
			return 0;
	}
	return size <= avail ? size : 0;
}

/* Fetch one value of a shipped row with bounds checks (see rowview.h). */
bool
ApRowFetchValue(Form_pg_attribute att, const char *data, size_t datalen,
				size_t *off, Datum *value)
{
	size_t		pos = *off;
	const char *p;

	/* heap_fill_tuple's placement rules, as in a heap tuple's data area */
	if (pos >= datalen)
		return false;
	if (att->attlen == -1)
		pos = att_align_pointer(pos, att->attalign, -1, data + pos);
	else
		pos = att_align_nominal(pos, att->attalign);
	if (pos >= datalen)
		return false;
	p = data + pos;

	if (att->attlen > 0)
	{
		if ((size_t) att->attlen > datalen - pos)
			return false;
		*off = pos + att->attlen;
	}
	else if (att->attlen == -1)
	{
		size_t		size;

		/* a 4-byte header is always aligned: unaligned, it is not one */
		if (!VARATT_IS_1B(p) && pos != att_align_nominal(pos, att->attalign))
			return false;
		size = ap_varlena_size(p, datalen - pos);
		if (size == 0)
			return false;
		*off = pos + size;
	}
	else if (att->attlen == -2)
	{
		size_t		n = strnlen(p, datalen - pos);

		if (n == datalen - pos)
			return false;
		*off = pos + n + 1;
	}
	else
		return false;
	*value = fetchatt(att, p);
	return true;
}
