/*
 * scan_setup.c
 *	  Before a scan reads anything: every field of the request checked
 *	  (scan.c's rules), the columns, snapshot, program, Bloom filters and
 *	  aggregation compiled, the buffers allocated; and the relation's path,
 *	  built from its oids.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefilter.h"
#include "scan_state.h"

/* Check one column descriptor and convert it; 0 or -1 with the error set. */
static int
check_column(Scan *s, size_t i, const ActivePg__Column *col, ApColumn *out)
{
	if (col->attlen == 0 || col->attlen < -2 || col->attlen > AP_BLCKSZ)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "columns[%zu].attlen: %d is invalid", i, col->attlen);
	if (col->attalign != 'c' && col->attalign != 's' &&
		col->attalign != 'i' && col->attalign != 'd')
		return scan_fail(s, AP_ERR_BAD_REQUEST,
						 "columns[%zu].attalign: %u is not one of 'c', 's', 'i', 'd'",
						 i, col->attalign);
	if (col->attbyval && col->attlen != 1 && col->attlen != 2 &&
		col->attlen != 4 && col->attlen != 8)
		return scan_fail(s, AP_ERR_BAD_REQUEST,
						 "columns[%zu].attbyval: set for attlen %d", i, col->attlen);
	if (col->type_kind >= AP_TYPE_KIND_COUNT)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "columns[%zu].type_kind: %u is unknown",
						 i, col->type_kind);
	out->attlen = (int16_t) col->attlen;
	out->attalign = (char) col->attalign;
	out->attbyval = col->attbyval;
	out->attisdropped = col->attisdropped;
	out->type_kind = (uint8_t) col->type_kind;
	return 0;
}

/* Copy and sort one xid array of the snapshot; 0 or -1 with the error set. */
static int
copy_xids(Scan *s, const uint32_t *src, size_t n, uint32_t **dst)
{
	*dst = malloc((n > 0 ? n : 1) * sizeof(uint32_t));
	if (*dst == NULL)
		return scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory copying the snapshot");
	if (n > 0)
		memcpy(*dst, src, n * sizeof(uint32_t));
	qsort(*dst, n, sizeof(uint32_t), scan_cmp_u32);
	return 0;
}

