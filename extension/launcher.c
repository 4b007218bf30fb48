/*
 * launcher.c
 *	  Background worker "active_pg launcher": runs the diskd processes.
 *
 * Rules of this file:
 *   - The worker starts once recovery has finished: disks serve only normal
 *     backends, and during recovery scans run on the host anyway (activescan.c).
 *   - The disks are children of the launcher, not of the postmaster.  Each
 *     child asks the kernel to SIGKILL it when the launcher dies
 *     (PR_SET_PDEATHSIG), so a crash of the launcher or a postmaster
 *     crash-restart never leaves stale disks reading the data directory.
 *   - Between fork() and execv() the child runs no PostgreSQL code (no elog,
 *     no palloc: only async-signal-safe calls), and leaves with _exit(127) if
 *     the exec fails; everything it needs is prepared before the fork.
 *   - Sockets live in DataDir/active_pg (mode 0700, like the data directory
 *     itself) under relative names: every backend's and disk's working
 *     directory is the data directory, so the paths stay far below the
 *     108-byte sun_path limit however deep the data directory is.
 *   - A disk that dies is restarted with an exponential backoff, so a disk
 *     that crashes at start-up does not spin.
 *   - Every AP_PROBE_INTERVAL_MS the launcher checks what a dead process
 *     would not show: a socket directory that disappeared is recreated and
 *     its disks restarted; a disk whose socket is gone is restarted; a disk
 *     that does not complete a handshake within AP_PROBE_TIMEOUT_MS for
 *     AP_PROBE_STRIKES probes in a row (stopped, hung) is killed and
 *     restarted.  A probe is one short connection; a stopped daemon costs
 *     the launcher at most the probe timeout per round.
 */
#include "postgres.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "active_pg.h"
#include "transport.h"

PGDLLEXPORT void ApLauncherMain(Datum main_arg);

#define AP_LAUNCHER_RESTART_S		1
#define AP_LAUNCHER_TICK_MS			1000
#define AP_BACKOFF_MIN_MS			100
#define AP_BACKOFF_MAX_MS			10000
/* a disk that ran this long before dying restarts without delay */
#define AP_STABLE_RUN_MS			10000
#define AP_STOP_GRACE_MS			5000
#define AP_SECRET_ENV				"ACTIVE_PG_DISK_SECRET"
#define AP_PROBE_INTERVAL_MS		5000
#define AP_PROBE_TIMEOUT_MS			2000
#define AP_PROBE_STRIKES			3
/* a disk just started gets this long to listen before it is probed */
#define AP_PROBE_GRACE_MS			3000

/* One disk child. */
typedef struct ApDiskChild
{
	pid_t		pid;			/* 0 when not running */
	TimestampTz started_at;
	TimestampTz next_start;		/* earliest restart */
	int			backoff_ms;
	bool		ever_started;	/* a later start is a restart (disk_stats) */
	int			strikes;		/* probes in a row it did not answer */
} ApDiskChild;

static volatile sig_atomic_t ap_got_sigterm = false;
static ApDiskChild ap_children[AP_NDISKS_MAX];
static int	ap_nchildren = 0;

/* The emulation settings the running disks were started with. */
static int	ap_started_media_mbps = 0;
static double ap_started_cpu_ratio = 1.0;
static int	ap_started_memory_mb = 0;
/* ... and the secret they were given (in TopMemoryContext; NULL: none) */
static char *ap_started_secret = NULL;

static void ap_remember_secret(void);

/* Register the launcher; only possible while shared_preload_libraries loads. */
void
ApLauncherRegister(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	strlcpy(worker.bgw_name, "active_pg launcher", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "active_pg launcher", BGW_MAXLEN);
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = AP_LAUNCHER_RESTART_S;
	strlcpy(worker.bgw_library_name, "active_pg", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "ApLauncherMain", BGW_MAXLEN);
	worker.bgw_main_arg = (Datum) 0;
	worker.bgw_notify_pid = 0;
	RegisterBackgroundWorker(&worker);
	ApLauncherSetRegistered();
}

