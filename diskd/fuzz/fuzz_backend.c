/*
 * fuzz_backend.c
 *	  The few backend functions the host's row reader (extension/rowview.c)
 *	  and PostgreSQL's tuple macros call, for fuzz_rows outside a backend:
 *	  psprintf, whose messages are dropped, and elog's entry points, which
 *	  stop the run on an ERROR.
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>

/* port.h maps vsnprintf to src/port's; the C library's does here */
#undef vsnprintf

/* rowview.c's only backend call: its messages are dropped here */
char *
psprintf(const char *fmt,...)
{
	static char msg[512];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return msg;
}

/*
 * fetchatt's elog(ERROR) for a by-value length it does not know (an inline
 * function since PostgreSQL 16): never reached with the lengths made up
 * here; if it were, the run stops with the input.
 */
bool
errstart(int elevel, const char *domain)
{
	(void) domain;
	return elevel >= ERROR;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

int
errmsg_internal(const char *fmt,...)
{
	(void) fmt;
	return 0;
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	(void) filename;
	(void) lineno;
	(void) funcname;
	abort();
}
