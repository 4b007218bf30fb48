/*
 * transport.c
 *	  Connections from a backend to the disk daemons (addresses: diskaddr.c).
 *
 * Rules of this file:
 *   - Every socket is non-blocking and every wait goes through the latch
 *     machinery (WaitLatchOrSocket / WaitEventSet) followed by
 *     CHECK_FOR_INTERRUPTS, so query cancel, statement_timeout and postmaster
 *     death are served while waiting for a disk (postgres_fdw does the same
 *     for libpq sockets).
 *   - Sockets belong to a per-scan memory context and are closed by a reset
 *     callback on it: EndCustomScan does not run when the query fails, but
 *     the executor's memory is always released, so the callback always runs.
 *   - A frame's length is checked against AP_FRAME_MAX_BYTES before the
 *     receive buffer grows (proto/ap_wire.h); a bad length is a protocol
 *     violation naming the disk.
 *   - One function (ApReportDiskError) maps a disk's error code to SQLSTATE.
 *   - A disk that goes away mid-scan is an ERROR, never a silently short
 *     result.
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "active_pg.h"
#include "ap_frame_check.h"
#include "transport.h"

/* Initial receive buffer: room for a small frame plus a default row batch. */
#define AP_RBUF_INITIAL				(AP_BATCH_BYTES_DEFAULT + 64 * 1024)
/* Pause between connection attempts while the launcher starts the disks. */
#define AP_CONNECT_RETRY_MS			50

/* ---------------- connection set lifetime ---------------- */

/* protobuf-c allocator in the set's memory context. */
static void *
ap_pb_alloc(void *data, size_t size)
{
	return MemoryContextAlloc((MemoryContext) data, size > 0 ? size : 1);
}

/* protobuf-c free. */
static void
ap_pb_free(void *data, void *ptr)
{
	if (ptr != NULL)
		pfree(ptr);
}

/*
 * Forget the set's wait events after a socket came or went: the epoll
 * instance would still watch a socket kept for another scan.  The next
 * wait builds them again (ApConnSetWaitEvents), once however many disks
 * finished since, and not at all after the last one.
 */
static void
ap_drop_wes(ApConnSet *set)
{
	if (set->wes != NULL)
	{
		FreeWaitEventSet(set->wes);
		set->wes = NULL;
	}
}

/* Close all sockets; tell disks still scanning to stop (best effort, never blocks). */
void
ApCloseAll(ApConnSet *set)
{
	int			i;

	for (i = 0; i < set->nconns; i++)
	{
		ApDiskConn *c = &set->conns[i];

		if (c->sock == PGINVALID_SOCKET)
			continue;
		if (c->scanning)
		{
			ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
			ActivePg__Cancel cancel = ACTIVE_PG__CANCEL__INIT;
			unsigned char buf[64];
			size_t		len;

			f.msg_case = ACTIVE_PG__FRAME__MSG_CANCEL;
			f.cancel = &cancel;
			len = active_pg__frame__get_packed_size(&f);
			if (len + AP_FRAME_HEADER_BYTES <= sizeof(buf))
			{
				ap_put_be32(buf, (uint32) len);
				active_pg__frame__pack(&f, buf + AP_FRAME_HEADER_BYTES);
				/* closing the socket cancels too; this only makes it prompt */
				(void) send(c->sock, buf, len + AP_FRAME_HEADER_BYTES,
							MSG_DONTWAIT | MSG_NOSIGNAL);
			}
			c->scanning = false;
		}
		closesocket(c->sock);
		c->sock = PGINVALID_SOCKET;
	}
	ap_drop_wes(set);
}

/* Reset callback of the per-scan context: runs on success and on ERROR alike. */
static void
ap_conn_set_callback(void *arg)
{
	ApCloseAll((ApConnSet *) arg);
}

/*
 * Allocate a set in cxt with its cleanup callback: room for capacity
 * connections, the first n of them to disks 0..n-1 (not yet connected).
 */
static ApConnSet *
ap_new_set(MemoryContext cxt, ApDiskAddr *addrs, int naddrs, int n, int capacity)
{
	ApConnSet  *set = MemoryContextAllocZero(cxt, sizeof(ApConnSet));
	int			i;

	set->cxt = cxt;
	set->allocator.alloc = ap_pb_alloc;
	set->allocator.free = ap_pb_free;
	set->allocator.allocator_data = cxt;
	set->addrs = addrs;
	set->naddrs = naddrs;
	set->nconns = n;
	set->capacity = Max(capacity, n);
	set->conns = MemoryContextAllocZero(cxt, sizeof(ApDiskConn) * Max(set->capacity, 1));
	for (i = 0; i < set->capacity; i++)
		set->conns[i].sock = PGINVALID_SOCKET;
	for (i = 0; i < n; i++)
	{
		ApDiskConn *c = &set->conns[i];

		c->disk = i;
		c->vdisk = i;
		c->nvdisks = (uint32) n;
		c->address = MemoryContextStrdup(cxt, ApDiskAddrString(&addrs[i]));
	}
	set->cb.func = ap_conn_set_callback;
	set->cb.arg = set;
	MemoryContextRegisterResetCallback(cxt, &set->cb);
	return set;
}

