/*
 * app.h: the runtime every snb app is built on.
 *
 * An app fills in a struct app_desc and calls app_main().  The runtime
 * binds the ports the launcher hands over, answers --describe and --help,
 * and runs the breathe loop:
 *
 *	bind ports; desc->init()		parse, check, refuse (exit 2)
 *	required ports bound?			or refuse (exit 2)
 *	[standby: say ready, wait for go]	a swap's replacement
 *	claim the rings; hand over state	(see "Hand-over" below)
 *	desc->start()				open outputs, resume
 *	for (;;) {
 *		n = desc->breathe();		pull what the outputs have room
 *						for, process, push
 *		if every input is closed and drained, or the app called
 *		app_done(): desc->stop(1), close outputs, exit 0
 *		if SIGTERM: desc->stop(0), detach without closing, exit 0
 *		if the app called app_end_graph(): the same, and the
 *		launcher stops the whole graph (status 0)
 *		if n == 0: back off (spin, yield, then sleep on a ring futex)
 *	}
 *
 * How a stage left is written in its stage file (exit_state), so that the
 * launcher can tell an end of stream (STAGE_FINISHED), a failure at end of
 * stream (STAGE_EOF and a non-zero status: final, never restarted) and a
 * detach (STAGE_DETACHED: a failure unless the launcher asked for it).
 *
 * Hand-over (snb(7)): a restart keeps its predecessor's stage file, a
 * replacement of the same app copies its counters and the state the app
 * commits with app_state_commit() (two copies: a process killed while
 * committing leaves the previous one whole).  The app commits what a
 * successor needs to continue exactly (positions, ring indexes, totals)
 * before it releases input or after it publishes output, and reads it
 * back in start().
 *
 * Standby (a swap): the replacement runs init() while the old stage still
 * works, claiming, opening and writing nothing until it takes over, so
 * everything that could refuse it runs before it says ready; its standard
 * error goes to the launcher until then.
 *
 * Launcher options, consumed before the app sees argv: --snb-in,
 * --snb-out, --snb-stats, --snb-label, --snb-restarts, --snb-standby-fd,
 * --snb-prev and --snb-taken-fd as snb(7) describes them, and snb-run
 * -c's own:
 *	--snb-check=SLOTS:CAPACITY
 *				check only (snb-run -c): bind every port
 *				to a ring of this geometry in private
 *				memory (the PATHs are names only), run
 *				init() and the required-port check, exit 0
 *				if the words hold; start nothing
 *
 * The command line follows cli.h: --help, --version, "snb-APP: message",
 * exit 2 for a usage error (app_usage()), 1 for a failure at run time.
 */
#ifndef SNB_APP_H
#define SNB_APP_H

#include <stdint.h>
#include <stdio.h>

#include "lathist.h"
#include "ring.h"

#define APP_BURST	64	/* packets per ring per breath, at most */

#define PORT_IN		0x1
#define PORT_OUT	0x2
#define PORT_REQUIRED	0x4	/* launcher refuses a graph leaving it open */

/* A port an app declares; name "*" accepts any port name. */
struct port_desc {
	const char	*name;
	int		 flags;
};

