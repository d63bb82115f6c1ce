/*
 * op.c: swap and restart, one state machine driven by the supervisor's
 * loop (one operation at a time).
 *
 *	swap:
 *	-> DESCRIBE	the replacement's --describe runs; its answer is
 *			read from the loop as it comes (an app that takes
 *			its time holds up nothing else: a stage that dies
 *			meanwhile is restarted, snb-ctl show answered), then
 *			its ports are checked (graph_stage_fit)
 *	-> STANDBY	it runs, bound to the rings, in standby: its init()
 *			checks everything, its stderr comes to us; it says
 *			ready (a NUL byte) or exits (refused: its words go
 *			back to snb-ctl)
 *	restart, or swap when ready:
 *	-> RETIRING	SIGTERM to the old stage: it finishes its breath and
 *			detaches (a swap's stall starts here)
 *	-> KILLED	restart only: SIGKILL after OP_RETIRE_MS
 *	-> TAKING	swap: the old one left, the replacement is the
 *			stage and is told to take over (SIGUSR1)
 *	-> NONE		a swap's replacement said it has claimed its rings
 *			and started (a second NUL byte): only now is the
 *			swap answered ok; a restart starts the stage again,
 *			counted as a restart, so it continues its
 *			predecessor's work, and is answered ok once the new
 *			process says the same (a NUL byte on its pipe)
 *
 * Every way out goes through op_end(), which answers snb-ctl.  Called off:
 * a replacement that does not become ready is killed (it has claimed
 * nothing); an old stage that does not leave in time (stopped, say) keeps
 * running, the replacement is dismissed, and the old stage is started
 * again whenever it does leave (supervise.c).  If the old stage reaches
 * end of stream while retiring, there is nothing to take over; if it
 * leaves before its replacement is ready, the swap is called off.  A
 * replacement that dies while it takes over is the stage by then: the
 * supervisor restarts it or drains the graph as for any failure, and the
 * answer says which.
 */
#define _GNU_SOURCE
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
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

enum op_state {
	OP_NONE,
	OP_DESCRIBE,	/* swap: the replacement's --describe runs */
	OP_STANDBY,	/* swap: the replacement starts, in standby */
	OP_RETIRING,	/* the old stage was sent SIGTERM */
	OP_KILLED,	/* restart: and SIGKILL, after OP_RETIRE_MS */
	OP_TAKING	/* told to take over, or started again (restart) */
};

static struct {
	enum op_state	 state;
	int		 restart;	/* a restart, not a swap */
	int		 stage;
	int		 client;	/* ctl_reply id */
	int		 fd;		/* describe or standby pipe, -1 */
	pid_t		 old, new;	/* new: the replacement, or the stage
					   restarted (OP_TAKING); 0 once gone */
	pid_t		 describer;	/* its --describe; 0 once reaped */
	uint64_t	 deadline, t0;
	char		**words;	/* the replacement: app, args */
	int		 nwords;
	struct app_kind	*kind;		/* the replacement's app */
	char		 stats[PATH_MAX], tmp[PATH_MAX];
	size_t		 msglen;
	char		 msg[4096];	/* what the replacement said */
	size_t		 desclen;
	char		 desc[DESCRIBE_MAX];	/* its --describe */
} op = { .fd = -1 };

