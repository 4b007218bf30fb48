/*
 * reader.c
 *	  Unit tests of the io_uring reader (ioring.c) on real files: every block
 *	  of a disk's stripe units delivered exactly once, with its own bytes,
 *	  over geometries of table size, disks, stripe unit and queue depth, read
 *	  buffered and with O_DIRECT (which falls back to buffered reads where
 *	  the filesystem refuses it).  Built twice: as test/reader with
 *	  PostgreSQL's 1 GB segment files, and as test/reader_seg with segments
 *	  of 16 blocks, so that relations of many segment files, and stripe units
 *	  that straddle two of them, are read as well.  The read-ahead window starts at 2 units
 *	  and grows to the queue depth, so the depths 1, 2, 3 and 32 cover a
 *	  window that never grows, one that is full from the start, and growth.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskd.h"
#include "testutil.h"

int			diskd_disk_id = 0;

/* Logging of the code under test (the O_DIRECT fallback) is not checked. */
void
diskd_log(const char *level, const char *fmt,...)
{
	(void) level;
	(void) fmt;
}

/* Byte i of block b: the block number in its first 4 bytes, then a pattern. */
static unsigned char
block_byte(uint32_t b, uint32_t i)
{
	if (i < 4)
		return (unsigned char) (b >> (8 * i));
	return (unsigned char) (b * 31 + i * 7);
}

/* The file of segment seg of the relation at path, as the reader names it. */
static void
segment_path(const char *path, uint32_t seg, char *buf, size_t buflen)
{
	if (seg == 0)
		snprintf(buf, buflen, "%s", path);
	else
		snprintf(buf, buflen, "%s.%u", path, seg);
}

/* The most segment files a case writes (1100 blocks in segments of 16: 69). */
#define READER_TEST_MAX_SEGMENTS	80

/* Remove every segment file of the relation at path (some may be missing). */
static void
remove_relation(const char *path)
{
	char		seg_file[128];

	for (uint32_t seg = 0; seg < READER_TEST_MAX_SEGMENTS; seg++)
	{
		segment_path(path, seg, seg_file, sizeof(seg_file));
		unlink(seg_file);
	}
}

/*
 * Write a relation of nblocks blocks at path, in segment files of
 * AP_RELSEG_BLOCKS blocks as PostgreSQL lays them out.
 */
static bool
write_relation(const char *path, uint32_t nblocks)
{
	unsigned char page[AP_BLCKSZ];
	char		seg_file[128];
	int			fd = -1;

	remove_relation(path);
	for (uint32_t b = 0; b < nblocks || b == 0; b++)
	{
		if (b % AP_RELSEG_BLOCKS == 0)
		{
			if (fd >= 0 && close(fd) != 0)
				return false;
			segment_path(path, b / AP_RELSEG_BLOCKS, seg_file, sizeof(seg_file));
			fd = open(seg_file, O_CREAT | O_TRUNC | O_WRONLY, 0600);
			if (fd < 0)
				return false;
		}
		if (b == nblocks)
			break;
		for (uint32_t i = 0; i < AP_BLCKSZ; i++)
			page[i] = block_byte(b, i);
		if (write(fd, page, AP_BLCKSZ) != AP_BLCKSZ)
		{
			close(fd);
			return false;
		}
	}
	return close(fd) == 0;
}

/* Does the chunk's block b hold what write_relation wrote? */
static bool
block_ok(const unsigned char *data, uint32_t b)
{
	for (uint32_t i = 0; i < AP_BLCKSZ; i++)
		if (data[i] != block_byte(b, i))
			return false;
	return true;
}

/*
 * Read the relation as each of ndisks disks would; every block must come
 * exactly once, from the disk owning its unit, intact.
 */
static void
check_geometry(const char *path, uint32_t nblocks, uint32_t ndisks, uint32_t stripe,
			   uint32_t depth, bool direct)
{
	uint8_t    *seen = calloc(nblocks + 1, 1);
	bool		intact = true;
	bool		owned = true;
	bool		shaped = true;

	CHECK(seen != NULL);
	if (seen == NULL)
		return;
	for (uint32_t d = 0; d < ndisks; d++)
	{
		char		errbuf[256];
		int			err;
		ApReader   *r = ap_reader_open(path, nblocks, ndisks, stripe, d, depth, direct,
									   &err, errbuf, sizeof(errbuf));
		ApChunk		chunk;
		uint64_t	nchunks = 0;
		uint32_t	piece = ap_reader_piece_blocks(stripe);
		int			rc;

		CHECK(r != NULL);
		if (r == NULL)
		{
			fprintf(stderr, "open: %s\n", errbuf);
			continue;
		}
		while ((rc = ap_reader_next(r, &chunk, errbuf, sizeof(errbuf))) == 1)
		{
			/* a unit, or a piece of at most 1 MB of a larger one */
			uint32_t	unit = chunk.first_block / stripe;
			uint64_t	unit_end = (uint64_t) (unit + 1) * stripe;
			uint64_t	end = unit_end < nblocks ? unit_end : nblocks;
			uint64_t	want = end - chunk.first_block < piece ? end - chunk.first_block : piece;

			nchunks++;
			if ((chunk.first_block - (uint64_t) unit * stripe) % piece != 0 || chunk.nblocks != want)
				shaped = false;
			if (unit % ndisks != d)
				owned = false;
			for (uint32_t i = 0; i < chunk.nblocks && chunk.first_block + i < nblocks; i++)
			{
				seen[chunk.first_block + i]++;
				if (!block_ok(chunk.data + (size_t) i * AP_BLCKSZ, chunk.first_block + i))
					intact = false;
			}
		}
		CHECK_EQ(rc, 0);
		if (rc < 0)
			fprintf(stderr, "next: %s\n", errbuf);
		/* the count the daemon sizes its buffers and memory budget by */
		CHECK_EQ(nchunks, ap_reader_pieces(nblocks, ndisks, stripe, d));
		ap_reader_close(r);
	}
	for (uint32_t b = 0; b < nblocks; b++)
	{
		if (seen[b] != 1)
		{
			fprintf(stderr, "block %u delivered %u times (nblocks %u, disks %u, stripe %u, depth %u, direct %d)\n",
					b, seen[b], nblocks, ndisks, stripe, depth, direct);
			CHECK(seen[b] == 1);
			break;
		}
	}
	CHECK(intact);
	CHECK(owned);
	CHECK(shaped);
	free(seen);
}

