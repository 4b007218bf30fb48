/*
 * session.c
 *	  One client's session: after the connection's handshake (conn.c), the
 *	  loop that reads a request at a time and runs it: a ScanRequest (scan.c),
 *	  a StatsRequest, or a late Cancel, until the client goes or breaks the
 *	  protocol.  It sits above both the scan and the connection, so the
 *	  connection never calls up into what it carries.
 */
#include <errno.h>
#include <stdio.h>

#include "diskd.h"

/*
 * How long an authenticated connection may sit idle between requests.  A
 * backend keeps one connection per disk after a scan, for its next scan, and
 * gives it up itself after half this time unused; a client that hoards
 * connections loses them here.  (A scan suspended by an open cursor is not
 * idle: the disk is inside the scan, blocked on sending.)
 */
#define CONN_IDLE_TIMEOUT_MS		60000

/* Answer a StatsRequest with the daemon's cumulative counters. */
static int
send_stats(ApConn *c)
{
	ActivePg__Frame reply = ACTIVE_PG__FRAME__INIT;
	ActivePg__StatsReply sr = ACTIVE_PG__STATS_REPLY__INIT;

	ap_stats_fill(&sr);
	reply.msg_case = ACTIVE_PG__FRAME__MSG_STATS_REPLY;
	reply.stats_reply = &sr;
	return ap_conn_send(c, &reply);
}

/* Serve one accepted socket until it closes (handshake, requests); closes fd. */
void
ap_session_serve(int fd)
{
	ApConn	   *c = ap_conn_open(fd);

	if (c != NULL)
	{
		for (;;)
		{
			ActivePg__Frame *f;
			int			rc;

			rc = ap_conn_recv(c, &f, CONN_IDLE_TIMEOUT_MS);
			/*
			 * Idle between requests for too long: close without a word.  A
			 * backend keeps its connection after a scan for its next one and
			 * goes idle with it like any session; that is no fault.
			 */
			if (rc == -ETIMEDOUT)
				break;
			if (rc < 0)
				break;
			switch (f->msg_case)
			{
				case ACTIVE_PG__FRAME__MSG_SCAN:
					rc = ap_scan_run(c, f->scan);
					break;
				case ACTIVE_PG__FRAME__MSG_CANCEL:
					/* a Cancel that crossed our Done on the wire: nothing to stop */
					break;
				case ACTIVE_PG__FRAME__MSG_STATS_REQUEST:
					rc = send_stats(c);
					break;
				default:
					{
						char		msg[96];

						snprintf(msg, sizeof(msg), "unexpected frame (type %d) outside a scan",
								 (int) f->msg_case);
						rc = ap_conn_fail(c, AP_ERR_PROTOCOL, -EPROTO, msg);
					}
					break;
			}
			active_pg__frame__free_unpacked(f, NULL);
			if (rc < 0 || ap_conn_broken(c))
				break;
		}
		ap_conn_close(c);
	}
}
