/*
 * stats.h: read-only views of running graphs for snb-ps and snb-top.  A
 * graph is a directory in the run directory holding snb-run.pid, one
 * LABEL.stage counter file per stage and, in rings/, one ring file per
 * link (see rundir.h); a view maps them read-only and never writes.
 */
#ifndef SNB_STATS_H
#define SNB_STATS_H

#include <limits.h>

#include "app.h"
#include "ring.h"

/*
 * What snb-ctl clear saw (baseline.c): a view shows a counter as its value
 * less this, a gauge as it is.  Zero where nothing was cleared, or when
 * the stage now runs another app (a swap started its counters afresh).
 */
struct stage_base {
	uint64_t	in, out, busy_ns, breaths, busy_breaths;
	uint64_t	c[STAGE_MAX_COUNTERS];	/* by index in f->counters */
};

struct stage_view {
	const struct stage_file	*f;	/* mapped read-only */
	int			 alive;	/* its pid exists */
	int			 order;	/* in the graph's text (snb-ctl show) */
	int			 inputs; /* links into it */
	struct stage_base	 base;
};

struct link_view {
	char		name[128];	/* FROM:PORT=TO:PORT */
	char		from[64], from_port[64], to[64], to_port[64];
	int		order;		/* its from stage's */
	struct ring	r;		/* observer */
	uint64_t	base_packets, base_bytes, base_drops;
};

struct graph_view {
	char			 name[64];
	long			 pid;	/* snb-run's */
	int			 alive;	/* its snb-run holds the lock */
	int			 stale;	/* nobody does (snb_graph_stale) */
	long			 started; /* snb-run's start, Unix time; 0 */
	long			 cleared; /* last snb-ctl clear, Unix time; 0 */
	char			 rings[PATH_MAX + 64]; /* snb_rings_where */
	struct stage_view	*stages;
	int			 nstages;
	struct link_view	*links;
	int			 nlinks;
};

/*
 * Load every graph under run (or just the one called only, if not NULL).
 * Files that are not what they claim are skipped.  Returns the count, -1
 * with errbuf set if run cannot be read.
 */
int	graphs_load(const char *run, const char *only, struct graph_view **gv,
	    char *errbuf, size_t errlen);
void	graphs_free(struct graph_view *gv, int n);
/* The graph in the directory dir into g (zeroed but for its name). */
void	graph_load(const char *dir, struct graph_view *g);

/* A counter's value since the baseline (a value below it started afresh). */
static inline uint64_t
since(uint64_t value, uint64_t base)
{
	return value >= base ? value - base : value;
}

/*
 * snb-ctl clear (baseline.c): write the counters of the graph in dir as
 * its new baseline.  Returns how many stages it holds, or -1 with errbuf
 * set.  baseline_load() applies it to a view, for graphs_load().
 */
int	graph_clear(const char *dir, char *errbuf, size_t errlen);
void	baseline_load(const char *dir, struct graph_view *g);

/* Print s as a JSON string (with quotes). */
void	json_str(FILE *f, const char *s);

#endif