int
op_busy(void)
{
	return op.state != OP_NONE;
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

/*
 * The one way a swap or restart ends, well or not: the replacement (if
 * one is still ours) gets sig, its counter file goes, the client gets
 * the reply.
 */
static void __attribute__((format(printf, 2, 3)))
op_end(int sig, const char *fmt, ...)
{
	char reply[sizeof(op.msg) + 1024];
	int client = op.client;
	va_list ap;

	if (op.new > 0 && sig && op.state < OP_TAKING)
		kill(op.new, sig);
	if (op.describer > 0)	/* its answer is of no use now */
		kill(op.describer, SIGKILL);
	if (op.tmp[0])
		unlink(op.tmp);
	if (op.fd != -1)
		close(op.fd);
	va_start(ap, fmt);
	vsnprintf(reply, sizeof(reply), fmt, ap);
	va_end(ap);
	graph_words_free(op.words);
	free(op.kind);
	memset(&op, 0, sizeof(op));	/* OP_NONE, nothing said */
	op.fd = -1;
	/* Last: a rolling swap may start on its next copy from here. */
	if (client == ROLL_CLIENT)
		roll_answer(reply);
	else
		ctl_reply(client, "%s", reply);
}

/* Start an operation on stage i: 0, or -1 (answered) if it cannot be. */
static int
op_start(int i, int client, int restart)
{
	op.stage = i;
	op.client = client;
	op.restart = restart;
	op.old = procs[i].pid;
	if (op.old != 0 && !procs[i].leaving)
		return 0;
	op_end(0, "error: %s is not running\n", g.stages[i].label);
	return -1;
}

/* SIGTERM to the old stage: it leaves at a breath boundary. */
static void
retire(void)
{
	procs[op.stage].leaving = 1;
	kill(op.old, SIGTERM);
	op.state = OP_RETIRING;
	op.deadline = now_ms() + OP_RETIRE_MS;
}

/*
 * A swap starts: the replacement's words and executable, then its
 * --describe.
 */
void
op_swap(int i, const char *spec, int client)
{
	char near[APP_NAME_MAX] = "", why[1024];
	const char *label = g.stages[i].label, *mark;
	int k;

	if (op_start(i, client, 0) == -1)
		return;
	if ((op.kind = calloc(1, sizeof(*op.kind))) == NULL)
		err(1, NULL);
	if ((op.words = graph_words(spec, &op.nwords, why,
	    sizeof(why))) == NULL) {
		op_end(0, "error: %s\n", why);
		return;
	}
	/* A copy's replacement numbers its words as the graph did. */
	for (k = 1; k < op.nwords; k++) {
		if (g.stages[i].copy)
			op.words[k] = graph_copy_word(op.words[k],
			    g.stages[i].copy);
		/* As in the graph: elsewhere it would be taken literally. */
		else if ((mark = graph_copy_mark(op.words[k])) != NULL) {
			op_end(0, "error: '%s' outside copies: %s is no copy "
			    "('Nx( ... )'); it keeps running\n", mark, label);
			return;
		}
	}
	if (op.nwords == 0 || find_app(op.words[0], op.kind->path,
	    sizeof(op.kind->path), near, sizeof(near)) == -1) {
		/* As the graph says it: the nearest installed app. */
		if (near[0])
			op_end(0, "error: unknown app '%s' (did you mean %s?); "
			    "%s keeps running\n", op.words[0], near, label);
		else
			op_end(0, "error: unknown app '%s'; %s keeps running\n",
			    op.nwords ? op.words[0] : "", label);
		return;
	}
	op.describer = describe_spawn(op.kind->path, &op.fd);
	op.state = OP_DESCRIBE;
	op.deadline = now_ms() + DESCRIBE_MS;
}

/*
 * The replacement described itself (exit status, op.desc): if it fits
 * the stage's ports, it starts, in standby.
 */
static void
standby(int status)
{
	int i = op.stage;
	const char *label = g.stages[i].label;
	char e[512];
	struct misfit m;
	struct link *l;

	op.desc[op.desclen] = '\0';
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		op_end(0, "error: %s --describe failed; %s keeps running\n",
		    op.kind->path, label);
	else if (app_info_parse(&op.kind->info, op.desc, e, sizeof(e)) == -1)
		op_end(0, "error: %s; %s keeps running\n", e, label);
	else if (graph_stage_fit(&g, i, &op.kind->info, NULL, g.nlinks,
	    &m) == 0) {
		stage_path(i, op.stats, sizeof(op.stats));
		snprintf(op.tmp, sizeof(op.tmp), "%s.new", op.stats);
		op.new = spawn(i, op.kind->path, op.words + 1, op.nwords - 1,
		    op.tmp, &op.fd, op.stats);
		op.state = OP_STANDBY;
		op.deadline = now_ms() + OP_READY_MS;
	} else if (m.link >= 0) {
		l = &g.links[m.link];
		op_end(0, "error: %s has no %s port '%s'; %s keeps running\n",
		    op.kind->info.app, m.out ? "output" : "input", m.out ?
		    l->from_port : l->to_port, label);
	} else
		op_end(0, "error: %s needs its %s port '%s' connected; %s "
		    "keeps running\n", op.kind->info.app, m.out ? "output" :
		    "input", op.kind->info.ports[m.port].name, label);
}

void
op_restart(int i, int client)
{
	if (op_start(i, client, 1) == 0)
		retire();
}

/* The pipe the supervisor polls for op_event(), or -1. */
int
op_fd(void)
{
	return op.fd;
}

/*
 * The replacement's --describe, as much as the pipe holds now; at EOF,
 * when it says more than an answer can be, or (last) once it has exited,
 * the pipe is closed (the exit status decides, op_child_exited()).
 */
static void
describe_read(int last)
{
	if (pipe_drain(op.fd, op.desc, &op.desclen, sizeof(op.desc)) ||
	    last) {
		close(op.fd);
		op.fd = -1;
	}
}

/* The stage's new process says it has taken over: the answer. */
static void
took_over(void)
{
	struct stage *s = &g.stages[op.stage];
	double stall;

	if (op.restart) {
		if (verbose)
			warnx("restarted %s (pid %ld -> %ld)", s->label,
			    (long)op.old, (long)op.new);
		op_end(0, "ok: restarted %s: pid %ld -> %ld\n", s->label,
		    (long)op.old, (long)op.new);
		return;
	}
	stall = (app_now_ns() - op.t0) / 1e6;
	warnx("swapped %s to %s (pid %ld -> %ld), stall %.3f ms", s->label,
	    s->app, (long)op.old, (long)op.new, stall);
	op_end(0, "ok: swapped %s: pid %ld -> %ld, stall %.3f ms\n", s->label,
	    (long)op.old, (long)op.new, stall);
}

/*
 * The describe pipe: its answer.  Or the replacement's (or restarted
 * stage's) pipe: in standby its words, then NUL (ready); then a NUL byte
 * once it has taken over (answered), never more; or EOF: it died, and
 * reap() sees to it.  While the old stage retires, only EOF can come.
 */
void
op_event(void)
{
	siginfo_t si;
	char buf[512];
	ssize_t n;
	size_t k;
	int ready;

	if (op.state == OP_DESCRIBE) {
		describe_read(0);
		return;
	}
	n = read(op.fd, buf, sizeof(buf));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || op.state != OP_STANDBY) {
		close(op.fd);
		op.fd = -1;
		if (n > 0 && op.state == OP_TAKING)
			took_over();
		return;
	}
	k = strnlen(buf, (size_t)n);	/* its words, up to "ready" */
	ready = k < (size_t)n;
	if (k > sizeof(op.msg) - 1 - op.msglen)
		k = sizeof(op.msg) - 1 - op.msglen;
	memcpy(op.msg + op.msglen, buf, k);
	op.msglen += k;
	if (!ready)
		return;
	/* Ready (the pipe stays open for "taken over"); dead since (unreaped,
	   or op_child_exited() reads its last words): the old stage is not
	   retired for it. */
	memset(&si, 0, sizeof(si));
	if (op.new == 0 || (waitid(P_PID, (id_t)op.new, &si, WEXITED |
	    WNOHANG | WNOWAIT) == 0 && si.si_pid == op.new))
		return;
	if (op.msglen)	/* warnings of an app that then went on */
		warnx("%s (replacement): %s", g.stages[op.stage].label,
		    op_said());
	op.t0 = app_now_ns();
	retire();
}

