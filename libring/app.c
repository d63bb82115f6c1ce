/*
 * app.c: port binding, --describe, the breathe loop, idling, EOF and
 * detach.  See app.h for the contract.
 */
#define _GNU_SOURCE	/* ppoll */
#include <err.h>
#include <poll.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "app.h"

struct port	*app_ports;
int		 app_nports;

static const struct app_desc *app;
char		**app_argv;	/* the app's argv; global: apps keep pointers */
static struct stage_file *stage;
static volatile sig_atomic_t detach_requested;
static int done_requested;
static uint64_t wake_at_ns;
static struct pollfd app_fds[APP_MAX_FDS];
static int app_nfds;
static sigset_t wake_mask;	/* our mask with RING_WAKE_SIGNAL unblocked */

/* Back-off: empty breaths spent spinning, then yielding, then sleeping. */
#define IDLE_SPIN	64
#define IDLE_YIELD	(IDLE_SPIN + 16)
#define SLEEP_MS	100	/* safety net; a peer's wake-up comes first */

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax()	__builtin_ia32_pause()
#else
#define cpu_relax()	__asm__ __volatile__("" ::: "memory")
#endif

uint64_t
app_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void
app_done(void)
{
	done_requested = 1;
}

void
app_wait_fd(int fd, short events)
{
	if (app_nfds == APP_MAX_FDS)
		errx(1, "too many file descriptors to wait on");
	app_fds[app_nfds].fd = fd;
	app_fds[app_nfds].events = events;
	app_nfds++;
}

void
app_wake_at(uint64_t ns)
{
	wake_at_ns = ns;
}

struct port *
app_port(const char *name)
{
	int i;

	for (i = 0; i < app_nports; i++)
		if (strcmp(app_ports[i].name, name) == 0)
			return &app_ports[i];
	return NULL;
}

struct port *
app_port_dir(const char *name, int dir)
{
	int i;

	for (i = 0; i < app_nports; i++)
		if (app_ports[i].flags == dir &&
		    strcmp(app_ports[i].name, name) == 0)
			return &app_ports[i];
	return NULL;
}

uint32_t
app_room(struct port *out, uint32_t want)
{
	uint32_t room;

	if (out == NULL || out->nrings == 0)
		return want;
	room = ring_room(&out->rings[0], want);
	return room < want ? room : want;
}

uint64_t *
app_counter(const char *name)
{
	struct stage_counter *c;
	uint32_t i;

	for (i = 0; i < stage->ncounters; i++)
		if (strcmp(stage->counters[i].name, name) == 0)
			return &stage->counters[i].value;
	if (stage->ncounters == STAGE_MAX_COUNTERS)
		errx(1, "too many counters (adding '%s')", name);
	c = &stage->counters[stage->ncounters++];
	strlcpy(c->name, name, sizeof(c->name));
	return &c->value;
}

int
app_write_counters(const char *path)
{
	FILE *f;
	uint32_t i;

	if ((f = fopen(path, "we")) == NULL) {
		warn("%s", path);
		return -1;
	}
	for (i = 0; i < stage->ncounters; i++)
		fprintf(f, "%.*s %llu\n", (int)sizeof(stage->counters[i].name),
		    stage->counters[i].name,
		    (unsigned long long)stage->counters[i].value);
	if (fclose(f) == EOF) {
		warn("%s", path);
		return -1;
	}
	return 0;
}

static void
describe(void)
{
	const struct port_desc *p;

	printf("snb-describe 1\napp %s\n", app->name);
	if (app->device)
		printf("device\n");
	for (p = app->ports; p->name; p++)
		printf("%s %s%s\n", p->flags & PORT_IN ? "in" : "out", p->name,
		    p->flags & PORT_REQUIRED ? " required" : "");
}

static void
usage_help(FILE *f)
{
	fprintf(f, "usage: snb-%s %s\n", app->name, app->usage);
	if (f == stdout)
		printf("%s\nSee snb-%s(1).\n", app->summary, app->name);
}

static const struct port_desc *
find_desc(const char *name, int dir)
{
	const struct port_desc *p;

	for (p = app->ports; p->name; p++)
		if ((p->flags & dir) &&
		    (strcmp(p->name, name) == 0 || strcmp(p->name, "*") == 0))
			return p;
	return NULL;
}

static void
bind_port(const char *arg, int dir)
{
	char name[32], errbuf[512];
	const char *eq = strchr(arg, '=');
	struct port *p;
	struct ring *r;

	if (eq == NULL || eq == arg || (size_t)(eq - arg) >= sizeof(name))
		errx(2, "bad port binding '%s' (want PORT=PATH)", arg);
	memcpy(name, arg, (size_t)(eq - arg));
	name[eq - arg] = '\0';
	if (find_desc(name, dir) == NULL)
		errx(2, "no %s port '%s' on %s", dir == PORT_IN ? "input" :
		    "output", name, app->name);
	if ((p = app_port_dir(name, dir)) == NULL) {
		app_ports = reallocarray(app_ports, (size_t)app_nports + 1,
		    sizeof(*app_ports));
		if (app_ports == NULL)
			err(1, NULL);
		p = &app_ports[app_nports++];
		memset(p, 0, sizeof(*p));
		strlcpy(p->name, name, sizeof(p->name));
		p->flags = dir;
	} else if (dir == PORT_OUT) {
		errx(2, "output port '%s' bound twice", name);
	}
	p->rings = reallocarray(p->rings, (size_t)p->nrings + 1,
	    sizeof(*p->rings));
	if (p->rings == NULL)
		err(1, NULL);
	r = &p->rings[p->nrings];
	if (ring_attach(r, eq + 1, dir == PORT_IN ? RING_CONSUMER :
	    RING_PRODUCER, errbuf, sizeof(errbuf)) == -1)
		errx(1, "%s", errbuf);
	p->nrings++;
}

