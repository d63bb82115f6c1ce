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

struct stage_view {
	const struct stage_file	*f;	/* mapped read-only */
	int			 alive;	/* its pid exists */
};

struct link_view {
	char		name[128];	/* FROM:PORT=TO:PORT */
	struct ring	r;		/* observer */
};

struct graph_view {
	char			 name[64];
	long			 pid;	/* snb-run's */
	int			 alive;	/* its snb-run holds the lock */
	int			 stale;	/* nobody does (snb_graph_stale) */
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

/* Print s as a JSON string (with quotes). */
void	json_str(FILE *f, const char *s);

#endif
