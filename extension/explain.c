/*
 * explain.c
 *	  EXPLAIN output of ActiveScan, and the pieces ActiveAgg's (agg_exec.c)
 *	  shares with it.
 *
 * Rules of this file:
 *   - What runs on the disks is always visible (Disk Filter, Disk Output,
 *     Disks, Stripe), and so is what stays on the host (Host Filter, in place
 *     of PostgreSQL's generic Filter, with "Rows Removed by Host Filter"
 *     under ANALYZE); details (shipped columns, per-disk counters) only
 *     under VERBOSE;
 *     counters only under ANALYZE, summed over all executions of the node.
 *   - Plain EXPLAIN contacts no disk: everything shown without ANALYZE
 *     comes from the plan and the settings.
 *   - Every value goes through ExplainProperty* in the structured formats
 *     (JSON, YAML, XML), with one label per value; the text format is kept
 *     compact with one line per group, as EXPLAIN's own "Buffers:" line is.
 */
#include "postgres.h"

#include "commands/explain.h"
#include "executor/instrument.h"
#include "nodes/makefuncs.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

#include "active_pg.h"
#include "bloomjoin.h"
#include "activescan.h"
#include "model.h"

/* Expressions deparsed in the plan's context, as EXPLAIN shows a scan's. */
List *
ApDeparseList(ScanState *ss, List *exprs, List *ancestors, ExplainState *es)
{
	List	   *context = set_deparse_context_plan(es->deparse_cxt, ss->ps.plan, ancestors);
	bool		useprefix = ApExplainUsePrefix(es);
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, exprs)
		out = lappend(out, deparse_expression(lfirst(lc), context, useprefix, false));
	return out;
}

/* A qual list deparsed the way EXPLAIN shows a scan's Filter; nothing if empty. */
void
ApExplainQuals(ScanState *ss, List *quals, const char *label, List *ancestors,
			   ExplainState *es)
{
	if (quals == NIL)
		return;
	ExplainPropertyText(label,
						linitial(ApDeparseList(ss, list_make1(make_ands_explicit(quals)),
											   ancestors, es)),
						es);
}

/* ANALYZE text lines: fallback tuples and pages, disks taken over (if any). */
void
ApExplainTextFallback(const ApHostStats *h, ExplainState *es)
{
	bool		tuples = h->fallback_tids > 0 || h->fallback_fetched > 0;

	if (tuples || h->fallback_blocks > 0)
		ApExplainTextLine(es, "Fallback");
	if (tuples)
		appendStringInfo(es->str, "tuples " UINT64_FORMAT " (fetched " UINT64_FORMAT
						 ", visible " UINT64_FORMAT ")%s",
						 h->fallback_tids, h->fallback_fetched, h->fallback_visible,
						 h->fallback_blocks > 0 ? ", " : "\n");
	if (h->fallback_blocks > 0)
		appendStringInfo(es->str, "pages " UINT64_FORMAT "\n", h->fallback_blocks);
	/* disks that failed: the host read what they had not delivered */
	if (h->disks_taken_over > 0)
	{
		ApExplainTextLine(es, "Disks Taken Over");
		appendStringInfo(es->str, UINT64_FORMAT " (blocks read by the host " UINT64_FORMAT ")\n",
						 h->disks_taken_over, h->blocks_taken_over);
		ApExplainTextLine(es, "Takeover Reason");
		appendStringInfo(es->str, "%s\n", h->takeover_reason);
	}
}

/* Bytes read per byte shipped; 0 if nothing was shipped. */
double
ApBytesReduction(const ActivePg__ScanStats *t)
{
	return t->bytes_shipped > 0 ? (double) t->bytes_read / (double) t->bytes_shipped : 0.0;
}

/* ANALYZE text line: bytes shipped of bytes read. */
void
ApExplainTextInterconnect(const ActivePg__ScanStats *t, ExplainState *es)
{
	double		reduction = ApBytesReduction(t);

	ApExplainTextLine(es, "Interconnect");
	appendStringInfo(es->str, "%s shipped of %s read",
					 ApFormatBytes((double) t->bytes_shipped),
					 ApFormatBytes((double) t->bytes_read));
	if (reduction > 0)
		appendStringInfo(es->str, " (reduction %.1fx)", reduction);
	appendStringInfoChar(es->str, '\n');
}

