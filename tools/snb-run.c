/*
 * snb-run: start a graph of snb apps joined by rings, supervise it, and
 * take it down again leaving nothing behind.
 *
 *	parse -> ask every app --describe -> check -> create rings ->
 *	start stages -> wait (signals, deaths, restarts) -> remove files
 */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "app.h"
#include "graph.h"
#include "ring.h"

#define USAGE \
	"usage: snb-run [-cv] [-n name] [--restart=no|on-failure] " \
	"[--max-restarts N]\n" \
	"               [--slots N] [--capacity N] [--stats] " \
	"('GRAPH' | -f file)\n"
#define STOP_GRACE_MS	3000	/* SIGTERM, then SIGKILL after this */
#define RESTART_MIN_MS	100
#define RESTART_MAX_MS	5000
#define QUICK_FAIL_MS	250	/* a failure sooner than this after start */

struct proc {
	pid_t		 pid;		/* 0 = not running */
	int		 done;		/* exited 0 (end of stream) */
	int		 restarts;	/* in all */
	int		 quick;		/* failures in a row, each quick */
	uint64_t	 started;	/* ms */
	uint64_t	 restart_at;	/* ms, CLOCK_MONOTONIC; 0 = none */
	struct app_info	*swap_info;	/* the replacement's, after a swap */
	char		 path[PATH_MAX];/* the app's executable */
};

static struct graph	 g;
static struct proc	*procs;
static struct app_info	*infos;		/* one per stage (copies) */
static char		 graph_dir[PATH_MAX];
static char		 where[PATH_MAX];	/* "FILE:" or "" for errors */
static int		 restart_on_failure, max_restarts = 10, verbose;
static int		 print_stats;	/* --stats: stage totals at the end */
static uint32_t		 ring_slots = RING_DEFAULT_SLOTS;
static uint32_t		 ring_capacity = RING_DEFAULT_CAPACITY;
char			*text;		/* the graph's source (global for LSan) */

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "%s", USAGE);
	exit(2);
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static char *
read_file(const char *path)
{
	FILE *f;
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (strcmp(path, "-") == 0)
		f = stdin;
	else if ((f = fopen(path, "r")) == NULL)
		err(2, "%s", path);
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			if ((buf = realloc(buf, cap)) == NULL)
				err(1, NULL);
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	if (ferror(f))
		err(2, "%s", path);
	if (memchr(buf, '\0', len))
		errx(2, "%s: binary file", path);
	buf[len] = '\0';
	if (f != stdin)
		fclose(f);
	return buf;
}

/* snb-APP next to our own binary, then in $SNB_PATH, then in $PATH. */
static int
find_app(const char *app, char *out, size_t outlen)
{
	char self[PATH_MAX], *slash, *dirs, *d, *save;
	const char *env[2] = { getenv("SNB_PATH"), getenv("PATH") };
	ssize_t n;
	int i;

	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			snprintf(out, outlen, "%s/snb-%s", self, app);
			if (access(out, X_OK) == 0)
				return 0;
		}
	}
	for (i = 0; i < 2; i++) {
		if (env[i] == NULL || (dirs = strdup(env[i])) == NULL)
			continue;
		for (d = strtok_r(dirs, ":", &save); d;
		    d = strtok_r(NULL, ":", &save)) {
			snprintf(out, outlen, "%s/snb-%s", *d ? d : ".", app);
			if (access(out, X_OK) == 0) {
				free(dirs);
				return 0;
			}
		}
		free(dirs);
	}
	return -1;
}

