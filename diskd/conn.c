/*
 * conn.c
 *	  One client connection: framing, the handshake that authenticates it,
 *	  errors and Cancel.  What the connection is used for (the requests) is
 *	  session.c's, which sits above the scan.
 *
 * Rules of this file:
 *   - Framing is proto/ap_wire.h's and nothing else: a 4-byte big-endian
 *     length, then one serialized Frame.  The length is checked (0 and above
 *     AP_FRAME_MAX_BYTES are refused) before a byte of the body is buffered.
 *   - Whatever a client sends, the daemon answers with at most one Error and
 *     closes that connection; it never exits and never trusts a field it has
 *     not checked.  After an error the connection is "broken": later sends
 *     and receives fail at once, so callers unwind without further I/O.
 *   - A frame that has started arriving is read to its end with a stall
 *     timeout, so a client that sends half a frame cannot pin a thread.
 *   - Send and receive buffers belong to the connection and are reused across
 *     frames; a large receive buffer is released after use so idle
 *     connections stay small.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "ap_auth.h"
#include "ap_frame_check.h"
#include "diskd.h"

/* How long a client may take to say Hello after connecting. */
#define CONN_HELLO_TIMEOUT_MS		10000
/* How long a frame that has started arriving may stall between bytes. */
#define CONN_STALL_TIMEOUT_MS		30000
/* Receive buffers above this are freed after each frame. */
#define CONN_RECV_KEEP_BYTES		(1024u * 1024u)
/* Before the handshake: a Hello is a version and a secret. */
#define CONN_HELLO_MAX_BYTES		4096u

struct ApConn
{
	int			fd;
	bool		broken;			/* no more frames: error sent or peer gone */
	bool		authenticated;	/* the handshake passed: full-size frames */
	unsigned char *sendbuf;
	size_t		sendcap;
	unsigned char *recvbuf;
	size_t		recvcap;
};