/*
 * ANALYZE text line: the disks' io and compute time, their CPU time, their
 * wait for the host, the host's wait for them.  Compute is wall time not
 * spent waiting for reads, the host or the emulation's throttles: it still
 * includes waiting for a core, which cpu does not.
 */
void
ApExplainTextDiskTime(const ActivePg__ScanStats *t, const ApHostStats *h, ExplainState *es)
{
	ApExplainTextLine(es, "Disk Time");
	appendStringInfo(es->str, "io %.3f ms, compute %.3f ms (cpu %.3f ms), waiting for host %.3f ms; host waited %.3f ms\n",
					 t->io_us / 1000.0, t->compute_us / 1000.0, t->cpu_us / 1000.0,
					 t->host_wait_us / 1000.0, h->wait_ms);
	/* VERBOSE: how many conversations needed a new connection */
	if (es->verbose)
	{
		ApExplainTextLine(es, "Disk Connections");
		appendStringInfo(es->str, "opened " UINT64_FORMAT ", reused " UINT64_FORMAT "\n",
						 h->connections_opened, h->connections_reused);
	}
}

/*
 * ANALYZE, structured formats: the same times as ApExplainTextDiskTime, in
 * ms, each key meaning one thing: the disks' wait for the host and the
 * host's wait for the disks are two keys.
 */
void
ApExplainTimes(const ActivePg__ScanStats *t, const ApHostStats *h, ExplainState *es)
{
	ExplainPropertyFloat("Disk IO Time", "ms", t->io_us / 1000.0, 3, es);
	ExplainPropertyFloat("Disk Compute Time", "ms", t->compute_us / 1000.0, 3, es);
	ExplainPropertyFloat("Disk CPU Time", "ms", t->cpu_us / 1000.0, 3, es);
	ExplainPropertyFloat("Disk Wait For Host Time", "ms", t->host_wait_us / 1000.0, 3, es);
	ExplainPropertyFloat("Host Wait For Disks Time", "ms", h->wait_ms, 3, es);
	ExplainPropertyUInteger("Disk Connections Opened", NULL, h->connections_opened, es);
	ExplainPropertyUInteger("Disk Connections Reused", NULL, h->connections_reused, es);
}

/* ANALYZE text line: executions that ran as a heap scan on the host. */
void
ApExplainTextHostMode(const ApHostStats *h, ExplainState *es)
{
	if (h->host_mode_scans == 0)
		return;
	ApExplainTextLine(es, "Host Mode");
	appendStringInfo(es->str, UINT64_FORMAT " of " UINT64_FORMAT
					 " executions, " UINT64_FORMAT " tuples",
					 h->host_mode_scans, h->host_mode_scans + h->pushdown_scans,
					 h->host_mode_tuples);
	if (h->host_mode_no_cap > 0)
		appendStringInfo(es->str, " (" UINT64_FORMAT " for disks without expressions)",
						 h->host_mode_no_cap);
	appendStringInfoChar(es->str, '\n');
}

