/*
 * run.h: snb-run's parts and what they share.
 *
 *	main.c		options, parse, --describe every app, check, start
 *	launch.c	files (rings, stage files), spawning a stage, what a
 *			stage left behind (exit state, its rings)
 *	supervise.c	the one event loop: deaths, restarts, the drain after
 *			a failure, signals, timers; it never blocks
 *	ctl.c		the control socket: requests read and answered
 *			without blocking the loop
 *	op.c		the swap and restart state machines (one at a time)
 *	roll.c		a rolling swap or restart of a stage's copies, one
 *			copy after the other through op.c
 *	apps.c		the installed apps (--list, finding one, "did you
 *			mean"), and -c's check of every stage's words
 */
#ifndef SNB_RUN_H
#define SNB_RUN_H

#include <sys/types.h>

#include <limits.h>
#include <signal.h>
#include <poll.h>
#include <stdio.h>
#include <stdint.h>

#include "graph.h"
#include "ring.h"
#include "server.h"

#define STOP_GRACE_MS	3000	/* SIGTERM, then SIGKILL after this */
#define RESTART_MIN_MS	100
#define RESTART_MAX_MS	5000
#define QUICK_FAIL_MS	250	/* a failure sooner than this after start */
#define DRAIN_MS	10000	/* after a failure, downstream drains */

/*
 * An app stages run, found and asked --describe once (main.c's kind_of(),
 * or a swap's replacement, op.c), and kept on kinds until the end: a graph
 * of thousands of stages has a handful of apps.
 */
struct app_kind {
	struct app_kind	*next;
	char		 name[APP_NAME_MAX];
	char		 path[PATH_MAX];
	struct app_info	 info;
};

struct proc {
	pid_t		 pid;		/* 0 = not running */
	int		 done;		/* finished: end of stream */
	int		 leaving;	/* we asked it to leave (SIGTERM) */
	int		 restarts;	/* in all, failures and snb-ctl */
	int		 quick;		/* failures in a row, each quick */
	uint64_t	 started;	/* ms */
	uint64_t	 restart_at;	/* ms, CLOCK_MONOTONIC; 0 = none */
	int		 swapped;	/* runs a swap's replacement */
	struct app_kind	*kind;		/* the app it runs */
};

extern struct graph	 g;
extern struct proc	*procs;
extern struct app_kind	*kinds;
extern char		 graph_dir[PATH_MAX];
extern int		 restart_on_failure, max_restarts, verbose;
extern uint32_t		 ring_slots, ring_capacity;
extern int		 stop_requested;	/* snb-ctl stop */
extern char		 graph_where[PATH_MAX];	/* "FILE:" or "": errors */

/* launch.c */
#define DESCRIBE_MS	5000	/* an app's answer to --describe */
#define DESCRIBE_MAX	8192	/* bytes of it, NUL included */
pid_t	describe_spawn(const char *path, int *fd);
int	pipe_drain(int fd, char *buf, size_t *len, size_t size);
int	describe_text(const char *path, char *buf, size_t buflen,
	    char *errbuf, size_t errlen);
void	stage_path(int i, char *out, size_t len);
void	create_rings(void);
pid_t	spawn(int i, const char *exe, char **words, int nwords,
	    const char *stats, int *told, const char *prev);
int	start_stage(int i, int told);
void	stage_ran(int i);
int	stage_exit_state(int i);
int	stage_breathed(int i);
void	stage_rings(int i, void (*fn)(struct ring *, pid_t), pid_t pid);
int	peer_waits_on(int i);
void	close_outputs(int i);
int	outputs_closed(int i);
void	rings_show(FILE *out);
void	stage_totals(void);
void	cleanup(void);
void	die_cleanup(int status) __attribute__((noreturn));

/* apps.c */
int	list_apps(void);
int	find_app(const char *name, char *path, size_t pathlen, char *near,
	    size_t nearlen);
int	check_stages(const char *where);

/* supervise.c */
const sigset_t *block_signals(void);
int	supervise(void);
int	graph_stopping(void);

/* ctl.c */
extern struct server ctl_srv;
int	ctl_listen(void);
void	ctl_reply(int id, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* op.c */
int	op_busy(void);
void	op_swap(int i, const char *spec, int client);
void	op_restart(int i, int client);
int	op_fd(void);
void	op_event(void);
int	op_child_exited(pid_t pid, int status);
void	op_stage_left(int i, pid_t pid, int status);
uint64_t op_timers(uint64_t now);
void	op_abort(void);

/* roll.c */
#define ROLL_CLIENT	(-1)	/* op.c answers roll_answer(), not a client */
int	roll_copy(const char *base, int k);
int	roll_busy(void);
void	roll_start(int restart, const char *base, const char *spec,
	    int client);
void	roll_answer(const char *reply);

#endif
