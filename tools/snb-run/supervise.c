/*
 * supervise.c: snb-run's one event loop.  Everything it waits for is a
 * descriptor or a deadline: signals (signalfd), the control socket and
 * its clients, a swap's standby pipe, restart and drain timers.  Nothing
 * in it blocks, so reaping, restarts and Ctrl-C stay prompt while a
 * request is being served.
 *
 * How a stage's exit is read (DESIGN 6):
 *	exit 0, outputs closed (STAGE_FINISHED)	end of stream: done
 *	exit 0 after we asked it to leave		expected (swap, restart,
 *							stop)
 *	exit 0, STAGE_ENDED (app_end_graph)		the graph is done: stop
 *							it, status 0
 *	anything else					a failure, including a
 *							detach nobody asked for
 * A failure is restarted with --restart=on-failure unless it is final: the
 * stage failed at end of stream (STAGE_EOF), or its outputs are closed
 * already (it ended its stream itself).  A failure that is not restarted
 * makes the graph drain: the failed stage's outputs are closed, every
 * stage not downstream of it is asked to leave (and its outputs closed
 * when it has), and the stages downstream finish what was delivered
 * (one of them that fails meanwhile is restarted as ever, so that it too
 * gets everything delivered).
 * snb-run then exits with the first failure's status.
 */
#define _GNU_SOURCE
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "run.h"

static int	 first_fail;		/* exit status of the first failure */
static uint64_t	 drain_until;		/* draining after a failure */
static int	 stopping;		/* everything asked to leave */
static uint64_t	 stop_until;
static int	 signo;			/* the first signal that stopped us */

static void
report(int i, pid_t pid, int status, int st)
{
	if (WIFSIGNALED(status))
		warnx("%s (pid %ld) killed by signal %d (%s)",
		    g.stages[i].label, (long)pid, WTERMSIG(status),
		    strsignal(WTERMSIG(status)));
	else if (WEXITSTATUS(status) != 0)
		warnx("%s (pid %ld) exited with status %d%s", g.stages[i].label,
		    (long)pid, WEXITSTATUS(status), st == STAGE_EOF ?
		    " at end of stream" : "");
	else
		warnx("%s (pid %ld) left without closing its outputs (a "
		    "SIGTERM from outside?)", g.stages[i].label, (long)pid);
}

/* Is the graph stopping (a signal, snb-ctl stop, a stage that ended it)? */
int
graph_stopping(void)
{
	return stopping || stop_requested;
}

/* Ask stage i to leave (SIGTERM: it detaches at a breath boundary). */
static void
ask_to_leave(int i)
{
	procs[i].restart_at = 0;	/* nor is it started again */
	if (procs[i].pid == 0 || procs[i].leaving)
		return;
	procs[i].leaving = 1;
	kill(procs[i].pid, SIGTERM);
}

/* Stop everything now: SIGTERM, and SIGKILL after STOP_GRACE_MS. */
static void
stop_all(void)
{
	int i;

	op_abort();	/* a rolling swap or restart ends with it */
	for (i = 0; i < g.nstages; i++)
		ask_to_leave(i);
	if (!stopping)
		stop_until = now_ms() + STOP_GRACE_MS;
	stopping = 1;
}

/*
 * Stage i failed for good (status: snb-run's, if it is the first failure):
 * close its outputs, ask every stage that is not downstream of it to
 * leave, and let the rest drain.
 */
static void
drain_from(int i, int status)
{
	char *down;
	int j, more = 1;

	close_outputs(i);
	if ((down = calloc((size_t)g.nstages, 1)) == NULL)
		err(1, NULL);
	down[i] = 1;
	while (more)
		for (j = more = 0; j < g.nlinks; j++)
			if (down[g.links[j].from] && !down[g.links[j].to])
				down[g.links[j].to] = more = 1;
	for (j = 0; j < g.nstages; j++)
		if (!down[j]) {
			ask_to_leave(j);
			if (procs[j].pid == 0)
				close_outputs(j);
		}
	free(down);
	if (first_fail == 0)
		first_fail = status;
	if (drain_until == 0)
		drain_until = now_ms() + DRAIN_MS;
}

/*
 * Stage i's process pid left with status; asked: we had asked it to
 * leave.  Called with procs[i].pid already cleared.
 */