/* Rows the host quals rejected, per loop, as show_instrumentation_count does. */
static void
ap_show_host_removed(ApScanState *s, ExplainState *es)
{
	Instrumentation *instr = s->css.ss.ps.instrument;
	double		nfiltered;
	double		nloops;

	if (!es->analyze || instr == NULL || s->host_quals == NIL)
		return;
	nfiltered = instr->nfiltered1;
	nloops = instr->nloops;
	if (nfiltered > 0 || es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyFloat("Rows Removed by Host Filter", NULL,
							 nloops > 0 ? nfiltered / nloops : 0.0, 0, es);
}

/*
 * Rows the disks' filter rejected, per loop, as show_instrumentation_count
 * shows a Filter's (text: only when some were).
 */
void
ApExplainDiskRemoved(PlanState *ps, List *disk_quals, const ActivePg__ScanStats *t,
					 ExplainState *es)
{
	Instrumentation *instr = ps->instrument;
	double		nloops;

	if (!es->analyze || instr == NULL || disk_quals == NIL)
		return;
	nloops = instr->nloops > 0 ? instr->nloops : 1;
	if (t->tuples_filtered > 0 || es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyFloat("Rows Removed by Disk Filter", NULL,
							 (double) t->tuples_filtered / nloops, 0, es);
}

/* The computed projections the disks ship. */
static void
ap_show_disk_output(ApScanState *s, List *ancestors, ExplainState *es)
{
	if (s->value_exprs == NIL)
		return;
	ExplainPropertyList("Disk Output",
						ApDeparseList(&s->css.ss, s->value_exprs, ancestors, es), es);
}

/* Names of the shipped columns (VERBOSE). */
static void
ap_show_disk_columns(ApScanState *s, ExplainState *es)
{
	Relation	rel = s->css.ss.ss_currentRelation;
	List	   *names = NIL;
	int			i;

	for (i = 0; i < s->nproject; i++)
		names = lappend(names,
						pstrdup(NameStr(TupleDescAttr(RelationGetDescr(rel),
													  s->project_attnos[i] - 1)->attname)));
	if (es->format == EXPLAIN_FORMAT_TEXT && names == NIL)
		ExplainPropertyText("Disk Columns", "(none)", es);
	else
		ExplainPropertyList("Disk Columns", names, es);
}

/* Counters of the disks and the host (ANALYZE). */
static void
ap_show_analyze(ApScanState *s, ExplainState *es)
{
	ActivePg__ScanStats t;
	ApHostStats *h = &s->host;
	double		reduction;

	ApDiskScanSumStats(s->disk_stats, s->disk_stats_valid, s->stats_ndisks, &t);
	reduction = ApBytesReduction(&t);

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		if (h->pushdown_scans > 0)
		{
			ApExplainTextLine(es, "Disk Pages");
			appendStringInfo(es->str, "read " UINT64_FORMAT, t.pages_read);
			if (t.pages_fallback > 0)
				appendStringInfo(es->str, ", fallback " UINT64_FORMAT, t.pages_fallback);
			appendStringInfoChar(es->str, '\n');
			ApExplainTextLine(es, "Disk Tuples");
			appendStringInfo(es->str, "seen " UINT64_FORMAT ", visible " UINT64_FORMAT
							 ", passed " UINT64_FORMAT "\n",
							 t.tuples_seen, t.tuples_visible, t.tuples_passed);
			if (h->pages_received > 0)
			{
				/* distributed-device mode: the host did the disks' work */
				ApExplainTextLine(es, "Host Pages");
				appendStringInfo(es->str, "received " UINT64_FORMAT ", tuples " UINT64_FORMAT
								 ", visible " UINT64_FORMAT "\n",
								 h->pages_received, h->page_tuples, h->page_tuples_visible);
			}
			ApExplainTextFallback(h, es);
			if (s->css.ss.ps.plan->parallel_aware && h->work_items > 0)
			{
				/* the participants' share of the disks (parallel.c) */
				ApExplainTextLine(es, "Work Items");
				appendStringInfo(es->str, UINT64_FORMAT, h->work_items);
				if (h->items_on_host > 0)
					appendStringInfo(es->str, " (" UINT64_FORMAT " read on the host)",
									 h->items_on_host);
				appendStringInfoChar(es->str, '\n');
			}
			if (h->xids_answered > 0 || h->xid_requests > 0)
			{
				ApExplainTextLine(es, "Xids Resolved");
				appendStringInfo(es->str, UINT64_FORMAT " (" UINT64_FORMAT " requests)\n",
								 h->xids_answered, h->xid_requests);
			}
			ApExplainTextInterconnect(&t, es);
			ApExplainTextDiskTime(&t, h, es);
		}
		ApExplainTextHostMode(h, es);
	}
	else
	{
		ExplainPropertyUInteger("Pushdown Executions", NULL, h->pushdown_scans, es);
		ExplainPropertyUInteger("Host Mode Executions", NULL, h->host_mode_scans, es);
		ExplainPropertyUInteger("Host Mode Tuples", NULL, h->host_mode_tuples, es);
		ExplainPropertyUInteger("Host Mode Without Expressions", NULL,
								h->host_mode_no_cap, es);
		ExplainPropertyUInteger("Disk Pages Read", NULL, t.pages_read, es);
		ExplainPropertyUInteger("Disk Pages Fallback", NULL, t.pages_fallback, es);
		ExplainPropertyUInteger("Disk Tuples Seen", NULL, t.tuples_seen, es);
		ExplainPropertyUInteger("Disk Tuples Visible", NULL, t.tuples_visible, es);
		ExplainPropertyUInteger("Disk Tuples Passed", NULL, t.tuples_passed, es);
		ExplainPropertyUInteger("Fallback Tuples", NULL, h->fallback_tids, es);
		ExplainPropertyUInteger("Fallback Tuples Fetched", NULL, h->fallback_fetched, es);
		ExplainPropertyUInteger("Fallback Tuples Visible", NULL, h->fallback_visible, es);
		ExplainPropertyUInteger("Fallback Pages", NULL, h->fallback_blocks, es);
		ExplainPropertyUInteger("Xids Resolved", NULL, h->xids_answered, es);
		ExplainPropertyUInteger("Xid Requests", NULL, h->xid_requests, es);
		ExplainPropertyUInteger("Disks Taken Over", NULL, h->disks_taken_over, es);
		ExplainPropertyUInteger("Blocks Taken Over", NULL, h->blocks_taken_over, es);
		if (h->disks_taken_over > 0)
			ExplainPropertyText("Takeover Reason", h->takeover_reason, es);
		if (s->css.ss.ps.plan->parallel_aware)
		{
			ExplainPropertyUInteger("Work Items", NULL, h->work_items, es);
			ExplainPropertyUInteger("Work Items Read On Host", NULL, h->items_on_host, es);
		}
		ExplainPropertyUInteger("Rows From Disks", NULL, h->rows_from_disks, es);
		ExplainPropertyUInteger("Interconnect Bytes Shipped", "bytes", t.bytes_shipped, es);
		ExplainPropertyUInteger("Disk Bytes Read", "bytes", t.bytes_read, es);
		ExplainPropertyFloat("Interconnect Reduction", NULL, reduction, 1, es);
		ExplainPropertyUInteger("Host Pages Received", NULL, h->pages_received, es);
		ExplainPropertyUInteger("Host Page Tuples", NULL, h->page_tuples, es);
		ExplainPropertyUInteger("Host Page Tuples Visible", NULL, h->page_tuples_visible, es);
		ApExplainTimes(&t, h, es);
	}
}

/* One line (text) or one group (structured formats) per disk (VERBOSE ANALYZE). */
static void
ap_show_per_disk(ApScanState *s, ExplainState *es)
{
	int			i;

	if (s->stats_ndisks == 0)
		return;
	ExplainOpenGroup("Per Disk", "Per Disk", false, es);
	for (i = 0; i < s->stats_ndisks; i++)
	{
		ActivePg__ScanStats *d = &s->disk_stats[i];

		if (!s->disk_stats_valid[i])
			continue;
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Disk %d: pages " UINT64_FORMAT ", tuples " UINT64_FORMAT
							 "/" UINT64_FORMAT "/" UINT64_FORMAT ", fallback " UINT64_FORMAT
							 ", xids " UINT64_FORMAT ", shipped %s, io %.3f ms, compute %.3f ms"
							 " (cpu %.3f ms), waiting for host %.3f ms\n",
							 i, d->pages_read, d->tuples_seen, d->tuples_visible, d->tuples_passed,
							 d->tuples_fallback, d->xids_resolved,
							 ApFormatBytes((double) d->bytes_shipped),
							 d->io_us / 1000.0, d->compute_us / 1000.0, d->cpu_us / 1000.0,
							 d->host_wait_us / 1000.0);
			continue;
		}
		ExplainOpenGroup("Disk", NULL, true, es);
		ExplainPropertyInteger("Disk", NULL, i, es);
		ExplainPropertyUInteger("Pages Read", NULL, d->pages_read, es);
		ExplainPropertyUInteger("Tuples Seen", NULL, d->tuples_seen, es);
		ExplainPropertyUInteger("Tuples Visible", NULL, d->tuples_visible, es);
		ExplainPropertyUInteger("Tuples Passed", NULL, d->tuples_passed, es);
		ExplainPropertyUInteger("Tuples Fallback", NULL, d->tuples_fallback, es);
		ExplainPropertyUInteger("Pages Fallback", NULL, d->pages_fallback, es);
		ExplainPropertyUInteger("Xids Resolved", NULL, d->xids_resolved, es);
		ExplainPropertyUInteger("Rows Shipped", NULL, d->rows_shipped, es);
		ExplainPropertyUInteger("Bytes Shipped", "bytes", d->bytes_shipped, es);
		ExplainPropertyUInteger("Bytes Read", "bytes", d->bytes_read, es);
		ExplainPropertyFloat("IO Time", "ms", d->io_us / 1000.0, 3, es);
		ExplainPropertyFloat("Compute Time", "ms", d->compute_us / 1000.0, 3, es);
		ExplainPropertyFloat("CPU Time", "ms", d->cpu_us / 1000.0, 3, es);
		ExplainPropertyFloat("Wait For Host Time", "ms", d->host_wait_us / 1000.0, 3, es);
		ExplainPropertyFloat("Wall Time", "ms", d->wall_us / 1000.0, 3, es);
		ExplainCloseGroup("Disk", NULL, true, es);
	}
	ExplainCloseGroup("Per Disk", "Per Disk", false, es);
}