/*
 * The old stage left: the replacement is the stage from now on, and is
 * told to take over.  The swap is answered once it says it has.
 */
static void
take_over(void)
{
	struct stage *s = &g.stages[op.stage];
	struct proc *p = &procs[op.stage];
	struct app_kind *old = p->kind, **k;
	int i;

	if (rename(op.tmp, op.stats) == -1)
		warn("%s", op.tmp);
	op.tmp[0] = '\0';	/* renamed: op_end() must not remove it */
	kill(op.new, SIGUSR1);
	p->pid = op.new;
	p->leaving = 0;
	p->started = now_ms();
	graph_words_free(s->argv);
	strlcpy(s->app, op.words[0], sizeof(s->app));
	free(op.words[0]);
	memmove(op.words, op.words + 1, (size_t)op.nwords * sizeof(char *));
	s->argv = op.words;
	s->argc = op.nwords - 1;
	op.words = NULL;
	op.kind->next = kinds;
	kinds = p->kind = op.kind;
	s->info = &op.kind->info;
	op.kind = NULL;
	p->swapped = 1;
	/* The record it ran goes once no stage runs it: a graph swapped
	 * again and again keeps one per app in use, not one per swap. */
	for (i = 0; i < g.nstages && procs[i].kind != old; i++)
		;
	if (i == g.nstages) {
		for (k = &kinds; *k != old; k = &(*k)->next)
			;
		*k = old->next;
		free(old);
	}
}

