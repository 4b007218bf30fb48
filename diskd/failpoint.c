/*
 * failpoint.c
 *	  Test-only fault injection: a scan that fails on purpose, at a chosen
 *	  moment, in a chosen way, so the TAP tests can kill, stop or break a
 *	  disk exactly before its first batch, in the middle of a scan or after
 *	  its last frame.
 *
 * Failpoints exist only when the daemon is started with the environment
 * variable ACTIVE_PG_DISKD_FAILPOINTS naming a file (the tests set it for
 * the postmaster, whose launcher passes its environment on); the daemon
 * says so in its log at start.  Each scan reads the file when it starts,
 * so a test changes the failpoints between queries without a restart.
 * Without the variable nothing is read and nothing can fire.
 *
 * The file holds lines "DISK ACTION WHEN": DISK a disk id or '*'; ACTION
 * one of kill (SIGKILL the daemon), stop (SIGSTOP it), close (shut the
 * connection down), io-error (the scan fails as a read would), busy (the
 * scan is refused for memory), hang (the scan stops without heartbeats),
 * checksum (the page at WHEN fails its checks and goes to the host); WHEN
 * one of start (before the first page), page:N (at the scan's Nth page) or
 * end (after the last frame, before Done).  The first line for this disk
 * wins; '#' starts a comment.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scan_state.h"

/* ACTIVE_PG_DISKD_FAILPOINTS, or NULL: failpoints are off */
static const char *failpoint_file = NULL;

/* At start (main.c): take the failpoint file from the environment, if any. */
void
ap_failpoints_init(void)
{
	const char *f = getenv("ACTIVE_PG_DISKD_FAILPOINTS");

	if (f == NULL || f[0] == '\0')
		return;
	failpoint_file = f;
	diskd_log("WARNING", "test failpoints are enabled from \"%s\"", f);
}

static const struct
{
	const char *name;
	ApFpAction	action;
}			fp_actions[] =
{
	{"kill", AP_FP_KILL},
	{"stop", AP_FP_STOP},
	{"close", AP_FP_CLOSE},
	{"io-error", AP_FP_IO_ERROR},
	{"busy", AP_FP_BUSY},
	{"hang", AP_FP_HANG},
	{"checksum", AP_FP_CHECKSUM},
};

/* Parse one line into fp; false if it is not for this disk or malformed. */
static bool
parse_line(const char *line, ScanFailpoint *fp)
{
	char		disk[16];
	char		action[32];
	char		when[32];
	unsigned long long page;

	if (sscanf(line, "%15s %31s %31s", disk, action, when) != 3 || disk[0] == '#')
		return false;
	if (strcmp(disk, "*") != 0 && atoi(disk) != diskd_disk_id)
		return false;
	memset(fp, 0, sizeof(*fp));
	for (size_t i = 0; i < sizeof(fp_actions) / sizeof(fp_actions[0]); i++)
	{
		if (strcmp(action, fp_actions[i].name) == 0)
			fp->action = fp_actions[i].action;
	}
	if (fp->action == AP_FP_NONE)
		return false;
	if (strcmp(when, "start") == 0)
		fp->at_start = true;
	else if (strcmp(when, "end") == 0)
		fp->at_end = true;
	else if (sscanf(when, "page:%llu", &page) == 1 && page > 0)
		fp->page = page;
	else
		return false;
	return true;
}

/* At the start of a scan: this disk's failpoint, if the file names one. */
void
scan_failpoint_load(Scan *s)
{
	FILE	   *f;
	char		line[256];

	memset(&s->fp, 0, sizeof(s->fp));
	if (failpoint_file == NULL || (f = fopen(failpoint_file, "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
	{
		if (parse_line(line, &s->fp))
			break;
		memset(&s->fp, 0, sizeof(s->fp));
	}
	fclose(f);
}

/*
 * The failpoint fires at blkno (SCAN_NO_BLOCK at the start or end): 0 if
 * the scan goes on (stop, once continued; checksum, which the caller
 * applies), -1 with the error set if it ends.
 */
int
scan_failpoint(Scan *s, uint32_t blkno)
{
	diskd_log("WARNING", "scan %llu: failpoint %d fires at block %u",
			  (unsigned long long) s->req->scan_id, (int) s->fp.action, blkno);
	switch (s->fp.action)
	{
		case AP_FP_NONE:
		case AP_FP_CHECKSUM:
			return 0;
		case AP_FP_KILL:
			raise(SIGKILL);
			return 0;
		case AP_FP_STOP:
			raise(SIGSTOP);
			return 0;
		case AP_FP_CLOSE:
			ap_conn_shutdown(s->c);
			s->close_conn = true;
			return scan_fail(s, AP_ERR_INTERNAL, "connection shut down (failpoint)");
		case AP_FP_IO_ERROR:
			return scan_fail(s, AP_ERR_IO, "read failed at block %u: %s (failpoint)",
							 blkno, strerror(EIO));
		case AP_FP_BUSY:
			return scan_fail(s, AP_ERR_OUT_OF_MEMORY, "scan refused: out of memory (failpoint)");
		case AP_FP_HANG:
			/* no heartbeats: the host's disk_timeout takes the disk over */
			for (int i = 0; i < 1200 && !ap_conn_cancel_requested(s->c); i++)
				usleep(100000);
			return scan_fail(s, AP_ERR_CANCELED, "scan abandoned (failpoint)");
	}
	return 0;
}
