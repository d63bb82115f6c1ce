/*
 * app.h: the runtime every snb app is built on.
 *
 * An app fills in a struct app_desc and calls app_main().  The runtime
 * binds the ports the launcher hands over, answers --describe and --help,
 * and runs the breathe loop:
 *
 *	for (;;) {
 *		n = desc->breathe();		pull what the outputs have room
 *						for, process, push
 *		if every input is closed and drained, or the app called
 *		app_done(): desc->stop(1), close outputs, exit 0
 *		if SIGTERM: desc->stop(0), detach without closing, exit 0
 *		if n == 0: back off (spin, yield, then sleep on a ring futex)
 *	}
 *
 * Launcher options, consumed before the app sees argv:
 *	--snb-in=PORT=PATH	attach ring PATH as consumer on input PORT
 *				(repeatable: fan-in)
 *	--snb-out=PORT=PATH	attach ring PATH as producer on output PORT
 *	--snb-stats=PATH	create the stage's counter file at PATH
 *	--snb-label=LABEL	the stage's name in the graph
 *	--snb-standby-fd=FD	a replacement (swap): bind, write one byte to
 *				FD, wait for SIGUSR1 before the first breath
 *	--snb-restarts=N	how often the launcher restarted this stage
 */
#ifndef SNB_APP_H
#define SNB_APP_H

#include <stdint.h>

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
	const char	*usage;		/* "[-r] EXPRESSION..." */
	const char	*summary;	/* one line for --help */
	int		 device;	/* a device app (keyed by its argument) */
	const struct port_desc *ports;	/* ended by { NULL, 0 } */
	/* Parse the app's own arguments; exit with a message on error. */
	void		(*init)(int argc, char **argv);
	/* One breath; returns the number of packets handled (0 = idle). */
	int		(*breathe)(void);
	/* Before exit: eof = 1 at end of stream, 0 when detaching. */
	void		(*stop)(int eof);
};

/* A bound port: one ring per link (inputs may have several: fan-in). */
struct port {
	char		 name[32];
	int		 flags;		/* PORT_IN or PORT_OUT */
	int		 nrings;
	struct ring	*rings;
};

int	app_main(const struct app_desc *desc, int argc, char **argv);

/* The bound port called name, or NULL when the graph left it open. */
struct port *app_port(const char *name);
/* The same, for apps with an input and an output of one name (lwaftr v4). */
struct port *app_port_dir(const char *name, int dir);
/* All bound ports, for apps with any-name ports (tee). */
extern struct port	*app_ports;
extern int		 app_nports;

/* Free slots on an output port (UINT32_MAX when unbound), capped at want. */
uint32_t app_room(struct port *out, uint32_t want);

/*
 * Named counters in the stage's shared counter file, e.g. "drop-nomatch".
 * The app increments the returned word with plain stores: only this process
 * writes its stage file; readers (snb-top) load whole aligned words.
 */
uint64_t *app_counter(const char *name);

/*
 * 1 when this process takes over from an earlier one on the same rings (a
 * restart after a failure, or a swap): an app writing a file appends to
 * it instead of starting it again.  Valid from init() on.
 */
int	app_resumed(void);

/*
 * Write every counter of this stage to path, one "name value" line each in
 * the order they were made (for an app's --counters-out at its stop());
 * 0, or -1 after a warning naming the file.
 */
int	app_write_counters(const char *path);

/* A source calls this when it has nothing more to send. */
void	app_done(void);
/*
 * A device app (a socket, a tap) registers the descriptors its idle sleep
 * must also wake for, e.g. app_wait_fd(sock, POLLIN).
 */
#define APP_MAX_FDS	8
void	app_wait_fd(int fd, short events);
/* A paced app: do not sleep past this CLOCK_MONOTONIC time (ns). */
void	app_wake_at(uint64_t ns);
uint64_t app_now_ns(void);

/* Counter file layout (one per stage, read by snb-top). */
#define STAGE_MAGIC	0x6567617473626e73ULL	/* "snbstage" */
#define STAGE_MAX_COUNTERS 128
struct stage_counter {
	char		name[48];
	uint64_t	value;
	uint64_t	pad;
};
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
};

#endif
