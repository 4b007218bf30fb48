/*
 * main.c
 *	  diskd entry point: flags, signals, the listening socket, accept loop.
 *
 * Rules of this file:
 *   - Configuration is validated once here, before the socket is opened; a
 *     bad flag, or a data directory of a PostgreSQL major or storage layout
 *     whose pages this daemon does not decode (datadir.c), is FATAL (exit 1).
 *     Nothing a client sends can make the daemon exit.
 *   - Every connection runs in its own detached thread (conn.c); at most
 *     --max-connections run at once, a connection over the limit gets
 *     Error AP_ERR_BUSY and is closed by the accept loop itself.
 *   - SIGTERM/SIGINT are blocked in every thread and only delivered inside
 *     the accept loop's ppoll(), so the handler never interrupts a scan; on
 *     either the daemon stops accepting and exits 0 at once (in-flight scans
 *     are abandoned: the host sees the connection drop).
 *   - TCP binds to loopback only unless --listen-any: the daemon reads every
 *     relation of the cluster and must not be reachable from elsewhere by
 *     accident.  A TCP daemon without a secret is allowed but warned about.
 *   - The secret comes from --secret-file (mode 0600) or ACTIVE_PG_DISK_SECRET,
 *     never the command line, and never crosses the wire: both sides prove
 *     they know it (conn.c, proto/ap_auth.c).
 */
#define _GNU_SOURCE				/* ppoll, accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "diskd.h"

/* Flag limits: every knob has a default and bounds. */
#define DISKD_MEMORY_MB_DEFAULT		64
#define DISKD_MEMORY_MB_MAX			65536
#define DISKD_QUEUE_DEPTH_DEFAULT	32
#define DISKD_MAX_CONN_DEFAULT		64
#define DISKD_MAX_CONN_MAX			AP_DISKD_MAX_CONNECTIONS
#define DISKD_LISTEN_BACKLOG		128
#define DISKD_MEDIA_MBPS_MAX		100000
#define DISKD_CPU_RATIO_MIN			0.01

static volatile sig_atomic_t diskd_stop_signal = 0;
static atomic_uint diskd_nconns = 0;

/* Where we listen; socket_path is unlinked again at exit. */
static const char *listen_socket_path = NULL;
static const char *listen_tcp = NULL;
static bool listen_any = false;