/* SIGTERM: stop the disks and exit at the next loop iteration. */
static void
ap_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	ap_got_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/* SIGCHLD: wake the loop so a dead disk is reaped and restarted promptly. */
static void
ap_sigchld(SIGNAL_ARGS)
{
	int			save_errno = errno;

	SetLatch(MyLatch);
	errno = save_errno;
}

/* Build the child's environment before fork: ours plus the disk secret. */
static char **
ap_build_env(void)
{
	extern char **environ;
	int			n = 0;
	int			i;
	int			j = 0;
	char	  **env;
	size_t		prefix = strlen(AP_SECRET_ENV "=");

	while (environ[n] != NULL)
		n++;
	env = palloc0(sizeof(char *) * (n + 2));
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], AP_SECRET_ENV "=", prefix) != 0)
			env[j++] = environ[i];
	if (active_pg_disk_secret != NULL && active_pg_disk_secret[0] != '\0')
		env[j++] = psprintf("%s=%s", AP_SECRET_ENV, active_pg_disk_secret);
	env[j] = NULL;
	return env;
}

/* In the child: close every descriptor above stderr (no PostgreSQL code here). */
static void
ap_child_close_fds(void)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
		return;
#endif
	{
		long		max = sysconf(_SC_OPEN_MAX);
		int			fd;

		if (max < 0 || max > 65536)
			max = 65536;
		for (fd = 3; fd < max; fd++)
			(void) close(fd);
	}
}

/* fork+exec disk i; logs and leaves the slot empty on failure. */
static void
ap_start_disk(int i, const char *diskd_path)
{
	char		sock[MAXPGPATH];
	char		idbuf[16];
	char		setbufs[AP_DAEMON_SETTINGS_MAX][AP_DAEMON_ARG_BYTES];
	char		ndbuf[16];
	char		connbuf[16];
	char	   *argv[16 + 2 * AP_DAEMON_SETTINGS_MAX];
	int			argc;
	char	  **env;
	pid_t		pid;
	pid_t		parent = getpid();

	ApDiskSocketPath(i, sock, sizeof(sock));
	snprintf(idbuf, sizeof(idbuf), "%d", i);
	argv[0] = (char *) diskd_path;
	argv[1] = "-D";
	argv[2] = DataDir;
	argv[3] = "--socket";
	argv[4] = sock;
	argv[5] = "--disk-id";
	argv[6] = idbuf;
	/*
	 * Room for every backend and worker the server may run, each with two
	 * scans open at once (a join of two pushed scans, an open cursor); a
	 * disk that still refuses (BUSY) is taken over by the host.
	 */
	snprintf(connbuf, sizeof(connbuf), "%d", Min(2 * MaxBackends + 16, AP_DISKD_MAX_CONNECTIONS));
	argv[7] = "--max-connections";
	argv[8] = connbuf;
	/* the daemon refuses a data directory of another major than ours */
	argv[9] = "--pg-version";
	argv[10] = CppAsString2(PG_MAJORVERSION_NUM);
	argc = 11;

	/*
	 * The emulation settings, off unless configured: which ones and when is
	 * the settings table's (guc.c).  The queue depth is not among them: it
	 * travels with each ScanRequest, the one path for hand-started and
	 * launched disks alike.
	 */
	argc = ApDaemonSettingArgs(argv, argc, setbufs, AP_DAEMON_SETTINGS_MAX);
	/* a slowed disk also shares the host's cores with the other emulated disks */
	for (int a = 11; a < argc; a += 2)
	{
		if (strcmp(argv[a], "--cpu-ratio") == 0)
		{
			snprintf(ndbuf, sizeof(ndbuf), "%d", ap_nchildren);
			argv[argc++] = "--emulated-disks";
			argv[argc++] = ndbuf;
			break;
		}
	}
	argv[argc] = NULL;
	env = ap_build_env();

	/* a stale socket of the dead predecessor would make bind() fail */
	(void) unlink(sock);

	fflush(NULL);
	pid = fork();
	if (pid == 0)
	{
		sigset_t	none;
		int			sig;

		/* die with the launcher; re-check the parent in case it died already */
		(void) prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		for (sig = 1; sig < NSIG; sig++)
			(void) signal(sig, SIG_DFL);
		sigemptyset(&none);
		(void) sigprocmask(SIG_SETMASK, &none, NULL);
		ap_child_close_fds();
		execve(diskd_path, argv, env);
		_exit(127);
	}
	if (pid < 0)
	{
		ereport(LOG,
				(errmsg("active_pg launcher could not fork disk %d: %m", i)));
		ap_children[i].pid = 0;
		return;
	}
	ap_children[i].pid = pid;
	ap_children[i].started_at = GetCurrentTimestamp();
	if (ap_children[i].ever_started)
		ApStatsCountRestart(i);
	ap_children[i].ever_started = true;
	ap_started_media_mbps = active_pg_disk_media_mbps;
	ap_started_cpu_ratio = active_pg_disk_cpu_ratio;
	ap_started_memory_mb = active_pg_disk_memory_mb;
	ap_remember_secret();
	ereport(LOG,
			(errmsg("active_pg launcher started disk %d (pid %d) on %s", i, (int) pid, sock)));
}