static void
stage_left(int i, pid_t pid, int status, int asked)
{
	struct proc *p = &procs[i];
	const char *label = g.stages[i].label;
	int st = stage_exit_state(i), delay;

	stage_ran(i);
	if (status == 0 && (st == STAGE_FINISHED || st == STAGE_ENDED)) {
		p->done = 1;
		/* Ended: like a pipeline whose reader left, everything stops. */
		if (st == STAGE_ENDED && verbose)
			warnx("%s ended the graph: stopping it", label);
		stop_requested |= st == STAGE_ENDED;
		return;
	}
	if (asked && (drain_until || stopping)) {
		/* Stopped while draining: its streams end here. */
		close_outputs(i);
		return;
	}
	if (asked) {
		/*
		 * We asked it to leave for a swap or restart that was called
		 * off (it was stopped, say): it leaves now; start it again.
		 */
		p->restarts++;
		warnx("%s left late (pid %ld): starting it again (restart %d)",
		    label, (long)pid, p->restarts);
		start_stage(i, 0);
		return;
	}
	if (stopping) {
		report(i, pid, status, st);
		return;
	}
	/*
	 * Did it fail to start?  Its first process (no restart, no swap yet)
	 * exited with a failure before its first breath: in its init() or
	 * start() it found something missing (a file it cannot create, a
	 * device that will not open) and said so.  That is final even with
	 * --restart=on-failure: restarting would say it again, so the graph
	 * stops at once with what the app said.  A process killed by a signal
	 * did not say anything: a restart may help it.
	 */
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && p->restarts == 0 &&
	    !p->swapped && !stage_breathed(i)) {
		warnx("%s%d:%d: %s (pid %ld) failed to start: exited with "
		    "status %d; stopping the graph", graph_where,
		    g.stages[i].pos.line, g.stages[i].pos.col, label,
		    (long)pid, WEXITSTATUS(status));
		drain_from(i, WEXITSTATUS(status));
		return;
	}
	report(i, pid, status, st);
	if (restart_on_failure && st == STAGE_EOF)
		warnx("%s failed at end of stream: not restarted", label);
	else if (restart_on_failure && outputs_closed(i))
		warnx("%s had ended its output streams: not restarted", label);
	else if (restart_on_failure && p->quick >= max_restarts)
		warnx("%s failed %d times in a row: stopping the graph", label,
		    p->quick + 1);
	else if (restart_on_failure) {
		/*
		 * Back off while a stage keeps failing quickly; one that ran
		 * a while starts again from the minimum (stage_ran()).
		 */
		delay = RESTART_MIN_MS << (p->quick < 6 ? p->quick : 6);
		if (delay > RESTART_MAX_MS)
			delay = RESTART_MAX_MS;
		p->quick++;
		p->restarts++;
		p->restart_at = now_ms() + (uint64_t)delay;
		warnx("restarting %s in %d ms (restart %d, %d of %d quick)",
		    label, delay, p->restarts, p->quick, max_restarts);
		return;
	}
	warnx("%s failed: draining what it delivered, stopping the rest",
	    label);
	/* status 0 unasked (a SIGTERM from outside?) is a failure too */
	drain_from(i, status == 0 ? 1 : WIFEXITED(status) ?
	    WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/*
 * A stage stopped (SIGSTOP, SIGTSTP) between a publish and the flush of
 * its batched wake-up (idle.h) would leave its peer asleep, with packets
 * waiting, until the idle cap: its peers are woken for it.  (SIGCHLD
 * comes for a stop too: its disposition is not SIG_IGN, nor SA_NOCLDSTOP.)
 */
static void
stopped(void)
{
	siginfo_t si;
	int i;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WSTOPPED | WNOHANG) == -1 ||
		    si.si_pid == 0)
			return;
		/* Its peers may wait on its wake-ups. */
		for (i = 0; i < g.nstages; i++)
			if (procs[i].pid == si.si_pid)
				stage_rings(i, ring_wake_peers, si.si_pid);
	}
}

/*
 * A stage stopped by a debugger (ptrace) is stopped to its tracer only:
 * no waitid() of ours sees it.  So every TRACED_TICK_MS, a stage that
 * leaves a peer asleep with work waiting is looked at in /proc: in a
 * tracing stop ('t'), its peers are woken as for a stop.
 */
#define TRACED_TICK_MS	250

static void
traced(void)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int i, fd;

	for (i = 0; i < g.nstages; i++) {
		if (procs[i].pid == 0 || !peer_waits_on(i))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat",
		    (long)procs[i].pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		/* "pid (comm) S ...": comm may hold anything, ')' included */
		if ((p = strrchr(buf, ')')) != NULL && p[1] == ' ' &&
		    p[2] == 't')
			stage_rings(i, ring_wake_peers, procs[i].pid);
	}
}

/* Reap every child that left, clearing its ring claims first. */
static void
reap(void)
{
	siginfo_t si;
	int i, status;
	pid_t pid;

	stopped();
	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == -1 ||
		    si.si_pid == 0)
			return;
		pid = si.si_pid;
		for (i = 0; i < g.nstages; i++)
			if (procs[i].pid == pid)
				break;
		/*
		 * While pid is a zombie nobody else can have it: clear its
		 * claims on the rings now, so that no waker ever signals a
		 * process that reuses the number.
		 */
		if (i < g.nstages)
			stage_rings(i, ring_forget, pid);
		while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
			;
		if (op_child_exited(pid, status) || i == g.nstages)
			continue;
		procs[i].pid = 0;
		stage_left(i, pid, status, procs[i].leaving);
		op_stage_left(i, pid, status);
	}
}

