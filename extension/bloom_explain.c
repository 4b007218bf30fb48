/*
 * bloom_explain.c
 *	  EXPLAIN of an ActiveScan's Bloom filters.
 *
 * Rules of this file:
 *   - One line (one object in structured formats) per filter: what it
 *     filters by what, its size, k and the estimated false-positive rate;
 *     plain EXPLAIN shows the size the planner's estimate gives, ANALYZE
 *     the built filter.
 *   - Under ANALYZE each filter adds its rows: tested and dropped by the
 *     disks (per disk on a line of its own, left out of regression tests
 *     whose stripes are not part of the question), the shipped rows split
 *     into true matches and false passes, and the measured false-positive
 *     rate (bloom_measure.c) next to the estimate, or why there is none.
 *   - The scan's totals follow: rows probed and dropped, executions skipped.
 *   - A small side whose rows are shared with the join's Hash (BloomShare)
 *     exists twice in the plan, and only one copy runs; EXPLAIN shows it
 *     once: under the Hash, unless ANALYZE saw the scan's copy run.
 */
#include "postgres.h"

#include "commands/explain.h"
#include "executor/instrument.h"

#include "active_pg.h"
#include "bloomjoin.h"

/* "1 MB", "13.5 kB", "64 B". */
static char *
ap_bloom_format_size(uint64 bytes)
{
	if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0)
		return psprintf(UINT64_FORMAT " MB", bytes / (1024 * 1024));
	if (bytes >= 1024)
		return psprintf("%.1f kB", bytes / 1024.0);
	return psprintf(UINT64_FORMAT " B", bytes);
}

/* "0.8%", "<0.1%": an estimate. */
static char *
ap_bloom_format_fpr(double fpr)
{
	if (fpr * 100.0 < 0.1)
		return pstrdup("<0.1%");
	return psprintf("%.1f%%", fpr * 100.0);
}

/* Sum of a per-disk counter. */
static uint64
ap_bloom_sum(const uint64 *per_disk, int ndisks)
{
	uint64		sum = 0;

	for (int d = 0; per_disk != NULL && d < ndisks; d++)
		sum += per_disk[d];
	return sum;
}

/*
 * The measured false-positive rate of f: false passes over the non-matching
 * rows it alone decided.  False (with *why) when there is none to show.
 */
static bool
ap_bloom_measured(const ApBloomFilterState *f, int ndisks, double *fpr, uint64 *nonmatching,
				  const char **why)
{
	*why = f->unmeasured;
	if (*why == NULL && f->disk_tested == NULL)
		*why = "not measured";
	if (*why != NULL)
		return false;
	*nonmatching = f->false_passes + ap_bloom_sum(f->disk_alone, ndisks);
	if (*nonmatching == 0)
	{
		*why = "no non-matching row reached it";
		return false;
	}
	*fpr = (double) f->false_passes / (double) *nonmatching;
	return true;
}

/* ANALYZE rows of one filter, text format. */
static void
ap_bloom_explain_rows_text(const ApBloomFilterState *f, int ndisks, ExplainState *es)
{
	uint64		tested = ap_bloom_sum(f->disk_tested, ndisks);
	uint64		dropped = ap_bloom_sum(f->disk_dropped, ndisks);
	double		fpr;
	uint64		nonmatching;
	const char *why;

	appendStringInfoSpaces(es->str, es->indent * 2 + 2);
	appendStringInfo(es->str, "Bloom Filter Rows: tested " UINT64_FORMAT ", dropped " UINT64_FORMAT,
					 tested, dropped);
	/* the shipped rows are counted against the exact key set: not without one */
	if (f->unmeasured == NULL)
		appendStringInfo(es->str, ", shipped " UINT64_FORMAT " (" UINT64_FORMAT " true matches, "
						 UINT64_FORMAT " false)", f->true_passes + f->false_passes,
						 f->true_passes, f->false_passes);
	if (ap_bloom_measured(f, ndisks, &fpr, &nonmatching, &why))
		appendStringInfo(es->str, "; measured fpr %.2f%% (" UINT64_FORMAT " of %s" UINT64_FORMAT
						 " non-matching rows%s)", fpr * 100.0, f->false_passes,
						 f->alone_sampled ? "about " : "", nonmatching,
						 f->alone_sampled ? ", sampled" : "");
	else
		appendStringInfo(es->str, "; measured fpr n/a (%s)", why);
	appendStringInfoChar(es->str, '\n');

	appendStringInfoSpaces(es->str, es->indent * 2 + 2);
	appendStringInfoString(es->str, "Bloom Filter Rows Per Disk (dropped/tested):");
	for (int d = 0; d < ndisks; d++)
		appendStringInfo(es->str, "%s disk %d " UINT64_FORMAT "/" UINT64_FORMAT,
						 d > 0 ? "," : "", d, f->disk_dropped[d], f->disk_tested[d]);
	appendStringInfoChar(es->str, '\n');
}