/* The cost model's prediction and inputs, kept in the plan (VERBOSE). */
static void
ap_show_model(ApScanState *s, ExplainState *es)
{
	CustomScan *cscan = (CustomScan *) s->css.ss.ps.plan;

	if (list_length(cscan->custom_private) > AP_PRIV_MODEL)
		ApModelExplain((List *) list_nth(cscan->custom_private, AP_PRIV_MODEL),
					   active_pg_scan_mode, es);
}

/* ExplainCustomScan callback of ActiveScan. */
void
ApExplainScan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ApScanState *s = (ApScanState *) node;
	int			ndisks = s->stats_ndisks > 0 ? s->stats_ndisks : ApConfiguredDiskCount();
	/* the stripe unit the scan ran with; before it runs, the one it would */
	int			stripe_pages = s->ds.stripe_pages > 0 ? (int) s->ds.stripe_pages :
		active_pg_stripe_pages;
	int			stripe_kb = stripe_pages * (BLCKSZ / 1024);

	ApExplainQuals(&s->css.ss, s->disk_quals, "Disk Filter", ancestors, es);
	if (es->analyze && s->host.pushdown_scans > 0)
	{
		ActivePg__ScanStats t;

		ApDiskScanSumStats(s->disk_stats, s->disk_stats_valid, s->stats_ndisks, &t);
		ApExplainDiskRemoved(&s->css.ss.ps, s->disk_quals, &t, es);
	}
	ApExplainQuals(&s->css.ss, s->host_quals, "Host Filter", ancestors, es);
	ap_show_host_removed(s, es);
	ap_show_disk_output(s, ancestors, es);
	if (s->bloom != NULL)
	{
		ApBloomExplain(s->bloom, s->disk_stats, s->disk_stats_valid, s->stats_ndisks, es);
		s->css.custom_ps = ApBloomExplainChildren(s->bloom, es);
	}

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ApExplainTextLine(es, "Disks");
		appendStringInfo(es->str, "%d  Stripe: %d pages (%d kB)\n",
						 ndisks, stripe_pages, stripe_kb);
	}
	else
	{
		ExplainPropertyInteger("Disks", NULL, ndisks, es);
		ExplainPropertyInteger("Stripe Pages", NULL, stripe_pages, es);
	}

	if (es->verbose)
		ap_show_disk_columns(s, es);
	/* the prediction is a cost: shown with costs only (tests use COSTS OFF) */
	if (es->verbose && es->costs)
		ap_show_model(s, es);

	if (es->analyze && (s->host.pushdown_scans > 0 || s->host.host_mode_scans > 0))
	{
		ap_show_analyze(s, es);
		if (es->verbose)
			ap_show_per_disk(s, es);
	}
}