/*
 * Stage i's process pid left (status), and the supervisor has seen to it
 * (supervise.c's stage_left()): if it was a replacement taking over, the
 * swap failed; the answer says what became of the stage.
 */
void
op_stage_left(int i, pid_t pid, int status)
{
	struct proc *p = &procs[i];

	if (op.state != OP_TAKING || pid != op.new)
		return;
	/* It may have taken over before it left: its byte is unread. */
	if (op.fd != -1)
		op_event();
	if (op.state != OP_TAKING)
		return;
	op_end(0, "error: %s %s (pid %ld) of %s died while taking over "
	    "(%s %d); %s\n", op.restart ? "restarted" : "replacement",
	    g.stages[i].app, (long)pid, g.stages[i].label,
	    WIFSIGNALED(status) ? "signal" : "status", WIFSIGNALED(status) ?
	    WTERMSIG(status) : WEXITSTATUS(status), p->pid ?
	    "it was started again" :
	    p->restart_at ? "it is restarted (--restart=on-failure)" :
	    graph_stopping() ? "the graph is stopping" :
	    "not restarted: the graph drains");
}

/* The old stage of a swap or restart left with status. */
static void
old_left(int status)
{
	int i = op.stage, st = stage_exit_state(i);

	procs[i].pid = 0;
	if (status == 0 && (st == STAGE_FINISHED || st == STAGE_ENDED)) {
		/* End of stream, or of the graph (app_end_graph), came first:
		   nothing to take over. */
		procs[i].done = 1;
		stop_requested |= st == STAGE_ENDED;
		op_end(SIGTERM, "error: %s %s before the %s\n",
		    g.stages[i].label, st == STAGE_ENDED ? "ended the graph" :
		    "reached end of stream", op.restart ? "restart" : "swap");
		return;
	}
	stage_ran(i);
	if (status != 0 && op.state != OP_KILLED)
		warnx("%s (pid %ld) left with status %d", g.stages[i].label,
		    (long)op.old, WIFEXITED(status) ? WEXITSTATUS(status) :
		    128 + WTERMSIG(status));
	if (op.restart) {
		/* Answered once it has taken over, as a swap. */
		procs[i].restarts++;
		op.fd = start_stage(i, 1);
		op.new = procs[i].pid;
	} else
		take_over();
	op.state = OP_TAKING;
	op.deadline = now_ms() + OP_READY_MS;
}