/* Describe an exit status for the log. */
static char *
ap_exit_status(int status)
{
	if (WIFEXITED(status))
		return psprintf("exited with code %d", WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return psprintf("was terminated by signal %d (%s)", WTERMSIG(status),
						pg_strsignal(WTERMSIG(status)));
	return psprintf("exited with status %d", status);
}

/* Reap every exited child, log it and schedule its restart. */
static void
ap_reap(void)
{
	for (;;)
	{
		int			status;
		pid_t		pid = waitpid(-1, &status, WNOHANG);
		int			i;

		if (pid <= 0)
			return;
		for (i = 0; i < ap_nchildren; i++)
		{
			ApDiskChild *c = &ap_children[i];
			TimestampTz now;

			if (c->pid != pid)
				continue;
			now = GetCurrentTimestamp();
			c->pid = 0;
			if (TimestampDifferenceExceeds(c->started_at, now, AP_STABLE_RUN_MS))
				c->backoff_ms = 0;
			else
				c->backoff_ms = Min(Max(c->backoff_ms * 2, AP_BACKOFF_MIN_MS),
									AP_BACKOFF_MAX_MS);
			c->next_start = TimestampTzPlusMilliseconds(now, c->backoff_ms);
			ereport(LOG,
					(errmsg("active_pg disk %d (pid %d) %s; restarting in %d ms",
							i, (int) pid, ap_exit_status(status), c->backoff_ms)));
			break;
		}
	}
}

/* The disk secret the running disks were started with. */
static void
ap_remember_secret(void)
{
	const char *now = active_pg_disk_secret != NULL ? active_pg_disk_secret : "";

	if (ap_started_secret != NULL && strcmp(ap_started_secret, now) == 0)
		return;
	if (ap_started_secret != NULL)
		pfree(ap_started_secret);
	ap_started_secret = MemoryContextStrdup(TopMemoryContext, now);
}

/* Does any launched disk run? */
static bool
ap_any_running(void)
{
	for (int i = 0; i < ap_nchildren; i++)
		if (ap_children[i].pid > 0)
			return true;
	return false;
}

/* Has a reload changed what the running disks were started with? */
static const char *
ap_disks_outdated(void)
{
	if (ap_started_media_mbps != active_pg_disk_media_mbps ||
		ap_started_cpu_ratio != active_pg_disk_cpu_ratio ||
		ap_started_memory_mb != active_pg_disk_memory_mb)
		return "new emulation settings";
	if (ap_started_secret != NULL &&
		strcmp(ap_started_secret, active_pg_disk_secret != NULL ? active_pg_disk_secret : "") != 0)
		return "a new disk secret";
	return NULL;
}

/* SIGTERM the disks, wait up to the grace period, SIGKILL the rest. */
static void
ap_stop_disks(void)
{
	TimestampTz deadline;
	int			i;
	bool		any;

	for (i = 0; i < ap_nchildren; i++)
		if (ap_children[i].pid > 0)
			(void) kill(ap_children[i].pid, SIGTERM);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), AP_STOP_GRACE_MS);
	for (;;)
	{
		any = false;
		for (i = 0; i < ap_nchildren; i++)
		{
			int			status;

			if (ap_children[i].pid <= 0)
				continue;
			if (waitpid(ap_children[i].pid, &status, WNOHANG) == ap_children[i].pid)
				ap_children[i].pid = 0;
			else
				any = true;
		}
		if (!any || GetCurrentTimestamp() >= deadline)
			break;
		pg_usleep(50 * 1000L);
	}
	for (i = 0; i < ap_nchildren; i++)
	{
		if (ap_children[i].pid <= 0)
			continue;
		ereport(LOG,
				(errmsg("active_pg disk %d (pid %d) did not stop in time; killing it",
						i, (int) ap_children[i].pid)));
		(void) kill(ap_children[i].pid, SIGKILL);
		(void) waitpid(ap_children[i].pid, NULL, 0);
		ap_children[i].pid = 0;
	}
}