/* Print usage to stdout. */
static void
usage(void)
{
	printf("active_pg_diskd: the active_pg disk daemon\n\n"
		   "Usage:\n"
		   "  active_pg_diskd -D DATADIR (--socket PATH | --listen 127.0.0.1:PORT) [options]\n\n"
		   "Options:\n"
		   "  -D, --data-dir DIR       PostgreSQL data directory (required)\n"
		   "      --socket PATH        listen on a Unix socket (relative to DIR allowed)\n"
		   "      --listen HOST:PORT   listen on TCP (loopback only unless --listen-any)\n"
		   "      --listen-any         allow a non-loopback TCP address\n"
		   "      --disk-id N          this disk's id (default 0)\n"
		   "      --queue-depth N      reads in flight per scan (default %d, %d..%d)\n"
		   "      --memory-mb N        memory budget per scan in MB (default %d)\n"
		   "      --max-connections N  concurrent connections (default %d)\n"
		   "      --secret-file PATH   the shared secret (first line; the file must not be\n"
		   "                           readable by group or others); default:\n"
		   "                           $ACTIVE_PG_DISK_SECRET.  Clients prove they know it\n"
		   "                           and so does the daemon; it never crosses the wire\n"
		   "      --buffered           default to buffered reads instead of O_DIRECT\n"
		   "      --pg-version N       refuse a data directory of another PostgreSQL major\n"
		   "                           (the launcher passes its server's); any data\n"
		   "                           directory must be of PostgreSQL %d to %d\n"
		   "      --no-io-uring        read with pread, as where io_uring is not permitted\n"
		   "                           (also ACTIVE_PG_DISKD_NO_IO_URING=1)\n"
		   "  -h, --help               show this help\n\n"
		   "Emulation (all off by default: the machine runs at full speed):\n"
		   "      --media-mbps N       media rate: deliver at most N MB/s (1 MB = 2^20 bytes)\n"
		   "                           of read data, averaged, shared by all scans of this\n"
		   "                           daemon (0 = off, at most %d)\n"
		   "      --cpu-ratio R        disk CPU speed relative to the host, %.2f..1: each\n"
		   "                           chunk's CPU time c is stretched to c / R (0 or 1 = off;\n"
		   "                           e.g. 0.27 for 133 MHz disks on a 500 MHz host)\n"
		   "      --memory-mb N        (above) also caps aggregation tables and Bloom filters\n"
		   "      --emulated-disks N   how many disks are emulated on this machine (default 1),\n"
		   "                           for the faithfulness check below\n\n"
		   "The CPU emulation is faithful only while the machine's real CPU is not the\n"
		   "bottleneck: every emulated disk keeps a core busy R of its time when it is\n"
		   "CPU-bound, and the host needs a core of its own, so N disks x R + 1 must not\n"
		   "exceed the cores this process may run on.  Otherwise the disks also wait for\n"
		   "each other and run slower than R; diskd logs a WARNING at start.\n",
		   DISKD_QUEUE_DEPTH_DEFAULT, AP_QUEUE_DEPTH_MIN, AP_QUEUE_DEPTH_MAX,
		   DISKD_MEMORY_MB_DEFAULT, DISKD_MAX_CONN_DEFAULT,
		   AP_PG_MAJOR_MIN, AP_PG_MAJOR_MAX,
		   DISKD_MEDIA_MBPS_MAX, DISKD_CPU_RATIO_MIN);
}

/* Parse an unsigned flag value within [min, max]; FATAL on anything else. */
static uint64_t
parse_uint_flag(const char *name, const char *value, uint64_t min, uint64_t max)
{
	char	   *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || value[0] == '-' ||
		v < min || v > max)
	{
		diskd_log("FATAL", "invalid value \"%s\" for --%s: expected an integer in %llu..%llu",
				  value, name, (unsigned long long) min, (unsigned long long) max);
		exit(1);
	}
	return v;
}

/* Parse --cpu-ratio: 0 (off) or a number in [DISKD_CPU_RATIO_MIN, 1]; FATAL otherwise. */
static double
parse_ratio_flag(const char *name, const char *value)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(value, &end);
	if (errno != 0 || end == value || *end != '\0' ||
		!(v == 0.0 || (v >= DISKD_CPU_RATIO_MIN && v <= 1.0)))
	{
		diskd_log("FATAL", "invalid value \"%s\" for --%s: expected 0 or a number in %.2f..1",
				  value, name, DISKD_CPU_RATIO_MIN);
		exit(1);
	}
	return v;
}

/*
 * Warn when the CPU emulation cannot be faithful: a CPU-bound emulated disk
 * keeps a core busy ratio of its time (its work c is stretched to c / ratio,
 * and only c runs), and the host backend needs a whole core, so ndisks *
 * ratio + 1 cores must be available.  With fewer, the disks queue for the
 * real CPU and run slower than the ratio says, and measurements drift from
 * the model.
 */
static void
check_cpu_faithful(uint32_t ndisks)
{
	cpu_set_t	set;
	int			cores;
	double		need;

	if (!ap_cpu_throttle_on())
		return;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cores = CPU_COUNT(&set);
	else
		cores = (int) sysconf(_SC_NPROCESSORS_ONLN);
	need = ndisks * diskd_config.cpu_ratio + 1.0;
	if (cores > 0 && need > (double) cores)
		diskd_log("WARNING", "the CPU emulation is not faithful: %u emulated disks x cpu ratio %.2f + 1 host core need %.1f cores, this machine has %d",
				  ndisks, diskd_config.cpu_ratio, need, cores);
}