/* Run `path --describe` and parse what it says. */
static int
describe(const char *path, struct app_info *info, char *errbuf,
    size_t errlen)
{
	char buf[8192];
	size_t len = 0;
	ssize_t n;
	int fds[2], status, devnull;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) == -1)
		err(1, "pipe");
	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		devnull = open("/dev/null", O_RDWR);
		dup2(fds[1], 1);
		dup2(devnull, 0);
		dup2(devnull, 2);
		execl(path, path, "--describe", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (len < sizeof(buf) - 1 &&
	    (n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(errbuf, errlen, "%s --describe failed", path);
		return -1;
	}
	return app_info_parse(info, buf, errbuf, errlen);
}

static void
ring_path(const struct link *l, char *out, size_t len)
{
	/* ':' and '=' appear in no label or port: names cannot collide. */
	snprintf(out, len, "%s/%s:%s=%s:%s", graph_dir,
	    g.stages[l->from].label, l->from_port, g.stages[l->to].label,
	    l->to_port);
}

static void
stage_path(int i, char *out, size_t len)
{
	snprintf(out, len, "%s/%s.stage", graph_dir, g.stages[i].label);
}

/*
 * --stats: each stage's totals from its counter file, before cleanup()
 * removes it.  Busy time is what the stage spent in breaths that moved
 * packets, so busy/packet is its cost on a core whatever else ran.
 */
static void
stage_totals(void)
{
	struct stage_file f;
	char path[PATH_MAX];
	double busy;
	uint64_t n;
	int i, fd;

	for (i = 0; i < g.nstages; i++) {
		stage_path(i, path, sizeof(path));
		if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
			continue;
		if (pread(fd, &f, sizeof(f), 0) == (ssize_t)sizeof(f) &&
		    f.magic == STAGE_MAGIC) {
			busy = f.busy_ns / 1e9;
			n = f.packets_in > f.packets_out ? f.packets_in :
			    f.packets_out;
			fprintf(stderr, "snb-run: stage %s (%s): %llu in, %llu "
			    "out, busy %.3f s", g.stages[i].label,
			    g.stages[i].app, (unsigned long long)f.packets_in,
			    (unsigned long long)f.packets_out, busy);
			if (n > 0)
				fprintf(stderr, ", %.1f ns per packet, %.2f "
				    "Mpps per core", f.busy_ns / (double)n,
				    busy > 0 ? n / busy / 1e6 : 0.0);
			fprintf(stderr, "\n");
		}
		close(fd);
	}
}

/* Remove what we made in the graph directory, then the directory. */
static void
cleanup(void)
{
	char path[PATH_MAX];
	int i;

	if (graph_dir[0] == '\0')
		return;
	for (i = 0; i < g.nlinks; i++) {
		ring_path(&g.links[i], path, sizeof(path));
		unlink(path);
	}
	for (i = 0; i < g.nstages; i++) {
		stage_path(i, path, sizeof(path));
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/snb-run.pid", graph_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ctl", graph_dir);
	unlink(path);
	for (i = 0; i < g.nstages; i++) {
		stage_path(i, path, sizeof(path));
		strlcat(path, ".new", sizeof(path));
		unlink(path);
	}
	if (rmdir(graph_dir) == -1 && errno != ENOENT)
		warn("%s", graph_dir);
	graph_dir[0] = '\0';
}

static void __attribute__((noreturn))
die_cleanup(int status)
{
	cleanup();
	exit(status);
}

/* A stale directory (its snb-run is gone) is cleared; a live one is not. */
static void
make_graph_dir(const char *name)
{
	char errbuf[512], path[PATH_MAX], pidbuf[32];
	const char *run;
	FILE *f;
	long pid;

	if ((run = snb_run_dir(errbuf, sizeof(errbuf))) == NULL)
		errx(1, "run directory: %s", errbuf);
	snprintf(graph_dir, sizeof(graph_dir), "%s/%s", run, name);
	if (mkdir(graph_dir, 0700) == -1) {
		if (errno != EEXIST)
			err(1, "%s", graph_dir);
		snprintf(path, sizeof(path), "%s/snb-run.pid", graph_dir);
		if ((f = fopen(path, "r")) != NULL) {
			pid = fgets(pidbuf, sizeof(pidbuf), f) ?
			    strtol(pidbuf, NULL, 10) : 0;
			fclose(f);
			if (pid > 0 && kill((pid_t)pid, 0) == 0) {
				graph_dir[0] = '\0';
				errx(1, "graph '%s' is already running (pid %ld)",
				    name, pid);
			}
		}
		warnx("removing stale graph directory %s", graph_dir);
		cleanup();
		snprintf(graph_dir, sizeof(graph_dir), "%s/%s", run, name);
		if (mkdir(graph_dir, 0700) == -1) {
			graph_dir[0] = '\0';
			errx(1, "%s/%s: stale files left; remove them by hand",
			    run, name);
		}
	}
	snprintf(path, sizeof(path), "%s/snb-run.pid", graph_dir);
	if ((f = fopen(path, "wx")) == NULL) {
		warn("%s", path);
		die_cleanup(1);
	}
	fprintf(f, "%ld\n", (long)getpid());
	fclose(f);
}

static void
create_rings(void)
{
	char path[PATH_MAX];
	int i;

	for (i = 0; i < g.nlinks; i++) {
		ring_path(&g.links[i], path, sizeof(path));
		if (ring_create(path, ring_slots, ring_capacity,
		    g.links[i].leaky ? RING_FLAG_LEAKY : 0) == -1) {
			warn("%s", path);
			if (errno == ENOMEM || errno == ENOSPC)
				warnx("no room for the ring: free hugepages, "
				    "or set SNB_RUN_DIR=/dev/shm/snb");
			die_cleanup(1);
		}
	}
}

/*
 * Fork and exec stage i's app (exe with words), bound to the stage's rings.
 * stats is the counter file; ready_fd >= 0 starts it in standby (swap).
 */
static pid_t
spawn(int i, const char *exe, char **words, int nwords, const char *stats,
    int ready_fd)
{
	struct stage *s = &g.stages[i];
	char **argv, path[PATH_MAX];
	sigset_t none;
	int a = 0, nfree, j;
	pid_t parent = getpid(), pid;

	argv = calloc((size_t)(g.nlinks + nwords + 8), sizeof(char *));
	if (argv == NULL)
		err(1, NULL);
	argv[a++] = (char *)exe;
	if (asprintf(&argv[a++], "--snb-label=%s", s->label) == -1 ||
	    asprintf(&argv[a++], "--snb-stats=%s", stats) == -1 ||
	    asprintf(&argv[a++], "--snb-restarts=%d", procs[i].restarts) == -1)
		err(1, NULL);
	if (ready_fd >= 0 &&
	    asprintf(&argv[a++], "--snb-standby-fd=%d", ready_fd) == -1)
		err(1, NULL);
	for (j = 0; j < g.nlinks; j++) {
		struct link *l = &g.links[j];
		ring_path(l, path, sizeof(path));
		if (l->to == i && asprintf(&argv[a++], "--snb-in=%s=%s",
		    l->to_port, path) == -1)
			err(1, NULL);
		if (l->from == i && asprintf(&argv[a++], "--snb-out=%s=%s",
		    l->from_port, path) == -1)
			err(1, NULL);
	}
	nfree = a;
	for (j = 0; j < nwords; j++)
		argv[a++] = words[j];
	argv[a] = NULL;

	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		/* Our own group: a terminal's ^C reaches snb-run only. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(argv[0], argv);
		warn("%s", argv[0]);
		_exit(127);
	}
	if (verbose)
		warnx("started %s (pid %ld)", s->label, (long)pid);
	for (j = 1; j < nfree; j++)
		free(argv[j]);
	free(argv);
	return pid;
}

static void
start_stage(int i)
{
	char stats[PATH_MAX];

	stage_path(i, stats, sizeof(stats));
	procs[i].pid = spawn(i, procs[i].path, g.stages[i].argv,
	    g.stages[i].argc, stats, -1);
	procs[i].done = 0;
	procs[i].started = now_ms();
}

static int
status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

static void
report(int i, int status)
{
	if (WIFEXITED(status))
		warnx("%s (pid %ld) exited with status %d", g.stages[i].label,
		    (long)procs[i].pid, WEXITSTATUS(status));
	else
		warnx("%s (pid %ld) killed by signal %d (%s)",
		    g.stages[i].label, (long)procs[i].pid, WTERMSIG(status),
		    strsignal(WTERMSIG(status)));
}

static int
running(void)
{
	int i, n = 0;

	for (i = 0; i < g.nstages; i++)
		n += procs[i].pid != 0;
	return n;
}

/* SIGTERM everyone, give them STOP_GRACE_MS, then SIGKILL. */
static void
stop_all(void)
{
	uint64_t deadline = now_ms() + STOP_GRACE_MS;
	int i, status;
	pid_t pid;

	for (i = 0; i < g.nstages; i++)
		if (procs[i].pid)
			kill(procs[i].pid, SIGTERM);
	while (running()) {
		if (now_ms() > deadline)
			for (i = 0; i < g.nstages; i++)
				if (procs[i].pid)
					kill(procs[i].pid, SIGKILL);
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			for (i = 0; i < g.nstages; i++)
				if (procs[i].pid == pid)
					procs[i].pid = 0;
		if (running())
			usleep(5000);
	}
}

/* ---- the control socket (snb-ctl) ---- */

static int stop_requested;

static int
ctl_listen(void)
{
	struct sockaddr_un sun;
	mode_t old;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/ctl",
	    graph_dir) >= sizeof(sun.sun_path))
		errx(1, "%s/ctl: path too long for a socket", graph_dir);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	old = umask(0177);	/* the socket is 0600 from birth */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		warn("%s", sun.sun_path);
		umask(old);
		die_cleanup(1);
	}
	umask(old);
	if (listen(fd, 8) == -1)
		err(1, "listen");
	return fd;
}