struct app_desc {
	const char	*name;		/* "filter": the binary is snb-filter */
	const char	*usage;		/* "[-r] [EXPRESSION ...]": as the
					   man page's SYNOPSIS; one line
					   per form */
	const char	*summary;	/* one line for --help */
	int		 device;	/* a device app (keyed by its argument) */
	/*
	 * 1: app_options() also takes "--counters-out FILE" (or =FILE), and
	 * after stop() the runtime writes every counter to FILE, one
	 * "name value" line each in the order they were made.
	 */
	int		 counters_out;
	const struct port_desc *ports;	/* ended by { NULL, 0 } */
	/*
	 * Parse the app's own arguments and check everything that can
	 * refuse them (ports are bound by now); exit with a message on
	 * error.  No output is opened here: see start().  Under snb-run -c
	 * (app_checking()) init() is all that runs: it may read files, but
	 * must bind, create or open for writing nothing.
	 */
	void		(*init)(int argc, char **argv);
	/*
	 * Optional: the stage owns its rings now (at once, or after a
	 * swap's takeover).  Read handed-over state (app_state), open
	 * files to write.
	 */
	void		(*start)(void);
	/* One breath; returns the number of packets handled (0 = idle). */
	int		(*breathe)(void);
	/* Before exit: eof = 1 at end of stream, 0 when detaching. */
	void		(*stop)(int eof);
	/*
	 * Optional: a request of snb-ctl GRAPH config LABEL WORDS... (argv:
	 * the words), or SIGHUP (the request "reload", its reply on standard
	 * error).  Runs in the runtime's control thread beside the data path,
	 * one request at a time, from start() until before stop(): it may
	 * read what breathe() reads but changes it only through
	 * app_ctl_sync().  Writes its reply to out and returns 0, or writes
	 * the reason and returns -1 (the runtime puts "error: " before it).
	 */
	int		(*control)(int argc, char **argv, FILE *out);
};

/* A bound port: one ring per link (inputs may have several: fan-in). */
struct port {
	char		 name[32];
	int		 flags;		/* PORT_IN or PORT_OUT */
	int		 nrings;
	struct ring	*rings;
};

int	app_main(const struct app_desc *desc, int argc, char **argv);
/* An app's whole main(): APP_MAIN(desc) after its struct app_desc. */
#define APP_MAIN(desc)							\
int									\
main(int argc, char **argv)						\
{									\
	return app_main(&(desc), argc, argv);				\
}

/* --help: the usage lines and summary to standard output, exit 0. */
void	app_help(void) __attribute__((noreturn));
/* Print the app's usage lines to standard error and exit 2. */
void	app_usage(void) __attribute__((noreturn));
/* 1 when the launcher only checks the words (--snb-check): see init(). */
int	app_checking(void);

/* The ports of a device app: what it receives to "out", "in" it sends. */
extern const struct port_desc app_device_ports[];

/*
 * An app's words (appopt.c).  An option of app_options() is a word
 * ("count": --count) or a letter ("c": -c).  Given, it sets *seen to 1
 * (all a flag does), then calls fn(OPT, arg, var) with OPT "--count" or
 * "-c", or stores a number in [min, max] in *var (a 32- or 64-bit
 * integer, app_parse_num()).  Without fn or var it takes no argument.
 */
struct app_opt {
	const char	*name;
	int		*seen;
	void		*var;
	size_t		 size;
	long long	 min, max;
	void		(*fn)(const char *opt, char *arg, void *var);
};
#define APP_FLAG(name, seen)	{ (name), (seen), NULL, 0, 0, 0, NULL }
#define APP_NUM(name, var, min, max)					\
	{ (name), NULL, (var), sizeof(*(var)), (min), (max), NULL }
#define APP_ARG(name, fn, var, seen)					\
	{ (name), (seen), (var), 0, 0, 0, (fn) }
#define APP_OPT_END	{ NULL, NULL, NULL, 0, 0, 0, NULL }

#define APP_OPT_PERMUTE	0x1	/* options also after words */
#define APP_OPT_WORDS	0x2	/* words after the options (else refused) */
/*
 * Parse argv's options by opts (ended by APP_OPT_END).  A bad option, or
 * a word without APP_OPT_WORDS ("unexpected argument 'W'"), is a usage
 * error (app_usage()).  Returns the index of the first word.
 */
int	app_options(int argc, char **argv, const struct app_opt *opts,
	    int flags);
/* For apps that take no words: a bad option or any word is a usage error. */
void	app_no_words(int argc, char **argv);
/*
 * An option's number: a decimal integer in [min, max], or
 * exit 2 with "bad OPT 'S'" naming the range.
 */
long long app_parse_num(const char *opt, const char *s, long long min,
	    long long max);

