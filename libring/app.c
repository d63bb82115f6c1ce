/*
 * app.c: port binding, --describe, the breathe loop, EOF and detach.
 * See app.h for the contract; idling and waking peers live in idle.c,
 * the stage file and hand-over in stage.c, a swap's standby in standby.c.
 */
#include <err.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>

#include "app.h"
#include "appctl.h"
#include "cli.h"
#include "graph.h"
#include "idle.h"
#include "stage.h"

/* The launcher refuses longer port names than the runtime can bind. */
_Static_assert(sizeof(((struct port *)0)->name) == PORT_NAME_MAX,
    "port name length");

struct port	*app_ports;
int		 app_nports;
struct ring	**app_rings;
int		 app_nrings;

const struct port_desc app_device_ports[] = {
	{ "in", PORT_IN },
	{ "out", PORT_OUT },
	{ NULL, 0 }
};

static const struct app_desc *app;
static char graph_dir[4096];	/* app_graph_dir() */
static volatile sig_atomic_t detach_requested;
static int done_requested, end_requested;
static int checking;		/* --snb-check: init() only, see app.h */
static uint32_t check_slots = RING_DEFAULT_SLOTS;
static uint32_t check_capacity = RING_DEFAULT_CAPACITY;

static uint64_t
clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t
app_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t
app_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

const char *
app_graph_dir(void)
{
	return graph_dir[0] ? graph_dir : NULL;
}

void
app_done(void)
{
	done_requested = 1;
}

void
app_end_graph(void)
{
	end_requested = 1;
}

struct port *
app_port(const char *name)
{
	return app_port_dir(name, 0);
}

