/*
 * ioring.c
 *	  io_uring reader of one disk's stripe units of a relation's main fork.
 *
 * Rules of this file:
 *   - The disk owns units u with u % ndisks == disk_id; unit u is blocks
 *     [u*S, min((u+1)*S, nblocks)).  A unit is read in pieces of at most
 *     P = min(S, READER_PIECE_BLOCKS) blocks, each into one slot buffer of P
 *     blocks and delivered as one chunk, in completion order: the stripe
 *     unit decides which disk reads a block, not how much memory a read
 *     takes (a unit may be a whole 1 GB segment).
 *   - A piece that crosses a 1 GB segment boundary (P does not divide
 *     AP_RELSEG_BLOCKS; never with PostgreSQL's sizes and a power-of-two
 *     unit, possible for any request a client sends) is read as one request
 *     per segment into the same buffer; the chunk is complete when all its
 *     parts are.
 *   - At most one request per part is in flight and at most nslots
 *     (<= queue_depth) pieces are in flight, so the ring (2 entries per slot)
 *     can never overflow.  The slot handed to the caller is recycled for the
 *     next piece when the caller asks for the next chunk: while the caller
 *     decodes one buffer the kernel fills the others.
 *   - Read-ahead adapts, like the kernel's: at most `window` pieces are
 *     read ahead of the caller, starting at READER_WINDOW_START and doubling
 *     (up to nslots) each time the caller finds nothing completed.  A read
 *     served from the page cache completes inside io_uring_enter, copying the
 *     piece into its buffer there and then; a deep queue would copy it long
 *     before it is decoded, and out of the CPU cache again.  Reads that wait
 *     for a device grow the window to the full queue depth within a few
 *     pieces.
 *   - Buffers are page-aligned (O_DIRECT), one mapping, registered once; reads use
 *     read_fixed.  If registration is refused (e.g. RLIMIT_MEMLOCK) plain
 *     reads into the same buffers are used.
 *   - Short reads and -EAGAIN/-EINTR are resubmitted for the remainder; EOF
 *     before nblocks is an error (-EIO), since the host fixed nblocks.
 *   - O_DIRECT is refused by some filesystems (EINVAL at open or at read):
 *     the segment is then read buffered, logged once per process.
 *   - ap_reader_close is the one cleanup path and is valid at any point: it
 *     waits for every submitted read before freeing the buffers the kernel
 *     may still be writing.
 *   - Where io_uring is unavailable (io_uring_queue_init fails with EPERM or
 *     ENOSYS: a container's seccomp profile, a kernel built without it), or
 *     the daemon runs with --no-io-uring, each piece is read with pread
 *     when the caller asks for it, into one buffer: the same chunks in
 *     stripe order, without read-ahead.  Said once in the log.
 */
#define _GNU_SOURCE				/* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ap_stripe.h"
#include "diskd.h"

#define READER_MAX_PARTS		2	/* a piece of <= AP_RELSEG_BLOCKS spans <= 2 segments */
#define READER_PIECE_BLOCKS		128	/* largest read: 1 MB (the default unit is 256 kB) */
#define READER_PART_BITS		8	/* user_data = slot << 8 | part */
#define READER_INIT_RETRIES		4	/* io_uring_queue_init attempts after ENOMEM */
#define READER_INIT_RETRY_US	5000	/* first back-off, doubled each time */
#define READER_MEMLOCK_SHARE	16	/* register at most 1/16 of RLIMIT_MEMLOCK */

#define READER_BUF_CACHE		4	/* idle buffer mappings kept for the next scans */
#define READER_SYNC_PIECES		2	/* scans of at most this many pieces use pread */
#define READER_WINDOW_START		2	/* pieces read ahead while reads complete at once */

static size_t memlock_share_bytes(void);

/*
 * Buffer mappings of finished scans, kept for the next ones: a fresh
 * mapping costs a page fault and a page clear per 4 kB on its first read
 * (about 5% of a scan's CPU at 8 MB of buffers per scan); a reused one is
 * already resident.  Only mappings no read is in flight into come here.
 */