/* The bound port called name, or NULL when the graph left it open. */
struct port *app_port(const char *name);
/*
 * The same, for apps with an input and an output of one name (lwaftr v4);
 * dir 0 is either, as app_port().
 */
struct port *app_port_dir(const char *name, int dir);
/*
 * Refuse the graph (exit 2, as for a PORT_REQUIRED port) unless port
 * name is bound in direction dir: PORT_IN, PORT_OUT, both (each), or 0
 * (either).  Name "*": some port of that direction.  For ports required
 * only in some modes or by some arguments.
 */
void	app_require_port(const char *name, int dir);
/* All bound ports, for apps with any-name ports (tee). */
extern struct port	*app_ports;
extern int		 app_nports;
/* Every ring of every port, once bound (before init()). */
extern struct ring	**app_rings;
extern int		 app_nrings;

/* Free slots on an output port (UINT32_MAX when unbound), capped at want. */
uint32_t app_room(struct port *out, uint32_t want);

/*
 * Named counters in the stage's shared counter file, e.g. "drop-nomatch".
 * The app increments the returned word with plain stores: only this process
 * writes its stage file; readers (snb-top) load whole aligned words.
 */
uint64_t *app_counter(const char *name);
/*
 * The same for a gauge: a level that goes up and down (table entries), not
 * a count of events.  snb-top exports it as a Prometheus gauge and never
 * clears it (snb-ctl clear).
 */
uint64_t *app_gauge(const char *name);
/*
 * The counter or gauge called name if this stage has it (made by this
 * process, or handed over by a predecessor), else NULL: for a level to
 * be set back to 0 without making it.
 */
uint64_t *app_counter_find(const char *name);
/*
 * Many at once: c[i] = app_counter(names[i]) up to the NULL name.  An
 * app's struct of counter pointers, declared in the order of its names,
 * is such an array: app_counters((uint64_t **)&cnt, names).
 */
void	 app_counters(uint64_t **c, const char *const *names);

/*
 * 1 when this process continues an earlier one of the same app on the
 * same rings (a restart, or a swap to the same app): counters and state
 * were handed over.  Valid from start() on.
 */
int	app_resumed(void);

/*
 * The app's hand-over state: size bytes (at most APP_STATE_MAX), zeroed
 * on a fresh start, the predecessor's last committed copy when resumed.
 * Valid from start() on; the app changes it freely and commits it with
 * app_state_commit() (a copy of size bytes and one release store).
 */
#define APP_STATE_MAX	512
void	*app_state(size_t size);
void	 app_state_commit(void);
/*
 * An exactly-once consumer resumed: release, unread, input ring r's
 * packets up to tail, the position its predecessor committed after
 * taking them (written, counted) and may have died before releasing.
 * Returns how many, or -1 after a warning when r does not hold them
 * (a position that is not that ring's): nothing is skipped then.
 */
int64_t	 app_release_to(struct ring *r, uint64_t tail);

/*
 * From control(): run fn(arg) on the data path between two breaths, and
 * return 0 once it ran; -1 if the stage stops first (fn does not run).
 * The data path looks for such a call once a breath (one load); a
 * sleeping one is woken.
 */
int	app_ctl_sync(void (*fn)(void *), void *arg);

/*
 * 1 when every input ring is closed and read (the stage has at least
 * one): what ends a stage after an idle breath.
 */
int	app_inputs_done(void);
/*
 * 1 when an input's stream was cut short by a failure upstream (see
 * ring_close): at end of stream, what came is not the whole of it.
 */
int	app_inputs_failed(void);
/*
 * The directory of the graph this stage is in (the one its counter file
 * is in, see rundir.h), or NULL when the app runs alone: for state that
 * the processes of one graph share, and that goes with the graph.
 */
const char *app_graph_dir(void);
/* A source calls this when it has nothing more to send. */
void	app_done(void);
/*
 * The app ends the whole graph, successfully: its output's reader went
 * away (EPIPE on a pipe), or it did all it was asked to (a count).  The
 * stage leaves after this breath as on SIGTERM (stop(0), outputs left
 * open), its stage file says STAGE_ENDED, and the launcher stops every
 * other stage and exits 0, as a pipeline ends when its last reader does.
 */