/* ANALYZE rows of one filter, structured formats. */
static void
ap_bloom_explain_rows_structured(const ApBloomFilterState *f, int ndisks, ExplainState *es)
{
	double		fpr;
	uint64		nonmatching;
	const char *why;

	ExplainPropertyUInteger("Bloom Filter Rows Tested", NULL,
							ap_bloom_sum(f->disk_tested, ndisks), es);
	ExplainPropertyUInteger("Bloom Filter Rows Dropped", NULL,
							ap_bloom_sum(f->disk_dropped, ndisks), es);
	if (f->unmeasured == NULL)
	{
		ExplainPropertyUInteger("Bloom Filter True Matches", NULL, f->true_passes, es);
		ExplainPropertyUInteger("Bloom Filter False Passes", NULL, f->false_passes, es);
	}
	if (ap_bloom_measured(f, ndisks, &fpr, &nonmatching, &why))
	{
		ExplainPropertyUInteger("Bloom Filter Non-Matching Rows", NULL, nonmatching, es);
		ExplainPropertyBool("Bloom Filter Non-Matching Rows Sampled", f->alone_sampled, es);
		ExplainPropertyFloat("Bloom Filter Measured FPR", NULL, fpr, 6, es);
	}
	else
		ExplainPropertyText("Bloom Filter Not Measured", why, es);
	ExplainOpenGroup("Bloom Filter Disks", "Bloom Filter Disks", false, es);
	for (int d = 0; d < ndisks; d++)
	{
		ExplainOpenGroup("Bloom Filter Disk", NULL, true, es);
		ExplainPropertyInteger("Disk", NULL, d, es);
		ExplainPropertyUInteger("Rows Tested", NULL, f->disk_tested[d], es);
		ExplainPropertyUInteger("Rows Dropped", NULL, f->disk_dropped[d], es);
		ExplainPropertyUInteger("Rows Dropped Alone", NULL, f->disk_alone[d], es);
		ExplainCloseGroup("Bloom Filter Disk", NULL, true, es);
	}
	ExplainCloseGroup("Bloom Filter Disks", "Bloom Filter Disks", false, es);
}

