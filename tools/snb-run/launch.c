/*
 * launch.c: a graph's files and processes: rings and stage files, finding
 * and describing apps, spawning a stage, and reading what a stage left
 * behind when it exits (how it left, the state of its rings).
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "app.h"
#include "rundir.h"
#include "run.h"
#include "stage.h"

/* One read-write view per link: close a dead producer's ring, forget. */
static struct ring	*owners;

/*
 * Start `path --describe`, its standard output into a pipe: *fd gets its
 * reading end (close-on-exec, non-blocking).  Returns the child's pid.
 */
pid_t
describe_spawn(const char *path, int *fd)
{
	sigset_t none;
	int fds[2], devnull;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) == -1)
		err(1, "pipe");
	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		/* Not after us; and the signals snb-run may block, open. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		devnull = open("/dev/null", O_RDWR);
		dup2(fds[1], 1);
		dup2(devnull, 0);
		dup2(devnull, 2);
		execl(path, path, "--describe", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	*fd = fds[0];
	return pid;
}

/*
 * What fd (non-blocking) holds now, added to buf (*len bytes so far, room
 * kept for a NUL): 1 once that is all (end of file, buf full), else 0.
 */
int
pipe_drain(int fd, char *buf, size_t *len, size_t size)
{
	ssize_t n = 0;

	while (*len < size - 1 && (n = read(fd, buf + *len, size - 1 -
	    *len)) > 0)
		*len += (size_t)n;
	return *len == size - 1 || n == 0 || (errno != EAGAIN &&
	    errno != EINTR);
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/*
 * Run `path --describe` and keep what it says in buf (len bytes at most,
 * NUL included), waiting for it: before the graph starts.  An app that
 * says nothing within DESCRIBE_MS is killed.  (A swap's replacement is
 * described by op.c from the supervisor's loop, without waiting.)
 *
 * The answer is complete when the pipe ends or when the app exits,
 * whichever comes first: a process the app left behind (a wrapper
 * script's background job) may hold the pipe open long after, and
 * waiting for its end alone cost every start-up DESCRIBE_MS.  The exit
 * is seen on a pidfd (Linux 5.3); without one, the pipe's end it is.
 */
int
describe_text(const char *path, char *buf, size_t buflen, char *errbuf,
    size_t errlen)
{
	struct pollfd pfd[2];
	uint64_t deadline = now_ms() + DESCRIBE_MS;
	size_t len = 0;
	int status;
	pid_t pid;

	pid = describe_spawn(path, &pfd[0].fd);
	pfd[0].events = POLLIN;
	pfd[1].fd = (int)syscall(SYS_pidfd_open, pid, 0);	/* -1: skipped */
	pfd[1].events = POLLIN;
	/* Its end, or its exit: what it wrote is in the pipe by then. */
	while (now_ms() < deadline)
		if (poll(pfd, 2, (int)(deadline - now_ms())) > 0 &&
		    (pipe_drain(pfd[0].fd, buf, &len, buflen) ||
		    pfd[1].revents))
			break;
	buf[len] = '\0';
	close(pfd[0].fd);
	if (pfd[1].fd != -1)
		close(pfd[1].fd);
	kill(pid, SIGKILL);	/* if it is still there, it failed */
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(errbuf, errlen, "%s --describe failed", path);
		return -1;
	}
	return 0;
}

static void
ring_path(const struct link *l, char *out, size_t len)
{
	/* ':' and '=' appear in no label or port: names cannot collide. */
	snprintf(out, len, "%s/rings/%s:%s=%s:%s", graph_dir,
	    g.stages[l->from].label, l->from_port, g.stages[l->to].label,
	    l->to_port);
}

void
stage_path(int i, char *out, size_t len)
{
	snprintf(out, len, "%s/%s.stage", graph_dir, g.stages[i].label);
}