/* Wait up to ms for pid to exit; returns its status or -1. */
static int
wait_for(pid_t pid, int ms)
{
	uint64_t deadline = now_ms() + (uint64_t)ms;
	int status;

	for (;;) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		if (now_ms() > deadline)
			return -1;
		usleep(200);
	}
}

static int
find_stage(const char *label)
{
	int i;

	for (i = 0; i < g.nstages; i++)
		if (strcmp(g.stages[i].label, label) == 0)
			return i;
	return -1;
}

/* Do the ports of info fit stage i's links?  -1 with a reason if not. */
static int
ports_fit(int i, const struct app_info *info, char *why, size_t len)
{
	int j, p, found;

	for (j = 0; j < g.nlinks; j++) {
		struct link *l = &g.links[j];
		const char *port = l->from == i ? l->from_port : l->to_port;
		int out = l->from == i;
		if (l->from != i && l->to != i)
			continue;
		for (p = 0, found = 0; p < info->nports && !found; p++)
			found = info->ports[p].out == out &&
			    (!strcmp(info->ports[p].name, port) ||
			    !strcmp(info->ports[p].name, "*"));
		if (!found) {
			snprintf(why, len, "%s has no %s port '%s'", info->app,
			    out ? "output" : "input", port);
			return -1;
		}
	}
	for (p = 0; p < info->nports; p++) {
		if (!info->ports[p].required)
			continue;
		for (j = 0, found = 0; j < g.nlinks && !found; j++)
			found = info->ports[p].out ? (g.links[j].from == i &&
			    !strcmp(g.links[j].from_port, info->ports[p].name)) :
			    (g.links[j].to == i &&
			    !strcmp(g.links[j].to_port, info->ports[p].name));
		if (!found) {
			snprintf(why, len, "%s needs its %s port '%s' connected",
			    info->app, info->ports[p].out ? "output" : "input",
			    info->ports[p].name);
			return -1;
		}
	}
	return 0;
}

