/*
 * explain_text.c
 *	  The small pieces of EXPLAIN's text format that every part of the
 *	  extension prints with: ActiveScan and ActiveAgg (explain.c,
 *	  agg_exec.c) and the cost model's inputs (model.c).  Kept apart so the
 *	  model can print without calling into the scan's EXPLAIN, which itself
 *	  asks the model.
 */
#include "postgres.h"

#include "commands/explain.h"

#include "activescan.h"

/* Bytes as "123 B", "4.5 kB", "6.7 MB" or "8.9 GB". */
char *
ApFormatBytes(double bytes)
{
	if (bytes < 1024.0)
		return psprintf("%.0f B", bytes);
	if (bytes < 1024.0 * 1024.0)
		return psprintf("%.1f kB", bytes / 1024.0);
	if (bytes < 1024.0 * 1024.0 * 1024.0)
		return psprintf("%.1f MB", bytes / (1024.0 * 1024.0));
	return psprintf("%.1f GB", bytes / (1024.0 * 1024.0 * 1024.0));
}

/* Start a text-format line at the current indentation. */
void
ApExplainTextLine(ExplainState *es, const char *label)
{
	appendStringInfoSpaces(es->str, es->indent * 2);
	appendStringInfo(es->str, "%s: ", label);
}
