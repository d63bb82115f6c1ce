/*
 * op.c: swap and restart, as state machines driven by the supervisor's
 * loop (one at a time).
 *
 * swap:	describe the replacement and check its ports
 *	-> STANDBY	it runs, bound to the rings, in standby: its init()
 *			checks everything, its stderr comes to us; it says
 *			ready (a NUL byte) or exits (refused: its words go
 *			back to snb-ctl)
 *	-> RETIRING	SIGTERM to the old stage: it finishes its breath and
 *			detaches (the stall starts here)
 *	-> done		the old one left: SIGUSR1, the replacement takes over
 * restart:
 *	-> RETIRING	SIGTERM (SIGKILL after OP_RETIRE_MS)
 *	-> done		the old one left: start the stage again, counted as
 *			a restart, so it continues its predecessor's work
 *
 * Called off: a replacement that does not become ready is killed (it has
 * claimed nothing); an old stage that does not leave in time (stopped,
 * say) keeps running, the replacement is dismissed, and the old stage is
 * started again whenever it does leave (supervise.c).  If the old stage
 * reaches end of stream while retiring, there is nothing to take over.
 */
#define _GNU_SOURCE
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

#include "app.h"
#include "run.h"

#define OP_READY_MS	10000	/* a replacement's init() */
#define OP_RETIRE_MS	5000	/* the old stage's last breath */
#define OP_KILL_MS	2000

enum { OP_NONE, OP_STANDBY, OP_RETIRING };

static struct {
	int		 state;
	int		 restart;	/* a restart, not a swap */
	int		 stage;
	int		 client;	/* ctl_reply id */
	int		 fd;		/* the standby pipe, -1 */
	int		 killed;	/* restart: the old one got SIGKILL */
	pid_t		 old, new;
	uint64_t	 deadline, t0;
	char		**words;	/* the replacement: app, args */
	int		 nwords;
	struct app_info	*info;
	char		 path[PATH_MAX], stats[PATH_MAX], tmp[PATH_MAX];
	size_t		 msglen;
	char		 msg[4096];	/* what the replacement said */
} op;

int
op_busy(void)
{
	return op.state != OP_NONE;
}

static void
op_clear(void)
{
	if (op.fd != -1)
		close(op.fd);
	op.fd = -1;
	graph_words_free(op.words);
	op.words = NULL;
	free(op.info);
	op.info = NULL;
	op.state = OP_NONE;
}

