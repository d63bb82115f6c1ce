/*
 * rundir.h: where a graph's files live, and how a graph that lost its
 * snb-run is found and removed.
 *
 *	$SNB_RUN_DIR, else /dev/shm/snb-UID	run directory: one per user,
 *						0700, checked with lstat
 *	  GRAPH/				graph directory (tmpfs)
 *	    snb-run.pid				pid of snb-run, flock()ed by it
 *						for as long as it lives
 *	    ctl					control socket (snb-ctl)
 *	    LABEL.stage, LABEL.stage.new	stage counter files
 *	    stages				the labels in the graph's order,
 *						one a line (snb-top's order)
 *	    counters.base			snb-ctl clear's baseline
 *						(baseline.c)
 *	    LABEL.ctl				a stage's own control socket,
 *						if its app takes requests
 *						(snb-ctl GRAPH config LABEL)
 *	    rings/				ring files FROM:PORT=TO:PORT,
 *						a directory (tmpfs) or a
 *						symlink to the hugetlbfs one:
 *	$SNB_HUGE_DIR, else /dev/hugepages	("none": never hugetlbfs)
 *	  snb-UID/				checked like the run directory
 *	    GRAPH.XXXXXXXX/			rings, when hugetlbfs is mounted
 *						there and has free huge pages
 *
 * The random suffix keeps two run directories ($SNB_RUN_DIR) that share
 * the hugetlbfs mount from ever sharing a ring directory.
 *
 * Rings go to hugetlbfs when it has free pages (counted in
 * /sys/kernel/mm/hugepages: statvfs reports nothing on a mount without
 * size=); the small files always stay in tmpfs (hugetlbfs files can only
 * be whole pages and cannot be written with write()).  A graph whose
 * snb-run.pid nobody holds locked is stale (snb_graph_stale() below).
 */
#ifndef SNB_RUNDIR_H
#define SNB_RUNDIR_H

#include <stddef.h>

#define SNB_GRAPH_NAME_MAX	63	/* bytes of a graph's name */

/*
 * The control socket (ctl): a request is words, each ending in NUL, then
 * EOF; the one reply starts "ok:" or "error:".  The requests, for snb-ctl's
 * usage and snb-run's answer to anything else:
 */
#define SNB_CTL_REQUESTS "show | stop | clear | restart LABEL | swap LABEL 'APP ARGS'"
/* How many words follow request w, or -1 if w is none. */
int	snb_ctl_nargs(const char *w);
/* 0 if name is a graph's name (graph.h's alphabet), or -1 with errbuf set. */
int	snb_graph_name_check(const char *name, char *errbuf, size_t errlen);

/*
 * The run directory (see above), created if missing; refused unless it is
 * a directory (not a symlink) owned by us and not writable by others.
 * Returns a static string, or NULL with errbuf set.
 */
const char *snb_run_dir(char *errbuf, size_t errlen);
/*
 * Remove the run directory and the user's directory in the hugetlbfs
 * mount if this process made them (snb_run_dir(), snb_graph_create()) and
 * they are empty now: a run directory of its own ($SNB_RUN_DIR) leaves
 * with the graph.  One that was there before stays, and so does one that
 * holds anything (another graph's).  A process that finds the directory
 * gone under it makes it again (snb_graph_create()).  For snb-run, after
 * snb_graph_remove().
 */
void	snb_run_dir_release(void);
/* True if path lives on hugetlbfs; *page gets the huge page size. */
int	snb_is_hugetlbfs(const char *path, size_t *page);

/*
 * Make the directory of graph name (removing a stale one of that name
 * completely first, with a line on stderr; refusing a live one: "graph
 * 'NAME' is already running (pid N)"), its rings/ (in hugetlbfs when it
 * has free pages), and snb-run.pid with our pid, locked.  The directory
 * appears under its name complete (it is made under a hidden name and
 * renamed).  dir gets the graph directory.  Returns the lock's descriptor
 * (keep it open until exit; it is close-on-exec), or -1 with errbuf set.
 */
int	snb_graph_create(const char *name, char *dir, size_t dirlen,
	    char *errbuf, size_t errlen);
/*
 * Remove a graph directory and everything in it, whatever the names, and
 * the hugetlbfs directory its rings symlink leads to.  For the graph's own
 * snb-run at exit (it does not look at the lock; close the lock's
 * descriptor after).  Returns 0 (also if dir is gone already), or -1 with
 * errbuf set.
 */
int	snb_graph_remove(const char *dir, char *errbuf, size_t errlen);
/*
 * 1 if no snb-run holds the graph's lock (its snb-run is gone; a pid that
 * was reused since does not matter), 0 if one does or dir is not there.
 */
int	snb_graph_stale(const char *dir);
/*
 * Remove the stale graph called only (every stale graph if only is NULL),
 * saying so on stderr for each.  Returns how many were removed, or -1
 * with errbuf set (only names a live graph, or none).
 */
int	snb_graph_clean(const char *only, char *errbuf, size_t errlen);
/*
 * Where a graph's rings live, for snb-ctl show and snb-ps, e.g.
 * "hugetlbfs (2048 kB pages) /dev/hugepages/snb-0/g" or "tmpfs
 * /dev/shm/snb-0/g/rings".  Returns buf.
 */
const char *snb_rings_where(const char *dir, char *buf, size_t len);
/*
 * Move a graph's rings/ (still empty of rings) from hugetlbfs to tmpfs:
 * the pool had free pages, but not enough for every ring of the graph.
 */
int	snb_rings_to_tmpfs(const char *dir, char *errbuf, size_t errlen);

#endif