/* ---------------- connect ---------------- */

/* Wait for events on conn's socket or the latch, serving interrupts (see transport.h). */
int
ApConnWait(ApDiskConn *conn, int events, long ms)
{
	int			rc = WaitLatchOrSocket(MyLatch,
									   events | WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
									   (ms >= 0 ? WL_TIMEOUT : 0),
									   conn->sock, ms, PG_WAIT_EXTENSION);

	if (rc & WL_LATCH_SET)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return rc;
}

/* Milliseconds until deadline (0 if passed); -1 when there is no deadline. */
static long
ap_remaining_ms(TimestampTz deadline)
{
	TimestampTz now;

	if (deadline == 0)
		return -1;
	now = GetCurrentTimestamp();
	if (now >= deadline)
		return 0;
	return (long) ((deadline - now + 999) / 1000);
}

/* Is errno one of the "disk not up yet" errors worth retrying? */
static bool
ap_connect_retryable(int err)
{
	return err == ECONNREFUSED || err == ENOENT || err == EAGAIN ||
		err == ECONNRESET || err == ETIMEDOUT || err == EINTR;
}

/*
 * Connect c to addr, retrying until deadline if retry.  The socket is stored
 * in c at once so that an interrupt during the wait cannot leak it.
 */
static bool
ap_connect(ApDiskConn *c, const ApDiskAddr *addr, TimestampTz deadline,
		   bool retry, char **err)
{
	for (;;)
	{
		struct sockaddr_storage ss;
		socklen_t	sslen;
		int			saved;

		memset(&ss, 0, sizeof(ss));
		if (addr->is_tcp)
		{
			struct sockaddr_in *sin = (struct sockaddr_in *) &ss;

			sin->sin_family = AF_INET;
			sin->sin_port = htons((uint16) addr->port);
			if (strcmp(addr->host, "localhost") == 0)
				sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			else if (inet_pton(AF_INET, addr->host, &sin->sin_addr) != 1)
			{
				*err = psprintf("invalid address \"%s\"", addr->host);
				return false;
			}
			sslen = sizeof(struct sockaddr_in);
		}
		else
		{
			struct sockaddr_un *sun = (struct sockaddr_un *) &ss;

			sun->sun_family = AF_UNIX;
			strlcpy(sun->sun_path, addr->path, sizeof(sun->sun_path));
			sslen = sizeof(struct sockaddr_un);
		}

		c->sock = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c->sock < 0)
		{
			c->sock = PGINVALID_SOCKET;
			*err = psprintf("could not create socket: %m");
			return false;
		}
		if (addr->is_tcp)
		{
			int			one = 1;

			(void) setsockopt(c->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}

		if (connect(c->sock, (struct sockaddr *) &ss, sslen) == 0)
			return true;
		saved = errno;
		if (saved == EINPROGRESS)
		{
			/* TCP: wait until the connection is established or fails */
			for (;;)
			{
				long		ms = ap_remaining_ms(deadline);
				int			rc;
				int			soerr = 0;
				socklen_t	len = sizeof(soerr);

				if (ms == 0)
				{
					saved = ETIMEDOUT;
					break;
				}
				rc = ApConnWait(c, WL_SOCKET_CONNECTED, ms);
				if (!(rc & WL_SOCKET_CONNECTED))
					continue;
				if (getsockopt(c->sock, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
					soerr = errno;
				if (soerr == 0)
					return true;
				saved = soerr;
				break;
			}
		}

		closesocket(c->sock);
		c->sock = PGINVALID_SOCKET;
		if (!retry || !ap_connect_retryable(saved) || ap_remaining_ms(deadline) == 0)
		{
			*err = psprintf("%s", strerror(saved));
			return false;
		}

		/* the launcher may still be starting the disk: wait a little */
		{
			long		ms = Min(ap_remaining_ms(deadline), AP_CONNECT_RETRY_MS);
			int			rc;

			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						   ms, PG_WAIT_EXTENSION);
			if (rc & WL_LATCH_SET)
				ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
}

/* ---------------- send ---------------- */

/* Write all of buf, waiting interruptibly; false with *err on failure or deadline. */
static bool
ap_send_bytes(ApDiskConn *c, const unsigned char *buf, size_t len,
			  TimestampTz deadline, char **err)
{
	while (len > 0)
	{
		ssize_t		n = send(c->sock, buf, len, MSG_NOSIGNAL);

		if (n > 0)
		{
			buf += n;
			len -= n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		{
			long		ms = ap_remaining_ms(deadline);

			if (ms == 0)
			{
				*err = pstrdup("timed out sending");
				return false;
			}
			(void) ApConnWait(c, WL_SOCKET_WRITEABLE, ms);
			continue;
		}
		*err = psprintf("%s", n == 0 ? "connection closed" : strerror(errno));
		return false;
	}
	return true;
}

/* Serialize a frame with its length header into a palloc'd buffer. */
static unsigned char *
ap_pack_frame(const ActivePg__Frame *frame, size_t *total)
{
	size_t		len = active_pg__frame__get_packed_size(frame);
	unsigned char *buf;

	if (len == 0 || len > AP_FRAME_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("active_pg request of %zu bytes exceeds the frame limit", len),
				 errdetail("A frame may hold at most %u bytes.", AP_FRAME_MAX_BYTES)));
	buf = palloc(len + AP_FRAME_HEADER_BYTES);
	ap_put_be32(buf, (uint32) len);
	active_pg__frame__pack(frame, buf + AP_FRAME_HEADER_BYTES);
	*total = len + AP_FRAME_HEADER_BYTES;
	return buf;
}

/* ApSendFrame that reports failure instead of raising it: false with *err. */
bool
ApTrySendFrame(ApConnSet *set, ApDiskConn *conn, const ActivePg__Frame *frame, char **err)
{
	size_t		total;
	unsigned char *buf = ap_pack_frame(frame, &total);
	bool		ok = ap_send_bytes(conn, buf, total, 0, err);

	pfree(buf);
	return ok;
}

/* Send one frame to a disk during a scan; ERROR if the disk went away. */
void
ApSendFrame(ApConnSet *set, ApDiskConn *conn, const ActivePg__Frame *frame)
{
	char	   *err = NULL;

	if (!ApTrySendFrame(set, conn, frame, &err))
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not send to active_pg disk %d: %s", conn->disk, err),
				 errdetail("The disk's address is %s.", conn->address),
				 errhint("The server log has the disk's own messages; the launcher restarts a disk that died. Retry the query.")));
}

/* ---------------- receive ---------------- */

/* Read available bytes: 1 read some, 0 would block, -1 EOF/error (*err set). */
static int
ap_fill(ApDiskConn *c, char **err)
{
	bool		got = false;

	for (;;)
	{
		ssize_t		n;

		if (c->rbuf == NULL)
		{
			c->rcap = AP_RBUF_INITIAL;
			c->rbuf = palloc(c->rcap);
			c->rstart = c->rend = 0;
		}
		if (c->rstart == c->rend)
			c->rstart = c->rend = 0;
		if (c->rend == c->rcap)
		{
			/* no room: the pending frame is complete or the caller must consume */
			return got ? 1 : 0;
		}
		n = recv(c->sock, c->rbuf + c->rend, c->rcap - c->rend, 0);
		if (n > 0)
		{
			c->rend += n;
			got = true;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return got ? 1 : 0;
		if (n < 0 && errno == EINTR)
			continue;
		/*
		 * EOF or an error after some bytes arrived: hand those bytes over
		 * first (they often hold the disk's Error frame); the condition is
		 * sticky, so the next call reports it.
		 */
		if (got)
			return 1;
		*err = n == 0 ? NULL : psprintf("%s", strerror(errno));
		return -1;
	}
}

/* See transport.h. */
bool
ApDiskErrorRecoverable(uint32 code)
{
	switch (code)
	{
		case AP_ERR_BUSY:
		case AP_ERR_OUT_OF_MEMORY:
		case AP_ERR_IO:
		case AP_ERR_NO_RELATION:
		case AP_ERR_INTERNAL:
			return true;
		default:
			return false;
	}
}

/* Throwing wrapper of ap_fill for scans. */
bool
ApConnFill(ApDiskConn *conn)
{
	char	   *err = NULL;
	int			r = ap_fill(conn, &err);

	if (r < 0)
	{
		if (err == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("active_pg disk %d closed the connection during a scan",
							conn->disk),
					 errdetail("The disk's address is %s.", conn->address),
					 errhint("The launcher restarts a disk that died; retry the query.")));
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not receive from active_pg disk %d: %s", conn->disk, err),
				 errdetail("The disk's address is %s.", conn->address),
				 errhint("The server log has the disk's own messages; the launcher restarts a disk that died. Retry the query.")));
	}
	return r > 0;
}