/* The labels in the graph's order, for snb-top (see rundir.h). */
static void
write_stage_order(void)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s/stages", graph_dir);
	snprintf(tmp, sizeof(tmp), "%s/.stages", graph_dir);
	if ((f = fopen(tmp, "we")) == NULL) {
		warn("%s", tmp);
		die_cleanup(1);
	}
	for (i = 0; i < g.nstages; i++)
		fprintf(f, "%s\n", g.stages[i].label);
	if (fclose(f) == EOF || rename(tmp, path) == -1) {
		warn("%s", path);
		die_cleanup(1);
	}
}

/*
 * Every ring of the graph, each with the launcher's own view.  When the
 * huge page pool runs out half-way (it had free pages, not enough), the
 * whole graph's rings go to tmpfs instead: one place, said by show.
 */
void
create_rings(void)
{
	char path[PATH_MAX], errbuf[512];
	int i, j, retried = 0;

	write_stage_order();
	if ((owners = calloc((size_t)g.nlinks + 1, sizeof(*owners))) == NULL)
		err(1, NULL);
	for (i = 0; i < g.nlinks; i++) {
		ring_path(&g.links[i], path, sizeof(path));
		if (ring_create(path, ring_slots, ring_capacity,
		    g.links[i].leaky ? RING_FLAG_LEAKY : 0) == -1) {
			snprintf(errbuf, sizeof(errbuf), "%s/rings", graph_dir);
			if ((errno == ENOMEM || errno == ENOSPC) && !retried &&
			    snb_is_hugetlbfs(errbuf, NULL)) {
				warnx("%s: not enough free huge pages for the "
				    "graph's rings: rings in tmpfs", path);
				for (j = 0; j < i; j++) {
					ring_detach(&owners[j]);
					ring_path(&g.links[j], path,
					    sizeof(path));
					unlink(path);
				}
				if (snb_rings_to_tmpfs(graph_dir, errbuf,
				    sizeof(errbuf)) == -1) {
					warnx("%s", errbuf);
					die_cleanup(1);
				}
				retried = 1;
				i = -1;
				continue;
			}
			warn("%s", path);
			die_cleanup(1);
		}
		if (ring_attach(&owners[i], path, RING_OWNER, errbuf,
		    sizeof(errbuf)) == -1) {
			warnx("%s", errbuf);
			die_cleanup(1);
		}
	}
}

/* argv[(*a)++], made as printf would. */
static void __attribute__((format(printf, 3, 4)))
arg(char **argv, int *a, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&argv[(*a)++], fmt, ap);
	va_end(ap);
	if (n == -1)
		err(1, NULL);
}

/*
 * Fork and exec stage i's app (exe with words), bound to the stage's
 * rings.  stats is the counter file.  told not NULL: a pipe on which the
 * process speaks to us, its reading end (non-blocking) into *told; with
 * prev, its predecessor's stage file, it starts in standby (a swap),
 * without, it only says when it has taken over (a restart).  stats NULL:
 * only check the words (--snb-check, snb-run -c), the rings need not exist;
 * its standard error goes to a memfd, returned in *told.
 */