/* A child left: 1 if it was ours (the replacement, or the old stage). */
int
op_child_exited(pid_t pid, int status)
{
	/* (OP_NONE: none of op's pids is set, pid is never 0) */
	if (op.state == OP_DESCRIBE && pid == op.describer) {
		/* What it wrote is in the pipe: all of its answer. */
		op.describer = 0;
		if (op.fd != -1)
			describe_read(1);
		standby(status);
		return 1;
	}
	if (op.state == OP_TAKING)
		return 0;	/* the stage's now: op_stage_left() */
	if (pid == op.new) {
		/*
		 * Before takeover: it refused, or it died.  Its "ready" may
		 * be unread yet: the old stage is not retired for it.  One
		 * retired already leaves and is started again (supervise.c).
		 */
		op.new = 0;
		if (op.fd != -1)
			op_event();	/* whatever it wrote last */
		op_end(0, "error: replacement %s failed to start (%s %d)%s%s; "
		    "%s %s\n", op.words[0], WIFSIGNALED(status) ?
		    "signal" : "status", WIFSIGNALED(status) ?
		    WTERMSIG(status) : WEXITSTATUS(status), op.msglen ? ": " :
		    "", op_said(), g.stages[op.stage].label,
		    op.state >= OP_RETIRING ? "was told to leave: it is "
		    "started again when it leaves" : "keeps running");
		return 1;
	}
	if (pid == op.old && op.state >= OP_RETIRING) {
		old_left(status);
		return 1;
	}
	if (pid == op.old) {
		/*
		 * The old stage left before its replacement was ready: the
		 * swap is called off (never a signal to a reaped pid), and
		 * the supervisor sees to the stage as to any other.
		 */
		op_end(SIGKILL, "error: %s (pid %ld) left while its "
		    "replacement was starting; swap called off\n",
		    g.stages[op.stage].label, (long)pid);
	}
	return 0;
}

/* The deadline that passed: what it means in each state. */
static void
expired(uint64_t now)
{
	switch (op.state) {
	case OP_DESCRIBE:	/* killed: reaped as a stranger */
		op_end(0, "error: %s --describe did not answer in %d ms; %s "
		    "keeps running\n", op.kind->path, DESCRIBE_MS,
		    g.stages[op.stage].label);
		break;
	case OP_TAKING:		/* stopped, say: it is the stage all the same */
		op_end(0, "error: %s %s (pid %ld) has not taken over %s in %d "
		    "ms (stopped?); it is the stage's process now\n",
		    op.restart ? "restarted" : "replacement",
		    g.stages[op.stage].app, (long)op.new,
		    g.stages[op.stage].label, OP_READY_MS);
		break;
	case OP_STANDBY:	/* reaped as a stranger: not ours */
		op_end(SIGKILL, "error: replacement %s not ready in %d ms%s%s; "
		    "%s keeps running\n", op.words[0], OP_READY_MS, op.msglen ?
		    ": " : "", op_said(), g.stages[op.stage].label);
		break;
	case OP_RETIRING:
		if (op.restart) {
			/* A restart goes ahead: the stage's own state hands over. */
			kill(op.old, SIGKILL);
			op.state = OP_KILLED;
			op.deadline = now + OP_KILL_MS;
			break;
		}
		/* FALLTHROUGH */
	default:	/* standby: the replacement leaves untouched */
		op_end(SIGTERM, "error: %s (pid %ld) did not stop in %d ms; %s "
		    "called off (it is started again when it leaves)\n",
		    g.stages[op.stage].label, (long)op.old, op.restart ?
		    OP_RETIRE_MS + OP_KILL_MS : OP_RETIRE_MS, op.restart ?
		    "restart" : "swap");
	}
}

/* The next deadline, or 0; after an end, a roll's next copy may have one. */
uint64_t
op_timers(uint64_t now)
{
	if (op.state != OP_NONE && now >= op.deadline)
		expired(now);
	return op.state == OP_NONE ? 0 : op.deadline;
}

/* Stopping the graph: no swap or restart goes on. */
void
op_abort(void)
{
	if (op.state != OP_NONE)
		op_end(SIGKILL, "error: the graph is stopping\n");
}