/*
 * Take the next complete frame out of the buffer: 1 got one, 0 need more
 * bytes, -1 malformed (*err set).  The length is checked before the buffer
 * grows so that a hostile or broken peer cannot make us allocate.
 */
static int
ap_next_frame(ApConnSet *set, ApDiskConn *c, ActivePg__Frame **out, char **err)
{
	size_t		avail = c->rend - c->rstart;
	uint32		len;
	ActivePg__Frame *f;

	*out = NULL;
	if (avail < AP_FRAME_HEADER_BYTES)
	{
		if (c->rbuf != NULL && c->rstart > 0)
		{
			memmove(c->rbuf, c->rbuf + c->rstart, avail);
			c->rstart = 0;
			c->rend = avail;
		}
		return 0;
	}
	len = ap_get_be32((unsigned char *) c->rbuf + c->rstart);
	if (len == 0 || len > AP_FRAME_MAX_BYTES)
	{
		*err = psprintf("The disk sent a frame of %u bytes; the limit is %u.",
						len, AP_FRAME_MAX_BYTES);
		return -1;
	}
	if (avail < AP_FRAME_HEADER_BYTES + (size_t) len)
	{
		size_t		need = AP_FRAME_HEADER_BYTES + (size_t) len;

		/* make room for the whole frame: compact, then grow if still short */
		if (c->rstart > 0)
		{
			memmove(c->rbuf, c->rbuf + c->rstart, avail);
			c->rstart = 0;
			c->rend = avail;
		}
		if (c->rcap < need)
		{
			c->rbuf = repalloc(c->rbuf, need);
			c->rcap = need;
		}
		return 0;
	}
	/* nesting and unpacked size bounded first (ap_frame_check.c) */
	{
		uint64		need;
		char		why[160];

		if (ap_frame_check((uint8_t *) c->rbuf + c->rstart + AP_FRAME_HEADER_BYTES, len,
						   AP_FRAME_MAX_DEPTH, &need, why, sizeof(why)) != 0)
		{
			*err = psprintf("The disk sent a malformed frame: %s.", why);
			return -1;
		}
		if (need > Max((uint64) len * AP_UNPACK_FACTOR, AP_UNPACK_MIN_BYTES))
		{
			*err = psprintf("The disk sent a frame of %u bytes that would take %llu bytes to unpack.",
							len, (unsigned long long) need);
			return -1;
		}
	}
	f = active_pg__frame__unpack(&set->allocator, len,
								 (uint8_t *) c->rbuf + c->rstart + AP_FRAME_HEADER_BYTES);
	c->rstart += AP_FRAME_HEADER_BYTES + (size_t) len;
	if (f == NULL)
	{
		*err = pstrdup("The disk sent a frame that does not decode.");
		return -1;
	}
	if (f->msg_case == ACTIVE_PG__FRAME__MSG__NOT_SET)
	{
		active_pg__frame__free_unpacked(f, &set->allocator);
		*err = pstrdup("The disk sent an empty frame.");
		return -1;
	}
	*out = f;
	return 1;
}