/* Check the request's geometry and limits; 0 or -1 with the error set. */
int
scan_check_request(Scan *s)
{
	const ActivePg__ScanRequest *req = s->req;
	const ActivePg__RelLocator *rel = req->rel;
	uint64_t	slots;
	uint64_t	piece_bytes;
	uint64_t	fixed_bytes;
	uint64_t	bloom_bytes = 0;

	if (rel == NULL)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "rel: missing");
	if (rel->spc_oid == 0 || rel->db_oid == 0 || rel->rel_number == 0)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "rel: spc_oid, db_oid and rel_number must be valid oids");
	if (rel->spc_oid == SCAN_GLOBAL_TABLESPACE)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "rel: shared relations (pg_global) are not scanned at the disks");
	if (req->ndisks < 1 || req->ndisks > AP_NDISKS_MAX)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "ndisks: %u is not in 1..%u", req->ndisks, AP_NDISKS_MAX);
	if (req->disk_id >= req->ndisks)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "disk_id: %u is not below ndisks %u",
						 req->disk_id, req->ndisks);
	if (req->stripe_pages < 1 || req->stripe_pages > AP_STRIPE_PAGES_MAX)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "stripe_pages: %u is not in 1..%u",
						 req->stripe_pages, AP_STRIPE_PAGES_MAX);
	if (req->n_columns > AP_MAX_COLUMNS)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "columns: %zu columns exceed the maximum of %u",
						 req->n_columns, AP_MAX_COLUMNS);
	if (req->batch_bytes > AP_BATCH_BYTES_MAX)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "batch_bytes: %u exceeds the maximum of %u",
						 req->batch_bytes, AP_BATCH_BYTES_MAX);
	s->batch_bytes = req->batch_bytes ? req->batch_bytes : AP_BATCH_BYTES_DEFAULT;
	if (req->queue_depth != 0 &&
		(req->queue_depth < AP_QUEUE_DEPTH_MIN || req->queue_depth > AP_QUEUE_DEPTH_MAX))
		return scan_fail(s, AP_ERR_BAD_REQUEST, "queue_depth: %u is not 0 or in %u..%u",
						 req->queue_depth, AP_QUEUE_DEPTH_MIN, AP_QUEUE_DEPTH_MAX);
	s->queue_depth = req->queue_depth ? req->queue_depth : diskd_config.queue_depth;
	if (req->snapshot == NULL)
		return scan_fail(s, AP_ERR_BAD_REQUEST, "snapshot: missing");
	if (req->mode != AP_SCAN_MODE_ACTIVE && req->mode != AP_SCAN_MODE_PAGES)
		return scan_fail(s, AP_ERR_UNSUPPORTED, "mode: %u is not a known scan mode", req->mode);
	s->pages_mode = (req->mode == AP_SCAN_MODE_PAGES);

	/*
	 * Memory committed: the Bloom filters (they live in the request and are
	 * probed in place; page mode ignores the program and them), the batch,
	 * and one read buffer per piece in flight (ioring.c).  --memory-mb is
	 * the disk's memory: fewer reads in flight where the queue depth's
	 * buffers would not fit, an error only where one does not.
	 */
	if (!s->pages_mode && req->program != NULL)
	{
		for (size_t i = 0; i < req->program->n_blooms; i++)
		{
			if (req->program->blooms[i] != NULL)
				bloom_bytes += req->program->blooms[i]->bits.len;
		}
	}
	piece_bytes = (uint64_t) ap_reader_piece_blocks(req->stripe_pages) * AP_BLCKSZ;
	slots = ap_reader_pieces(req->nblocks, req->ndisks, req->stripe_pages, req->disk_id);
	if (slots > s->queue_depth)
		slots = s->queue_depth;
	fixed_bytes = bloom_bytes + s->batch_bytes;
	if (slots > 1 && fixed_bytes + slots * piece_bytes > diskd_config.memory_bytes)
	{
		uint64_t	fit = diskd_config.memory_bytes > fixed_bytes ?
			(diskd_config.memory_bytes - fixed_bytes) / piece_bytes : 0;

		slots = fit > 1 ? fit : 1;
	}
	if (fixed_bytes + slots * piece_bytes > diskd_config.memory_bytes)
		return scan_fail(s, AP_ERR_OUT_OF_MEMORY,
						 "scan needs %llu kB (a read buffer of %llu kB, batch_bytes %u, %llu kB of Bloom filters), the per-scan budget is %llu kB",
						 (unsigned long long) ((fixed_bytes + slots * piece_bytes) >> 10),
						 (unsigned long long) (piece_bytes >> 10), s->batch_bytes,
						 (unsigned long long) (bloom_bytes >> 10),
						 (unsigned long long) (diskd_config.memory_bytes >> 10));
	if (slots > 0)
		s->queue_depth = (uint32_t) slots;
	s->committed_bytes = fixed_bytes + slots * piece_bytes;
	return 0;
}

