/*
 * process.c
 *	  What a daemon process is: its configuration and its log.
 *
 * main.c fills the configuration from the command line once, before any
 * connection thread starts; every other unit reads it.  The log is the
 * server's: lines go to stderr, which the launcher's daemons share with
 * the postmaster, in the layout of PostgreSQL's default log_line_prefix.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diskd.h"

int			diskd_disk_id = 0;
ApConfig	diskd_config;

/* Log one line to stderr, written with a single write() so threads do not interleave. */
void
diskd_log(const char *level, const char *fmt,...)
{
	char		line[2048];
	char		stamp[64];
	struct timespec ts;
	struct tm	tm;
	va_list		ap;
	int			n;
	int			saved_errno = errno;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
	/*
	 * The layout of PostgreSQL's default log_line_prefix ('%m [%p] '), so
	 * that the daemons' lines, which go to the server's log, read as the
	 * server's own to people and to log analysers; the message names the
	 * disk.
	 */
	{
		char		zone[16];

		strftime(zone, sizeof(zone), "%Z", &tm);
		n = snprintf(line, sizeof(line), "%s.%03ld %s [%d] %s:  active_pg disk %d: ",
					 stamp, ts.tv_nsec / 1000000, zone, (int) getpid(), level,
					 diskd_disk_id);
	}
	if (n < 0 || (size_t) n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(line);
	line[n++] = '\n';
	/* stderr may be a pipe to the launcher; a failed log write is not fatal */
	if (write(STDERR_FILENO, line, n) < 0)
		(void) 0;
	errno = saved_errno;
}