void	app_end_graph(void);
/*
 * The stage has been asked to leave (SIGTERM, SIGINT: a stop, a restart,
 * a swap): an app waiting outside the runtime (a full pipe) looks, so
 * that it leaves at once rather than when its peer makes room.
 */
int	app_detaching(void);
/*
 * A device app (a socket, a tap) registers the descriptors its idle sleep
 * must also wake for, e.g. app_wait_fd(sock, POLLIN).
 */
#define APP_MAX_FDS	8
void	app_wait_fd(int fd, short events);
/* A paced app: do not sleep past this CLOCK_MONOTONIC time (ns). */
void	app_wake_at(uint64_t ns);
uint64_t app_now_ns(void);
/* The time of day in ns since the epoch: a packet's capture time. */
uint64_t app_realtime_ns(void);

/* Counter file layout (one per stage, read by snb-top). */
#define STAGE_MAGIC	0x6567617473626e73ULL	/* "snbstage" */
#define STAGE_MAX_COUNTERS 128
struct stage_counter {
	char		name[48];
	uint64_t	value;
	uint64_t	flags;		/* STAGE_COUNTER_* */
};
#define STAGE_COUNTER_GAUGE	1	/* app_gauge(): a level, not a count */
#define STAGE_HIST_SUB_BITS 6		/* busy_hist: see stage_hist_bucket() */
#define STAGE_HIST	(15 << STAGE_HIST_SUB_BITS)	/* up to 2^20 / 16 ns */
struct stage_file {
	uint64_t	magic;
	int32_t		pid;
	uint32_t	ncounters;
	char		app[32];
	char		label[64];	/* as in the graph (GRAPH_NAME_MAX) */
	uint64_t	breaths;	/* built-in counters first */
	uint64_t	idle_sleeps;
	uint64_t	restarts;	/* by the launcher (--restart) */
	uint64_t	packets_in;
	uint64_t	packets_out;
	uint64_t	busy_ns;	/* in breaths that moved packets */
	struct stage_counter counters[STAGE_MAX_COUNTERS];
	/* Appended (readers of the fields above keep their offsets). */
	uint32_t	exit_state;	/* STAGE_*: how the process left */
	uint32_t	state_size;	/* bytes of state in use */
	_Atomic uint64_t state_gen;	/* state[state_gen & 1] is current */
	unsigned char	state[2][APP_STATE_MAX];
	uint64_t	busy_breaths;	/* breaths that moved packets */
	/*
	 * What a unit of work (a packet breathe() counted) cost in each busy
	 * breath, weighted by the units: 2^STAGE_HIST_SUB_BITS buckets an octave
	 * (stage_hist_bucket()).  Its median is the cost of a typical
	 * breath, which other processes taking the core on a loaded
	 * machine leave alone; busy_ns counts the time they took too.
	 */
	uint64_t	busy_units;
	uint64_t	busy_hist[STAGE_HIST];
};

/*
 * The bucket of ns spent on units (> 0) of work: from 1/16 ns, linear up
 * to 8 ns, then 64 buckets an octave (1.6% wide) up to 2^16 ns; beyond,
 * the last.
 */
static inline unsigned
stage_hist_bucket(uint64_t ns, uint64_t units)
{
	unsigned b = hist_bucket((ns << 4) / units, STAGE_HIST_SUB_BITS);

	return b < STAGE_HIST ? b : STAGE_HIST - 1;
}

#define STAGE_RUNNING	0
#define STAGE_EOF	1	/* inputs ended; stop(1) runs: a failure now
				   is final */
#define STAGE_FINISHED	2	/* outputs closed, exit 0 */
#define STAGE_DETACHED	3	/* SIGTERM: left without closing */
#define STAGE_ENDED	4	/* app_end_graph(): stop the graph, exit 0 */

#endif