/* Build descriptor, snapshot, program and buffers; 0 or -1 with the error set. */
int
scan_prepare(Scan *s)
{
	static const ActivePg__Program empty_program = ACTIVE_PG__PROGRAM__INIT;
	const ActivePg__ScanRequest *req = s->req;
	const ActivePg__Snapshot *snap = req->snapshot;
	size_t		i;
	int			rc;

	s->desc.natts = (int) req->n_columns;
	s->desc.cols = calloc(req->n_columns > 0 ? req->n_columns : 1, sizeof(ApColumn));
	if (s->desc.cols == NULL)
		return scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory");
	for (i = 0; i < req->n_columns; i++)
	{
		if (check_column(s, i, req->columns[i], &s->desc.cols[i]) < 0)
			return -1;
	}
	ap_tupdesc_cache_offsets(&s->desc);

	s->snap.xmin = snap->xmin;
	s->snap.xmax = snap->xmax;
	s->snap.xcnt = (uint32_t) snap->n_xip;
	s->snap.subxcnt = (uint32_t) snap->n_subxip;
	s->snap.suboverflowed = snap->suboverflowed;
	if (copy_xids(s, snap->xip, snap->n_xip, &s->snap.xip) < 0 ||
		copy_xids(s, snap->subxip, snap->n_subxip, &s->snap.subxip) < 0)
		return -1;

	rc = ap_program_compile(req->program ? req->program : &empty_program, &s->desc, &s->prog);
	if (rc != 0)
		return scan_fail(s, (uint32_t) rc, "program: %s", s->prog.error);
	s->prog_ok = true;
	s->prog.encoding_utf8 = req->encoding_utf8;
	rc = ap_bloom_compile(req->program, &s->desc, &s->blooms);
	if (rc != 0)
		return scan_fail(s, (uint32_t) rc, "program: %s", s->blooms.error);
	s->blooms_ok = true;
	/* the prefilter runs where the filter would: after any Bloom filter has passed */
	if (s->blooms.nfilters == 0)
		s->pre = ap_prefilter_build(&s->prog, &s->desc);
	if (req->program != NULL && req->program->agg != NULL)
	{
		char		err[256];
		uint64_t	avail = diskd_config.memory_bytes > s->committed_bytes ?
			diskd_config.memory_bytes - s->committed_bytes : 0;
		uint64_t	budget = req->program->agg->memory_bytes;

		/* the table gets what the per-scan budget leaves after buffers and filters */
		if (budget > avail)
			budget = avail;
		rc = ap_agg_compile(req->program->agg, &s->desc, req->encoding_utf8, budget,
							&s->agg, err, sizeof(err));
		if (rc != 0)
			return scan_fail(s, (uint32_t) rc, "program.%s", err);
		/* deform what the keys and arguments read, too */
		if (ap_agg_max_attno(s->agg) > s->prog.max_attno)
			s->prog.max_attno = ap_agg_max_attno(s->agg);
	}

	s->nvalues = (uint32_t) (s->prog.max_attno > s->blooms.max_attno ?
							 s->prog.max_attno :
							 (s->blooms.max_attno > 0 ? s->blooms.max_attno : 1));
	s->nbatch_max = s->agg != NULL ? (uint32_t) ap_agg_batch_size(s->agg) : 0;
	s->value_slots = calloc((size_t) s->nvalues * (s->nbatch_max > 0 ? s->nbatch_max : 1),
							sizeof(ApValue));
	s->values = s->value_slots;
	s->evals = calloc(s->prog.nexprs > 0 ? s->prog.nexprs : 1, sizeof(ApValue));
	s->tids = malloc(SCAN_FALLBACK_BATCH * sizeof(uint64_t));
	s->fb_blocks = malloc(SCAN_FALLBACK_BATCH * sizeof(uint32_t));
	if (s->values == NULL || s->evals == NULL || s->tids == NULL || s->fb_blocks == NULL)
		return scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory");
	if (ap_xidcache_init(&s->cache, SCAN_XIDCACHE_INIT) < 0)
		return scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory");
	s->cache_ok = true;
	/* room for a full batch plus the row that crosses the threshold */
	if (ap_rowbatch_init(&s->rows, s->batch_bytes + 2 * AP_BLCKSZ) < 0)
		return scan_fail(s, AP_ERR_OUT_OF_MEMORY, "out of memory");
	s->rows_ok = true;
	return 0;
}

/* Build "<data_dir-relative path>" for a locator; -1 if invalid. */
int
ap_relpath(const ActivePg__RelLocator *loc, char *buf, size_t buflen)
{
	char		dirpath[64];
	char		verdir[256];
	DIR		   *dir;
	struct dirent *de;
	int			nfound = 0;
	int			n;

	if (loc == NULL || loc->spc_oid == 0 || loc->db_oid == 0 || loc->rel_number == 0 ||
		loc->spc_oid == SCAN_GLOBAL_TABLESPACE)
		return -1;
	if (loc->spc_oid == SCAN_DEFAULT_TABLESPACE)
	{
		n = snprintf(buf, buflen, "base/%u/%u", loc->db_oid, loc->rel_number);
		return (n < 0 || (size_t) n >= buflen) ? -1 : 0;
	}

	/* pg_tblspc/<oid> holds one version directory per major version using it */
	snprintf(dirpath, sizeof(dirpath), "pg_tblspc/%u", loc->spc_oid);
	dir = opendir(dirpath);
	if (dir == NULL)
		return -1;
	while ((de = readdir(dir)) != NULL)
	{
		if (strncmp(de->d_name, SCAN_TBLSPC_PREFIX, strlen(SCAN_TBLSPC_PREFIX)) == 0 &&
			strlen(de->d_name) < sizeof(verdir))
		{
			strcpy(verdir, de->d_name);
			nfound++;
		}
	}
	closedir(dir);
	if (nfound != 1)
		return -1;
	n = snprintf(buf, buflen, "%s/%s/%u/%u", dirpath, verdir, loc->db_oid, loc->rel_number);
	return (n < 0 || (size_t) n >= buflen) ? -1 : 0;
}