/* Signal handler: only records the request; the accept loop acts on it. */
static void
handle_stop_signal(int signo)
{
	diskd_stop_signal = signo;
}

/* Create, bind and listen on the Unix socket; -errno on failure. */
static int
listen_unix(const char *path)
{
	struct sockaddr_un addr;
	struct stat st;
	int			fd;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	/* A stale socket from a crashed daemon would make bind() fail. */
	if (lstat(path, &st) == 0)
	{
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (unlink(path) != 0)
			return -errno;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	strcpy(addr.sun_path, path);
	if (bind(fd, (struct sockaddr *) &addr, sizeof(addr)) != 0 ||
		listen(fd, DISKD_LISTEN_BACKLOG) != 0)
	{
		int			err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* True if the address is a loopback address. */
static bool
is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
	{
		const struct sockaddr_in *in = (const struct sockaddr_in *) sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6)
	{
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;

		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return false;
}

/* Create, bind and listen on HOST:PORT (IPv6 as [addr]:port); -errno on failure. */
static int
listen_tcp_addr(const char *spec, bool any)
{
	char		host[256];
	const char *colon;
	const char *port;
	size_t		hostlen;
	struct addrinfo hints;
	struct addrinfo *res = NULL;
	int			fd = -1;
	int			one = 1;
	int			rc;

	colon = strrchr(spec, ':');
	if (colon == NULL || colon == spec || colon[1] == '\0')
		return -EINVAL;
	port = colon + 1;
	hostlen = colon - spec;
	if (spec[0] == '[' && hostlen >= 2 && spec[hostlen - 1] == ']')
	{
		spec++;
		hostlen -= 2;
	}
	if (hostlen >= sizeof(host))
		return -ENAMETOOLONG;
	memcpy(host, spec, hostlen);
	host[hostlen] = '\0';

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
	{
		diskd_log("FATAL", "cannot resolve --listen address \"%s\": %s", spec, gai_strerror(rc));
		exit(1);
	}
	if (!any && !is_loopback(res->ai_addr))
	{
		freeaddrinfo(res);
		diskd_log("FATAL", "--listen address \"%s\" is not a loopback address (use --listen-any to allow it)",
				  host);
		exit(1);
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
	{
		rc = -errno;
		freeaddrinfo(res);
		return rc;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 ||
		listen(fd, DISKD_LISTEN_BACKLOG) != 0)
	{
		rc = -errno;
		close(fd);
		freeaddrinfo(res);
		return rc;
	}
	freeaddrinfo(res);
	return fd;
}

/* Thread body: serve one connection, then give its slot back. */
static void *
conn_thread(void *arg)
{
	int			fd = (int) (intptr_t) arg;

	ap_session_serve(fd);
	atomic_fetch_sub(&diskd_nconns, 1);
	return NULL;
}

/* Hand an accepted socket to a new detached thread, or refuse it when busy. */
static void
dispatch_connection(int fd, bool tcp)
{
	pthread_attr_t attr;
	pthread_t	tid;
	int			one = 1;
	int			rc;

	if (tcp)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	if (atomic_fetch_add(&diskd_nconns, 1) >= diskd_config.max_connections)
	{
		atomic_fetch_sub(&diskd_nconns, 1);
		diskd_log("WARNING", "connection refused: %u connections already open",
				  diskd_config.max_connections);
		ap_conn_reject(fd, AP_ERR_BUSY, "too many connections to this disk daemon");
		close(fd);
		return;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&tid, &attr, conn_thread, (void *) (intptr_t) fd);
	pthread_attr_destroy(&attr);
	if (rc != 0)
	{
		atomic_fetch_sub(&diskd_nconns, 1);
		diskd_log("WARNING", "could not start a connection thread: %s", strerror(rc));
		ap_conn_reject(fd, AP_ERR_BUSY, "disk daemon could not start a connection thread");
		close(fd);
	}
}

/* Accept until a stop signal arrives; signals are unblocked only inside ppoll. */
static void
accept_loop(int lfd, bool tcp, const sigset_t *waitmask)
{
	struct pollfd pfd = {.fd = lfd,.events = POLLIN};

	while (!diskd_stop_signal)
	{
		int			fd;
		int			rc;

		rc = ppoll(&pfd, 1, NULL, waitmask);
		if (rc < 0)
		{
			if (errno == EINTR)
				continue;
			diskd_log("FATAL", "poll on the listening socket failed: %s", strerror(errno));
			exit(1);
		}
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
		{
			/* transient: the peer went away, or we are out of descriptors */
			if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
			{
				diskd_log("WARNING", "accept failed: %s", strerror(errno));
				if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
					usleep(100 * 1000);
			}
			continue;
		}
		dispatch_connection(fd, tcp);
	}
}

/* Parse flags, check the data directory, listen, and serve until signaled. */
/*
 * The secret from the first line of path; NULL (after a FATAL line) if the
 * file cannot be read, is not a regular file, may be read by group or
 * others, or holds no secret.
 */
static char *
read_secret_file(const char *path)
{
	char		buf[1024];
	struct stat st;
	ssize_t		n;
	char	   *nl;
	int			fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
	{
		diskd_log("FATAL", "could not open secret file \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
	{
		diskd_log("FATAL", "secret file \"%s\" is not a regular file", path);
		close(fd);
		return NULL;
	}
	if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
	{
		diskd_log("FATAL", "secret file \"%s\" has group or other permissions (mode %04o); use chmod 0600",
				  path, (unsigned) (st.st_mode & 07777));
		close(fd);
		return NULL;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
	{
		diskd_log("FATAL", "could not read secret file \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	buf[n] = '\0';
	if ((nl = strpbrk(buf, "\r\n")) != NULL)
		*nl = '\0';
	if (buf[0] == '\0')
	{
		diskd_log("FATAL", "secret file \"%s\" holds no secret on its first line", path);
		return NULL;
	}
	return strdup(buf);
}

/* What the command line asks for beyond diskd_config. */
typedef struct DiskdStartup
{
	uint32_t	emulated_disks; /* --emulated-disks: disks sharing the machine */
	uint32_t	expect_major;	/* --pg-version, 0 if not given */
	bool		no_io_uring;	/* --no-io-uring */
	char	   *secret_file;	/* the secret read from --secret-file */
} DiskdStartup;

/*
 * The command line into diskd_config and *st (and the secret from the
 * environment when no file gives one): -1 to go on, else the exit code.
 */
static int
parse_flags(int argc, char **argv, DiskdStartup *st)
{
	static const struct option options[] = {
		{"data-dir", required_argument, NULL, 'D'},
		{"socket", required_argument, NULL, 's'},
		{"listen", required_argument, NULL, 'l'},
		{"listen-any", no_argument, NULL, 'A'},
		{"disk-id", required_argument, NULL, 'i'},
		{"queue-depth", required_argument, NULL, 'q'},
		{"memory-mb", required_argument, NULL, 'm'},
		{"max-connections", required_argument, NULL, 'c'},
		{"secret", required_argument, NULL, 'S'},
		{"secret-file", required_argument, NULL, 'F'},
		{"buffered", no_argument, NULL, 'b'},
		{"no-io-uring", no_argument, NULL, 'U'},
		{"media-mbps", required_argument, NULL, 'M'},
		{"cpu-ratio", required_argument, NULL, 'R'},
		{"emulated-disks", required_argument, NULL, 'N'},
		{"pg-version", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	int			opt;

	diskd_config.data_dir = NULL;
	diskd_config.disk_id = 0;
	diskd_config.queue_depth = DISKD_QUEUE_DEPTH_DEFAULT;
	diskd_config.memory_bytes = (uint64_t) DISKD_MEMORY_MB_DEFAULT << 20;
	diskd_config.max_connections = DISKD_MAX_CONN_DEFAULT;
	diskd_config.secret = NULL;
	diskd_config.direct_io_default = true;
	diskd_config.media_mbps = 0;
	diskd_config.cpu_ratio = 0.0;
	memset(st, 0, sizeof(*st));
	st->emulated_disks = 1;

	while ((opt = getopt_long(argc, argv, "D:h", options, NULL)) != -1)
	{
		switch (opt)
		{
			case 'D':
				diskd_config.data_dir = optarg;
				break;
			case 's':
				listen_socket_path = optarg;
				break;
			case 'l':
				listen_tcp = optarg;
				break;
			case 'A':
				listen_any = true;
				break;
			case 'i':
				diskd_config.disk_id = parse_uint_flag("disk-id", optarg, 0, AP_NDISKS_MAX - 1);
				diskd_disk_id = (int) diskd_config.disk_id;
				break;
			case 'q':
				diskd_config.queue_depth = parse_uint_flag("queue-depth", optarg,
														   AP_QUEUE_DEPTH_MIN, AP_QUEUE_DEPTH_MAX);
				break;
			case 'm':
				diskd_config.memory_bytes =
					parse_uint_flag("memory-mb", optarg, 1, DISKD_MEMORY_MB_MAX) << 20;
				break;
			case 'c':
				diskd_config.max_connections = parse_uint_flag("max-connections", optarg,
															   1, DISKD_MAX_CONN_MAX);
				break;
			case 'S':
				diskd_log("FATAL", "--secret is not accepted: a command line is visible to every local user; "
						  "use --secret-file PATH (mode 0600) or ACTIVE_PG_DISK_SECRET");
				return 2;
			case 'F':
				if ((st->secret_file = read_secret_file(optarg)) == NULL)
					return 2;
				diskd_config.secret = st->secret_file;
				break;
			case 'b':
				diskd_config.direct_io_default = false;
				break;
			case 'U':
				st->no_io_uring = true;
				break;
			case 'M':
				diskd_config.media_mbps = parse_uint_flag("media-mbps", optarg,
														  0, DISKD_MEDIA_MBPS_MAX);
				break;
			case 'R':
				diskd_config.cpu_ratio = parse_ratio_flag("cpu-ratio", optarg);
				break;
			case 'N':
				st->emulated_disks = parse_uint_flag("emulated-disks", optarg, 1, AP_NDISKS_MAX);
				break;
			case 'P':
				st->expect_major = parse_uint_flag("pg-version", optarg, AP_PG_MAJOR_MIN, AP_PG_MAJOR_MAX);
				break;
			case 'h':
				usage();
				return 0;
			default:
				fprintf(stderr, "Try \"active_pg_diskd --help\" for more information.\n");
				return 1;
		}
	}
	if (optind < argc)
	{
		diskd_log("FATAL", "unexpected argument \"%s\"", argv[optind]);
		return 1;
	}
	if (diskd_config.data_dir == NULL)
	{
		diskd_log("FATAL", "no data directory given (-D)");
		return 1;
	}
	if ((listen_socket_path == NULL) == (listen_tcp == NULL))
	{
		diskd_log("FATAL", "exactly one of --socket and --listen is required");
		return 1;
	}
	if (diskd_config.secret == NULL)
	{
		const char *env_secret = getenv("ACTIVE_PG_DISK_SECRET");

		if (env_secret != NULL && env_secret[0] != '\0')
			diskd_config.secret = env_secret;
	}
	else if (diskd_config.secret[0] == '\0')
		diskd_config.secret = NULL;
	return -1;
}

/*
 * Block the stop signals in every thread (threads inherit the mask); the
 * accept loop's ppoll() is the only place they are delivered, with the mask
 * *waitmask.
 */
static void
block_stop_signals(sigset_t *waitmask)
{
	struct sigaction sa;
	sigset_t	blocked;

	sigemptyset(&blocked);
	sigaddset(&blocked, SIGTERM);
	sigaddset(&blocked, SIGINT);
	pthread_sigmask(SIG_BLOCK, &blocked, waitmask);
	sigdelset(waitmask, SIGTERM);
	sigdelset(waitmask, SIGINT);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

/* Say what the daemon serves and how. */
static void
log_started(void)
{
	diskd_log("LOG", "listening on %s%s (PostgreSQL %u data directory \"%s\", queue depth %u, %llu MB per scan, %s reads%s)",
			  listen_socket_path ? "unix:" : "tcp:",
			  listen_socket_path ? listen_socket_path : listen_tcp,
			  diskd_config.pg_major, diskd_config.data_dir, diskd_config.queue_depth,
			  (unsigned long long) (diskd_config.memory_bytes >> 20),
			  diskd_config.direct_io_default ? "direct" : "buffered",
			  diskd_config.secret ? ", secret required" : "");
	if (diskd_config.media_mbps > 0 || diskd_config.cpu_ratio > 0.0)
	{
		char		media[32] = "off";

		if (diskd_config.media_mbps > 0)
			snprintf(media, sizeof(media), "%u MB/s", diskd_config.media_mbps);
		diskd_log("LOG", "emulating a drive: media rate %s, cpu ratio %.2f",
				  media, diskd_config.cpu_ratio > 0.0 ? diskd_config.cpu_ratio : 1.0);
	}
}

int
main(int argc, char **argv)
{
	DiskdStartup st;
	sigset_t	waitmask;
	int			lfd;
	int			rc;
	char		msg[512];
	const char *env;

	ap_stats_start();
	if ((rc = parse_flags(argc, argv, &st)) >= 0)
		return rc;

	/* A cluster whose pages this daemon cannot decode is refused outright. */
	if (!ap_check_data_directory(diskd_config.data_dir, st.expect_major,
								 &diskd_config.pg_major, msg, sizeof(msg)))
	{
		diskd_log("FATAL", "%s", msg);
		return 1;
	}

	/* Relation paths are resolved relative to the data directory from here on. */
	if (chdir(diskd_config.data_dir) != 0)
	{
		diskd_log("FATAL", "could not change to data directory \"%s\": %s",
				  diskd_config.data_dir, strerror(errno));
		return 1;
	}

	/* 1.0 is the host's own speed: nothing to emulate */
	if (diskd_config.cpu_ratio >= 1.0)
		diskd_config.cpu_ratio = 0.0;
	ap_throttle_configure(diskd_config.media_mbps, diskd_config.cpu_ratio);
	check_cpu_faithful(st.emulated_disks);

	/* A host that disappears mid-send must not kill the daemon. */
	signal(SIGPIPE, SIG_IGN);
	block_stop_signals(&waitmask);

	if (listen_socket_path != NULL)
		lfd = listen_unix(listen_socket_path);
	else
		lfd = listen_tcp_addr(listen_tcp, listen_any);
	if (lfd < 0)
	{
		diskd_log("FATAL", "could not listen on \"%s\": %s",
				  listen_socket_path ? listen_socket_path : listen_tcp, strerror(-lfd));
		return 1;
	}
	if (listen_tcp != NULL && diskd_config.secret == NULL)
		diskd_log("WARNING", "listening on TCP without a secret: any local user can read the cluster's relations (set --secret-file or ACTIVE_PG_DISK_SECRET)");

	log_started();
	ap_failpoints_init();
	env = getenv("ACTIVE_PG_DISKD_NO_IO_URING");
	ap_reader_init(st.no_io_uring || (env != NULL && strcmp(env, "1") == 0));

	accept_loop(lfd, listen_tcp != NULL, &waitmask);

	close(lfd);
	if (listen_socket_path != NULL)
		unlink(listen_socket_path);
	diskd_log("LOG", "received %s, shutting down",
			  diskd_stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
	/* In-flight scans are abandoned: their hosts see the connection close. */
	exit(0);
}