/* Write all of buf, retrying partial writes and EINTR; 0 or -errno. */
static int
send_all(int fd, const unsigned char *buf, size_t len)
{
	while (len > 0)
	{
		ssize_t		n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * Read exactly len bytes.  Returns 0, -ECONNRESET on EOF before the first
 * byte (*got is 0 then), -EPROTO on EOF after some bytes, -ETIMEDOUT if the
 * peer stalls longer than the socket's SO_RCVTIMEO, or -errno.
 */
static int
recv_exact(int fd, unsigned char *buf, size_t len, size_t *got)
{
	*got = 0;
	while (*got < len)
	{
		ssize_t		n = recv(fd, buf + *got, len - *got, 0);

		if (n > 0)
		{
			*got += n;
			continue;
		}
		if (n == 0)
			return *got == 0 ? -ECONNRESET : -EPROTO;
		if (errno == EINTR)
			continue;
		/* SO_RCVTIMEO expired: the peer stalled in the middle of a frame */
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -ETIMEDOUT;
		return -errno;
	}
	return 0;
}

/* Wait until fd is readable; 0, -ETIMEDOUT or -errno.  timeout_ms < 0 waits forever. */
static int
wait_readable(int fd, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd,.events = POLLIN};

	for (;;)
	{
		int			rc = poll(&pfd, 1, timeout_ms);

		if (rc > 0)
			return 0;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Pack an Error frame and send it on a connection that is not yet marked broken. */
static int
send_error_message(ApConn *c, uint32_t code, const char *message)
{
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__Error err = ACTIVE_PG__ERROR__INIT;

	err.code = code;
	err.message = (char *) message;
	frame.msg_case = ACTIVE_PG__FRAME__MSG_ERROR;
	frame.error = &err;
	return ap_conn_send(c, &frame);
}

/* Send Error{code, formatted message}; 0 or -errno. */
int
ap_conn_send_error(ApConn *c, uint32_t code, const char *fmt,...)
{
	char		message[512];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	return send_error_message(c, code, message);
}

/* Report a client's protocol violation once, then refuse all further I/O. */
int
ap_conn_fail(ApConn *c, uint32_t code, int rc, const char *message)
{
	if (!c->broken)
	{
		diskd_log("WARNING", "closing connection: %s", message);
		(void) send_error_message(c, code, message);
		c->broken = true;
	}
	return rc;
}

/* Pack frame into the connection's buffer and write length + body; 0 or -errno. */
int
ap_conn_send(ApConn *c, const ActivePg__Frame *frame)
{
	size_t		len;
	int			rc;

	if (c->broken)
		return -ENOTCONN;
	len = active_pg__frame__get_packed_size(frame);
	if (len == 0 || len > AP_FRAME_MAX_BYTES)
	{
		/* our own bug (batch limits keep frames far below the maximum) */
		diskd_log("WARNING", "refusing to send a frame of %zu bytes", len);
		return -EMSGSIZE;
	}
	if (c->sendcap < len + AP_FRAME_HEADER_BYTES)
	{
		size_t		cap = len + AP_FRAME_HEADER_BYTES;
		unsigned char *buf;

		/* grow geometrically so a scan's growing batches reallocate rarely */
		if (cap < c->sendcap * 2)
			cap = c->sendcap * 2;
		buf = realloc(c->sendbuf, cap);
		if (buf == NULL)
			return -ENOMEM;
		c->sendbuf = buf;
		c->sendcap = cap;
	}
	ap_put_be32(c->sendbuf, (uint32_t) len);
	active_pg__frame__pack(frame, c->sendbuf + AP_FRAME_HEADER_BYTES);
	rc = send_all(c->fd, c->sendbuf, len + AP_FRAME_HEADER_BYTES);
	if (rc < 0)
		c->broken = true;
	return rc;
}

/*
 * Wait up to timeout_ms (< 0: forever) for the next frame and unpack it.
 * Returns 0, -ETIMEDOUT (connection still usable), or another -errno after
 * which the connection is broken (an Error was sent where it makes sense).
 */
int
ap_conn_recv(ApConn *c, ActivePg__Frame **frame, int timeout_ms)
{
	unsigned char hdr[AP_FRAME_HEADER_BYTES];
	uint32_t	len;
	size_t		got;
	int			rc;

	*frame = NULL;
	if (c->broken)
		return -ENOTCONN;
	/* Idle waits happen here; SO_RCVTIMEO only bounds stalls inside a frame. */
	rc = wait_readable(c->fd, timeout_ms);
	if (rc == -ETIMEDOUT)
		return rc;
	if (rc < 0)
	{
		c->broken = true;
		return rc;
	}

	rc = recv_exact(c->fd, hdr, sizeof(hdr), &got);
	if (rc == -ECONNRESET)
	{
		/* orderly close between frames: the host is done with us */
		c->broken = true;
		return rc;
	}
	if (rc == -EPROTO)
		return ap_conn_fail(c, AP_ERR_PROTOCOL, rc, "truncated frame header");
	if (rc < 0)
	{
		c->broken = true;
		return rc;
	}

	/* Check the length before allocating anything for the body. */
	len = ap_get_be32(hdr);
	if (len == 0)
		return ap_conn_fail(c, AP_ERR_PROTOCOL, -EPROTO, "zero-length frame");
	if (len > (c->authenticated ? AP_FRAME_MAX_BYTES : CONN_HELLO_MAX_BYTES))
	{
		char		msg[128];

		snprintf(msg, sizeof(msg), "frame of %u bytes exceeds the maximum of %u bytes%s",
				 len, c->authenticated ? AP_FRAME_MAX_BYTES : CONN_HELLO_MAX_BYTES,
				 c->authenticated ? "" : " before the handshake");
		return ap_conn_fail(c, AP_ERR_FRAME_TOO_BIG, -EMSGSIZE, msg);
	}

	if (c->recvcap < len)
	{
		unsigned char *buf = malloc(len);

		if (buf == NULL)
			return ap_conn_fail(c, AP_ERR_OUT_OF_MEMORY, -ENOMEM,
							 "out of memory receiving a frame");
		free(c->recvbuf);
		c->recvbuf = buf;
		c->recvcap = len;
	}
	rc = recv_exact(c->fd, c->recvbuf, len, &got);
	if (rc == -ECONNRESET || rc == -EPROTO)
		return ap_conn_fail(c, AP_ERR_PROTOCOL, -EPROTO, "truncated frame");
	if (rc == -ETIMEDOUT)
		return ap_conn_fail(c, AP_ERR_PROTOCOL, rc, "frame stalled mid-body");
	if (rc < 0)
	{
		c->broken = true;
		return rc;
	}

	/*
	 * Bound nesting (protobuf-c unpacks recursively) and what unpacking will
	 * allocate before it runs.
	 */
	{
		uint64_t	need;
		uint64_t	budget = (uint64_t) len * AP_UNPACK_FACTOR;
		char		why[160];

		if (budget < AP_UNPACK_MIN_BYTES)
			budget = AP_UNPACK_MIN_BYTES;
		/* and within the daemon's memory budget of a scan */
		if (budget > diskd_config.memory_bytes)
			budget = diskd_config.memory_bytes;
		if (ap_frame_check(c->recvbuf, len, AP_FRAME_MAX_DEPTH, &need, why, sizeof(why)) != 0)
			return ap_conn_fail(c, AP_ERR_PROTOCOL, -EPROTO, why);
		if (need > budget)
		{
			snprintf(why, sizeof(why),
					 "a frame of %u bytes would take %llu bytes to unpack; the limit is %llu",
					 len, (unsigned long long) need, (unsigned long long) budget);
			return ap_conn_fail(c, AP_ERR_FRAME_TOO_BIG, -EMSGSIZE, why);
		}
	}
	/* protobuf-c copies strings, bytes and repeated fields: the buffer is free again */
	*frame = active_pg__frame__unpack(NULL, len, c->recvbuf);
	if (c->recvcap > CONN_RECV_KEEP_BYTES)
	{
		free(c->recvbuf);
		c->recvbuf = NULL;
		c->recvcap = 0;
	}
	if (*frame == NULL)
		return ap_conn_fail(c, AP_ERR_PROTOCOL, -EPROTO, "malformed frame");
	return 0;
}

/* Shut the connection down in both directions (a test's failpoint). */
void
ap_conn_shutdown(ApConn *c)
{
	shutdown(c->fd, SHUT_RDWR);
	c->broken = true;
}

/*
 * Between chunks of a scan: has the host sent Cancel, gone away, or broken
 * the protocol?  Costs one poll() when nothing is pending.
 */
bool
ap_conn_cancel_requested(ApConn *c)
{
	struct pollfd pfd = {.fd = c->fd,.events = POLLIN};
	ActivePg__Frame *f;
	bool		cancel;
	int			rc;

	if (c->broken)
		return true;
	rc = poll(&pfd, 1, 0);
	if (rc == 0 || (rc < 0 && errno == EINTR))
		return false;
	if (rc < 0)
	{
		c->broken = true;
		return true;
	}
	/* Something arrived: a frame, EOF or an error; it all ends the scan. */
	if (ap_conn_recv(c, &f, -1) < 0)
		return true;
	cancel = (f->msg_case == ACTIVE_PG__FRAME__MSG_CANCEL);
	if (!cancel)
	{
		char		msg[96];

		snprintf(msg, sizeof(msg), "unexpected frame (type %d) during a scan",
				 (int) f->msg_case);
		ap_conn_fail(c, AP_ERR_PROTOCOL, -EPROTO, msg);
	}
	active_pg__frame__free_unpacked(f, NULL);
	return true;
}

/* n random bytes from the kernel; 0 or -1. */
static int
ap_random_bytes(unsigned char *buf, size_t n)
{
	size_t		got = 0;

	while (got < n)
	{
		ssize_t		r = getrandom(buf + got, n - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t) r;
	}
	return 0;
}

/*
 * Log a failed authentication, at most once a second with the number of
 * failures since the last line: a client that guesses does not flood the log.
 */
static void
log_auth_failure(const char *why)
{
	static _Atomic uint64_t last_us;
	static _Atomic uint64_t suppressed;
	uint64_t	now = ap_mono_us();
	uint64_t	last = atomic_load(&last_us);

	if (now - last < 1000000 || !atomic_compare_exchange_strong(&last_us, &last, now))
	{
		atomic_fetch_add(&suppressed, 1);
		return;
	}
	diskd_log("WARNING", "authentication failed: %s (%llu more failures since the last report)",
			  why, (unsigned long long) atomic_exchange(&suppressed, 0));
}

/* An authentication failure: logged (rate-limited), answered, closed. */
static int
auth_fail(ApConn *c, const char *why)
{
	log_auth_failure(why);
	if (!c->broken)
	{
		(void) send_error_message(c, AP_ERR_AUTH, why);
		c->broken = true;
	}
	return -EACCES;
}

/*
 * The handshake: Hello with our version (and, for a daemon with a secret,
 * the host's nonce), then HelloReply; with a secret, the reply carries our
 * nonce and proof and the host must answer with Auth and its proof
 * (proto/ap_auth.c).  0 if the client may proceed.
 */
static int
handshake(ApConn *c)
{
	ActivePg__Frame *f;
	ActivePg__Frame reply = ACTIVE_PG__FRAME__INIT;
	ActivePg__HelloReply hr = ACTIVE_PG__HELLO_REPLY__INIT;
	unsigned char client_nonce[AP_AUTH_NONCE_BYTES];
	unsigned char server_nonce[AP_AUTH_NONCE_BYTES];
	unsigned char server_proof[AP_SHA256_BYTES];
	unsigned char expected[AP_SHA256_BYTES];
	bool		nonce_ok = false;
	int			rc;

	rc = ap_conn_recv(c, &f, CONN_HELLO_TIMEOUT_MS);
	if (rc == -ETIMEDOUT)
		return ap_conn_fail(c, AP_ERR_PROTOCOL, rc, "no Hello received in time");
	if (rc < 0)
		return rc;
	if (f->msg_case != ACTIVE_PG__FRAME__MSG_HELLO)
		rc = ap_conn_fail(c, AP_ERR_PROTOCOL, -EPROTO, "the first frame must be Hello");
	else if (f->hello->protocol_version != AP_PROTOCOL_VERSION)
	{
		char		msg[128];

		snprintf(msg, sizeof(msg), "protocol version %u is not supported (this daemon speaks %u)",
				 f->hello->protocol_version, AP_PROTOCOL_VERSION);
		rc = ap_conn_fail(c, AP_ERR_UNSUPPORTED, -EPROTO, msg);
	}
	else if (f->hello->pg_version_num != 0 &&
			 f->hello->pg_version_num / 10000 != diskd_config.pg_major)
	{
		char		msg[160];

		snprintf(msg, sizeof(msg), "this disk serves a PostgreSQL %u data directory; the host runs PostgreSQL %u",
				 diskd_config.pg_major, f->hello->pg_version_num / 10000);
		rc = ap_conn_fail(c, AP_ERR_UNSUPPORTED, -EPROTO, msg);
	}
	else if (f->hello->client_nonce.len == AP_AUTH_NONCE_BYTES)
	{
		memcpy(client_nonce, f->hello->client_nonce.data, AP_AUTH_NONCE_BYTES);
		nonce_ok = true;
	}
	active_pg__frame__free_unpacked(f, NULL);
	if (rc < 0)
		return rc;

	if (diskd_config.secret != NULL)
	{
		if (!nonce_ok)
			return auth_fail(c, "the Hello carries no nonce");
		if (ap_random_bytes(server_nonce, sizeof(server_nonce)) != 0)
			return ap_conn_fail(c, AP_ERR_INTERNAL, -EIO, "no random bytes for a nonce");
		ap_auth_proof(diskd_config.secret, true, client_nonce, server_nonce, server_proof);
		hr.server_nonce.data = server_nonce;
		hr.server_nonce.len = sizeof(server_nonce);
		hr.server_proof.data = server_proof;
		hr.server_proof.len = sizeof(server_proof);
	}

	hr.protocol_version = AP_PROTOCOL_VERSION;
	hr.disk_id = diskd_config.disk_id;
	hr.capabilities = AP_CAP_SELECT | AP_CAP_EXPRESSIONS | AP_CAP_BLOOM | AP_CAP_AGG |
		AP_CAP_PAGES | AP_CAP_STATS;
	/* the host's cost model and EXPLAIN read the emulated drive from here */
	hr.media_mbps = diskd_config.media_mbps;
	hr.cpu_ratio = diskd_config.cpu_ratio;
	hr.memory_bytes = diskd_config.memory_bytes;
	hr.server_version = "diskd 0.1";
	reply.msg_case = ACTIVE_PG__FRAME__MSG_HELLO_REPLY;
	reply.hello_reply = &hr;
	if ((rc = ap_conn_send(c, &reply)) < 0)
		return rc;
	if (diskd_config.secret == NULL)
	{
		c->authenticated = true;
		return 0;
	}

	/* the host's proof, before anything else */
	rc = ap_conn_recv(c, &f, CONN_HELLO_TIMEOUT_MS);
	if (rc == -ETIMEDOUT)
		return auth_fail(c, "no Auth received in time");
	if (rc < 0)
		return rc;
	ap_auth_proof(diskd_config.secret, false, client_nonce, server_nonce, expected);
	if (f->msg_case != ACTIVE_PG__FRAME__MSG_AUTH)
		rc = auth_fail(c, "the host did not authenticate (is active_pg.disk_secret set?)");
	else if (f->auth->proof.len != AP_SHA256_BYTES ||
			 !ap_auth_equal(f->auth->proof.data, expected, AP_SHA256_BYTES))
		rc = auth_fail(c, "wrong secret");
	active_pg__frame__free_unpacked(f, NULL);
	if (rc < 0)
		return rc;
	c->authenticated = true;
	return 0;
}

/*
 * Take an accepted socket: a stall timeout for frames that start arriving,
 * then the handshake.  NULL if out of memory (fd closed) or if the client
 * failed the handshake (fd closed, the client told why).
 */
ApConn *
ap_conn_open(int fd)
{
	ApConn	   *c = calloc(1, sizeof(ApConn));
	struct timeval stall = {.tv_sec = CONN_STALL_TIMEOUT_MS / 1000};

	if (c == NULL)
	{
		close(fd);
		return NULL;
	}
	c->fd = fd;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &stall, sizeof(stall));
	if (handshake(c) != 0)
	{
		ap_conn_close(c);
		return NULL;
	}
	return c;
}

/* Close the socket and release the connection. */
void
ap_conn_close(ApConn *c)
{
	close(c->fd);
	free(c->sendbuf);
	free(c->recvbuf);
	free(c);
}

/* No more frames on this connection: an error was sent or the peer is gone. */
bool
ap_conn_broken(const ApConn *c)
{
	return c->broken;
}

/* Best-effort Error frame on a socket that will not be served (e.g. BUSY). */
void
ap_conn_reject(int fd, uint32_t code, const char *message)
{
	ActivePg__Frame frame = ACTIVE_PG__FRAME__INIT;
	ActivePg__Error err = ACTIVE_PG__ERROR__INIT;
	unsigned char buf[AP_FRAME_HEADER_BYTES + 512];
	size_t		len;

	err.code = code;
	err.message = (char *) message;
	frame.msg_case = ACTIVE_PG__FRAME__MSG_ERROR;
	frame.error = &err;
	len = active_pg__frame__get_packed_size(&frame);
	if (len > sizeof(buf) - AP_FRAME_HEADER_BYTES)
		return;
	ap_put_be32(buf, (uint32_t) len);
	active_pg__frame__pack(&frame, buf + AP_FRAME_HEADER_BYTES);
	/* never block the accept loop: the frame fits any socket buffer or is dropped */
	(void) send(fd, buf, len + AP_FRAME_HEADER_BYTES, MSG_NOSIGNAL | MSG_DONTWAIT);
}