/* Throwing wrapper of ap_next_frame for scans. */
ActivePg__Frame *
ApConnNextFrame(ApConnSet *set, ApDiskConn *conn)
{
	ActivePg__Frame *f;
	char	   *err = NULL;

	if (ap_next_frame(set, conn, &f, &err) < 0)
		ApProtocolError(conn, err);
	return f;
}

/* Free an unpacked frame. */
void
ApFreeFrame(ApConnSet *set, ActivePg__Frame *frame)
{
	if (frame != NULL)
		active_pg__frame__free_unpacked(frame, &set->allocator);
}

/* ---------------- errors ---------------- */

/* ERRCODE_PROTOCOL_VIOLATION naming the disk. */
void
ApProtocolError(ApDiskConn *conn, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("protocol violation by active_pg disk %d at %s", conn->disk, conn->address),
			 errdetail_internal("%s", detail ? detail : ""),
			 errhint("Install the extension and %s from the same build, and check that nothing else listens at the disk's address.",
					 AP_DISKD_PROGRAM)));
	pg_unreachable();
}

/* The one place that maps a disk's ApErrCode to a SQLSTATE. */
void
ApReportDiskError(ApDiskConn *conn, const ActivePg__Error *err)
{
	int			sqlstate;
	const char *msg = (err->message != NULL && err->message[0] != '\0') ?
		err->message : "unspecified error";

	switch ((ApErrCode) err->code)
	{
		case AP_ERR_PROTOCOL:
		case AP_ERR_FRAME_TOO_BIG:
			sqlstate = ERRCODE_PROTOCOL_VIOLATION;
			break;
		case AP_ERR_UNSUPPORTED:
			sqlstate = ERRCODE_FEATURE_NOT_SUPPORTED;
			break;
		case AP_ERR_NO_RELATION:
			sqlstate = ERRCODE_UNDEFINED_FILE;
			break;
		case AP_ERR_IO:
			sqlstate = ERRCODE_IO_ERROR;
			break;
		case AP_ERR_AUTH:
			sqlstate = ERRCODE_INVALID_PASSWORD;
			break;
		case AP_ERR_BUSY:
			sqlstate = ERRCODE_TOO_MANY_CONNECTIONS;
			break;
		case AP_ERR_OUT_OF_MEMORY:
			sqlstate = ERRCODE_OUT_OF_MEMORY;
			break;
		case AP_ERR_CANCELED:
			sqlstate = ERRCODE_QUERY_CANCELED;
			break;
		case AP_ERR_BAD_REQUEST:
		case AP_ERR_INTERNAL:
		default:
			sqlstate = ERRCODE_INTERNAL_ERROR;
			break;
	}
	/* the disk has ended this scan; nothing to cancel */
	conn->scanning = false;
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("active_pg disk %d: %s", conn->disk, msg),
			 errdetail("The disk at %s reported error code %u.", conn->address, err->code),
			 errhint("The server log has the disk's own messages.")));
	pg_unreachable();
}