/*
 * Swap stage i for `spec` (APP ARGS): start the replacement in standby on
 * the same rings, wait until it is attached, retire the old stage at a
 * breath boundary (SIGTERM: it finishes its breath and detaches), then let
 * the replacement go.  Packets in the rings stay where they are.
 */
static void
ctl_swap(int i, const char *spec, FILE *out)
{
	struct app_info *info;
	char errbuf[512], path[PATH_MAX], stats[PATH_MAX], tmp[PATH_MAX];
	char **words, c;
	struct pollfd pfd;
	uint64_t t0, t1;
	int n, fds[2], status, k;
	pid_t pid, old = procs[i].pid;

	if ((words = graph_words(spec, &n, errbuf, sizeof(errbuf))) == NULL) {
		fprintf(out, "error: %s\n", errbuf);
		return;
	}
	if (n == 0 || strchr(words[0], '/') || find_app(words[0], path,
	    sizeof(path)) == -1) {
		fprintf(out, "error: unknown app '%s'\n", n ? words[0] : "");
		goto fail;
	}
	if ((info = calloc(1, sizeof(*info))) == NULL)
		err(1, NULL);
	if (describe(path, info, errbuf, sizeof(errbuf)) == -1 ||
	    ports_fit(i, info, errbuf, sizeof(errbuf)) == -1) {
		fprintf(out, "error: %s; %s keeps running\n", errbuf,
		    g.stages[i].label);
		free(info);
		goto fail;
	}
	if (old == 0) {
		fprintf(out, "error: %s is not running\n", g.stages[i].label);
		free(info);
		goto fail;
	}
	stage_path(i, stats, sizeof(stats));
	snprintf(tmp, sizeof(tmp), "%s.new", stats);
	if (pipe(fds) == -1)
		err(1, "pipe");
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	pid = spawn(i, path, words + 1, n - 1, tmp, fds[1]);
	close(fds[1]);
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 10000) != 1 || read(fds[0], &c, 1) != 1) {
		close(fds[0]);
		kill(pid, SIGKILL);
		status = wait_for(pid, 2000);
		unlink(tmp);
		fprintf(out, "error: replacement %s failed to start (%s %d); "
		    "%s keeps running\n", words[0], status != -1 &&
		    WIFSIGNALED(status) ? "signal" : "status", status == -1 ? -1
		    : WIFEXITED(status) ? WEXITSTATUS(status) :
		    WTERMSIG(status), g.stages[i].label);
		free(info);
		goto fail;
	}
	close(fds[0]);
	t0 = app_now_ns();
	kill(old, SIGTERM);
	if ((status = wait_for(old, 5000)) == -1) {
		kill(pid, SIGTERM);
		wait_for(pid, 2000);
		unlink(tmp);
		fprintf(out, "error: %s (pid %ld) did not stop; swap called "
		    "off\n", g.stages[i].label, (long)old);
		free(info);
		goto fail;
	}
	rename(tmp, stats);
	kill(pid, SIGUSR1);
	t1 = app_now_ns();
	procs[i].pid = pid;
	strlcpy(procs[i].path, path, sizeof(procs[i].path));
	for (k = 0; k < g.stages[i].argc; k++)
		free(g.stages[i].argv[k]);
	free(g.stages[i].argv);
	strlcpy(g.stages[i].app, words[0], sizeof(g.stages[i].app));
	free(words[0]);
	memmove(words, words + 1, (size_t)n * sizeof(char *));
	g.stages[i].argv = words;
	g.stages[i].argc = n - 1;
	free(procs[i].swap_info);
	procs[i].swap_info = info;
	g.stages[i].info = info;
	fprintf(out, "ok: swapped %s: pid %ld -> %ld, stall %.3f ms\n",
	    g.stages[i].label, (long)old, (long)pid, (t1 - t0) / 1e6);
	warnx("swapped %s to %s (pid %ld -> %ld), stall %.3f ms",
	    g.stages[i].label, spec, (long)old, (long)pid, (t1 - t0) / 1e6);
	return;