/* The signals snb-run reads through signalfd, blocked: the set. */
const sigset_t *
block_signals(void)
{
	static sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	return &set;
}

static uint64_t
earliest(uint64_t a, uint64_t b)
{
	return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

/*
 * The signals that arrived (signalfd sfd): each stops the graph, the
 * first one's number is snb-run's status.  Called before every stage
 * starts as well, so that a signal during start-up starts nothing more.
 */
static void
read_signals(int sfd)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		if (verbose || stopping)
			warnx("%s: stopping the graph%s",
			    strsignal((int)si.ssi_signo), stopping ?
			    " now" : "");
		if (stopping)	/* a second signal: no more grace */
			stop_until = 0;
		if (!signo)
			signo = (int)si.ssi_signo;
		stop_all();
	}
}

/*
 * Watch the graph's directory: removed (or renamed) from outside, with
 * its pid file or control socket, the graph could no longer be seen,
 * controlled or restarted (a stage's counter file is gone), so it stops.
 */
static int
watch_graph_dir(void)
{
	int fd;

	if ((fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1 ||
	    inotify_add_watch(fd, graph_dir, IN_DELETE_SELF | IN_MOVE_SELF |
	    IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR) == -1) {
		warn("inotify: %s: not watched", graph_dir);
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

static void
graph_dir_events(int fd)
{
	union {
		struct inotify_event	ev;	/* aligned as events are */
		char			buf[4096];
	} u;
	const struct inotify_event *ev;
	ssize_t n;
	char *p;
	int gone = 0;

	while ((n = read(fd, u.buf, sizeof(u.buf))) > 0)
		for (p = u.buf; p < u.buf + n; p += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)p;
			gone |= (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF |
			    IN_IGNORED)) || (ev->len &&
			    (strcmp(ev->name, "ctl") == 0 ||
			    strcmp(ev->name, "snb-run.pid") == 0));
		}
	if (!gone || stopping)
		return;
	warnx("%s: the graph's directory was removed from outside: stopping "
	    "the graph", graph_dir);
	if (first_fail == 0)
		first_fail = 1;
	stop_all();
}

int
supervise(void)
{
	struct pollfd pfd[64];
	uint64_t now, next, traced_at = 0;
	int i, n, live, sfd, cfd, wfd, timeout;

	if ((sfd = signalfd(-1, block_signals(), SFD_CLOEXEC |
	    SFD_NONBLOCK)) == -1)
		err(1, "signalfd");
	cfd = ctl_listen();
	wfd = watch_graph_dir();
	for (i = 0; i < g.nstages; i++) {
		read_signals(sfd);
		if (stopping)
			break;
		start_stage(i, 0);
	}
	for (;;) {
		reap();
		if (stop_requested && !stopping)
			stop_all();
		now = now_ms();
		next = earliest(op_timers(now), srv_timers(&ctl_srv, now));
		if (!stopping && now >= traced_at) {
			traced();
			traced_at = now + TRACED_TICK_MS;
		}
		if (!stopping)
			next = earliest(next, traced_at);
		if (stopping && now >= stop_until) {
			for (i = 0; i < g.nstages; i++)
				if (procs[i].pid)
					kill(procs[i].pid, SIGKILL);
		} else if (stopping)
			next = earliest(next, stop_until);
		if (drain_until && !stopping && now >= drain_until) {
			warnx("the graph did not drain in %d ms: stopping it",
			    DRAIN_MS);
			stop_all();
			continue;
		} else if (drain_until)
			next = earliest(next, drain_until);
		/* Draining, only stages downstream of the failure restart. */
		for (i = live = 0; i < g.nstages; i++) {
			if (procs[i].restart_at && procs[i].restart_at <= now) {
				procs[i].restart_at = 0;
				start_stage(i, 0);
			}
			next = earliest(next, procs[i].restart_at);
			live += procs[i].pid != 0 || procs[i].restart_at != 0;
		}
		if (live == 0 && !op_busy()) {
			/* The graph has ended: answer whoever still waits. */
			srv_end(&ctl_srv);
			break;
		}
		/* wfd (not watched) and op_fd() (none) may be -1: skipped */
		pfd[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = wfd, .events = POLLIN };
		pfd[2] = (struct pollfd){ .fd = op_fd(), .events = POLLIN };
		n = 3 + srv_pollfds(&ctl_srv, &pfd[3], 64 - 3);
		timeout = next ? (int)(next > now ? next - now : 0) : -1;
		if (poll(pfd, (nfds_t)n, timeout) <= 0)
			continue;
		if (pfd[2].revents)
			op_event();
		srv_events(&ctl_srv, pfd + 3, n - 3);
		if (pfd[1].revents)
			graph_dir_events(wfd);
		read_signals(sfd);
	}
	close(sfd);
	close(cfd);
	if (wfd != -1)
		close(wfd);
	return signo ? 128 + signo : first_fail;
}