/* EXPLAIN of the filters (see bloomjoin.h). */
void
ApBloomExplain(ApBloomState *bs, const ActivePg__ScanStats *disk_stats,
			   const bool *valid, int ndisks, ExplainState *es)
{
	uint64		tested = 0;
	uint64		dropped = 0;
	bool		analyzed = es->analyze && bs->nfilters > 0 && bs->filters[0].builds > 0;

	/* structured formats: a labelled array of filter objects (valid JSON) */
	if (es->format != EXPLAIN_FORMAT_TEXT)
		ExplainOpenGroup("Bloom Filters", "Bloom Filters", false, es);
	for (int i = 0; i < bs->nfilters; i++)
	{
		ApBloomFilterState *f = &bs->filters[i];
		uint32		len = f->len;
		uint32		k = f->nhashes;
		double		nkeys = (double) f->distinct;
		double		fpr;
		char	   *size;
		bool		rows = es->analyze && f->builds > 0 && f->disk_tested != NULL;

		/* plain EXPLAIN: the size the estimate gives; ANALYZE: the built one */
		if (!(es->analyze && f->builds > 0))
		{
			nkeys = f->est_keys;
			ApBloomGeometry(nkeys, f->max_bytes, active_pg_bloom_bytes, &len, &k, &fpr);
		}
		else
			fpr = ap_bloom_fpr_len(nkeys, len, k);
		size = ap_bloom_format_size(len);
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Bloom Filter: %s (%s, k=%u, est. fpr %s)",
							 f->label, size, k, ap_bloom_format_fpr(fpr));
			if (es->analyze && f->builds > 0)
				appendStringInfo(es->str, " keys " UINT64_FORMAT " (" UINT64_FORMAT " distinct)",
								 f->keys, f->distinct);
			if (es->analyze && f->builds > 1)
				appendStringInfo(es->str, ", built " UINT64_FORMAT " times", f->builds);
			if (es->analyze && f->shared)
				appendStringInfoString(es->str, f->share_probe ? " from the join's probe rows" :
									   f->parallel_share ? " from the Parallel Hash's rows" :
									   " from the Hash's rows");
			appendStringInfoChar(es->str, '\n');
			if (rows)
				ap_bloom_explain_rows_text(f, ndisks, es);
			continue;
		}
		ExplainOpenGroup("Bloom Filter", NULL, true, es);
		ExplainPropertyText("Bloom Filter", f->label, es);
		ExplainPropertyUInteger("Bloom Filter Size", "bytes",
								(uint64) len, es);
		ExplainPropertyUInteger("Bloom Filter Hashes", NULL, k, es);
		ExplainPropertyFloat("Bloom Filter Estimated FPR", NULL, fpr, 6, es);
		if (es->analyze && f->builds > 0)
		{
			ExplainPropertyUInteger("Bloom Filter Keys", NULL, f->keys, es);
			ExplainPropertyUInteger("Bloom Filter Distinct Keys", NULL, f->distinct, es);
			ExplainPropertyUInteger("Bloom Filter Builds", NULL, f->builds, es);
			ExplainPropertyBool("Bloom Filter Keys From Hash", f->shared && !f->share_probe, es);
			ExplainPropertyBool("Bloom Filter Keys From Probe Side", f->shared && f->share_probe, es);
		}
		if (rows)
			ap_bloom_explain_rows_structured(f, ndisks, es);
		ExplainCloseGroup("Bloom Filter", NULL, true, es);
	}
	if (es->format != EXPLAIN_FORMAT_TEXT)
		ExplainCloseGroup("Bloom Filters", "Bloom Filters", false, es);
	if (!analyzed)
		return;

	for (int d = 0; d < ndisks; d++)
	{
		if (!valid[d])
			continue;
		tested += disk_stats[d].bloom_tested;
		dropped += disk_stats[d].bloom_dropped;
	}
	if (es->format != EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyUInteger("Bloom Rows Tested", NULL, tested, es);
		ExplainPropertyUInteger("Bloom Rows Dropped", NULL, dropped, es);
		ExplainPropertyUInteger("Bloom Skipped Executions", NULL, bs->skipped_scans, es);
		if (bs->rows_measured > 0)
		{
			ExplainPropertyUInteger("Bloom Rows Measured", NULL, bs->rows_measured, es);
			ExplainPropertyUInteger("Bloom Rows True Matches", NULL, bs->true_all, es);
		}
		return;
	}
	appendStringInfoSpaces(es->str, es->indent * 2);
	appendStringInfo(es->str, "Bloom Rows: tested " UINT64_FORMAT ", dropped " UINT64_FORMAT,
					 tested, dropped);
	/* with several filters, the rows that truly match them all (ideal filters) */
	if (bs->nfilters > 1 && bs->rows_measured > 0)
		appendStringInfo(es->str, ", shipped " UINT64_FORMAT " of which " UINT64_FORMAT
						 " match every filter's keys", bs->rows_measured, bs->true_all);
	if (bs->skipped_scans > 0)
		appendStringInfo(es->str, "; " UINT64_FORMAT " executions skipped (no key)",
						 bs->skipped_scans);
	appendStringInfoChar(es->str, '\n');
}

/* The scan's child plans EXPLAIN prints (see bloomjoin.h). */
List *
ApBloomExplainChildren(ApBloomState *bs, ExplainState *es)
{
	List	   *shown = NIL;

	for (int i = 0; i < bs->nfilters; i++)
	{
		ApBloomFilterState *f = &bs->filters[i];

		if (f->share == 0 || (es->analyze && ApPlanStateRan(f->child)))
			shown = lappend(shown, f->child);
	}
	return shown;
}