fail:
	graph_words_free(words);
}

static void
ctl_show(FILE *out)
{
	struct ring r;
	char path[PATH_MAX], errbuf[256];
	int i, j;

	fprintf(out, "graph %s pid %ld dir %s\n", strrchr(graph_dir, '/') + 1,
	    (long)getpid(), graph_dir);
	for (i = 0; i < g.nstages; i++) {
		fprintf(out, "stage %s pid %ld restarts %d app %s",
		    g.stages[i].label, (long)procs[i].pid, procs[i].restarts,
		    g.stages[i].app);
		for (j = 0; j < g.stages[i].argc; j++)
			fprintf(out, " '%s'", g.stages[i].argv[j]);
		fprintf(out, "\n");
	}
	for (i = 0; i < g.nlinks; i++) {
		struct link *l = &g.links[i];
		ring_path(l, path, sizeof(path));
		fprintf(out, "link %s.%s -> %s.%s", g.stages[l->from].label,
		    l->from_port, g.stages[l->to].label, l->to_port);
		if (ring_attach(&r, path, RING_OBSERVER, errbuf,
		    sizeof(errbuf)) == 0) {
			fprintf(out, " fill %llu/%llu packets %llu",
			    (unsigned long long)ring_fill(&r),
			    (unsigned long long)r.mask + 1,
			    (unsigned long long)atomic_load(&r.shm->prod.head));
			ring_detach(&r);
		}
		fprintf(out, "\n");
	}
}