static void
open_stage_file(const char *path, const char *label)
{
	int fd;

	if (path == NULL) {
		if ((stage = calloc(1, sizeof(*stage))) == NULL)
			err(1, NULL);
	} else {
		/* A replacement stage (swap) truncates and starts afresh. */
		fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd == -1)
			err(1, "%s", path);
		if (ftruncate(fd, sizeof(*stage)) == -1)
			err(1, "%s", path);
		stage = mmap(NULL, sizeof(*stage), PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
		if (stage == MAP_FAILED)
			err(1, "%s", path);
		close(fd);
		memset(stage, 0, sizeof(*stage));
	}
	stage->pid = (int32_t)getpid();
	strlcpy(stage->app, app->name, sizeof(stage->app));
	strlcpy(stage->label, label ? label : app->name, sizeof(stage->label));
	stage->magic = STAGE_MAGIC;
}

static void
on_wake(int sig)
{
	(void)sig;	/* only here to interrupt ppoll() */
}

static void
on_term(int sig)
{
	(void)sig;
	detach_requested = 1;
}

static int
inputs_finished(void)
{
	int i, j, any = 0;

	for (i = 0; i < app_nports; i++) {
		if (!(app_ports[i].flags & PORT_IN))
			continue;
		for (j = 0; j < app_ports[i].nrings; j++) {
			any = 1;
			if (!ring_eof(&app_ports[i].rings[j]))
				return 0;
		}
	}
	return any;
}

/* Sum of consumer tails and producer heads: our own packet counters. */
static void
count_packets(void)
{
	uint64_t in = 0, out = 0;
	int i, j;

	for (i = 0; i < app_nports; i++)
		for (j = 0; j < app_ports[i].nrings; j++) {
			if (app_ports[i].flags & PORT_IN)
				in += app_ports[i].rings[j].tail;
			else
				out += app_ports[i].rings[j].head;
		}
	stage->packets_in = in;
	stage->packets_out = out;
}

/*
 * Nothing happened this breath: find what we wait for.  If some input holds
 * packets, an output must be full, so sleep for room on the full outputs;
 * otherwise sleep for data on the open inputs (and for room on full outputs:
 * a source waits only for those).
 */
static void
idle_sleep(void)
{
	struct ring *ins[16], *outs[16];
	int i, j, n_in = 0, n_out = 0, blocked_out = 0, timeout = SLEEP_MS;
	uint64_t now;

	for (i = 0; i < app_nports; i++) {
		struct port *p = &app_ports[i];
		for (j = 0; j < p->nrings; j++) {
			struct ring *r = &p->rings[j];
			if (p->flags & PORT_IN) {
				if (ring_avail(r, 1) > 0)
					blocked_out = 1;
				else if (!ring_eof(r) && n_in < 16)
					ins[n_in++] = r;
			} else if (ring_room(r, 1) == 0 && n_out < 16)
				outs[n_out++] = r;
		}
	}
	if (wake_at_ns) {
		now = app_now_ns();
		if (wake_at_ns <= now) {
			wake_at_ns = 0;	/* spent: the app sets a new one */
			return;
		}
		if ((wake_at_ns - now) / 1000000 < (uint64_t)timeout)
			timeout = (int)((wake_at_ns - now) / 1000000);
	}
	stage->idle_sleeps++;
	if (app_nfds && !blocked_out) {
		/*
		 * A device sleeps in ppoll() on its descriptors; its input
		 * rings are armed so that a producer signals us instead of
		 * waking a futex nobody waits on.
		 */
		struct timespec ts = { timeout / 1000,
		    (long)(timeout % 1000) * 1000000L };
		if (n_in == 0 || ring_wait_arm(ins, n_in)) {
			ppoll(app_fds, (nfds_t)app_nfds, &ts, &wake_mask);
			if (n_in)
				ring_wait_disarm(ins, n_in);
		}
		return;
	}
	if (n_out && (blocked_out || n_in == 0))
		ring_wait_many(outs, n_out, timeout);
	else if (!blocked_out && n_in)
		ring_wait_many(ins, n_in, timeout);
	else {
		struct timespec ts = { timeout / 1000,
		    (long)(timeout % 1000) * 1000000L };
		if (wake_at_ns && timeout == 0)
			ts.tv_nsec = (long)(wake_at_ns - app_now_ns());
		nanosleep(&ts, NULL);
	}
}