/* ---------------- handshake ---------------- */

/* Send one handshake frame before deadline; false with *err on failure. */
static bool
ap_send_handshake_frame(ApDiskConn *c, const ActivePg__Frame *f, TimestampTz deadline, char **err)
{
	size_t		total;
	unsigned char *buf = ap_pack_frame(f, &total);

	if (!ap_send_bytes(c, buf, total, deadline, err))
		return false;
	pfree(buf);
	return true;
}

/*
 * Hello/HelloReply on a connected socket, bounded by deadline, in two
 * halves so that ApConnectAll sends every Hello before it waits for any
 * reply.  A disk's Error is raised (it is the disk's answer, e.g. a wrong
 * secret) unless the host can take the disk over (busy, out of memory);
 * transport failures and those return false with *err.
 */
static bool
ap_send_hello(ApDiskConn *c, TimestampTz deadline, char **err)
{
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__Hello hello = ACTIVE_PG__HELLO__INIT;

	if (!pg_strong_random(c->client_nonce, sizeof(c->client_nonce)))
	{
		*err = pstrdup("could not generate a random nonce");
		return false;
	}
	hello.protocol_version = AP_PROTOCOL_VERSION;
	hello.pg_version_num = PG_VERSION_NUM;
	hello.client_nonce.data = c->client_nonce;
	hello.client_nonce.len = sizeof(c->client_nonce);
	f.msg_case = ACTIVE_PG__FRAME__MSG_HELLO;
	f.hello = &hello;
	return ap_send_handshake_frame(c, &f, deadline, err);
}

/*
 * With active_pg.disk_secret set, the disk must prove it knows the secret
 * (server_proof over both nonces: an impostor that took over a disk's
 * address cannot), and then we prove it too, in an Auth frame the daemon
 * checks before anything else (proto/ap_auth.c).  Without a secret a daemon
 * that has one refuses our first request.  A wrong proof raises
 * ERRCODE_INVALID_PASSWORD; transport failures return false with *err.
 */
static bool
ap_authenticate(ApDiskConn *c, const ActivePg__HelloReply *hr, TimestampTz deadline,
				char **err)
{
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__Auth auth = ACTIVE_PG__AUTH__INIT;
	unsigned char expected[AP_SHA256_BYTES];
	unsigned char proof[AP_SHA256_BYTES];

	if (active_pg_disk_secret == NULL || active_pg_disk_secret[0] == '\0')
		return true;
	if (hr->server_nonce.len != AP_AUTH_NONCE_BYTES || hr->server_proof.len != AP_SHA256_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PASSWORD),
				 errmsg("active_pg disk %d did not prove that it knows active_pg.disk_secret", c->disk),
				 errdetail("The disk at %s answered without a proof: it was started without a secret, or it is not the disk.",
						   c->address),
				 errhint("Start the daemon with --secret-file or ACTIVE_PG_DISK_SECRET, or unset active_pg.disk_secret.")));
	ap_auth_proof(active_pg_disk_secret, true, c->client_nonce, hr->server_nonce.data, expected);
	if (!ap_auth_equal(hr->server_proof.data, expected, AP_SHA256_BYTES))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PASSWORD),
				 errmsg("active_pg disk %d failed to prove that it knows active_pg.disk_secret", c->disk),
				 errdetail("The disk at %s holds another secret, or it is not the disk.", c->address),
				 errhint("Check active_pg.disk_secret against the daemon's secret.")));
	ap_auth_proof(active_pg_disk_secret, false, c->client_nonce, hr->server_nonce.data, proof);
	auth.proof.data = proof;
	auth.proof.len = sizeof(proof);
	f.msg_case = ACTIVE_PG__FRAME__MSG_AUTH;
	f.auth = &auth;
	return ap_send_handshake_frame(c, &f, deadline, err);
}