pid_t
spawn(int i, const char *exe, char **words, int nwords, const char *stats,
    int *told, const char *prev)
{
	struct stage *s = &g.stages[i];
	char **argv, path[PATH_MAX];
	sigset_t none;
	int a = 0, nfree, j, nargs = 0, fds[2];
	pid_t parent = getpid(), pid;

	/* A link from the stage to itself is an input and an output. */
	for (j = 0; j < g.nlinks; j++)
		nargs += (g.links[j].from == i) + (g.links[j].to == i);
	argv = calloc((size_t)(nargs + nwords + 8), sizeof(char *));
	if (argv == NULL)
		err(1, NULL);
	argv[a++] = (char *)exe;
	arg(argv, &a, "--snb-label=%s", s->label);
	if (stats == NULL) {
		arg(argv, &a, "--snb-check=%u:%u", ring_slots, ring_capacity);
		if ((*told = memfd_create("snb-run-check", MFD_CLOEXEC)) == -1)
			err(1, "memfd_create");
	} else {
		arg(argv, &a, "--snb-stats=%s", stats);
		arg(argv, &a, "--snb-restarts=%d", procs[i].restarts);
	}
	if (told != NULL && stats != NULL) {
		if (pipe2(fds, O_CLOEXEC) == -1)
			err(1, "pipe");
		/* Only the child's end survives exec. */
		fcntl(fds[1], F_SETFD, 0);
		arg(argv, &a, prev ? "--snb-standby-fd=%d" :
		    "--snb-taken-fd=%d", fds[1]);
		if (prev != NULL)
			arg(argv, &a, "--snb-prev=%s", prev);
	}
	for (j = 0; j < g.nlinks; j++) {
		struct link *l = &g.links[j];
		ring_path(l, path, sizeof(path));
		if (l->to == i)
			arg(argv, &a, "--snb-in=%s=%s", l->to_port, path);
		if (l->from == i)
			arg(argv, &a, "--snb-out=%s=%s", l->from_port, path);
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
		if (stats == NULL)
			dup2(*told, 2);
		execv(argv[0], argv);
		warn("%s", argv[0]);
		_exit(127);
	}
	if (told != NULL && stats != NULL) {
		close(fds[1]);
		fcntl(fds[0], F_SETFL, O_NONBLOCK);
		*told = fds[0];
	}
	if (verbose && stats)
		warnx("started %s (pid %ld)", s->label, (long)pid);
	for (j = 1; j < nfree; j++)
		free(argv[j]);
	free(argv);
	return pid;
}

/*
 * Start stage i.  told: with a pipe on which it says when it has claimed
 * its rings and started (a NUL byte), for op.c's answer to a restart;
 * its reading end is returned, else -1.
 */
int
start_stage(int i, int told)
{
	char stats[PATH_MAX];
	int fd = -1;

	stage_path(i, stats, sizeof(stats));
	procs[i].pid = spawn(i, procs[i].kind->path, g.stages[i].argv,
	    g.stages[i].argc, stats, told ? &fd : NULL, NULL);
	procs[i].done = 0;
	procs[i].leaving = 0;
	procs[i].started = now_ms();
	return fd;
}

/*
 * Stage i's process left: one that had run a while ends a row of quick
 * failures, whether it failed or we asked it to leave (a swap, a
 * restart), so that --max-restarts counts failures in a row, not those
 * of every replacement over the graph's life.
 */
void
stage_ran(int i)
{
	if (now_ms() - procs[i].started >= QUICK_FAIL_MS)
		procs[i].quick = 0;
}

/* Stage i's counter file into f: 0, or -1 if it is gone or not one. */
static int
read_stage(int i, struct stage_file *f)
{
	char path[PATH_MAX];
	int fd, ok;

	stage_path(i, path, sizeof(path));
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	ok = pread(fd, f, sizeof(*f), 0) == (ssize_t)sizeof(*f) &&
	    f->magic == STAGE_MAGIC;
	close(fd);
	return ok ? 0 : -1;
}

/* How stage i's last process left (STAGE_* of app.h). */
int
stage_exit_state(int i)
{
	struct stage_file f;

	return read_stage(i, &f) == 0 ? (int)f.exit_state : STAGE_RUNNING;
}

/*
 * Has stage i ever taken a breath?  0 when its counter file is missing
 * (the app never got that far) or counts none: it left in its init() or
 * start(), before it worked.  One that moved packets through its rings
 * has worked, even if it failed in its first breath, before the breath
 * was counted (a short capture cut in the middle).
 */
int
stage_breathed(int i)
{
	struct stage_file f;
	int j;

	if (read_stage(i, &f) == 0 && f.breaths > 0)
		return 1;
	for (j = 0; j < g.nlinks; j++)
		if ((g.links[j].from == i &&
		    atomic_load(&owners[j].shm->prod.head) > 0) ||
		    (g.links[j].to == i &&
		    atomic_load(&owners[j].shm->cons.tail) > 0))
			return 1;
	return 0;
}

/* fn(ring, pid) on each ring of stage i (ring_forget, ring_wake_peers). */
void
stage_rings(int i, void (*fn)(struct ring *, pid_t), pid_t pid)
{
	int j;

	for (j = 0; j < g.nlinks; j++)
		if (g.links[j].from == i || g.links[j].to == i)
			fn(&owners[j], pid);
}

