/*
 * datadir.c
 *	  Is this a data directory whose pages diskd can read?
 *
 * diskd decodes heap pages itself, with its own copy of PostgreSQL's page,
 * tuple and visibility facts (diskd.h), which hold for the majors
 * AP_PG_MAJOR_MIN..AP_PG_MAJOR_MAX.  Before it listens it checks:
 *   - PG_VERSION names one of those majors, and the one the launching server
 *     runs when it said so (--pg-version; the launcher passes its own);
 *   - global/pg_control is of that major (pg_control_version) and the
 *     cluster's blocks and segment files have the sizes diskd reads
 *     (blcksz, relseg_size): a server built with other sizes would have
 *     diskd read wrong offsets of every file.
 * The host checks its side at build time (extension/active_pg.c) and sends
 * its version in Hello, which conn.c compares with PG_VERSION.
 *
 * pg_control's layout changes between majors, but its first fields do not
 * (system identifier, then pg_control_version), and the fields that
 * describe the build follow the double floatFormat, which always holds
 * FLOATFORMAT_VALUE (1234567.0): maxAlign is before it, blcksz and
 * relseg_size right after it.  Files are read in host byte order, as
 * PostgreSQL writes them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diskd.h"

#define AP_PG_CONTROL_BYTES		512 /* ControlFileData fits (about 300) */
#define AP_PG_CONTROL_VERSION_OFF 8 /* after uint64 system_identifier */
#define AP_FLOATFORMAT_VALUE	1234567.0

/* pg_control_version of each supported major (catalog/pg_control.h). */
static uint32_t
ap_pg_control_version(uint32_t major)
{
	switch (major)
	{
		case 15:
		case 16:
			return 1300;
		case 17:
			return 1700;
		case 18:
			return 1800;
		default:
			return 0;
	}
}

/* Read up to len bytes of dir/name; bytes read, or -errno. */
static ssize_t
read_file(const char *dir, const char *name, unsigned char *buf, size_t len)
{
	char		path[4096];
	int			fd;
	ssize_t		n;
	size_t		got = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY)) < 0)
		return -errno;
	while (got < len && (n = read(fd, buf + got, len - got)) != 0)
	{
		if (n < 0)
		{
			int			err = errno;

			if (err == EINTR)
				continue;
			close(fd);
			return -err;
		}
		got += (size_t) n;
	}
	close(fd);
	return (ssize_t) got;
}

bool
ap_check_data_directory(const char *dir, uint32_t expect_major, uint32_t *major,
						char *msg, size_t msglen)
{
	unsigned char buf[AP_PG_CONTROL_BYTES];
	char		version[16];
	char	   *end;
	ssize_t		n;
	unsigned long v;
	uint32_t	ctl_version;
	uint32_t	blcksz = 0;
	uint32_t	relseg = 0;
	bool		found = false;

	n = read_file(dir, "PG_VERSION", buf, sizeof(version) - 1);
	if (n < 0)
	{
		snprintf(msg, msglen, "\"%s\" is not a PostgreSQL data directory: PG_VERSION: %s",
				 dir, strerror((int) -n));
		return false;
	}
	memcpy(version, buf, (size_t) n);
	version[n] = '\0';
	errno = 0;
	v = strtoul(version, &end, 10);
	if (errno != 0 || end == version || (*end != '\n' && *end != '\0') || v > 1000)
	{
		snprintf(msg, msglen, "\"%s\" is not a PostgreSQL data directory: PG_VERSION holds no major version",
				 dir);
		return false;
	}
	*major = (uint32_t) v;
	if (*major < AP_PG_MAJOR_MIN || *major > AP_PG_MAJOR_MAX)
	{
		snprintf(msg, msglen, "data directory \"%s\" is of PostgreSQL %u; this diskd reads the pages of PostgreSQL %d to %d",
				 dir, *major, AP_PG_MAJOR_MIN, AP_PG_MAJOR_MAX);
		return false;
	}
	if (expect_major != 0 && *major != expect_major)
	{
		snprintf(msg, msglen, "data directory \"%s\" is of PostgreSQL %u, but the server is PostgreSQL %u (--pg-version)",
				 dir, *major, expect_major);
		return false;
	}

	n = read_file(dir, "global/pg_control", buf, sizeof(buf));
	if (n < 0)
	{
		snprintf(msg, msglen, "could not read \"%s/global/pg_control\": %s", dir, strerror((int) -n));
		return false;
	}
	if (n < (ssize_t) (AP_PG_CONTROL_VERSION_OFF + sizeof(uint32_t)))
	{
		snprintf(msg, msglen, "\"%s/global/pg_control\" is too short (%zd bytes)", dir, n);
		return false;
	}
	memcpy(&ctl_version, buf + AP_PG_CONTROL_VERSION_OFF, sizeof(ctl_version));
	if (ctl_version != ap_pg_control_version(*major))
	{
		snprintf(msg, msglen, "data directory \"%s\": pg_control version %u is not PostgreSQL %u's (%u)",
				 dir, ctl_version, *major, ap_pg_control_version(*major));
		return false;
	}
	for (size_t off = 8; off + 16 <= (size_t) n; off += 8)
	{
		double		f;

		memcpy(&f, buf + off, sizeof(f));
		if (f == AP_FLOATFORMAT_VALUE)
		{
			memcpy(&blcksz, buf + off + 8, sizeof(blcksz));
			memcpy(&relseg, buf + off + 12, sizeof(relseg));
			found = true;
			break;
		}
	}
	if (!found)
	{
		snprintf(msg, msglen, "data directory \"%s\": pg_control has no float format check value (another platform's cluster?)",
				 dir);
		return false;
	}
	if (blcksz != AP_BLCKSZ || relseg != AP_RELSEG_BLOCKS)
	{
		snprintf(msg, msglen, "data directory \"%s\" has %u-byte blocks in segments of %u blocks; this diskd reads %d-byte blocks in segments of %d blocks",
				 dir, blcksz, relseg, AP_BLCKSZ, AP_RELSEG_BLOCKS);
		return false;
	}
	return true;
}