/* The second half: wait for HelloReply (see ap_handshake). */
static bool
ap_await_hello_reply(ApConnSet *set, ApDiskConn *c, TimestampTz deadline, char **err)
{
	ActivePg__Frame *reply = NULL;

	for (;;)
	{
		int			r = ap_next_frame(set, c, &reply, err);
		long		ms;

		if (r < 0)
			ApProtocolError(c, *err);
		if (r > 0)
			break;
		r = ap_fill(c, err);
		if (r < 0)
		{
			if (*err == NULL)
				*err = pstrdup("connection closed during the handshake");
			return false;
		}
		if (r > 0)
			continue;
		ms = ap_remaining_ms(deadline);
		if (ms == 0)
		{
			*err = pstrdup("timed out waiting for the handshake reply");
			return false;
		}
		(void) ApConnWait(c, WL_SOCKET_READABLE, ms);
	}

	if (reply->msg_case == ACTIVE_PG__FRAME__MSG_ERROR)
	{
		/* a disk that refuses (busy, out of memory) can be taken over */
		if (ApDiskErrorRecoverable(reply->error->code))
		{
			*err = psprintf("%s", reply->error->message ? reply->error->message : "refused");
			ApFreeFrame(set, reply);
			return false;
		}
		ApReportDiskError(c, reply->error);
	}
	if (reply->msg_case != ACTIVE_PG__FRAME__MSG_HELLO_REPLY)
		ApProtocolError(c, "The disk did not answer Hello with HelloReply.");
	if (reply->hello_reply->protocol_version != AP_PROTOCOL_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("active_pg disk %d speaks protocol version %u, expected %u",
						c->disk, reply->hello_reply->protocol_version, AP_PROTOCOL_VERSION),
				 errhint("Install the extension and %s from the same build.", AP_DISKD_PROGRAM)));
	if (!ap_authenticate(c, reply->hello_reply, deadline, err))
	{
		ApFreeFrame(set, reply);
		return false;
	}
	c->disk_id = reply->hello_reply->disk_id;
	c->capabilities = reply->hello_reply->capabilities;
	c->server_version = MemoryContextStrdup(set->cxt,
											reply->hello_reply->server_version ?
											reply->hello_reply->server_version : "");
	ApFreeFrame(set, reply);
	return true;
}

/* Hello and HelloReply on one connection. */
static bool
ap_handshake(ApConnSet *set, ApDiskConn *c, TimestampTz deadline, char **err)
{
	return ap_send_hello(c, deadline, err) && ap_await_hello_reply(set, c, deadline, err);
}

/* ---------------- scan connections ---------------- */

/*
 * Disks that failed recently, per backend: the next scans take their units
 * over at once instead of waiting for the connect timeout again (a stopped
 * daemon still accepts connections and never answers).  Per backend on
 * purpose: one session's failure (a query cancelled while a disk was slow,
 * a disk restarted since) does not take the disk away from every other
 * session; each finds out for itself at the cost of one connect timeout.
 * active_pg.disks() shows the latest quarantine any backend set.
 */
static TimestampTz ap_quarantine_until[AP_NDISKS_MAX];

/* See transport.h. */
TimestampTz
ApDiskQuarantine(int disk)
{
	if (disk < 0 || disk >= AP_NDISKS_MAX)
		return 0;
	ap_quarantine_until[disk] = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
															AP_QUARANTINE_MS);
	return ap_quarantine_until[disk];
}

/* Did disk fail less than AP_QUARANTINE_MS ago? */
static bool
ap_quarantined(int disk)
{
	return disk >= 0 && disk < AP_NDISKS_MAX && ap_quarantine_until[disk] != 0 &&
		ap_quarantine_until[disk] > GetCurrentTimestamp();
}

/*
 * Idle connections, one per disk, per backend.  A connection whose scan
 * ended with Done is authenticated and between frames; the backend keeps it
 * for its next scan, so that a rescanned node (a correlated subquery runs its
 * scan once per outer row) and the session's next query skip the connect and
 * the handshake.  The daemon serves any number of requests on a connection
 * and closes one that stays idle for a minute; a kept connection older than
 * AP_IDLE_KEEP_MS, or one the daemon has closed or written to meanwhile (it
 * is readable), is closed instead of used.  A daemon killed and restarted
 * closes its end, and a reload that changes the disks' addresses makes the
 * kept connections' addresses differ: both are noticed here.  Connections
 * of a scan that ended any other way (an error, a rescan in the middle) are
 * closed, never kept: their state is not known.
 */
#define AP_IDLE_KEEP_MS				30000

typedef struct ApIdleConn
{
	pgsocket	sock;
	uint32		disk_id;
	uint32		capabilities;
	TimestampTz since;
	char	   *address;		/* in TopMemoryContext */
	char	   *server_version; /* in TopMemoryContext */
} ApIdleConn;

static ApIdleConn ap_idle[AP_NDISKS_MAX];
static bool ap_idle_init = false;

/* Forget idle slot i (its socket is closed or handed over by the caller). */
static void
ap_idle_clear(ApIdleConn *ic)
{
	ic->sock = PGINVALID_SOCKET;
	if (ic->address != NULL)
		pfree(ic->address);
	if (ic->server_version != NULL)
		pfree(ic->server_version);
	ic->address = NULL;
	ic->server_version = NULL;
}

static void ap_build_wes(ApConnSet *set);