/* Does a peer of stage i sleep on a ring where i left it work to do? */
int
peer_waits_on(int i)
{
	const struct ring_shm *m;
	uint64_t used;
	int j;

	for (j = 0; j < g.nlinks; j++) {
		m = owners[j].shm;
		used = atomic_load(&m->prod.head) - atomic_load(&m->cons.tail);
		if ((g.links[j].from == i && used > 0 &&
		    atomic_load(&m->cons.waiting)) ||
		    (g.links[j].to == i && used < m->hdr.nslots &&
		    atomic_load(&m->prod.waiting)))
			return 1;
	}
	return 0;
}

/* End stage i's output streams, as the death of a pipe's writer does;
 * a failure cut them (RING_FAILED: nothing downstream mistakes them for
 * whole streams). */
void
close_outputs(int i)
{
	int j;

	for (j = 0; j < g.nlinks; j++)
		if (g.links[j].from == i)
			ring_close(&owners[j], RING_FAILED);
}

/* Stage i has outputs and every one is closed: it has nothing to do. */
int
outputs_closed(int i)
{
	int j, n = 0;

	for (j = 0; j < g.nlinks; j++)
		if (g.links[j].from == i) {
			if (!atomic_load(&owners[j].shm->prod.closed))
				return 0;
			n++;
		}
	return n > 0;
}

void
rings_show(FILE *out)
{
	int i;

	for (i = 0; i < g.nlinks; i++) {
		struct link *l = &g.links[i];
		struct ring *r = &owners[i];
		fprintf(out, "link %s.%s -> %s.%s fill %llu/%llu packets %llu"
		    "%s\n", g.stages[l->from].label, l->from_port,
		    g.stages[l->to].label, l->to_port,
		    (unsigned long long)ring_fill(r),
		    (unsigned long long)r->mask + 1,
		    (unsigned long long)atomic_load(&r->shm->prod.head),
		    atomic_load(&r->shm->prod.closed) ? " closed" : "");
	}
}

/*
 * --stats: each stage's totals from its counter file, before cleanup()
 * removes it.  Busy time is what the stage spent in breaths that moved
 * packets, so busy/packet is its cost on a core whatever else ran.
 */
void
stage_totals(void)
{
	struct stage_file f;
	double busy;
	uint64_t n;
	int i;

	for (i = 0; i < g.nstages; i++) {
		if (read_stage(i, &f) == -1)
			continue;
		busy = f.busy_ns / 1e9;
		n = f.packets_in > f.packets_out ? f.packets_in : f.packets_out;
		fprintf(stderr, "snb-run: stage %s (%s): %llu in, %llu out, busy "
		    "%.3f s", g.stages[i].label, g.stages[i].app,
		    (unsigned long long)f.packets_in,
		    (unsigned long long)f.packets_out, busy);
		if (n > 0)
			fprintf(stderr, ", %.1f ns per packet, %.2f Mpps per "
			    "core", f.busy_ns / (double)n, busy > 0 ?
			    n / busy / 1e6 : 0.0);
		/* a breath's units need not be packets: lwaftr's are in +
		 * out */
		if (n > 0 && f.busy_units > 0)
			fprintf(stderr, "; typical breath %.1f ns per packet",
			    stage_busy_median(&f) * f.busy_units / n);
		fprintf(stderr, "\n");
	}
}

/*
 * Remove the graph directory and everything in it, and the run directory
 * if we made it and no other graph is in it.
 */
void
cleanup(void)
{
	char errbuf[512];
	int i;

	if (graph_dir[0] == '\0')
		return;
	for (i = 0; owners && i < g.nlinks; i++)
		ring_detach(&owners[i]);
	free(owners);
	owners = NULL;
	if (snb_graph_remove(graph_dir, errbuf, sizeof(errbuf)) == -1)
		warnx("%s", errbuf);
	graph_dir[0] = '\0';
	snb_run_dir_release();
}

void
die_cleanup(int status)
{
	cleanup();
	exit(status);
}