/* Every geometry and failure case, with the readers' current mode. */
static int
run_all(const char *dir, const char *path)
{
	static const uint32_t sizes[] = {1, 5, 37, 300, 1100};
	static const uint32_t disks[] = {1, 3, 4};
	/*
	 * 5 straddles segment boundaries of 16 blocks; a unit is at most a
	 * segment; 200 and 512 are read in pieces of 128 blocks (ioring.c)
	 */
	static const uint32_t stripes[] = {1, 4, 5, AP_RELSEG_BLOCKS < 32 ? AP_RELSEG_BLOCKS : 32,
	AP_RELSEG_BLOCKS < 200 ? AP_RELSEG_BLOCKS : 200, AP_RELSEG_BLOCKS < 512 ? AP_RELSEG_BLOCKS : 512};
	static const uint32_t depths[] = {1, 2, 3, 32};
	int			cases = 0;

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
	{
		CHECK(write_relation(path, sizes[s]));
		for (size_t d = 0; d < sizeof(disks) / sizeof(disks[0]); d++)
			for (size_t u = 0; u < sizeof(stripes) / sizeof(stripes[0]); u++)
				for (size_t q = 0; q < sizeof(depths) / sizeof(depths[0]); q++)
					for (int direct = 0; direct <= 1; direct++)
					{
						check_geometry(path, sizes[s], disks[d], stripes[u], depths[q], direct);
						cases++;
					}
	}

	/* a relation shorter than the host says: the read fails, naming the file */
	{
		char		errbuf[256];
		int			err;
		ApReader   *r;
		ApChunk		chunk;
		int			rc;

		CHECK(write_relation(path, 3));
		r = ap_reader_open(path, 10, 1, 4, 0, 2, false, &err, errbuf, sizeof(errbuf));
		CHECK(r != NULL);
		if (r != NULL)
		{
			while ((rc = ap_reader_next(r, &chunk, errbuf, sizeof(errbuf))) == 1)
				;
			CHECK(rc < 0);
			CHECK(strstr(errbuf, "ends before block") != NULL);
			ap_reader_close(r);
		}
	}
	/* no such relation */
	{
		char		errbuf[256];
		int			err = 0;
		char		missing[80];

		snprintf(missing, sizeof(missing), "%s/99999", dir);
		CHECK(ap_reader_open(missing, 4, 1, 4, 0, 2, false, &err, errbuf, sizeof(errbuf)) == NULL);
		CHECK_EQ(err, AP_ERR_NO_RELATION);
	}

	/* a segment file missing inside the relation: the read fails, naming it */
	if (AP_RELSEG_BLOCKS < 100)
	{
		char		errbuf[256];
		char		second[128];
		int			err;
		ApReader   *r;
		ApChunk		chunk;
		int			rc;

		CHECK(write_relation(path, 3 * AP_RELSEG_BLOCKS));
		segment_path(path, 1, second, sizeof(second));
		CHECK(unlink(second) == 0);
		r = ap_reader_open(path, 3 * AP_RELSEG_BLOCKS, 1, 4, 0, 2, false, &err, errbuf, sizeof(errbuf));
		CHECK(r != NULL);
		if (r != NULL)
		{
			while ((rc = ap_reader_next(r, &chunk, errbuf, sizeof(errbuf))) == 1)
				;
			CHECK(rc < 0);
			CHECK(strstr(errbuf, second) != NULL);
			ap_reader_close(r);
		}
	}

	return cases;
}

int
main(void)
{
	char		dir[] = "/tmp/diskd-reader-XXXXXX";
	char		path[64];
	int			cases;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/16384", dir);
	cases = run_all(dir, path);
	printf("reader: %d geometries, segments of %u blocks, io_uring\n",
		   cases, (unsigned) AP_RELSEG_BLOCKS);

	/* again as where io_uring is not permitted: pread, one piece at a time */
	ap_reader_init(true);
	cases = run_all(dir, path);
	printf("reader: %d geometries, segments of %u blocks, pread\n",
		   cases, (unsigned) AP_RELSEG_BLOCKS);

	remove_relation(path);
	rmdir(dir);
	return TEST_DONE();
}