/* Kill disk i to have it restarted (ap_reap), saying why. */
static void
ap_restart_disk(int i, const char *why)
{
	ApDiskChild *c = &ap_children[i];

	ereport(LOG,
			(errmsg("active_pg disk %d (pid %d) %s; killing it to restart it",
					i, (int) c->pid, why)));
	(void) kill(c->pid, SIGKILL);
	c->strikes = 0;
	/* it did not fail at start: no backoff (ap_reap) */
	c->started_at = 0;
}

/*
 * What a dead process would not show (see the rules above): the socket
 * directory, each running disk's socket, and whether it answers.
 */
static void
ap_probe_disks(void)
{
	struct stat st;
	MemoryContext cxt;
	ApDiskAddr *addrs;
	ApConnSet  *set;
	TimestampTz now = GetCurrentTimestamp();

	if (stat(AP_SOCKET_DIR, &st) != 0 && errno == ENOENT)
	{
		if (mkdir(AP_SOCKET_DIR, S_IRWXU) < 0 && errno != EEXIST)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not create directory \"%s/%s\": %m", DataDir, AP_SOCKET_DIR)));
		for (int i = 0; i < ap_nchildren; i++)
		{
			if (ap_children[i].pid > 0)
				ap_restart_disk(i, "lost its socket directory");
		}
		return;
	}

	cxt = AllocSetContextCreate(TopMemoryContext, "active_pg launcher probe",
								ALLOCSET_SMALL_SIZES);
	set = ApOpenDiskSet(cxt, &addrs);
	for (int i = 0; i < ap_nchildren && i < set->nconns; i++)
	{
		ApDiskChild *c = &ap_children[i];
		char	   *err = NULL;
		bool		alive;

		if (c->pid <= 0 || addrs[i].is_tcp ||
			!TimestampDifferenceExceeds(c->started_at, now, AP_PROBE_GRACE_MS))
		{
			c->strikes = 0;
			continue;
		}
		if (access(addrs[i].path, F_OK) != 0)
		{
			ap_restart_disk(i, "lost its socket");
			continue;
		}
		alive = ApConnectOneWithin(set, i, &addrs[i], AP_PROBE_TIMEOUT_MS, &err);
		ApConnClose(&set->conns[i]);
		if (alive)
			c->strikes = 0;
		else if (++c->strikes >= AP_PROBE_STRIKES)
			ap_restart_disk(i, psprintf("did not answer %d probes in a row (%s)",
										AP_PROBE_STRIKES, err ? err : "no reply"));
	}
	MemoryContextDelete(cxt);
}