struct port *
app_port_dir(const char *name, int dir)
{
	int i;

	for (i = 0; i < app_nports; i++)
		if ((dir == 0 || app_ports[i].flags == dir) &&
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

void
app_require_port(const char *name, int dir)
{
	const char *d = dir == PORT_IN ? "input " : dir == PORT_OUT ?
	    "output " : "";
	int i, any = 0;

	if (dir == (PORT_IN | PORT_OUT)) {
		app_require_port(name, PORT_IN);
		app_require_port(name, PORT_OUT);
		return;
	}
	if (strcmp(name, "*") == 0) {
		for (i = 0; i < app_nports; i++)
			any |= dir == 0 || (app_ports[i].flags & dir);
		if (!any)
			errx(2, "no %sport is connected", d);
	} else if (app_port_dir(name, dir) == NULL)
		errx(2, "%sport '%s' is not connected", d, name);
}

/* A graph leaving a required port open is refused (after init's words). */
static void
check_required(void)
{
	const struct port_desc *p;

	for (p = app->ports; p->name; p++)
		if ((p->flags & PORT_REQUIRED) && strcmp(p->name, "*") != 0)
			app_require_port(p->name, p->flags &
			    (PORT_IN | PORT_OUT));
}

int
app_checking(void)
{
	return checking;
}

void
app_usage(void)
{
	cli_usage_lines(stderr, getprogname(), app->usage);
	exit(2);
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
	/* Last: older launchers stop reading at a word too long for them. */
	printf("summary %s\n", app->summary);
}

void
app_help(void)
{
	cli_usage_lines(stdout, getprogname(), app->usage);
	printf("%s\nSee snb-%s(1).\n", app->summary, app->name);
	exit(0);
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
	if (checking) {
		if (ring_geometry_only(r, eq + 1, check_slots, check_capacity,
		    dir == PORT_IN ? RING_CONSUMER : RING_PRODUCER) == -1)
			errx(2, "bad --snb-check geometry");
	} else if (ring_attach(r, eq + 1, dir == PORT_IN ? RING_CONSUMER :
	    RING_PRODUCER, errbuf, sizeof(errbuf)) == -1)
		errx(1, "%s", errbuf);
	p->nrings++;
}


static void
on_wake(int sig)
{
	(void)sig;	/* only here to interrupt ppoll() */
}

static void
on_term(int sig)
{
	detach_requested = 1;
}

int
app_detaching(void)
{
	return detach_requested;
}

int
app_inputs_done(void)
{
	int i, any = 0;

	for (i = 0; i < app_nrings; i++)
		if (app_rings[i]->side == RING_CONSUMER) {
			any = 1;
			if (!ring_eof(app_rings[i]))
				return 0;
		}
	return any;
}

int
app_inputs_failed(void)
{
	int i;

	for (i = 0; i < app_nrings; i++)
		if (app_rings[i]->side == RING_CONSUMER &&
		    ring_failed(app_rings[i]))
			return 1;
	return 0;
}

/* Sum of consumer tails and producer heads: our own packet counters. */
static void
count_packets(void)
{
	uint64_t in = 0, out = 0;
	int i;

	for (i = 0; i < app_nrings; i++)
		if (app_rings[i]->side == RING_CONSUMER)
			in += app_rings[i]->tail;
		else
			out += app_rings[i]->head;
	app_stage->packets_in = in;
	app_stage->packets_out = out;
}

/* Before exit: eof = 1 at end of stream (close outputs), 0 to detach. */
static void
finish(int eof)
{
	int i, failed = eof && app_inputs_failed();

	app_stage->exit_state = eof ? STAGE_EOF : STAGE_DETACHED;
	appctl_stop();
	if (app->stop)
		app->stop(eof);
	stage_counters_out();
	count_packets();
	for (i = 0; i < app_nrings; i++) {
		/* A stream cut by a failure upstream stays so. */
		if (eof && app_rings[i]->side == RING_PRODUCER)
			ring_close(app_rings[i], failed ? RING_FAILED :
			    RING_EOF);
		ring_detach(app_rings[i]);
	}
	if (eof)
		app_stage->exit_state = STAGE_FINISHED;
}

/* A ring's peer published an impossible index: this stage fails. */
static void __attribute__((noreturn))
fail_corrupt(void)
{
	(*app_counter("ring-corrupt"))++;
	count_packets();
	errx(1, "%s: stopping: a ring is corrupt (see above)",
	    app_stage->label);
}

/*
 * Take the rings over: load their indexes and claim our sides.  A
 * sleeping peer is woken in batches (ring_commit, idle.h), so that on a
 * shared core a context switch moves hundreds of packets, not a burst.
 */
static void
claim_rings(void)
{
	char errbuf[512];
	int i;

	for (i = 0; i < app_nrings; i++) {
		if (ring_claim(app_rings[i], errbuf, sizeof(errbuf)) == -1)
			errx(1, "%s", errbuf);
		app_rings[i]->wake_batch = idle_wake_batch(
		    app_rings[i]->mask + 1);
	}
}

int
app_main(const struct app_desc *desc, int argc, char **argv)
{
	const char *stats = NULL, *label = NULL, *prev_path = NULL, *a;
	const struct stage_file *prev = NULL;
	struct sigaction sa = { 0 };
	sigset_t block, wake_mask;
	struct idle idle;
	int i, j, first, standby_fd = -1, saved_err = -1, taken_fd = -1;
	uint64_t restarts = 0, t_last;

	app = desc;
	/* The short name: getopt(3)'s messages use argv[0]. */
	cli_begin(1, argv);
	for (first = 1; first < argc; first++) {
		a = argv[first];
		if (strncmp(a, "--snb-stats=", 12) == 0)
			stats = a + 12;
		else if (strncmp(a, "--snb-label=", 12) == 0)
			label = a + 12;
		else if (strncmp(a, "--snb-standby-fd=", 17) == 0)
			standby_fd = atoi(a + 17);
		else if (strncmp(a, "--snb-taken-fd=", 15) == 0) {
			taken_fd = atoi(a + 15);
			fcntl(taken_fd, F_SETFD, FD_CLOEXEC);
		} else if (strncmp(a, "--snb-prev=", 11) == 0)
			prev_path = a + 11;
		else if (strncmp(a, "--snb-restarts=", 15) == 0)
			restarts = strtoull(a + 15, NULL, 10);
		else if (strncmp(a, "--snb-check=", 12) == 0) {
			checking = 1;
			if (sscanf(a + 12, "%u:%u", &check_slots,
			    &check_capacity) != 2)
				errx(2, "bad %s (want SLOTS:CAPACITY)", a);
		} else if (strncmp(a, "--snb-in=", 9) != 0 &&
		    strncmp(a, "--snb-out=", 10) != 0)
			break;	/* ports are bound below */
	}
	a = first < argc ? argv[first] : "";
	if (strcmp(a, "--describe") == 0) {
		describe();
		return 0;
	}
	/* A full disk is told, a closed pipe is not, as in the tools. */
	if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
		cli_output();
		app_help();
	}
	if (strcmp(a, "--version") == 0)
		cli_version();
	/* In standby, every word until "ready" is for the launcher. */
	if (standby_fd >= 0 && ((saved_err = dup(2)) == -1 ||
	    dup2(standby_fd, 2) == -1))
		err(1, "standby");
	sa.sa_handler = on_term;	/* no SA_RESTART: wake from futex */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_wake;
	sigaction(RING_WAKE_SIGNAL, &sa, NULL);
	if (app->control) {
		/* SIGHUP is read by the control thread; this one interrupts
		   the data path's sleep when a call waits */
		sigaction(APPCTL_WAKE_SIGNAL, &sa, NULL);
		appctl_block_hup();
	}
	/* a closed reader, or a file-size limit (RLIMIT_FSIZE), fails that
	   write (EPIPE, EFBIG): the app reports it, the stage lives on */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGXFSZ, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, RING_WAKE_SIGNAL);
	sigprocmask(SIG_BLOCK, &block, &wake_mask);
	sigdelset(&wake_mask, RING_WAKE_SIGNAL);
	idle_init(&idle, &wake_mask);
	/*
	 * Counters exist before init so apps can register theirs there; a
	 * replacement's file is its own (.new) until it takes over.
	 */
	stage_open(stats, app->name, label ? label : app->name,
	    restarts > 0 && standby_fd < 0);
	if (stats != NULL && (a = strrchr(stats, '/')) != NULL)
		snprintf(graph_dir, sizeof(graph_dir), "%.*s",
		    (int)(a - stats), stats);
	app_stage->restarts = restarts;
	/* Ports first, so that init() can check how the graph uses them. */
	for (i = 1; i < first; i++) {
		if (strncmp(argv[i], "--snb-in=", 9) == 0)
			bind_port(argv[i] + 9, PORT_IN);
		else if (strncmp(argv[i], "--snb-out=", 10) == 0)
			bind_port(argv[i] + 10, PORT_OUT);
	}
	/* Bound for good: ports' rings move no more. */
	for (i = 0; i < app_nports; i++)
		for (j = 0; j < app_ports[i].nrings; j++) {
			app_rings = reallocarray(app_rings,
			    (size_t)app_nrings + 1, sizeof(*app_rings));
			if (app_rings == NULL)
				err(1, NULL);
			app_rings[app_nrings++] = &app_ports[i].rings[j];
		}
	/* The app's own argv: its name (the short one), then the rest. */
	argv[first - 1] = argv[0];
	stage_counters_opt = app->counters_out;
	optind = 1;
	app->init(argc - first + 1, argv + first - 1);
	check_required();
	if (checking)
		return 0;	/* the words hold: nothing was started */
	if (standby_fd >= 0)
		prev = stage_standby(standby_fd, saved_err, prev_path);
	claim_rings();
	stage_take_over(prev);
	if (app->start)
		app->start();
	stage_taken_over(standby_fd >= 0 ? standby_fd : taken_fd);
	if (app->control)
		appctl_start(app->control, stats, label ? label : app->name);

	/*
	 * Busy time: one clock read per breath; a breath that moved packets
	 * adds the time since the previous read (the breath and the loop
	 * around it), so snb-top can tell a stage's load and a bench its
	 * cost per packet on a core, whatever else runs on the machine.
	 */
	t_last = app_now_ns();
	for (;;) {
		int n;

		appctl_poll();
		n = app->breathe();
		uint64_t t = app_now_ns();

		if (n > 0) {
			app_stage->busy_ns += t - t_last;
			app_stage->busy_breaths++;
			app_stage->busy_units += (uint64_t)n;
			app_stage->busy_hist[stage_hist_bucket(t - t_last,
			    (uint64_t)n)] += (uint64_t)n;
		}
		t_last = t;
		app_stage->breaths++;
		/* The peer woken may take our core: not our busy time. */
		if (idle_flush(&idle, n, t))
			t_last = app_now_ns();
		if (__builtin_expect(ring_corruptions != 0, 0))
			fail_corrupt();
		if (end_requested || detach_requested) {
			finish(0);
			/* Read by the launcher once we have exited. */
			if (end_requested)
				app_stage->exit_state = STAGE_ENDED;
			return 0;
		}
		if (done_requested || (n == 0 && app_inputs_done())) {
			finish(1);
			return 0;
		}
		if (n > 0) {
			idle_busy(&idle);
			if ((app_stage->breaths & 63) == 0)
				count_packets();
			continue;
		}
		count_packets();
		if (idle_wait(&idle))
			t_last = app_now_ns();	/* time given away is not busy */
	}
}