/* One request per connection: NUL-separated words, then EOF. */
static void
ctl_serve(int lfd)
{
	char req[65536], *w[4] = { NULL, NULL, NULL, NULL }, *p;
	struct timeval tv = { 2, 0 };
	size_t len = 0;
	ssize_t r;
	FILE *out;
	int fd, n = 0, i, status;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (len < sizeof(req) - 1 &&
	    (r = read(fd, req + len, sizeof(req) - 1 - len)) > 0)
		len += (size_t)r;
	req[len] = '\0';
	for (p = req; p < req + len && n < 4; p += strlen(p) + 1)
		w[n++] = p;
	if ((out = fdopen(fd, "w")) == NULL) {
		close(fd);
		return;
	}
	if (n == 0)
		fprintf(out, "error: empty request\n");
	else if (strcmp(w[0], "show") == 0 && n == 1)
		ctl_show(out);
	else if (strcmp(w[0], "stop") == 0 && n == 1) {
		fprintf(out, "ok: stopping %s\n", strrchr(graph_dir, '/') + 1);
		stop_requested = 1;
	} else if ((strcmp(w[0], "swap") == 0 && n == 3) ||
	    (strcmp(w[0], "restart") == 0 && n == 2)) {
		if ((i = find_stage(w[1])) == -1)
			fprintf(out, "error: no stage '%s'\n", w[1]);
		else if (w[0][0] == 's')
			ctl_swap(i, w[2], out);
		else if (procs[i].pid == 0)
			fprintf(out, "error: %s is not running\n", w[1]);
		else {
			pid_t old = procs[i].pid;
			kill(old, SIGTERM);
			status = wait_for(old, 5000);
			if (status == -1) {
				kill(old, SIGKILL);
				wait_for(old, 2000);
			}
			start_stage(i);
			fprintf(out, "ok: restarted %s: pid %ld -> %ld\n",
			    w[1], (long)old, (long)procs[i].pid);
		}
	} else
		fprintf(out, "error: unknown request '%s' (show, stop, "
		    "restart LABEL, swap LABEL 'APP ARGS')\n", w[0]);
	fclose(out);
}