/* See transport.h. */
void
ApConnKeepIdle(ApConnSet *set, ApDiskConn *c)
{
	ApIdleConn *ic;

	if (c->sock == PGINVALID_SOCKET)
		return;
	if (!ap_idle_init)
	{
		for (int i = 0; i < AP_NDISKS_MAX; i++)
			ap_idle[i].sock = PGINVALID_SOCKET;
		ap_idle_init = true;
	}
	/* only a connection at a frame boundary, after a clean end, is reusable */
	if (c->failed || c->scanning || c->rstart != c->rend ||
		c->disk < 0 || c->disk >= AP_NDISKS_MAX || c->address == NULL)
	{
		ApConnClose(c);
		return;
	}
	ic = &ap_idle[c->disk];
	if (ic->sock != PGINVALID_SOCKET)
		closesocket(ic->sock);
	ap_idle_clear(ic);
	ic->sock = c->sock;
	ic->disk_id = c->disk_id;
	ic->capabilities = c->capabilities;
	ic->since = GetCurrentTimestamp();
	ic->address = MemoryContextStrdup(TopMemoryContext, c->address);
	ic->server_version = MemoryContextStrdup(TopMemoryContext,
											 c->server_version != NULL ? c->server_version : "");
	c->sock = PGINVALID_SOCKET;
	ap_drop_wes(set);
}

/*
 * Give c the kept connection to its disk, if there is a usable one: true
 * with c connected and authenticated.
 */
static bool
ap_take_idle(ApConnSet *set, ApDiskConn *c)
{
	ApIdleConn *ic;
	struct pollfd pfd;
	bool		usable;

	if (!ap_idle_init || c->disk < 0 || c->disk >= AP_NDISKS_MAX)
		return false;
	ic = &ap_idle[c->disk];
	if (ic->sock == PGINVALID_SOCKET)
		return false;

	/* nothing may be waiting on an idle connection: readable means closed */
	pfd.fd = ic->sock;
	pfd.events = POLLIN;
	pfd.revents = 0;
	usable = strcmp(ic->address, c->address) == 0 &&
		!TimestampDifferenceExceeds(ic->since, GetCurrentTimestamp(), AP_IDLE_KEEP_MS) &&
		poll(&pfd, 1, 0) == 0;
	if (!usable)
	{
		closesocket(ic->sock);
		ap_idle_clear(ic);
		return false;
	}
	c->sock = ic->sock;
	c->disk_id = ic->disk_id;
	c->capabilities = ic->capabilities;
	c->server_version = MemoryContextStrdup(set->cxt, ic->server_version);
	c->reused = true;
	ap_idle_clear(ic);
	return true;
}

/* Disk c could not be reached or refused: its socket closed, why kept. */
static void
ap_conn_failed(ApDiskConn *c, const char *what, const char *err)
{
	ApConnClose(c);
	c->failed = true;
	c->failure = psprintf("%s: %s", what, err != NULL ? err : "unknown error");
}

/* See transport.h. */
WaitEventSet *
ApConnSetWaitEvents(ApConnSet *set)
{
	if (set->wes == NULL)
		ap_build_wes(set);
	return set->wes;
}

/*
 * Build the set's wait events (dropped since: ap_drop_wes): every open
 * socket, then the latch, then postmaster death.  Sockets closed since
 * (Done) are left out.
 */
static void
ap_build_wes(ApConnSet *set)
{
	int			i;

	Assert(set->wes == NULL);
	set->wes = ApCreateWaitEventSet(set->cxt, set->nconns + 2);
	for (i = 0; i < set->nconns; i++)
	{
		if (set->conns[i].sock != PGINVALID_SOCKET)
			AddWaitEventToSet(set->wes, WL_SOCKET_READABLE, set->conns[i].sock,
							  NULL, &set->conns[i]);
	}
	set->wes_latch_pos = AddWaitEventToSet(set->wes, WL_LATCH_SET, PGINVALID_SOCKET,
										   MyLatch, NULL);
	AddWaitEventToSet(set->wes, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
}

/* The configured disks' addresses; ERROR if there are none. */
static int
ap_scan_addrs(ApDiskAddr **addrs)
{
	int			n = ApGetDiskAddrs(addrs);

	if (n <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("no active_pg disks are configured"),
				 errhint("Add active_pg to shared_preload_libraries or set active_pg.disks.")));
	return n;
}

/* Connect to every configured disk and handshake; ERROR on any failure. */
ApConnSet *
ApConnectAll(MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	ApDiskAddr *addrs;
	int			n = ap_scan_addrs(&addrs);
	ApConnSet  *set;
	TimestampTz deadline;
	int			i;

	set = ap_new_set(cxt, addrs, n, n, n);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   active_pg_connect_timeout_ms);
	for (i = 0; i < n; i++)
	{
		char	   *err = NULL;

		if (ap_quarantined(i))
		{
			ap_conn_failed(&set->conns[i], "skipped",
						   psprintf("it failed less than %d s ago", AP_QUARANTINE_MS / 1000));
			set->conns[i].quarantined = true;
			continue;
		}
		if (ap_take_idle(set, &set->conns[i]))
			continue;
		if (!ap_connect(&set->conns[i], &addrs[i], deadline, true, &err))
			ap_conn_failed(&set->conns[i], "could not connect", err);
	}
	/* every Hello first, then the replies: one stopped disk costs the others nothing */
	for (i = 0; i < n; i++)
	{
		char	   *err = NULL;

		if (!set->conns[i].failed && !set->conns[i].reused &&
			!ap_send_hello(&set->conns[i], deadline, &err))
			ap_conn_failed(&set->conns[i], "handshake failed", err);
	}
	for (i = 0; i < n; i++)
	{
		char	   *err = NULL;

		if (!set->conns[i].failed && !set->conns[i].reused &&
			!ap_await_hello_reply(set, &set->conns[i], deadline, &err))
			ap_conn_failed(&set->conns[i], "handshake failed", err);
	}

	MemoryContextSwitchTo(oldcxt);
	return set;
}

