/*
 * fuzz_common.h
 *	  What the libFuzzer targets share: a silent diskd_log and the tuple
 *	  descriptor their pages and programs are read with.
 */
#ifndef DISKD_FUZZ_COMMON_H
#define DISKD_FUZZ_COMMON_H

#include <stdarg.h>

#include "diskd.h"

int			diskd_disk_id = 0;

/* The daemon's log, silenced: a fuzzer's inputs are expected to be refused. */
void
diskd_log(const char *level, const char *fmt,...)
{
	(void) level;
	(void) fmt;
}

/*
 * (id int4, k int4, pad text, n numeric, d date, f float8, b bool, i8 int8):
 * the seed pages (corpus/page) are of a table with the first three columns.
 */
#define FUZZ_NCOLS	8
static ApColumn fuzz_cols[FUZZ_NCOLS] = {
	{4, 'i', true, false, AP_TYPE_INT4, 0},
	{4, 'i', true, false, AP_TYPE_INT4, 0},
	{-1, 'i', false, false, AP_TYPE_TEXT, 0},
	{-1, 'i', false, false, AP_TYPE_NUMERIC, 0},
	{4, 'i', true, false, AP_TYPE_DATE, 0},
	{8, 'd', true, false, AP_TYPE_FLOAT8, 0},
	{1, 'c', true, false, AP_TYPE_BOOL, 0},
	{8, 'd', true, false, AP_TYPE_INT8, 0},
};

static ApTupleDesc fuzz_desc = {FUZZ_NCOLS, fuzz_cols, 0};

#endif							/* DISKD_FUZZ_COMMON_H */