static void
finish(int eof)
{
	int i, j;

	if (app->stop)
		app->stop(eof);
	count_packets();
	for (i = 0; i < app_nports; i++)
		for (j = 0; j < app_ports[i].nrings; j++) {
			if (eof && (app_ports[i].flags & PORT_OUT))
				ring_close(&app_ports[i].rings[j]);
			ring_detach(&app_ports[i].rings[j]);
		}
}

/*
 * A replacement stage (snb-ctl swap) is attached but must not touch the
 * rings while the old stage still runs: say "ready" on the launcher's pipe,
 * then wait for SIGUSR1 (go: the old stage has detached) or SIGTERM (the
 * swap was called off).  On go, take the indexes the old stage left.
 */
static void
standby(int fd)
{
	sigset_t set, old;
	int sig, i, j;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, &old);
	if (write(fd, "r", 1) != 1)
		err(1, "standby: tell the launcher");
	close(fd);
	if (sigwait(&set, &sig) != 0 || sig != SIGUSR1) {
		for (i = 0; i < app_nports; i++)
			for (j = 0; j < app_ports[i].nrings; j++)
				app_ports[i].rings[j].side = RING_OBSERVER;
		exit(0);
	}
	for (i = 0; i < app_nports; i++)
		for (j = 0; j < app_ports[i].nrings; j++)
			ring_resync(&app_ports[i].rings[j]);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static int resumed;

int
app_resumed(void)
{
	return resumed;
}

int
app_main(const struct app_desc *desc, int argc, char **argv)
{
	const char *stats = NULL, *label = NULL;
	struct sigaction sa;
	unsigned idle = 0;
	int i, first, standby_fd = -1;
	uint64_t restarts = 0, t_last;

	app = desc;
	for (first = 1; first < argc; first++) {
		const char *a = argv[first];
		if (strncmp(a, "--snb-in=", 9) == 0)
			continue;
		if (strncmp(a, "--snb-out=", 10) == 0)
			continue;
		if (strncmp(a, "--snb-stats=", 12) == 0)
			stats = a + 12;
		else if (strncmp(a, "--snb-label=", 12) == 0)
			label = a + 12;
		else if (strncmp(a, "--snb-standby-fd=", 17) == 0)
			standby_fd = atoi(a + 17);
		else if (strncmp(a, "--snb-restarts=", 15) == 0)
			restarts = strtoull(a + 15, NULL, 10);
		else
			break;
	}
	if (first < argc && strcmp(argv[first], "--describe") == 0) {
		describe();
		return 0;
	}
	if (first < argc && (strcmp(argv[first], "--help") == 0 ||
	    strcmp(argv[first], "-h") == 0)) {
		usage_help(stdout);
		return 0;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;	/* no SA_RESTART: wake from futex */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_wake;
	sigaction(RING_WAKE_SIGNAL, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	{
		sigset_t block;
		sigemptyset(&block);
		sigaddset(&block, RING_WAKE_SIGNAL);
		sigprocmask(SIG_BLOCK, &block, &wake_mask);
		sigdelset(&wake_mask, RING_WAKE_SIGNAL);
	}
	/* Counters exist before init so apps can register theirs there. */
	open_stage_file(stats, label);
	stage->restarts = restarts;
	resumed = restarts > 0 || standby_fd >= 0;
	/* The app's own argv: its name, then the words after ours. */
	if ((app_argv = calloc((size_t)(argc - first + 2), sizeof(char *))) ==
	    NULL)
		err(1, NULL);
	app_argv[0] = argv[0];
	for (i = first; i < argc; i++)
		app_argv[i - first + 1] = argv[i];
	optind = 1;
	app->init(argc - first + 1, app_argv);
	for (i = 1; i < first; i++) {
		if (strncmp(argv[i], "--snb-in=", 9) == 0)
			bind_port(argv[i] + 9, PORT_IN);
		else if (strncmp(argv[i], "--snb-out=", 10) == 0)
			bind_port(argv[i] + 10, PORT_OUT);
	}

	if (standby_fd >= 0)
		standby(standby_fd);

	/*
	 * Busy time: one clock read per breath; a breath that moved packets
	 * adds the time since the previous read (the breath and the loop
	 * around it), so snb-top can tell a stage's load and a bench its
	 * cost per packet on a core, whatever else runs on the machine.
	 */
	t_last = app_now_ns();
	for (;;) {
		int n = app->breathe();
		uint64_t t = app_now_ns();

		if (n > 0)
			stage->busy_ns += t - t_last;
		t_last = t;
		stage->breaths++;
		if (detach_requested) {
			finish(0);
			return 0;
		}
		if (done_requested || (n == 0 && inputs_finished())) {
			finish(1);
			return 0;
		}
		if (n > 0) {
			idle = 0;
			if ((stage->breaths & 63) == 0)
				count_packets();
			continue;
		}
		count_packets();
		if (++idle < IDLE_SPIN) {
			cpu_relax();
			continue;
		}
		if (idle < IDLE_YIELD)
			sched_yield();
		else
			idle_sleep();
		t_last = app_now_ns();	/* time given away is not busy */
	}
}
