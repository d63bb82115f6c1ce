/*
 * rundir_int.h: what rundir.c and graphdir.c share, and nobody else uses.
 */
#ifndef SNB_RUNDIR_INT_H
#define SNB_RUNDIR_INT_H

#include <sys/stat.h>

#include <stddef.h>

#define PID_FILE	"snb-run.pid"
#define RINGS		"rings"


/*
 * errbuf gets "path: " and the message, strerror(errno) if fmt is NULL.
 * Returns -1; errno is kept for the caller to look at.
 */
int	rd_fail(char *errbuf, size_t errlen, const char *path,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A directory (not a symlink), ours, not writable by others; or -1. */
int	rd_check_stat(const char *path, const struct stat *st, char *errbuf,
	    size_t errlen);
int	rd_check_dir(const char *path, char *errbuf, size_t errlen);
/*
 * Make the run directory again: another process that had made it removed
 * it, empty, after snb_run_dir() found it (snb_run_dir_release()).
 */
int	rd_remake_run_dir(char *errbuf, size_t errlen);
/*
 * A stale graph was removed: the run directory (and huge_parent, the
 * hugetlbfs directory its rings were in, if not NULL) go at
 * snb_run_dir_release() if empty, as if this process had made them.
 */
void	rd_adopt_dirs(const char *huge_parent);
/* gdir/rings: a symlink into hugetlbfs when it has free pages, else a
   directory. */
int	rd_make_rings(const char *gdir, const char *name, char *errbuf,
	    size_t errlen);

#endif