/* An empty set with room for capacity connections (see transport.h). */
ApConnSet *
ApConnSetCreate(MemoryContext cxt, int capacity)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	ApDiskAddr *addrs;
	int			n = ap_scan_addrs(&addrs);
	ApConnSet  *set = ap_new_set(cxt, addrs, n, 0, capacity);

	MemoryContextSwitchTo(oldcxt);
	return set;
}

/* Number of disks the set's connections may go to. */
int
ApConnSetDisks(ApConnSet *set)
{
	return set->naddrs;
}

/* Connect the set's next connection to disk (see transport.h). */
ApDiskConn *
ApConnectNext(ApConnSet *set, int disk, uint32 vdisk, uint32 nvdisks)
{
	MemoryContext oldcxt;
	ApDiskConn *c;
	TimestampTz deadline;
	char	   *err = NULL;

	if (set->nconns >= set->capacity || disk < 0 || disk >= set->naddrs)
		elog(ERROR, "active_pg connection set has no room for disk %d (%d of %d used, %d disks)",
			 disk, set->nconns, set->capacity, set->naddrs);
	oldcxt = MemoryContextSwitchTo(set->cxt);
	c = &set->conns[set->nconns++];
	c->disk = disk;
	c->vdisk = vdisk;
	c->nvdisks = nvdisks;
	c->address = ApDiskAddrString(&set->addrs[disk]);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   active_pg_connect_timeout_ms);
	if (ap_quarantined(disk))
	{
		ap_conn_failed(c, "skipped",
					   psprintf("it failed less than %d s ago", AP_QUARANTINE_MS / 1000));
		c->quarantined = true;
	}
	else if (ap_take_idle(set, c))
		;						/* connected and authenticated */
	else if (!ap_connect(c, &set->addrs[disk], deadline, true, &err))
		ap_conn_failed(c, "could not connect", err);
	else if (!ap_handshake(set, c, deadline, &err))
		ap_conn_failed(c, "handshake failed", err);
	ap_drop_wes(set);
	MemoryContextSwitchTo(oldcxt);
	return c;
}

/* See transport.h. */
bool
ApConnReconnect(ApConnSet *set, ApDiskConn *c, char **err)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(set->cxt);
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   active_pg_connect_timeout_ms);
	bool		ok;

	ApConnClose(c);
	c->reused = false;
	c->rstart = c->rend = 0;
	ok = ap_connect(c, &set->addrs[c->disk], deadline, true, err) &&
		ap_handshake(set, c, deadline, err);
	if (!ok)
		ApConnClose(c);
	ap_drop_wes(set);
	MemoryContextSwitchTo(oldcxt);
	return ok;
}

/* ---------------- one-off requests (monitor.c) ---------------- */

/*
 * The configured disks as an unconnected set in cxt (sockets closed by the
 * context's reset); *addrs receives their addresses.
 */
ApConnSet *
ApOpenDiskSet(MemoryContext cxt, ApDiskAddr **addrs)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	int			n = ApGetDiskAddrs(addrs);
	ApConnSet  *set = ap_new_set(cxt, *addrs, n, n, n);

	MemoryContextSwitchTo(oldcxt);
	return set;
}

/* Connect and handshake with one disk of set; false with *err on failure (no retry). */
bool
ApConnectOne(ApConnSet *set, int i, const ApDiskAddr *addr, char **err)
{
	return ApConnectOneWithin(set, i, addr, active_pg_connect_timeout_ms, err);
}

/* ApConnectOne, giving up after ms. */
bool
ApConnectOneWithin(ApConnSet *set, int i, const ApDiskAddr *addr, int ms, char **err)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);

	return ap_connect(&set->conns[i], addr, deadline, false, err) &&
		ap_handshake(set, &set->conns[i], deadline, err);
}

/* Close one connection's socket, if open. */
void
ApConnClose(ApDiskConn *conn)
{
	if (conn->sock != PGINVALID_SOCKET)
	{
		closesocket(conn->sock);
		conn->sock = PGINVALID_SOCKET;
	}
}

/* Non-throwing ApConnFill: 1 read some, 0 would block, -1 EOF/error (*err, may be NULL). */
int
ApConnTryFill(ApDiskConn *conn, char **err)
{
	return ap_fill(conn, err);
}

/* Non-throwing ApConnNextFrame: 1 got *out, 0 need more, -1 malformed (*err). */
int
ApConnTryNextFrame(ApConnSet *set, ApDiskConn *conn, ActivePg__Frame **out, char **err)
{
	return ap_next_frame(set, conn, out, err);
}