static int
supervise(void)
{
	struct signalfd_siginfo si;
	struct pollfd pfd[2];
	sigset_t set;
	uint64_t next, now;
	int i, status, first_fail = 0, live, timeout, sfd, delay, cfd;
	pid_t pid;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if ((sfd = signalfd(-1, &set, SFD_CLOEXEC)) == -1)
		err(1, "signalfd");
	cfd = ctl_listen();
	for (i = 0; i < g.nstages; i++)
		start_stage(i);
	for (;;) {
		if (stop_requested) {
			stop_all();
			return 0;
		}
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			for (i = 0; i < g.nstages; i++)
				if (procs[i].pid == pid)
					break;
			if (i == g.nstages)
				continue;
			if (status == 0) {
				procs[i].pid = 0;
				procs[i].done = 1;
				continue;
			}
			report(i, status);
			procs[i].pid = 0;
			/*
			 * Back off while a stage keeps failing quickly; one
			 * that ran a while starts again from the minimum.
			 * --max-restarts bounds the quick failures in a row.
			 */
			if (now_ms() - procs[i].started >= QUICK_FAIL_MS)
				procs[i].quick = 0;
			if (restart_on_failure &&
			    procs[i].quick < max_restarts) {
				delay = RESTART_MIN_MS << (procs[i].quick <
				    6 ? procs[i].quick : 6);
				if (delay > RESTART_MAX_MS)
					delay = RESTART_MAX_MS;
				procs[i].quick++;
				procs[i].restarts++;
				procs[i].restart_at = now_ms() + (uint64_t)delay;
				warnx("restarting %s in %d ms (restart %d, "
				    "%d of %d quick)", g.stages[i].label, delay,
				    procs[i].restarts, procs[i].quick,
				    max_restarts);
				continue;
			}
			if (restart_on_failure)
				warnx("%s failed %d times in a row: stopping "
				    "the graph", g.stages[i].label,
				    procs[i].quick + 1);
			if (!first_fail)
				first_fail = status_code(status);
			stop_all();
			return first_fail;
		}
		now = now_ms();
		next = 0;
		live = 0;
		for (i = 0; i < g.nstages; i++) {
			if (procs[i].restart_at && procs[i].restart_at <= now) {
				procs[i].restart_at = 0;
				start_stage(i);
			}
			if (procs[i].restart_at && (next == 0 ||
			    procs[i].restart_at < next))
				next = procs[i].restart_at;
			live += procs[i].pid != 0 || procs[i].restart_at != 0;
		}
		if (live == 0)
			return 0;
		timeout = next ? (int)(next - now) : -1;
		pfd[0].fd = sfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = cfd;
		pfd[1].events = POLLIN;
		if (poll(pfd, 2, timeout) <= 0)
			continue;
		if (pfd[1].revents & POLLIN)
			ctl_serve(cfd);
		if (!(pfd[0].revents & POLLIN) ||
		    read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM ||
		    si.ssi_signo == SIGHUP) {
			if (verbose)
				warnx("%s: stopping the graph",
				    strsignal((int)si.ssi_signo));
			stop_all();
			return 128 + (int)si.ssi_signo;
		}
	}
}

static void
print_plan(void)
{
	int i, j;

	for (i = 0; i < g.nstages; i++) {
		printf("stage %s: snb-%s", g.stages[i].label, g.stages[i].app);
		for (j = 0; j < g.stages[i].argc; j++)
			printf(" '%s'", g.stages[i].argv[j]);
		printf("\n");
	}
	for (i = 0; i < g.nlinks; i++)
		printf("link %s.%s -> %s.%s\n", g.stages[g.links[i].from].label,
		    g.links[i].from_port, g.stages[g.links[i].to].label,
		    g.links[i].to_port);
}