static pthread_mutex_t buf_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct
{
	unsigned char *addr;
	size_t		bytes;
}			buf_cache[READER_BUF_CACHE];

/* A mapping of exactly bytes: a cached one, else a new one; NULL if none. */
static unsigned char *
bufs_get(size_t bytes)
{
	void	   *p = NULL;

	pthread_mutex_lock(&buf_cache_lock);
	for (int i = 0; i < READER_BUF_CACHE; i++)
	{
		if (buf_cache[i].addr != NULL && buf_cache[i].bytes == bytes)
		{
			p = buf_cache[i].addr;
			buf_cache[i].addr = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&buf_cache_lock);
	if (p != NULL)
		return p;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Keep an idle mapping for the next scan, or unmap it (cache full). */
static void
bufs_put(unsigned char *addr, size_t bytes)
{
	pthread_mutex_lock(&buf_cache_lock);
	for (int i = 0; i < READER_BUF_CACHE; i++)
	{
		if (buf_cache[i].addr == NULL)
		{
			buf_cache[i].addr = addr;
			buf_cache[i].bytes = bytes;
			addr = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&buf_cache_lock);
	if (addr != NULL)
		munmap(addr, bytes);
}

typedef struct ReadPart
{
	uint32_t	seg;			/* segment file number */
	uint64_t	file_off;		/* next byte to read in the segment file */
	uint32_t	buf_off;		/* where those bytes go in the slot buffer */
	uint32_t	remaining;		/* bytes still to read */
} ReadPart;

typedef struct ReadSlot
{
	unsigned char *buf;			/* P * AP_BLCKSZ bytes */
	uint32_t	first_block;
	uint32_t	nblocks;
	int			nparts;
	int			pending;		/* parts not yet complete */
	ReadPart	parts[READER_MAX_PARTS];
} ReadSlot;

typedef struct SegFile
{
	int			fd_direct;		/* -1 if not open */
	int			fd_buffered;	/* -1 if not open */
	bool		use_buffered;	/* O_DIRECT refused or not wanted */
} SegFile;

struct ApReader
{
	struct io_uring ring;
	bool		ring_ok;
	bool		sync;			/* pread, no ring: see use_pread */
	bool		registered;		/* buffers registered: use read_fixed */
	bool		direct_io;
	char	   *relpath;
	uint32_t	nblocks;
	uint32_t	ndisks;
	uint32_t	stripe_pages;
	uint32_t	piece_blocks;	/* P: blocks of one read */
	uint64_t	next_unit;		/* next unit of ours to read */
	uint32_t	next_off;		/* its next piece's first block, within the unit */
	uint32_t	nsegs;
	SegFile    *segs;
	uint32_t	nslots;
	ReadSlot   *slots;
	unsigned char *bufs;		/* one mapping holding every slot's buffer */
	size_t		bufs_bytes;
	uint32_t   *ready;			/* FIFO of completed slots (ring of nslots) */
	uint32_t	ready_head;
	uint32_t	nready;
	uint32_t   *idle;			/* stack of slots holding no piece */
	uint32_t	nidle;
	uint32_t	window;			/* pieces in flight or ready at most (<= nslots) */
	bool		exhausted;		/* every piece of ours has been started */
	int			current;		/* slot lent to the caller, -1 if none */
	int			inflight;		/* submitted reads whose CQE is not reaped */
	int			unsubmitted;	/* prepared SQEs not yet submitted */
	int			failed;			/* sticky -errno after a read error */
	uint64_t	wait_us;		/* blocked in wait_cqe since the last chunk */
};

/* Reads use pread instead of io_uring (unavailable, or --no-io-uring). */
static atomic_bool reader_use_pread = false;

/* Switch every later reader of the process to pread, logging why once. */
static void
use_pread(const char *why)
{
	if (!atomic_exchange(&reader_use_pread, true))
		diskd_log("LOG", "%s; reading with pread, without read-ahead", why);
}

/*
 * At start: read with pread if forced (--no-io-uring) or if io_uring is
 * unavailable here (a probe ring cannot be set up: EPERM, ENOSYS).
 */
void
ap_reader_init(bool force_pread)
{
	struct io_uring ring;
	int			rc;
	char		why[128];

	if (force_pread)
	{
		use_pread("io_uring is off (--no-io-uring)");
		return;
	}
	rc = io_uring_queue_init(2, &ring, 0);
	if (rc == 0)
	{
		io_uring_queue_exit(&ring);
		return;
	}
	if (rc == -EPERM || rc == -ENOSYS)
	{
		snprintf(why, sizeof(why), "io_uring is not available (%s)", strerror(-rc));
		use_pread(why);
	}
}

/* Log the O_DIRECT fallback once per process, not once per segment. */
static atomic_bool direct_fallback_logged = false;

/* Path of segment seg: "relpath" or "relpath.N". */
static void
seg_path(const ApReader *r, uint32_t seg, char *buf, size_t buflen)
{
	if (seg == 0)
		snprintf(buf, buflen, "%s", r->relpath);
	else
		snprintf(buf, buflen, "%s.%u", r->relpath, seg);
}

/* Note (once) that reads continue buffered because O_DIRECT was refused. */
static void
log_direct_fallback(const char *path)
{
	if (!atomic_exchange(&direct_fallback_logged, true))
		diskd_log("LOG", "O_DIRECT is not supported for \"%s\"; using buffered reads where it is refused",
				  path);
}

/* The fd to read segment seg with, opening it on first use; fd or -errno. */
static int
seg_fd(ApReader *r, uint32_t seg, char *errbuf, size_t errlen)
{
	SegFile    *sf = &r->segs[seg];
	char		path[1024];
	int			fd;

	if (!sf->use_buffered && sf->fd_direct >= 0)
		return sf->fd_direct;
	if (sf->use_buffered && sf->fd_buffered >= 0)
		return sf->fd_buffered;

	seg_path(r, seg, path, sizeof(path));
	if (!sf->use_buffered)
	{
		fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (fd >= 0)
			return sf->fd_direct = fd;
		if (errno != EINVAL)
			goto fail;
		log_direct_fallback(path);
		sf->use_buffered = true;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return sf->fd_buffered = fd;
fail:
	fd = -errno;
	snprintf(errbuf, errlen, "could not open file \"%s\": %s", path, strerror(-fd));
	return fd;
}

/* Prepare the read of one part's remaining bytes; 0 or -errno. */
static int
queue_part(ApReader *r, uint32_t slot, int part, char *errbuf, size_t errlen)
{
	ReadSlot   *s = &r->slots[slot];
	ReadPart   *p = &s->parts[part];
	struct io_uring_sqe *sqe;
	int			fd;

	fd = seg_fd(r, p->seg, errbuf, errlen);
	if (fd < 0)
		return fd;
	sqe = io_uring_get_sqe(&r->ring);
	if (sqe == NULL)
	{
		/* cannot happen: the ring has two entries per slot */
		snprintf(errbuf, errlen, "io_uring submission queue full");
		return -EBUSY;
	}
	if (r->registered)
		io_uring_prep_read_fixed(sqe, fd, s->buf + p->buf_off, p->remaining,
								 p->file_off, (int) slot);
	else
		io_uring_prep_read(sqe, fd, s->buf + p->buf_off, p->remaining, p->file_off);
	io_uring_sqe_set_data64(sqe, ((uint64_t) slot << READER_PART_BITS) | (uint64_t) part);
	r->inflight++;
	r->unsubmitted++;
	return 0;
}

/*
 * Without io_uring: read one part now with pread, as complete_read accounts
 * a completion (short reads continue, O_DIRECT refused at read time falls
 * back to buffered, EOF before nblocks is an error); 0 or -errno.
 */
static int
read_part(ApReader *r, uint32_t slot, int part, char *errbuf, size_t errlen)
{
	ReadSlot   *s = &r->slots[slot];
	ReadPart   *p = &s->parts[part];
	char		path[1024];
	uint64_t	t0 = ap_mono_us();

	while (p->remaining > 0)
	{
		int			fd = seg_fd(r, p->seg, errbuf, errlen);
		ssize_t		n;

		if (fd < 0)
			return fd;
		n = pread(fd, s->buf + p->buf_off, p->remaining, (off_t) p->file_off);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0 && errno == EINVAL && !r->segs[p->seg].use_buffered)
		{
			seg_path(r, p->seg, path, sizeof(path));
			log_direct_fallback(path);
			r->segs[p->seg].use_buffered = true;
			continue;
		}
		if (n <= 0)
		{
			int			rc = n < 0 ? -errno : -EIO;

			seg_path(r, p->seg, path, sizeof(path));
			if (n < 0)
				snprintf(errbuf, errlen, "could not read block %u in file \"%s\": %s",
						 s->first_block + p->buf_off / AP_BLCKSZ, path, strerror(-rc));
			else
				snprintf(errbuf, errlen, "file \"%s\" ends before block %u (relation expected to have %u blocks)",
						 path, s->first_block + p->buf_off / AP_BLCKSZ, r->nblocks);
			return rc;
		}
		p->file_off += (uint64_t) n;
		p->buf_off += (uint32_t) n;
		p->remaining -= (uint32_t) n;
	}
	r->wait_us += ap_mono_us() - t0;
	if (--s->pending == 0)
		r->ready[(r->ready_head + r->nready++) % r->nslots] = slot;
	return 0;
}

/* Submit everything prepared; 0 or -errno. */
static int
submit_queued(ApReader *r, char *errbuf, size_t errlen)
{
	while (r->unsubmitted > 0)
	{
		int			rc = io_uring_submit(&r->ring);

		if (rc == -EINTR || rc == -EAGAIN)
			continue;
		if (rc < 0)
		{
			snprintf(errbuf, errlen, "io_uring submit failed: %s", strerror(-rc));
			return rc;
		}
		r->unsubmitted -= rc < r->unsubmitted ? rc : r->unsubmitted;
	}
	return 0;
}

/*
 * Start reading our next piece into slot; 1 if a piece was started, 0 if the
 * stripe is exhausted, or -errno.
 */
static int
start_piece(ApReader *r, uint32_t slot, char *errbuf, size_t errlen)
{
	ReadSlot   *s = &r->slots[slot];
	uint64_t	unit_end = (r->next_unit + 1) * r->stripe_pages;
	uint64_t	b0 = r->next_unit * r->stripe_pages + r->next_off;
	uint64_t	b1;
	uint64_t	b;
	int			i;

	if (b0 >= r->nblocks)
		return 0;
	if (unit_end > r->nblocks)
		unit_end = r->nblocks;
	b1 = b0 + r->piece_blocks < unit_end ? b0 + r->piece_blocks : unit_end;
	if (b1 == unit_end)
	{
		r->next_unit += r->ndisks;
		r->next_off = 0;
	}
	else
		r->next_off += r->piece_blocks;

	s->first_block = (uint32_t) b0;
	s->nblocks = (uint32_t) (b1 - b0);
	s->nparts = 0;
	for (b = b0; b < b1;)
	{
		uint32_t	seg = (uint32_t) (b / AP_RELSEG_BLOCKS);
		uint64_t	seg_end = (uint64_t) (seg + 1) * AP_RELSEG_BLOCKS;
		uint64_t	end = b1 < seg_end ? b1 : seg_end;
		ReadPart   *p = &s->parts[s->nparts++];

		p->seg = seg;
		p->file_off = (b % AP_RELSEG_BLOCKS) * AP_BLCKSZ;
		p->buf_off = (uint32_t) ((b - b0) * AP_BLCKSZ);
		p->remaining = (uint32_t) ((end - b) * AP_BLCKSZ);
		b = end;
	}
	s->pending = s->nparts;
	for (i = 0; i < s->nparts; i++)
	{
		int			rc = r->sync ? read_part(r, slot, i, errbuf, errlen) :
			queue_part(r, slot, i, errbuf, errlen);

		if (rc < 0)
			return rc;
	}
	return 1;
}

/* Account one completion; 0, or -errno with errbuf set for a failed read. */
static int
complete_read(ApReader *r, uint64_t user_data, int res, char *errbuf, size_t errlen)
{
	uint32_t	slot = (uint32_t) (user_data >> READER_PART_BITS);
	int			part = (int) (user_data & ((1u << READER_PART_BITS) - 1));
	ReadSlot   *s = &r->slots[slot];
	ReadPart   *p = &s->parts[part];
	uint32_t	blkno = s->first_block + p->buf_off / AP_BLCKSZ;
	char		path[1024];

	r->inflight--;
	if (res == -EAGAIN || res == -EINTR)
		return queue_part(r, slot, part, errbuf, errlen);
	if (res == -EINVAL && !r->segs[p->seg].use_buffered)
	{
		/* this filesystem accepted O_DIRECT at open but not for reads */
		seg_path(r, p->seg, path, sizeof(path));
		log_direct_fallback(path);
		r->segs[p->seg].use_buffered = true;
		return queue_part(r, slot, part, errbuf, errlen);
	}
	if (res < 0)
	{
		seg_path(r, p->seg, path, sizeof(path));
		snprintf(errbuf, errlen, "could not read block %u in file \"%s\": %s",
				 blkno, path, strerror(-res));
		return res;
	}
	if (res == 0)
	{
		seg_path(r, p->seg, path, sizeof(path));
		snprintf(errbuf, errlen, "file \"%s\" ends before block %u (relation expected to have %u blocks)",
				 path, blkno, r->nblocks);
		return -EIO;
	}
	if ((uint32_t) res < p->remaining)
	{
		/* short read: ask for the rest */
		p->file_off += res;
		p->buf_off += res;
		p->remaining -= res;
		return queue_part(r, slot, part, errbuf, errlen);
	}
	p->remaining = 0;
	if (--s->pending == 0)
		r->ready[(r->ready_head + r->nready++) % r->nslots] = slot;
	return 0;
}

/*
 * Start pieces on idle slots until window pieces are in flight or ready (or
 * ours run out), and submit them; 0 or -errno with errbuf set.
 */
static int
fill_window(ApReader *r, char *errbuf, size_t errlen)
{
	while (!r->exhausted && r->nidle > 0 &&
		   r->nslots - r->nidle - (r->current >= 0 ? 1 : 0) < r->window)
	{
		uint32_t	slot = r->idle[--r->nidle];
		int			rc = start_piece(r, slot, errbuf, errlen);

		if (rc < 0)
			return rc;
		if (rc == 0)
		{
			r->idle[r->nidle++] = slot;
			r->exhausted = true;
		}
	}
	return r->sync ? 0 : submit_queued(r, errbuf, errlen);
}

/* Blocks of one read (P): a stripe unit, or a piece of a larger one. */
uint32_t
ap_reader_piece_blocks(uint32_t stripe_pages)
{
	return stripe_pages < READER_PIECE_BLOCKS ? stripe_pages : READER_PIECE_BLOCKS;
}

/* Reads (pieces) disk disk_id makes of its stripe units of nblocks blocks. */
uint64_t
ap_reader_pieces(uint32_t nblocks, uint32_t ndisks, uint32_t stripe_pages, uint32_t disk_id)
{
	uint64_t	total;
	uint64_t	nunits;
	uint64_t	last_len;
	uint32_t	piece;

	if (ndisks == 0 || stripe_pages == 0)
		return 0;
	total = ap_stripe_nunits(nblocks, stripe_pages);
	if (total <= disk_id)
		return 0;
	nunits = (total - disk_id + ndisks - 1) / ndisks;
	piece = ap_reader_piece_blocks(stripe_pages);
	/* every unit is whole but the table's last one, which may be ours */
	last_len = (uint64_t) nblocks - (disk_id + (nunits - 1) * ndisks) * stripe_pages;
	if (last_len > stripe_pages)
		last_len = stripe_pages;
	return (nunits - 1) * ((stripe_pages + piece - 1) / piece) + (last_len + piece - 1) / piece;
}

/* Open a reader over this disk's stripe units of relpath's main fork. */
ApReader *
ap_reader_open(const char *relpath, uint32_t nblocks, uint32_t ndisks,
			   uint32_t stripe_pages, uint32_t disk_id,
			   uint32_t queue_depth, bool direct_io,
			   int *err, char *errbuf, size_t errlen)
{
	ApReader   *r;
	uint64_t	npieces;
	struct iovec *iov = NULL;
	uint32_t	i;
	int			rc;

	*err = AP_ERR_NONE;
	errbuf[0] = '\0';
	if (ndisks == 0 || disk_id >= ndisks || stripe_pages == 0 ||
		stripe_pages > AP_RELSEG_BLOCKS || queue_depth == 0)
	{
		*err = AP_ERR_BAD_REQUEST;
		snprintf(errbuf, errlen, "invalid stripe geometry");
		return NULL;
	}

	r = calloc(1, sizeof(ApReader));
	if (r == NULL)
		goto oom;
	r->current = -1;
	r->nblocks = nblocks;
	r->ndisks = ndisks;
	r->stripe_pages = stripe_pages;
	r->piece_blocks = ap_reader_piece_blocks(stripe_pages);
	r->next_unit = disk_id;
	r->direct_io = direct_io;
	r->relpath = strdup(relpath);
	r->nsegs = nblocks / AP_RELSEG_BLOCKS + 1;
	r->segs = calloc(r->nsegs, sizeof(SegFile));
	if (r->relpath == NULL || r->segs == NULL)
		goto oom;
	for (i = 0; i < r->nsegs; i++)
	{
		r->segs[i].fd_direct = -1;
		r->segs[i].fd_buffered = -1;
		r->segs[i].use_buffered = !direct_io;
	}

	/* The first segment always exists for a relation; its absence means no relation. */
	rc = seg_fd(r, 0, errbuf, errlen);
	if (rc < 0)
	{
		*err = (rc == -ENOENT) ? AP_ERR_NO_RELATION : AP_ERR_IO;
		goto fail;
	}

	/* Only as many buffers as we have pieces: small scans stay small. */
	npieces = ap_reader_pieces(nblocks, ndisks, stripe_pages, disk_id);
	/*
	 * A disk's share of one or two pieces is read with pread: setting a ring
	 * up, registering its buffers and tearing it down cost more than two
	 * reads, and a small table rescanned once per outer row of a correlated
	 * subquery would pay that every time.
	 */
	r->sync = atomic_load(&reader_use_pread) || npieces <= READER_SYNC_PIECES;
	if (r->sync)
		queue_depth = 1;		/* one read at a time */
	r->nslots = (uint32_t) (npieces < queue_depth ? npieces : queue_depth);
	if (r->nslots == 0)
		return r;				/* nothing of ours to read */

	r->slots = calloc(r->nslots, sizeof(ReadSlot));
	r->ready = calloc(r->nslots, sizeof(uint32_t));
	r->idle = calloc(r->nslots, sizeof(uint32_t));
	iov = calloc(r->nslots, sizeof(struct iovec));
	if (r->slots == NULL || r->ready == NULL || r->idle == NULL || iov == NULL)
		goto oom;
	/* slot 0 on top: the first pieces go to the lowest buffers */
	for (i = 0; i < r->nslots; i++)
		r->idle[i] = r->nslots - 1 - i;
	r->nidle = r->nslots;
	r->window = READER_WINDOW_START < r->nslots ? READER_WINDOW_START : r->nslots;
	/*
	 * One anonymous mapping for all buffers: page-aligned for O_DIRECT, and
	 * pinned as few pages as possible when registered (RLIMIT_MEMLOCK).
	 */
	r->bufs_bytes = (size_t) r->nslots * r->piece_blocks * AP_BLCKSZ;
	r->bufs = bufs_get(r->bufs_bytes);
	if (r->bufs == NULL)
		goto oom;
	for (i = 0; i < r->nslots; i++)
	{
		r->slots[i].buf = r->bufs + (size_t) i * r->piece_blocks * AP_BLCKSZ;
		iov[i].iov_base = r->slots[i].buf;
		iov[i].iov_len = (size_t) r->piece_blocks * AP_BLCKSZ;
	}

	if (r->sync)
	{
		/* nothing is read before the caller asks (ap_reader_next) */
		free(iov);
		return r;
	}

	/*
	 * Ring memory released by a previous scan's teardown is freed
	 * asynchronously by the kernel; a burst of short scans can briefly run
	 * out.  Retry a few times before failing the scan.
	 */
	for (int attempt = 0;; attempt++)
	{
		rc = io_uring_queue_init(r->nslots * READER_MAX_PARTS, &r->ring, 0);
		if (rc != -ENOMEM || attempt >= READER_INIT_RETRIES)
			break;
		usleep(READER_INIT_RETRY_US << attempt);
	}
	if (rc == -EPERM || rc == -ENOSYS)
	{
		char		why[128];

		/* refused since the daemon started: this and later scans use pread */
		snprintf(why, sizeof(why), "io_uring is not available (%s)", strerror(-rc));
		use_pread(why);
		r->sync = true;
		free(iov);
		return r;
	}
	if (rc < 0)
	{
		*err = AP_ERR_IO;
		snprintf(errbuf, errlen, "could not set up io_uring: %s", strerror(-rc));
		goto fail;
	}
	r->ring_ok = true;
	/*
	 * Registered buffers are pinned and charged to RLIMIT_MEMLOCK until the
	 * kernel's asynchronous teardown unpins them; register only when they
	 * take a small share of the limit, so that concurrent and back-to-back
	 * scans never exhaust it.  Plain reads into the same buffers are used
	 * otherwise.
	 */
	if (r->bufs_bytes <= memlock_share_bytes())
		rc = io_uring_register_buffers(&r->ring, iov, r->nslots);
	else
		rc = -ENOSPC;
	r->registered = (rc == 0);
	if (rc < 0 && rc != -ENOSPC)
	{
		static atomic_bool logged = false;

		if (!atomic_exchange(&logged, true))
			diskd_log("LOG", "could not register io_uring buffers (%s); using unregistered reads",
					  strerror(-rc));
	}
	free(iov);
	iov = NULL;

	rc = fill_window(r, errbuf, errlen);
	if (rc < 0)
	{
		*err = AP_ERR_IO;
		goto fail;
	}
	return r;

oom:
	*err = AP_ERR_OUT_OF_MEMORY;
	snprintf(errbuf, errlen, "out of memory setting up the reader");
fail:
	free(iov);
	ap_reader_close(r);
	return NULL;
}

/*
 * Next completed chunk (1), end of stripe (0), or -errno with errbuf set.
 * Recycles the previously returned chunk's buffer for our next piece first.
 */
int
ap_reader_next(ApReader *r, ApChunk *chunk, char *errbuf, size_t errlen)
{
	int			rc;
	bool		waited = false;

	if (r->failed)
	{
		snprintf(errbuf, errlen, "reader already failed: %s", strerror(-r->failed));
		return r->failed;
	}
	if (r->current >= 0)
	{
		r->idle[r->nidle++] = (uint32_t) r->current;
		r->current = -1;
	}
	if (r->sync)
	{
		/* read the next piece now, into the slot just given back */
		r->window = 1;
		rc = fill_window(r, errbuf, errlen);
		if (rc < 0)
			return r->failed = rc;
		if (r->nready == 0)
			return 0;			/* every piece of ours delivered */
	}
	rc = fill_window(r, errbuf, errlen);
	if (rc < 0)
		return r->failed = rc;

	while (r->nready == 0)
	{
		struct io_uring_cqe *cqe;
		uint64_t	t0;

		if (r->inflight == 0)
			return 0;			/* every piece of ours delivered */

		/*
		 * Nothing completed, or what completed was short: the reads wait for
		 * a device, so read further ahead.
		 */
		if ((waited || io_uring_peek_cqe(&r->ring, &cqe) != 0) && r->window < r->nslots)
		{
			r->window = r->window * 2 < r->nslots ? r->window * 2 : r->nslots;
			rc = fill_window(r, errbuf, errlen);
			if (rc < 0)
				return r->failed = rc;
		}

		waited = true;
		t0 = ap_mono_us();
		rc = io_uring_wait_cqe(&r->ring, &cqe);
		r->wait_us += ap_mono_us() - t0;
		if (rc == -EINTR)
			continue;
		if (rc < 0)
		{
			snprintf(errbuf, errlen, "io_uring wait failed: %s", strerror(-rc));
			return r->failed = rc;
		}
		/* reap this completion and any others already there */
		do
		{
			uint64_t	ud = io_uring_cqe_get_data64(cqe);
			int			res = cqe->res;

			io_uring_cqe_seen(&r->ring, cqe);
			rc = complete_read(r, ud, res, errbuf, errlen);
			if (rc < 0)
				return r->failed = rc;
		} while (io_uring_peek_cqe(&r->ring, &cqe) == 0);

		/* resubmissions of short or retried reads */
		rc = submit_queued(r, errbuf, errlen);
		if (rc < 0)
			return r->failed = rc;
	}

	r->current = (int) r->ready[r->ready_head];
	r->ready_head = (r->ready_head + 1) % r->nslots;
	r->nready--;
	chunk->first_block = r->slots[r->current].first_block;
	chunk->nblocks = r->slots[r->current].nblocks;
	chunk->data = r->slots[r->current].buf;
	chunk->io_us = r->wait_us;
	r->wait_us = 0;
	return 1;
}

/* Bytes of registered buffers one reader may pin (RLIMIT_MEMLOCK share). */
static size_t
memlock_share_bytes(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		return 0;
	if (rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX;
	return (size_t) (rl.rlim_cur / READER_MEMLOCK_SHARE);
}

/* Release everything; waits for submitted reads first.  NULL is fine. */
void
ap_reader_close(ApReader *r)
{
	uint32_t	i;

	if (r == NULL)
		return;
	if (r->ring_ok)
	{
		char		ignore[64];

		/* prepared SQEs must reach the kernel, or their CQEs never come */
		if (submit_queued(r, ignore, sizeof(ignore)) < 0)
			r->inflight -= r->unsubmitted;
		while (r->inflight > 0)
		{
			struct io_uring_cqe *cqe;
			int			rc = io_uring_wait_cqe(&r->ring, &cqe);

			if (rc == -EINTR)
				continue;
			if (rc < 0)
				break;			/* cannot happen; leaking beats freeing live buffers */
			io_uring_cqe_seen(&r->ring, cqe);
			r->inflight--;
		}
		/*
		 * Unregister explicitly: the ring's own teardown is asynchronous and
		 * would keep the pages charged to RLIMIT_MEMLOCK while the next scan
		 * registers its buffers.
		 */
		if (r->registered && r->inflight == 0)
			io_uring_unregister_buffers(&r->ring);
		io_uring_queue_exit(&r->ring);
	}
	if (r->inflight == 0 && r->bufs != NULL)
		bufs_put(r->bufs, r->bufs_bytes);
	free(r->slots);
	free(r->ready);
	free(r->idle);
	if (r->segs != NULL)
	{
		for (i = 0; i < r->nsegs; i++)
		{
			if (r->segs[i].fd_direct >= 0)
				close(r->segs[i].fd_direct);
			if (r->segs[i].fd_buffered >= 0)
				close(r->segs[i].fd_buffered);
		}
	}
	free(r->segs);
	free(r->relpath);
	free(r);
}