/* Entry point of the launcher background worker. */
void
ApLauncherMain(Datum main_arg)
{
	char		diskd_path[MAXPGPATH];
	TimestampTz missing_logged = 0;
	TimestampTz last_probe = 0;
	int			i;

	pqsignal(SIGTERM, ap_sigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGCHLD, ap_sigchld);
	BackgroundWorkerUnblockSignals();

	/* the disks' sockets: private to the server's OS user, like the data directory */
	if (mkdir(AP_SOCKET_DIR, S_IRWXU) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s/%s\": %m", DataDir, AP_SOCKET_DIR)));

	/* the daemon is installed next to the postgres binary */
	strlcpy(diskd_path, my_exec_path, sizeof(diskd_path));
	get_parent_directory(diskd_path);
	strlcat(diskd_path, "/" AP_DISKD_PROGRAM, sizeof(diskd_path));

	ap_nchildren = active_pg_ndisks;
	for (i = 0; i < ap_nchildren; i++)
	{
		ap_children[i].pid = 0;
		ap_children[i].next_start = 0;
		ap_children[i].backoff_ms = 0;
		ap_children[i].ever_started = false;
		ap_children[i].strikes = 0;
	}

	while (!ap_got_sigterm)
	{
		TimestampTz now;
		long		timeout = AP_LAUNCHER_TICK_MS;
		bool		want;
		const char *why;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			/*
			 * Disks started with other emulation settings or another secret
			 * than the configuration's restart with the new ones; disks
			 * replaced by hand-started ones (active_pg.disks) stop.
			 */
			why = ap_disks_outdated();
			if (why == NULL && active_pg_disks != NULL && active_pg_disks[0] != '\0' &&
				ap_any_running())
				why = "active_pg.disks (the hand-started disks replace them)";
			if (why != NULL)
			{
				ereport(LOG,
						(errmsg("active_pg launcher stops its disks for %s", why)));
				ap_stop_disks();
				/* a reconfiguration is not a failure: not counted in restarts */
				for (i = 0; i < ap_nchildren; i++)
					ap_children[i].ever_started = false;
				ap_started_media_mbps = active_pg_disk_media_mbps;
				ap_started_cpu_ratio = active_pg_disk_cpu_ratio;
				ap_started_memory_mb = active_pg_disk_memory_mb;
				ap_remember_secret();
			}
		}
		ap_reap();

		/* hand-started disks (active_pg.disks) replace the launcher's */
		want = active_pg_disks == NULL || active_pg_disks[0] == '\0';
		now = GetCurrentTimestamp();
		for (i = 0; want && i < ap_nchildren; i++)
		{
			ApDiskChild *c = &ap_children[i];

			if (c->pid > 0)
				continue;
			if (now < c->next_start)
			{
				long		ms = (long) ((c->next_start - now) / 1000) + 1;

				timeout = Min(timeout, ms);
				continue;
			}
			if (access(diskd_path, X_OK) != 0)
			{
				/* log once a minute, not every tick */
				if (TimestampDifferenceExceeds(missing_logged, now, 60 * 1000))
				{
					ereport(WARNING,
							(errcode_for_file_access(),
							 errmsg("active_pg launcher cannot execute \"%s\": %m", diskd_path),
							 errhint("Run \"make install\" in the active_pg source tree.")));
					missing_logged = now;
				}
				break;
			}
			ap_start_disk(i, diskd_path);
			if (c->pid == 0)
				c->next_start = TimestampTzPlusMilliseconds(now, AP_BACKOFF_MAX_MS);
		}

		if (want && TimestampDifferenceExceeds(last_probe, now, AP_PROBE_INTERVAL_MS))
		{
			last_probe = now;
			ap_probe_disks();
		}

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}

	ap_stop_disks();
	proc_exit(0);
}