static uint32_t
parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno || v < min || v > max)
		errx(2, "bad %s '%s' (%u..%u)", opt, s, min, max);
	return (uint32_t)v;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "check", no_argument, NULL, 'c' },
		{ "file", required_argument, NULL, 'f' },
		{ "name", required_argument, NULL, 'n' },
		{ "restart", required_argument, NULL, 'r' },
		{ "max-restarts", required_argument, NULL, 'R' },
		{ "slots", required_argument, NULL, 's' },
		{ "capacity", required_argument, NULL, 'C' },
		{ "stats", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char errbuf[1024], name[GRAPH_NAME_MAX] = "";
	const char *file = NULL, *base;
	sigset_t set;
	size_t len = 0;
	int ch, i, j, check_only = 0, rc;

	while ((ch = getopt_long(argc, argv, "+cf:n:vh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			check_only = 1;
			break;
		case 'S':
			print_stats = 1;
			break;
		case 'f':
			file = optarg;
			break;
		case 'n':
			if (strlen(optarg) >= sizeof(name) || !*optarg ||
			    strspn(optarg, "abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
			    strlen(optarg) || optarg[0] == '.')
				errx(2, "bad graph name '%s' (letters, digits, "
				    "'_', '.', '-')", optarg);
			strlcpy(name, optarg, sizeof(name));
			break;
		case 'r':
			if (strcmp(optarg, "no") == 0)
				restart_on_failure = 0;
			else if (strcmp(optarg, "on-failure") == 0)
				restart_on_failure = 1;
			else
				errx(2, "bad --restart '%s' (no, on-failure)",
				    optarg);
			break;
		case 'R':
			max_restarts = (int)parse_u32("--max-restarts", optarg,
			    0, 1000000);
			break;
		case 's':
			ring_slots = parse_u32("--slots", optarg, 2, 1u << 24);
			if (ring_slots & (ring_slots - 1))
				errx(2, "bad --slots '%s' (a power of two)",
				    optarg);
			break;
		case 'C':
			ring_capacity = parse_u32("--capacity", optarg, 64,
			    RING_MAX_CAPACITY);
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			printf("%sRun a graph of snb apps.  See snb-run(1), "
			    "snb(7).\n", USAGE);
			return 0;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if ((file == NULL) == (argc == 0))
		usage();
	if (file) {
		text = read_file(file);
		snprintf(where, sizeof(where), "%s:", file);
	} else {
		/* Words are joined with spaces, as a shell would see them. */
		for (i = 0; i < argc; i++)
			len += strlen(argv[i]) + 1;
		if ((text = calloc(1, len + 1)) == NULL)
			err(1, NULL);
		for (i = 0; i < argc; i++) {
			strlcat(text, argv[i], len + 1);
			if (i + 1 < argc)
				strlcat(text, " ", len + 1);
		}
	}
	if (graph_parse(&g, text, errbuf, sizeof(errbuf)) == -1)
		errx(2, "%s%s", where, errbuf);

	procs = calloc((size_t)g.nstages, sizeof(*procs));
	infos = calloc((size_t)g.nstages, sizeof(*infos));
	if (procs == NULL || infos == NULL)
		err(1, NULL);
	for (i = 0; i < g.nstages; i++) {
		struct stage *s = &g.stages[i];
		for (j = 0; j < i; j++)
			if (strcmp(g.stages[j].app, s->app) == 0)
				break;
		if (j < i) {
			infos[i] = infos[j];
			strlcpy(procs[i].path, procs[j].path,
			    sizeof(procs[i].path));
		} else {
			if (find_app(s->app, procs[i].path,
			    sizeof(procs[i].path)) == -1)
				errx(2, "%s%d:%d: unknown app '%s' (no snb-%s "
				    "next to snb-run, in SNB_PATH or PATH)",
				    where, s->pos.line, s->pos.col, s->app,
				    s->app);
			if (describe(procs[i].path, &infos[i], errbuf,
			    sizeof(errbuf)) == -1)
				errx(2, "%s%d:%d: %s: %s", where, s->pos.line,
				    s->pos.col, s->app, errbuf);
		}
		s->info = &infos[i];
	}
	if (graph_check(&g, errbuf, sizeof(errbuf)) == -1)
		errx(2, "%s%s", where, errbuf);
	/* Stages may have merged (devices): look their binaries up again. */
	for (i = 0; i < g.nstages; i++)
		find_app(g.stages[i].app, procs[i].path, sizeof(procs[i].path));
	if (check_only) {
		print_plan();
		return 0;
	}

	if (name[0] == '\0') {
		base = file ? strrchr(file, '/') : NULL;
		base = base ? base + 1 : file;
		if (base && strcmp(base, "-"))
			snprintf(name, sizeof(name), "%.40s-%ld", base,
			    (long)getpid());
		else
			snprintf(name, sizeof(name), "graph-%ld",
			    (long)getpid());
		for (i = 0; name[i]; i++)
			if (!strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", name[i]))
				name[i] = '_';
	}
	/* Signals arrive through signalfd; block them before any child. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	make_graph_dir(name);
	create_rings();
	rc = supervise();
	if (print_stats)
		stage_totals();
	cleanup();
	for (i = 0; i < g.nstages; i++)
		free(procs[i].swap_info);
	graph_free(&g);
	free(procs);
	free(infos);
	free(text);
	return rc;
}
