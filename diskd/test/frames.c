/*
 * frames.c
 *	  Unit test of diskd's frame decoding and handshake against malformed,
 *	  truncated, oversized and random input.
 *
 * Each case runs the daemon's real connection code (ap_session_serve) on one end
 * of a socketpair in a thread and plays the client on the other end.  The
 * daemon must answer with the right Error code or close the connection, and
 * must never crash, hang or stop serving the next connection.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "ap_auth.h"
#include "ap_frame_check.h"
#include "diskd.h"
#include "testutil.h"

/* The globals main.c would define. */
int			diskd_disk_id = 0;
ApConfig	diskd_config;

/* Logging goes to stderr only when asked (the cases provoke many warnings). */
void
diskd_log(const char *level, const char *fmt,...)
{
	va_list		ap;

	if (getenv("FRAMES_VERBOSE") == NULL)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "diskd %s: ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

typedef struct Session
{
	int			client;
	pthread_t	thread;
	int			server;
} Session;

/* Thread body: serve one connection with the daemon's own code. */
static void *
serve(void *arg)
{
	ap_session_serve(*(int *) arg);
	return NULL;
}

/* Start a daemon-side connection and return the client end. */
static void
session_start(Session *s)
{
	int			sv[2];
	struct timeval tv = {.tv_sec = 5};

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
	{
		perror("socketpair");
		exit(2);
	}
	s->client = sv[0];
	s->server = sv[1];
	setsockopt(s->client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (pthread_create(&s->thread, NULL, serve, &s->server) != 0)
	{
		perror("pthread_create");
		exit(2);
	}
}

/* Close the client end and wait for the daemon's side to finish. */
static void
session_end(Session *s)
{
	close(s->client);
	pthread_join(s->thread, NULL);
}

static void
send_raw(Session *s, const void *buf, size_t len)
{
	if (len > 0 && send(s->client, buf, len, MSG_NOSIGNAL) != (ssize_t) len)
		perror("send");
}

static void
send_frame(Session *s, const ActivePg__Frame *f)
{
	size_t		len = active_pg__frame__get_packed_size(f);
	unsigned char *buf = malloc(len + 4);

	ap_put_be32(buf, (uint32_t) len);
	active_pg__frame__pack(f, buf + 4);
	send_raw(s, buf, len + 4);
	free(buf);
}

/* Read one frame from the daemon; NULL on EOF, timeout or garbage. */
static ActivePg__Frame *
recv_frame(Session *s)
{
	unsigned char hdr[4];
	unsigned char *body;
	uint32_t	len;
	size_t		got = 0;
	ActivePg__Frame *f;

	while (got < 4)
	{
		ssize_t		n = recv(s->client, hdr + got, 4 - got, 0);

		if (n <= 0)
			return NULL;
		got += n;
	}
	len = ap_get_be32(hdr);
	if (len == 0 || len > AP_FRAME_MAX_BYTES)
		return NULL;
	body = malloc(len);
	for (got = 0; got < len;)
	{
		ssize_t		n = recv(s->client, body + got, len - got, 0);

		if (n <= 0)
		{
			free(body);
			return NULL;
		}
		got += n;
	}
	f = active_pg__frame__unpack(NULL, len, body);
	free(body);
	return f;
}

/* Error code of the next frame, -1 if it is not an Error, -2 if none came. */
static int
next_error_code(Session *s)
{
	ActivePg__Frame *f = recv_frame(s);
	int			code;

	if (f == NULL)
		return -2;
	code = f->msg_case == ACTIVE_PG__FRAME__MSG_ERROR ? (int) f->error->code : -1;
	active_pg__frame__free_unpacked(f, NULL);
	return code;
}

/* True if the daemon closed its end (EOF within the receive timeout). */
static bool
closed_by_daemon(Session *s)
{
	char		c;

	return recv(s->client, &c, 1, 0) == 0;
}

/* The nonce of the session's Hello (a fixed one: the daemon's must be fresh). */
static unsigned char test_nonce[AP_AUTH_NONCE_BYTES] = "the host's nonce, 32 bytes long";

static void
send_hello(Session *s, uint32_t version)
{
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__Hello h = ACTIVE_PG__HELLO__INIT;

	h.protocol_version = version;
	h.client_nonce.data = test_nonce;
	h.client_nonce.len = sizeof(test_nonce);
	f.msg_case = ACTIVE_PG__FRAME__MSG_HELLO;
	f.hello = &h;
	send_frame(s, &f);
}

/*
 * The host's side of the authenticated handshake with secret: Hello, check
 * the daemon's proof (which must match check_with), answer with Auth.  The
 * daemon's reply is returned in *server_nonce; false if its proof is wrong.
 */
static bool
authenticate(Session *s, const char *check_with, const char *prove_with,
			 unsigned char server_nonce[AP_AUTH_NONCE_BYTES])
{
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__Auth a = ACTIVE_PG__AUTH__INIT;
	ActivePg__Frame *r;
	unsigned char expected[AP_SHA256_BYTES];
	unsigned char proof[AP_SHA256_BYTES];
	bool		ok;

	send_hello(s, AP_PROTOCOL_VERSION);
	r = recv_frame(s);
	if (r == NULL || r->msg_case != ACTIVE_PG__FRAME__MSG_HELLO_REPLY ||
		r->hello_reply->server_nonce.len != AP_AUTH_NONCE_BYTES ||
		r->hello_reply->server_proof.len != AP_SHA256_BYTES)
	{
		if (r)
			active_pg__frame__free_unpacked(r, NULL);
		return false;
	}
	memcpy(server_nonce, r->hello_reply->server_nonce.data, AP_AUTH_NONCE_BYTES);
	ap_auth_proof(check_with, true, test_nonce, server_nonce, expected);
	ok = ap_auth_equal(r->hello_reply->server_proof.data, expected, AP_SHA256_BYTES);
	active_pg__frame__free_unpacked(r, NULL);
	ap_auth_proof(prove_with, false, test_nonce, server_nonce, proof);
	a.proof.data = proof;
	a.proof.len = sizeof(proof);
	f.msg_case = ACTIVE_PG__FRAME__MSG_AUTH;
	f.auth = &a;
	send_frame(s, &f);
	return ok;
}

/* Hello, expecting HelloReply. */
static bool
handshake_ok(Session *s)
{
	ActivePg__Frame *f;
	bool		ok;

	send_hello(s, AP_PROTOCOL_VERSION);
	f = recv_frame(s);
	ok = f != NULL && f->msg_case == ACTIVE_PG__FRAME__MSG_HELLO_REPLY &&
		f->hello_reply->protocol_version == AP_PROTOCOL_VERSION;
	if (f)
		active_pg__frame__free_unpacked(f, NULL);
	return ok;
}

static void
test_bad_lengths(void)
{
	Session		s;
	unsigned char huge[4] = {0xff, 0xff, 0xff, 0xff};
	unsigned char zero[4] = {0, 0, 0, 0};
	unsigned char over[4];

	session_start(&s);
	send_raw(&s, huge, 4);
	CHECK_EQ(next_error_code(&s), AP_ERR_FRAME_TOO_BIG);
	CHECK(closed_by_daemon(&s));
	session_end(&s);

	session_start(&s);
	ap_put_be32(over, AP_FRAME_MAX_BYTES + 1);
	send_raw(&s, over, 4);
	CHECK_EQ(next_error_code(&s), AP_ERR_FRAME_TOO_BIG);
	session_end(&s);

	session_start(&s);
	send_raw(&s, zero, 4);
	CHECK_EQ(next_error_code(&s), AP_ERR_PROTOCOL);
	session_end(&s);

	/* the same after a successful handshake */
	session_start(&s);
	CHECK(handshake_ok(&s));
	send_raw(&s, huge, 4);
	CHECK_EQ(next_error_code(&s), AP_ERR_FRAME_TOO_BIG);
	session_end(&s);
}

static void
test_garbage_and_truncation(void)
{
	Session		s;
	unsigned char garbage[9] = {0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff};
	unsigned char trunc[14] = {0, 0, 1, 0, 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'};
	unsigned char half_header[2] = {0, 0};

	session_start(&s);
	send_raw(&s, garbage, sizeof(garbage));
	CHECK_EQ(next_error_code(&s), AP_ERR_PROTOCOL);
	session_end(&s);

	/* body shorter than announced, then the client goes away */
	session_start(&s);
	send_raw(&s, trunc, sizeof(trunc));
	shutdown(s.client, SHUT_WR);
	CHECK(next_error_code(&s) != 0);	/* an Error or a close, never a reply */
	session_end(&s);

	/* half a header, then EOF */
	session_start(&s);
	send_raw(&s, half_header, sizeof(half_header));
	shutdown(s.client, SHUT_WR);
	{
		int			code = next_error_code(&s);

		CHECK(code == -2 || code == AP_ERR_PROTOCOL);
	}
	session_end(&s);
}

static void
test_handshake_rules(void)
{
	Session		s;
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__Cancel cancel = ACTIVE_PG__CANCEL__INIT;
	ActivePg__ScanRequest scan = ACTIVE_PG__SCAN_REQUEST__INIT;

	session_start(&s);
	send_hello(&s, 99);
	CHECK_EQ(next_error_code(&s), AP_ERR_UNSUPPORTED);
	session_end(&s);

	/* a scan before Hello */
	session_start(&s);
	f.msg_case = ACTIVE_PG__FRAME__MSG_SCAN;
	f.scan = &scan;
	send_frame(&s, &f);
	CHECK_EQ(next_error_code(&s), AP_ERR_PROTOCOL);
	session_end(&s);

	/*
	 * A daemon with a secret: it proves it knows the secret without sending
	 * it, and refuses a host that cannot prove it, that sends a request
	 * instead of Auth, or whose Hello has no nonce.
	 */
	diskd_config.secret = "s3cret";
	{
		unsigned char sn[AP_AUTH_NONCE_BYTES];
		unsigned char sn2[AP_AUTH_NONCE_BYTES];
		ActivePg__StatsRequest sr = ACTIVE_PG__STATS_REQUEST__INIT;
		ActivePg__Frame *r;

		/* the right secret: both proofs hold, the connection serves */
		session_start(&s);
		CHECK(authenticate(&s, "s3cret", "s3cret", sn));
		f.msg_case = ACTIVE_PG__FRAME__MSG_STATS_REQUEST;
		f.stats_request = &sr;
		send_frame(&s, &f);
		r = recv_frame(&s);
		CHECK(r != NULL && r->msg_case == ACTIVE_PG__FRAME__MSG_STATS_REPLY);
		if (r)
			active_pg__frame__free_unpacked(r, NULL);
		session_end(&s);

		/* a host with another secret sees a wrong proof and is refused */
		session_start(&s);
		CHECK(!authenticate(&s, "guess", "guess", sn2));
		CHECK_EQ(next_error_code(&s), AP_ERR_AUTH);
		session_end(&s);
		/* fresh nonces: the daemon's differs between connections */
		CHECK(memcmp(sn, sn2, sizeof(sn)) != 0);

		/* a request instead of Auth */
		session_start(&s);
		send_hello(&s, AP_PROTOCOL_VERSION);
		r = recv_frame(&s);
		CHECK(r != NULL && r->msg_case == ACTIVE_PG__FRAME__MSG_HELLO_REPLY);
		if (r)
			active_pg__frame__free_unpacked(r, NULL);
		f.msg_case = ACTIVE_PG__FRAME__MSG_STATS_REQUEST;
		f.stats_request = &sr;
		send_frame(&s, &f);
		CHECK_EQ(next_error_code(&s), AP_ERR_AUTH);
		session_end(&s);

		/* a Hello without a nonce */
		session_start(&s);
		{
			ActivePg__Frame hf = ACTIVE_PG__FRAME__INIT;
			ActivePg__Hello h = ACTIVE_PG__HELLO__INIT;

			h.protocol_version = AP_PROTOCOL_VERSION;
			hf.msg_case = ACTIVE_PG__FRAME__MSG_HELLO;
			hf.hello = &h;
			send_frame(&s, &hf);
		}
		CHECK_EQ(next_error_code(&s), AP_ERR_AUTH);
		session_end(&s);

		/* a thousand wrong tries are answered and the daemon still serves */
		for (int i = 0; i < 1000; i++)
		{
			session_start(&s);
			(void) authenticate(&s, "guess", "guess", sn2);
			CHECK_EQ(next_error_code(&s), AP_ERR_AUTH);
			session_end(&s);
		}
		session_start(&s);
		CHECK(authenticate(&s, "s3cret", "s3cret", sn));
		session_end(&s);
	}
	diskd_config.secret = NULL;

	/* a Cancel outside a scan is ignored; the connection keeps serving */
	session_start(&s);
	CHECK(handshake_ok(&s));
	f.msg_case = ACTIVE_PG__FRAME__MSG_CANCEL;
	f.cancel = &cancel;
	send_frame(&s, &f);
	send_hello(&s, AP_PROTOCOL_VERSION);	/* Hello twice: out of order */
	CHECK_EQ(next_error_code(&s), AP_ERR_PROTOCOL);
	session_end(&s);
}

static void
test_bad_scan_requests(void)
{
	Session		s;
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__ScanRequest scan = ACTIVE_PG__SCAN_REQUEST__INIT;
	ActivePg__RelLocator rel = ACTIVE_PG__REL_LOCATOR__INIT;
	ActivePg__Snapshot snap = ACTIVE_PG__SNAPSHOT__INIT;

	rel.spc_oid = 1663;
	rel.db_oid = 1;
	rel.rel_number = 4000000000u;
	snap.xmin = snap.xmax = 3;
	scan.rel = &rel;
	scan.snapshot = &snap;
	scan.nblocks = 1;
	scan.ndisks = 1;
	scan.stripe_pages = 32;
	f.msg_case = ACTIVE_PG__FRAME__MSG_SCAN;
	f.scan = &scan;

	session_start(&s);
	CHECK(handshake_ok(&s));

	/* geometry out of range: the scan fails, the connection stays usable */
	scan.ndisks = 0;
	send_frame(&s, &f);
	CHECK_EQ(next_error_code(&s), AP_ERR_BAD_REQUEST);
	scan.ndisks = 1;
	scan.disk_id = 5;
	send_frame(&s, &f);
	CHECK_EQ(next_error_code(&s), AP_ERR_BAD_REQUEST);
	scan.disk_id = 0;
	scan.stripe_pages = 0;
	send_frame(&s, &f);
	CHECK_EQ(next_error_code(&s), AP_ERR_BAD_REQUEST);
	scan.stripe_pages = 32;

	/* the global tablespace and oid 0 are refused; paths are never taken from us */
	rel.spc_oid = 1664;
	send_frame(&s, &f);
	CHECK_EQ(next_error_code(&s), AP_ERR_BAD_REQUEST);
	rel.spc_oid = 1663;
	rel.db_oid = 0;
	send_frame(&s, &f);
	CHECK_EQ(next_error_code(&s), AP_ERR_BAD_REQUEST);
	rel.db_oid = 1;

	/* a relation that does not exist */
	send_frame(&s, &f);
	CHECK_EQ(next_error_code(&s), AP_ERR_NO_RELATION);

	/* no snapshot */
	scan.snapshot = NULL;
	send_frame(&s, &f);
	CHECK_EQ(next_error_code(&s), AP_ERR_BAD_REQUEST);
	session_end(&s);
}

/* Random frames: the daemon answers or closes, and never crashes. */
static void
test_random_frames(void)
{
	unsigned int seed = 20261122;

	for (int i = 0; i < 500; i++)
	{
		Session		s;
		unsigned char buf[4 + 256];
		uint32_t	len = 1 + rand_r(&seed) % 256;
		int			code;

		for (uint32_t j = 0; j < len; j++)
			buf[4 + j] = (unsigned char) rand_r(&seed);
		ap_put_be32(buf, len);
		session_start(&s);
		if (i % 2 == 1)
			CHECK(handshake_ok(&s));
		send_raw(&s, buf, 4 + len);
		shutdown(s.client, SHUT_WR);
		code = next_error_code(&s);
		/* an Error frame, or the connection closed; never a HelloReply/rows */
		CHECK(code == -2 || code > 0);
		session_end(&s);
	}
}

/* Send a StatsRequest and return the reply (caller frees the frame); NULL if none. */
static ActivePg__Frame *
stats_round_trip(Session *s)
{
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__StatsRequest sr = ACTIVE_PG__STATS_REQUEST__INIT;
	ActivePg__Frame *r;

	f.msg_case = ACTIVE_PG__FRAME__MSG_STATS_REQUEST;
	f.stats_request = &sr;
	send_frame(s, &f);
	r = recv_frame(s);
	if (r != NULL && r->msg_case != ACTIVE_PG__FRAME__MSG_STATS_REPLY)
	{
		active_pg__frame__free_unpacked(r, NULL);
		r = NULL;
	}
	return r;
}

/* HelloReply announces pages and statistics and reports the emulated drive. */
static void
test_hello_emulation(void)
{
	Session		s;
	ActivePg__Frame *r;

	diskd_config.media_mbps = 12;
	diskd_config.cpu_ratio = 0.25;
	session_start(&s);
	send_hello(&s, AP_PROTOCOL_VERSION);
	r = recv_frame(&s);
	CHECK(r != NULL && r->msg_case == ACTIVE_PG__FRAME__MSG_HELLO_REPLY);
	if (r != NULL && r->msg_case == ACTIVE_PG__FRAME__MSG_HELLO_REPLY)
	{
		CHECK(r->hello_reply->capabilities & AP_CAP_PAGES);
		CHECK(r->hello_reply->capabilities & AP_CAP_STATS);
		CHECK_EQ(r->hello_reply->media_mbps, 12);
		CHECK(r->hello_reply->cpu_ratio == 0.25);
		CHECK_EQ(r->hello_reply->memory_bytes, diskd_config.memory_bytes);
	}
	if (r)
		active_pg__frame__free_unpacked(r, NULL);
	session_end(&s);
	diskd_config.media_mbps = 0;
	diskd_config.cpu_ratio = 0.0;

	/* StatsRequest is refused before the handshake */
	session_start(&s);
	{
		ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
		ActivePg__StatsRequest sr = ACTIVE_PG__STATS_REQUEST__INIT;

		f.msg_case = ACTIVE_PG__FRAME__MSG_STATS_REQUEST;
		f.stats_request = &sr;
		send_frame(&s, &f);
		CHECK_EQ(next_error_code(&s), AP_ERR_PROTOCOL);
	}
	session_end(&s);
}

#define PAGES_RELNUMBER		4000000001u
#define PAGES_NBLOCKS		8
#define PAGES_ZERO_BLOCK	3

/* Write a relation file of PAGES_NBLOCKS pages, block b filled with b + 1 (one all zero). */
static bool
write_pages_relation(void)
{
	unsigned char page[AP_BLCKSZ];
	char		path[64];
	int			fd;
	bool		ok = true;

	if (mkdir("base", 0700) != 0 || mkdir("base/1", 0700) != 0)
		return false;
	snprintf(path, sizeof(path), "base/1/%u", PAGES_RELNUMBER);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0)
		return false;
	for (int b = 0; b < PAGES_NBLOCKS; b++)
	{
		memset(page, b == PAGES_ZERO_BLOCK ? 0 : b + 1, sizeof(page));
		if (write(fd, page, sizeof(page)) != (ssize_t) sizeof(page))
			ok = false;
	}
	close(fd);
	return ok;
}

/*
 * Run one page-mode scan and check its PageBatch frames: every block of the
 * disk's units except the all-zero one, each page verbatim, in batches of at
 * most max_pages.  Returns the Done stats' throttle_us (or UINT64_MAX).
 */
static uint64_t
check_page_scan(Session *s, ActivePg__Frame *req, uint32_t max_pages,
				const bool *expect, int nexpect)
{
	bool		seen[PAGES_NBLOCKS] = {false};
	uint64_t	throttle = UINT64_MAX;
	int			npages = 0;

	send_frame(s, req);
	for (;;)
	{
		ActivePg__Frame *r = recv_frame(s);

		if (r == NULL)
		{
			CHECK(!"page scan: no Done");
			break;
		}
		if (r->msg_case == ACTIVE_PG__FRAME__MSG_PAGE_BATCH)
		{
			ActivePg__PageBatch *pb = r->page_batch;

			CHECK(pb->n_blocks >= 1 && pb->n_blocks <= max_pages);
			CHECK_EQ(pb->pages.len, pb->n_blocks * AP_BLCKSZ);
			for (size_t i = 0; i < pb->n_blocks && pb->pages.len == pb->n_blocks * AP_BLCKSZ; i++)
			{
				uint32_t	b = pb->blocks[i];

				CHECK(b < PAGES_NBLOCKS && !seen[b]);
				if (b >= PAGES_NBLOCKS)
					continue;
				seen[b] = true;
				npages++;
				CHECK_EQ(pb->pages.data[i * AP_BLCKSZ], b + 1);
				CHECK_EQ(pb->pages.data[i * AP_BLCKSZ + AP_BLCKSZ - 1], b + 1);
			}
		}
		else if (r->msg_case == ACTIVE_PG__FRAME__MSG_DONE)
		{
			ActivePg__ScanStats *st = r->done->stats;

			CHECK_EQ(st->tuples_seen, 0);
			CHECK_EQ(st->rows_shipped, 0);
			CHECK(st->bytes_shipped > (uint64_t) npages * AP_BLCKSZ);
			CHECK_EQ(st->bytes_read, st->pages_read * AP_BLCKSZ);
			CHECK(st->cpu_us <= st->wall_us + 1000);
			throttle = st->throttle_us;
			active_pg__frame__free_unpacked(r, NULL);
			break;
		}
		else
		{
			CHECK(!"page scan: unexpected frame");
			active_pg__frame__free_unpacked(r, NULL);
			break;
		}
		active_pg__frame__free_unpacked(r, NULL);
	}
	for (int b = 0; b < nexpect; b++)
		CHECK_EQ(seen[b], expect[b]);
	return throttle;
}

/*
 * Distributed-device mode end to end on a small relation file: raw pages in
 * PageBatch frames, the program ignored, an unknown mode refused, the media
 * throttle applied and accounted, and the daemon's counters following.
 */
static void
test_page_mode(void)
{
	char		dir[] = "/tmp/diskd-frames-XXXXXX";
	char		cwd[4096];
	char		path[128];
	Session		s;
	ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
	ActivePg__ScanRequest scan = ACTIVE_PG__SCAN_REQUEST__INIT;
	ActivePg__RelLocator rel = ACTIVE_PG__REL_LOCATOR__INIT;
	ActivePg__Snapshot snap = ACTIVE_PG__SNAPSHOT__INIT;
	ActivePg__Program prog = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__Frame *before;
	ActivePg__Frame *after;
	bool		all[PAGES_NBLOCKS];
	bool		disk1[PAGES_NBLOCKS];
	int32_t		bogus_attno = 999;
	uint64_t	throttle;

	if (getcwd(cwd, sizeof(cwd)) == NULL || mkdtemp(dir) == NULL || chdir(dir) != 0)
	{
		CHECK(!"cannot make a scratch directory");
		return;
	}
	CHECK(write_pages_relation());
	for (int b = 0; b < PAGES_NBLOCKS; b++)
	{
		all[b] = (b != PAGES_ZERO_BLOCK);
		disk1[b] = (b >= 4);	/* unit 1 of stripe 4 on 2 disks */
	}

	rel.spc_oid = 1663;
	rel.db_oid = 1;
	rel.rel_number = PAGES_RELNUMBER;
	snap.xmin = snap.xmax = 3;
	/* a program that would fail to compile: page mode must not look at it */
	prog.n_project = 1;
	prog.project = &bogus_attno;
	scan.rel = &rel;
	scan.snapshot = &snap;
	scan.program = &prog;
	scan.nblocks = PAGES_NBLOCKS;
	scan.ndisks = 1;
	scan.stripe_pages = 4;
	scan.batch_bytes = 2 * AP_BLCKSZ;
	scan.mode = AP_SCAN_MODE_PAGES;
	f.msg_case = ACTIVE_PG__FRAME__MSG_SCAN;
	f.scan = &scan;

	session_start(&s);
	CHECK(handshake_ok(&s));
	before = stats_round_trip(&s);
	CHECK(before != NULL);

	/* an unknown mode is refused; the connection stays usable */
	scan.mode = 7;
	send_frame(&s, &f);
	CHECK_EQ(next_error_code(&s), AP_ERR_UNSUPPORTED);
	scan.mode = AP_SCAN_MODE_PAGES;

	/* active mode runs the program, which is refused */
	scan.mode = AP_SCAN_MODE_ACTIVE;
	send_frame(&s, &f);
	CHECK(next_error_code(&s) > 0);
	scan.mode = AP_SCAN_MODE_PAGES;

	CHECK_EQ(check_page_scan(&s, &f, 2, all, PAGES_NBLOCKS), 0);
	/* a batch smaller than a page still ships one page per frame */
	scan.batch_bytes = 100;
	CHECK_EQ(check_page_scan(&s, &f, 1, all, PAGES_NBLOCKS), 0);
	scan.batch_bytes = 0;
	scan.ndisks = 2;
	scan.disk_id = 1;
	CHECK_EQ(check_page_scan(&s, &f, 32, disk1, PAGES_NBLOCKS), 0);

	/* a 1 MB/s drive: 8 pages (64 kB) beyond the 50 kB burst must wait ~13 ms */
	ap_throttle_configure(1, 0.0);
	scan.ndisks = 1;
	scan.disk_id = 0;
	throttle = check_page_scan(&s, &f, 32, all, PAGES_NBLOCKS);
	CHECK(throttle >= 5000 && throttle != UINT64_MAX);
	ap_throttle_configure(0, 0.0);

	after = stats_round_trip(&s);
	CHECK(after != NULL);
	if (before != NULL && after != NULL)
	{
		ActivePg__StatsReply *a = after->stats_reply;
		ActivePg__StatsReply *b = before->stats_reply;

		CHECK_EQ(a->scans - b->scans, 6);
		CHECK_EQ(a->pages_read - b->pages_read, 3 * PAGES_NBLOCKS + 4);
		CHECK_EQ(a->bytes_read - b->bytes_read, (3 * PAGES_NBLOCKS + 4) * AP_BLCKSZ);
		CHECK(a->bytes_shipped - b->bytes_shipped > (uint64_t) (3 * 7 + 4) * AP_BLCKSZ);
		CHECK(a->throttle_us - b->throttle_us >= throttle);
		CHECK(a->busy_us > b->busy_us);
		CHECK(a->uptime_us > b->uptime_us);
		CHECK(a->cpu_us >= b->cpu_us);
		CHECK_EQ(a->tuples_seen - b->tuples_seen, 0);
	}
	if (before)
		active_pg__frame__free_unpacked(before, NULL);
	if (after)
		active_pg__frame__free_unpacked(after, NULL);
	session_end(&s);

	snprintf(path, sizeof(path), "base/1/%u", PAGES_RELNUMBER);
	unlink(path);
	rmdir("base/1");
	rmdir("base");
	if (chdir(cwd) != 0)
		perror("chdir");
	rmdir(dir);
}

/* Append a varint. */
static size_t
put_varint(unsigned char *p, uint64_t v)
{
	size_t		n = 0;

	while (v >= 0x80)
	{
		p[n++] = (unsigned char) (v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char) v;
	return n;
}

/* Wrap buf[0..*len) as field `field` (length-delimited) in place; buf has room. */
static void
wrap(unsigned char *buf, size_t *len, uint32_t field)
{
	unsigned char hdr[16];
	size_t		h = put_varint(hdr, ((uint64_t) field << 3) | 2);

	h += put_varint(hdr + h, *len);
	memmove(buf + h, buf, *len);
	memcpy(buf, hdr, h);
	*len += h;
}

/* Send raw frame bytes with their length header. */
static void
send_body(Session *s, const unsigned char *body, size_t len)
{
	unsigned char hdr[4];

	ap_put_be32(hdr, (uint32_t) len);
	send_raw(s, hdr, 4);
	send_raw(s, body, len);
}

/*
 * Frames whose unpacking alone would hurt the daemon: a Scan whose filter
 * nests NOT 5000 times (50 kB; protobuf-c's recursive unpack would overflow
 * the stack), a Scan of a million empty columns (2 MB unpacking to tens of
 * MB), an oversized Hello before authentication.  Each gets an Error and
 * the daemon serves the next connection; legitimate nesting still passes
 * the check.
 */
static void
test_hostile_shapes(void)
{
	size_t		cap = 4u << 20;
	unsigned char *buf = malloc(cap);
	size_t		len;
	uint64_t	need = 0;
	char		why[160];
	Session		s;

	/* Expr{var: 1}, then (Expr{bool_expr: BoolExpr{kind: NOT, args: [...]}}) x depth */
	for (int depth = 5000; depth >= 100; depth -= 4900)
	{
		len = 0;
		buf[len++] = 0x08;
		buf[len++] = 0x01;
		for (int i = 0; i < depth; i++)
		{
			wrap(buf, &len, 2);		/* BoolExpr.args */
			memmove(buf + 2, buf, len);
			buf[0] = 0x08;			/* BoolExpr.kind */
			buf[1] = AP_BOOL_NOT;
			len += 2;
			wrap(buf, &len, 4);		/* Expr.bool_expr */
		}
		wrap(buf, &len, 1);			/* Program.filter */
		wrap(buf, &len, 9);			/* ScanRequest.program */
		wrap(buf, &len, 3);			/* Frame.scan */
		if (depth == 5000)
		{
			CHECK(ap_frame_check(buf, len, AP_FRAME_MAX_DEPTH, &need, why, sizeof(why)) != 0);
			CHECK(strstr(why, "nested too deeply") != NULL);
			session_start(&s);
			CHECK(handshake_ok(&s));
			send_body(&s, buf, len);
			CHECK_EQ(next_error_code(&s), AP_ERR_PROTOCOL);
			session_end(&s);
		}
		else
		{
			/* 100 NOT levels: within the depth, unpacks to a few times its size */
			CHECK_EQ(ap_frame_check(buf, len, AP_FRAME_MAX_DEPTH, &need, why, sizeof(why)), 0);
			CHECK(need > len && need < (uint64_t) len * AP_UNPACK_FACTOR);
		}
	}

	/* a million empty Column messages: 2 MB that would unpack to tens of MB */
	len = 0;
	for (int i = 0; i < 1000000; i++)
	{
		buf[len++] = (7 << 3) | 2;	/* ScanRequest.columns */
		buf[len++] = 0;
	}
	wrap(buf, &len, 3);
	CHECK_EQ(ap_frame_check(buf, len, AP_FRAME_MAX_DEPTH, &need, why, sizeof(why)), 0);
	CHECK(need > (uint64_t) len * AP_UNPACK_FACTOR);
	session_start(&s);
	CHECK(handshake_ok(&s));
	send_body(&s, buf, len);
	CHECK_EQ(next_error_code(&s), AP_ERR_FRAME_TOO_BIG);
	session_end(&s);

	/* broken framing inside: a sub-message longer than its parent */
	{
		unsigned char bad[] = {0x1a, 0x03, 0x4a, 0x10, 0x00};

		CHECK(ap_frame_check(bad, sizeof(bad), AP_FRAME_MAX_DEPTH, &need, why, sizeof(why)) != 0);
	}

	/* before the handshake a frame must be Hello-sized: a 16 kB nonce is refused */
	{
		ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
		ActivePg__Hello h = ACTIVE_PG__HELLO__INIT;
		unsigned char *big = calloc(16384, 1);

		h.protocol_version = AP_PROTOCOL_VERSION;
		h.client_nonce.data = big;
		h.client_nonce.len = 16384;
		f.msg_case = ACTIVE_PG__FRAME__MSG_HELLO;
		f.hello = &h;
		session_start(&s);
		send_frame(&s, &f);
		CHECK_EQ(next_error_code(&s), AP_ERR_FRAME_TOO_BIG);
		session_end(&s);
		free(big);
	}

	/* a host of another PostgreSQL major than the data directory's is refused */
	{
		ActivePg__Frame f = ACTIVE_PG__FRAME__INIT;
		ActivePg__Hello h = ACTIVE_PG__HELLO__INIT;

		diskd_config.pg_major = 15;
		h.protocol_version = AP_PROTOCOL_VERSION;
		h.client_nonce.data = test_nonce;
		h.client_nonce.len = sizeof(test_nonce);
		h.pg_version_num = 180001;
		f.msg_case = ACTIVE_PG__FRAME__MSG_HELLO;
		f.hello = &h;
		session_start(&s);
		send_frame(&s, &f);
		CHECK_EQ(next_error_code(&s), AP_ERR_UNSUPPORTED);
		session_end(&s);
		/* the same major is served */
		h.pg_version_num = 150013;
		session_start(&s);
		send_frame(&s, &f);
		CHECK_EQ(next_error_code(&s), -1);	/* a HelloReply */
		session_end(&s);
		diskd_config.pg_major = 0;
	}

	/* and the daemon still serves */
	session_start(&s);
	CHECK(handshake_ok(&s));
	session_end(&s);
	free(buf);
}

/* SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 4231 cases 1, 2 and 6). */
static void
test_auth_vectors(void)
{
	unsigned char out[AP_SHA256_BYTES];
	unsigned char key[131];
	char		hex[2 * AP_SHA256_BYTES + 1];
	unsigned char p1[AP_SHA256_BYTES];
	unsigned char p2[AP_SHA256_BYTES];
	unsigned char n1[AP_AUTH_NONCE_BYTES] = {1};
	unsigned char n2[AP_AUTH_NONCE_BYTES] = {2};

#define HEX(o) do { for (int i_ = 0; i_ < AP_SHA256_BYTES; i_++) sprintf(hex + 2 * i_, "%02x", (o)[i_]); } while (0)
	ap_sha256("abc", 3, out);
	HEX(out);
	CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
	memset(key, 0x0b, 20);
	ap_hmac_sha256(key, 20, "Hi There", 8, out);
	HEX(out);
	CHECK(strcmp(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7") == 0);
	ap_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, out);
	HEX(out);
	CHECK(strcmp(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") == 0);
	memset(key, 0xaa, 131);
	ap_hmac_sha256(key, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54, out);
	HEX(out);
	CHECK(strcmp(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54") == 0);
#undef HEX
	/* the two proofs differ, and each depends on both nonces and the secret */
	ap_auth_proof("s", true, n1, n2, p1);
	ap_auth_proof("s", false, n1, n2, p2);
	CHECK(!ap_auth_equal(p1, p2, AP_SHA256_BYTES));
	ap_auth_proof("s", true, n2, n1, p2);
	CHECK(!ap_auth_equal(p1, p2, AP_SHA256_BYTES));
	ap_auth_proof("t", true, n1, n2, p2);
	CHECK(!ap_auth_equal(p1, p2, AP_SHA256_BYTES));
	ap_auth_proof("s", true, n1, n2, p2);
	CHECK(ap_auth_equal(p1, p2, AP_SHA256_BYTES));
}

int
main(void)
{
	diskd_config.data_dir = ".";
	diskd_config.queue_depth = 8;
	diskd_config.memory_bytes = 64u << 20;
	diskd_config.max_connections = 8;
	diskd_config.direct_io_default = true;

	test_auth_vectors();
	test_bad_lengths();
	test_garbage_and_truncation();
	test_handshake_rules();
	test_bad_scan_requests();
	test_random_frames();
	test_hostile_shapes();
	test_hello_emulation();
	test_page_mode();
	return TEST_DONE();
}