/* The replacement's own words, trimmed, for an error reply. */
static const char *
op_said(void)
{
	while (op.msglen > 0 && (op.msg[op.msglen - 1] == '\n' ||
	    op.msg[op.msglen - 1] == '\0'))
		op.msglen--;
	op.msg[op.msglen] = '\0';
	return op.msg;
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

void
op_swap(int i, const char *spec, int client)
{
	char errbuf[512];
	int fds[2];

	op.fd = -1;
	op.stage = i;
	op.client = client;
	op.restart = 0;
	op.msglen = 0;
	if ((op.words = graph_words(spec, &op.nwords, errbuf,
	    sizeof(errbuf))) == NULL) {
		ctl_reply(client, "error: %s\n", errbuf);
		return;
	}
	if (op.nwords == 0 || strchr(op.words[0], '/') ||
	    find_app(op.words[0], op.path, sizeof(op.path)) == -1) {
		ctl_reply(client, "error: unknown app '%s'\n", op.nwords ?
		    op.words[0] : "");
		op_clear();
		return;
	}
	if ((op.info = calloc(1, sizeof(*op.info))) == NULL)
		err(1, NULL);
	if (describe(op.path, op.info, errbuf, sizeof(errbuf)) == -1 ||
	    ports_fit(i, op.info, errbuf, sizeof(errbuf)) == -1) {
		ctl_reply(client, "error: %s; %s keeps running\n", errbuf,
		    g.stages[i].label);
		op_clear();
		return;
	}
	if ((op.old = procs[i].pid) == 0 || procs[i].leaving) {
		ctl_reply(client, "error: %s is not running\n",
		    g.stages[i].label);
		op_clear();
		return;
	}
	stage_path(i, op.stats, sizeof(op.stats));
	snprintf(op.tmp, sizeof(op.tmp), "%s.new", op.stats);
	if (pipe2(fds, O_CLOEXEC) == -1)
		err(1, "pipe");
	/* The child's end must survive exec: only it is not close-on-exec. */
	fcntl(fds[1], F_SETFD, 0);
	op.new = spawn(i, op.path, op.words + 1, op.nwords - 1, op.tmp,
	    fds[1], op.stats);
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	op.fd = fds[0];
	op.state = OP_STANDBY;
	op.deadline = now_ms() + OP_READY_MS;
}

void
op_restart(int i, int client)
{
	op.fd = -1;
	op.stage = i;
	op.client = client;
	op.restart = 1;
	op.killed = 0;
	if ((op.old = procs[i].pid) == 0 || procs[i].leaving) {
		ctl_reply(client, "error: %s is not running\n",
		    g.stages[i].label);
		return;
	}
	procs[i].leaving = 1;
	kill(op.old, SIGTERM);
	op.state = OP_RETIRING;
	op.deadline = now_ms() + OP_RETIRE_MS;
}

int
op_pollfd(struct pollfd *pfd)
{
	if (op.state != OP_STANDBY || op.fd == -1)
		return 0;
	pfd->fd = op.fd;
	pfd->events = POLLIN;
	return 1;
}

int
op_pollfd_is(int fd)
{
	return op.state == OP_STANDBY && op.fd != -1 && fd == op.fd;
}

/* The standby pipe: the replacement's words, then NUL (ready) or EOF. */
void
op_event(short revents)
{
	char buf[512], *nul;
	ssize_t n;
	size_t k;

	n = read(op.fd, buf, sizeof(buf));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {	/* it exited: its status comes with SIGCHLD */
		close(op.fd);
		op.fd = -1;
		return;
	}
	nul = memchr(buf, '\0', (size_t)n);
	k = nul ? (size_t)(nul - buf) : (size_t)n;
	if (k > sizeof(op.msg) - 1 - op.msglen)
		k = sizeof(op.msg) - 1 - op.msglen;
	memcpy(op.msg + op.msglen, buf, k);
	op.msglen += k;
	if (nul == NULL)
		return;
	/* Ready: retire the old stage at a breath boundary. */
	close(op.fd);
	op.fd = -1;
	if (op.msglen)	/* warnings of an app that then went on */
		warnx("%s (replacement): %s", g.stages[op.stage].label,
		    op_said());
	op.t0 = app_now_ns();
	procs[op.stage].leaving = 1;
	kill(op.old, SIGTERM);
	op.state = OP_RETIRING;
	op.deadline = now_ms() + OP_RETIRE_MS;
}

/* The swap is complete: the replacement is the stage from now on. */
static void
take_over(void)
{
	struct stage *s = &g.stages[op.stage];
	struct proc *p = &procs[op.stage];
	uint64_t t1;
	int k;

	if (rename(op.tmp, op.stats) == -1)
		warn("%s", op.tmp);
	kill(op.new, SIGUSR1);
	t1 = app_now_ns();
	p->pid = op.new;
	p->leaving = 0;
	p->started = now_ms();
	free(p->path);
	if ((p->path = strdup(op.path)) == NULL)
		err(1, NULL);
	for (k = 0; k < s->argc; k++)
		free(s->argv[k]);
	free(s->argv);
	strlcpy(s->app, op.words[0], sizeof(s->app));
	free(op.words[0]);
	memmove(op.words, op.words + 1, (size_t)op.nwords * sizeof(char *));
	s->argv = op.words;
	s->argc = op.nwords - 1;
	op.words = NULL;
	free(p->swap_info);
	p->swap_info = op.info;
	s->info = op.info;
	op.info = NULL;
	ctl_reply(op.client, "ok: swapped %s: pid %ld -> %ld, stall %.3f ms\n",
	    s->label, (long)op.old, (long)op.new, (t1 - op.t0) / 1e6);
	warnx("swapped %s to %s (pid %ld -> %ld), stall %.3f ms", s->label,
	    s->app, (long)op.old, (long)op.new, (t1 - op.t0) / 1e6);
	op_clear();
}

/* The old stage of a swap or restart left with status. */
static void
old_left(int status)
{
	int i = op.stage, st = stage_exit_state(i);

	procs[i].pid = 0;
	if (status == 0 && st == STAGE_FINISHED) {
		/* End of stream came first: nothing to take over. */
		procs[i].done = 1;
		if (!op.restart) {
			kill(op.new, SIGTERM);
			unlink(op.tmp);
		}
		ctl_reply(op.client, "error: %s reached end of stream before "
		    "the %s\n", g.stages[i].label, op.restart ? "restart" :
		    "swap");
		op_clear();
		return;
	}
	if (status != 0 && !op.killed)
		warnx("%s (pid %ld) left with status %d", g.stages[i].label,
		    (long)op.old, WIFEXITED(status) ? WEXITSTATUS(status) :
		    128 + WTERMSIG(status));
	if (!op.restart) {
		take_over();
		return;
	}
	procs[i].restarts++;
	start_stage(i);
	ctl_reply(op.client, "ok: restarted %s: pid %ld -> %ld\n",
	    g.stages[i].label, (long)op.old, (long)procs[i].pid);
	if (verbose)
		warnx("restarted %s (pid %ld -> %ld)", g.stages[i].label,
		    (long)op.old, (long)procs[i].pid);
	op_clear();
}

/* A child left: 1 if it was ours (the replacement, or the old stage). */
int
op_child_exited(pid_t pid, int status)
{
	if (op.state == OP_NONE)
		return 0;
	if (!op.restart && pid == op.new) {
		/* Before takeover: it refused, or it died. */
		if (op.fd != -1) {
			op_event(POLLIN);	/* whatever it wrote last */
			if (op.fd != -1) {
				close(op.fd);
				op.fd = -1;
			}
		}
		unlink(op.tmp);
		if (op.state == OP_RETIRING)	/* the old one goes on */
			procs[op.stage].leaving = 1;
		ctl_reply(op.client, "error: replacement %s failed to start "
		    "(%s %d)%s%s; %s keeps running\n", op.words[0],
		    WIFSIGNALED(status) ? "signal" : "status",
		    WIFSIGNALED(status) ? WTERMSIG(status) :
		    WEXITSTATUS(status), op.msglen ? ": " : "", op_said(),
		    g.stages[op.stage].label);
		op_clear();
		return 1;
	}
	if (pid == op.old && op.state == OP_RETIRING) {
		old_left(status);
		return 1;
	}
	return 0;
}

uint64_t
op_timers(uint64_t now)
{
	if (op.state == OP_NONE)
		return 0;
	if (now < op.deadline)
		return op.deadline;
	if (op.state == OP_STANDBY) {
		kill(op.new, SIGKILL);	/* reaped as a stranger: not ours */
		unlink(op.tmp);
		ctl_reply(op.client, "error: replacement %s not ready in %d "
		    "ms%s%s; %s keeps running\n", op.words[0], OP_READY_MS,
		    op.msglen ? ": " : "", op_said(),
		    g.stages[op.stage].label);
		op_clear();
		return 0;
	}
	if (op.restart && !op.killed) {
		/* A restart goes ahead: the stage's own state hands over. */
		kill(op.old, SIGKILL);
		op.killed = 1;
		op.deadline = now + OP_KILL_MS;
		return op.deadline;
	}
	if (!op.restart)
		kill(op.new, SIGTERM);	/* standby: it leaves untouched */
	unlink(op.tmp);
	ctl_reply(op.client, "error: %s (pid %ld) did not stop in %d ms; "
	    "%s called off (it is started again when it leaves)\n",
	    g.stages[op.stage].label, (long)op.old, op.restart ? OP_RETIRE_MS
	    + OP_KILL_MS : OP_RETIRE_MS, op.restart ? "restart" : "swap");
	op_clear();
	return 0;
}

/* Stopping the graph: no swap or restart goes on. */
void
op_abort(void)
{
	if (op.state == OP_NONE)
		return;
	if (!op.restart && op.new > 0)
		kill(op.new, SIGKILL);
	unlink(op.tmp);
	ctl_reply(op.client, "error: the graph is stopping\n");
	op_clear();
}
