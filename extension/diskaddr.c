/*
 * diskaddr.c
 *	  Where the disks are: the active_pg.disks list ("unix:/path" and
 *	  "tcp:HOST:PORT" items) or the launcher's sockets under the data
 *	  directory.
 *
 * Rules of this file:
 *   - ApParseDiskList never allocates and never throws: the GUC check hook
 *     (guc.c) validates with it, so a value the GUC accepts is one the
 *     client can use.
 *   - Unix socket paths of the list are absolute and fit sun_path; TCP hosts
 *     are IPv4 literals or localhost, ports 1..65535.
 *   - active_pg.disks, when set, replaces the launcher's disks entirely.
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "active_pg.h"
#include "transport.h"

/*
 * Was the launcher registered in this server (library preloaded)?  Then,
 * without active_pg.disks, the disks are the launcher's sockets.  The
 * launcher sets it when it registers; the flag lives here, with the other
 * facts about where the disks are, so that finding a disk never calls into
 * the launcher (which itself connects to the disks).
 */
static bool ap_launcher_registered = false;

void
ApLauncherSetRegistered(void)
{
	ap_launcher_registered = true;
}

bool
ApLauncherRegistered(void)
{
	return ap_launcher_registered;
}

/* Socket path of the launcher's disk i, relative to the data directory. */
void
ApDiskSocketPath(int disk, char *buf, size_t buflen)
{
	snprintf(buf, buflen, "%s/disk%d.sock", AP_SOCKET_DIR, disk);
}

/* Copy [s, s+len) into dst (size dstlen) as a C string; false if it does not fit. */
static bool
ap_copy_token(char *dst, size_t dstlen, const char *s, size_t len)
{
	if (len >= dstlen)
		return false;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return true;
}

/* Parse one "unix:PATH" or "tcp:HOST:PORT" item of length len. */
static bool
ap_parse_one(const char *s, size_t len, ApDiskAddr *a, const char **errmsg)
{
	struct sockaddr_un sun;

	memset(a, 0, sizeof(*a));
	if (len > 5 && strncmp(s, "unix:", 5) == 0)
	{
		a->is_tcp = false;
		/* sun_path holds the name and its terminator */
		if (!ap_copy_token(a->path, Min(sizeof(a->path), sizeof(sun.sun_path)),
						   s + 5, len - 5))
		{
			*errmsg = "A unix socket path is too long.";
			return false;
		}
		if (a->path[0] != '/')
		{
			*errmsg = "A unix socket path must be absolute.";
			return false;
		}
		return true;
	}
	if (len > 4 && strncmp(s, "tcp:", 4) == 0)
	{
		const char *hp = s + 4;
		size_t		hlen = len - 4;
		const char *colon = NULL;
		struct in_addr in;
		long		port = 0;
		size_t		i;

		for (i = 0; i < hlen; i++)
			if (hp[i] == ':')
				colon = hp + i;
		if (colon == NULL || colon == hp || colon == hp + hlen - 1)
		{
			*errmsg = "A tcp address must have the form tcp:HOST:PORT.";
			return false;
		}
		a->is_tcp = true;
		if (!ap_copy_token(a->host, sizeof(a->host), hp, colon - hp))
		{
			*errmsg = "A tcp host name is too long.";
			return false;
		}
		if (strcmp(a->host, "localhost") != 0 && inet_pton(AF_INET, a->host, &in) != 1)
		{
			*errmsg = "A tcp host must be an IPv4 address or localhost.";
			return false;
		}
		for (i = colon - hp + 1; i < hlen; i++)
		{
			if (hp[i] < '0' || hp[i] > '9' || port > 65535)
			{
				*errmsg = "A tcp port must be a number between 1 and 65535.";
				return false;
			}
			port = port * 10 + (hp[i] - '0');
		}
		if (port < 1 || port > 65535)
		{
			*errmsg = "A tcp port must be a number between 1 and 65535.";
			return false;
		}
		a->port = (int) port;
		return true;
	}
	*errmsg = "Each disk must start with unix: or tcp:.";
	return false;
}

/* Parse an active_pg.disks value (see transport.h); no allocation, no throw. */
int
ApParseDiskList(const char *value, ApDiskAddr *out, const char **errmsg)
{
	const char *p = value;
	int			n = 0;

	while (*p != '\0')
	{
		const char *start;
		const char *end;
		ApDiskAddr	tmp;

		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (*p == '\0')
			break;
		start = p;
		while (*p != '\0' && *p != ',')
			p++;
		end = p;
		while (end > start && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n'))
			end--;
		if (end == start)
		{
			*errmsg = "The list contains an empty entry.";
			return -1;
		}
		if (n >= AP_NDISKS_MAX)
		{
			*errmsg = "The list names more disks than active_pg supports (64).";
			return -1;
		}
		if (!ap_parse_one(start, end - start, out ? &out[n] : &tmp, errmsg))
			return -1;
		n++;
		if (*p == ',')
		{
			p++;
			if (*p == '\0')
			{
				*errmsg = "The list ends with a comma.";
				return -1;
			}
		}
	}
	return n;
}

/*
 * Human-readable address, palloc'd.  The launcher's sockets are relative to
 * the data directory (a backend's working directory) and are shown so:
 * unix:$PGDATA/active_pg/disk0.sock.
 */
char *
ApDiskAddrString(const ApDiskAddr *addr)
{
	if (addr->is_tcp)
		return psprintf("tcp:%s:%d", addr->host, addr->port);
	if (addr->path[0] != '/')
		return psprintf("unix:$PGDATA/%s", addr->path);
	return psprintf("unix:%s", addr->path);
}

/* Is there any disk this backend could use? */
bool
ApDisksConfigured(void)
{
	if (active_pg_disks != NULL && active_pg_disks[0] != '\0')
		return true;
	return ApLauncherRegistered();
}

/*
 * Number of disks a scan would use now: active_pg.disks's entries if set,
 * else the launcher's disks, else 0.  Contacts none and allocates nothing:
 * the planner asks for every relation it costs (a new session's first plan
 * paid 15 page faults, 0.05 ms, when this built the address array).
 */
int
ApConfiguredDiskCount(void)
{
	if (active_pg_disks != NULL && active_pg_disks[0] != '\0')
	{
		const char *errmsg = NULL;
		int			n = ApParseDiskList(active_pg_disks, NULL, &errmsg);

		/* the check hook accepted the value, so this cannot fail */
		if (n < 0)
			elog(ERROR, "invalid active_pg.disks: %s", errmsg);
		return n;
	}
	return ApLauncherRegistered() ? active_pg_ndisks : 0;
}

/*
 * The disks of this backend, as ApConfiguredDiskCount counts them: *out is
 * a palloc'd array of that many addresses (at least one entry).
 */
int
ApGetDiskAddrs(ApDiskAddr **out)
{
	int			n = ApConfiguredDiskCount();
	ApDiskAddr *addrs = palloc0(sizeof(ApDiskAddr) * Max(n, 1));

	if (n > 0 && active_pg_disks != NULL && active_pg_disks[0] != '\0')
	{
		const char *errmsg = NULL;

		if (ApParseDiskList(active_pg_disks, addrs, &errmsg) != n)
			elog(ERROR, "invalid active_pg.disks: %s", errmsg ? errmsg : "changed while read");
	}
	else
	{
		for (int i = 0; i < n; i++)
			ApDiskSocketPath(i, addrs[i].path, sizeof(addrs[i].path));
	}
	*out = addrs;
	return n;
}
