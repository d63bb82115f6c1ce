/*
 * rundir.c: the run directory, and where a graph's rings live (see
 * rundir.h for the layout).  Creating, removing and cleaning graph
 * directories is graphdir.c's.
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "rundir.h"
#include "rundir_int.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC	0x01021994
#endif

/*
 * The directories this process made (empty at first), for
 * snb_run_dir_release(): only those go, and only while empty.
 */
static char	run_made[PATH_MAX], huge_made[PATH_MAX];
static char	run_dir[PATH_MAX];	/* snb_run_dir()'s answer */

int
rd_fail(char *errbuf, size_t errlen, const char *path, const char *fmt, ...)
{
	va_list ap;
	int e = errno, n;

	n = snprintf(errbuf, errlen, "%s: %s", path, fmt ? "" : strerror(e));
	if (fmt && n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	errno = e;
	return -1;
}

/*
 * Trust a directory only if it is one (not a symlink to one), is ours, and
 * others cannot write to it: anyone who can write there can plant or
 * replace what we open.
 */
int
rd_check_stat(const char *path, const struct stat *st, char *errbuf,
    size_t errlen)
{
	if (S_ISLNK(st->st_mode))
		return rd_fail(errbuf, errlen, path, "is a symbolic link, "
		    "refused");
	if (!S_ISDIR(st->st_mode))
		return rd_fail(errbuf, errlen, path, "not a directory");
	if (st->st_uid != geteuid())
		return rd_fail(errbuf, errlen, path, "owned by uid %u, not by "
		    "us (uid %u), refused", (unsigned)st->st_uid,
		    (unsigned)geteuid());
	if (st->st_mode & S_IWOTH)
		return rd_fail(errbuf, errlen, path, "writable by others (mode "
		    "%04o), refused", (unsigned)(st->st_mode & 07777));
	return 0;
}

int
rd_check_dir(const char *path, char *errbuf, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st) == -1)
		return rd_fail(errbuf, errlen, path, NULL);
	return rd_check_stat(path, &st, errbuf, errlen);
}

/*
 * Make dir (one level, 0700) if missing, then check it.  made gets dir if
 * we made it.
 */
static int
make_dir(const char *dir, char *made, size_t madelen, char *errbuf,
    size_t errlen)
{
	if (mkdir(dir, 0700) == 0)
		strlcpy(made, dir, madelen);
	else if (errno != EEXIST)
		return rd_fail(errbuf, errlen, dir, NULL);
	return rd_check_dir(dir, errbuf, errlen);
}

const char *
snb_run_dir(char *errbuf, size_t errlen)
{
	const char *env = getenv("SNB_RUN_DIR");

	if (run_dir[0])
		return run_dir;
	if (env && *env)
		strlcpy(run_dir, env, sizeof(run_dir));
	else
		snprintf(run_dir, sizeof(run_dir), "/dev/shm/snb-%u",
		    (unsigned)geteuid());
	if (make_dir(run_dir, run_made, sizeof(run_made), errbuf, errlen) ==
	    -1) {
		run_dir[0] = '\0';
		return NULL;
	}
	return run_dir;
}

int
rd_remake_run_dir(char *errbuf, size_t errlen)
{
	const char *dir;

	if ((dir = snb_run_dir(errbuf, errlen)) == NULL)
		return -1;
	return make_dir(dir, run_made, sizeof(run_made), errbuf, errlen);
}

/* rmdir, if empty; saying why not only when that is unexpected. */
static void
release_dir(char *made)
{
	if (made[0] && rmdir(made) == -1 && errno != ENOTEMPTY &&
	    errno != EEXIST && errno != ENOENT && errno != EBUSY)
		fprintf(stderr, "snb: %s: %s\n", made, strerror(errno));
	made[0] = '\0';
}

/*
 * A stale graph (its snb-run killed) was removed from the run directory,
 * or its rings from our hugetlbfs directory (the rings target's parent):
 * the dead snb-run would have removed that directory once empty, so the
 * remover does it in its place.
 */
void
rd_adopt_dirs(const char *huge_parent)
{
	if (run_dir[0] && !run_made[0])
		strlcpy(run_made, run_dir, sizeof(run_made));
	if (huge_parent && !huge_made[0])
		strlcpy(huge_made, huge_parent, sizeof(huge_made));
}

void
snb_run_dir_release(void)
{
	release_dir(huge_made);
	release_dir(run_made);
}

/* --- hugetlbfs --- */

/* The pool's count of what (free, resv) huge pages of size page. */
static long
read_long(size_t page, const char *what)
{
	char path[128];
	FILE *f;
	long v;

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/"
	    "hugepages-%zukB/%s_hugepages", page / 1024, what);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * Huge pages a new mapping on mnt could get: the pool's free pages not
 * already promised to a mapping, or the mount's own limit if it has one
 * (size=).  statfs alone will not do: a mount without size= reports 0.
 */
static long
huge_pages_free(const char *mnt, size_t page)
{
	struct statfs sf;
	long avail, resv;

	if ((avail = read_long(page, "free")) <= 0)
		return 0;
	if ((resv = read_long(page, "resv")) > 0)
		avail -= resv;
	if (statfs(mnt, &sf) == 0 && sf.f_blocks > 0 &&
	    sf.f_blocks != (fsblkcnt_t)-1 && (long)sf.f_bfree < avail)
		avail = (long)sf.f_bfree;
	return avail > 0 ? avail : 0;
}

/*
 * The user's directory in the hugetlbfs mount, made if missing: top gets
 * its absolute path (the rings symlink must not depend on our cwd).  A
 * mount we may not write to is silently of no use; a directory there that
 * fails the checks is worth a warning.
 */
static int
huge_user_dir(const char *mnt, char *top, size_t len)
{
	char real[PATH_MAX], why[512];

	if (realpath(mnt, real) == NULL)
		return -1;
	snprintf(top, len, "%s/snb-%u", real, (unsigned)geteuid());
	errno = 0;	/* a check that fails keeps it */
	if (make_dir(top, huge_made, sizeof(huge_made), why, sizeof(why)) == 0)
		return 0;
	if (errno != EACCES && errno != EPERM && errno != EROFS)
		fprintf(stderr, "snb: %s; rings in tmpfs\n", why);
	return -1;
}

/*
 * rings in gdir: a symlink to a fresh <mount>/snb-UID/NAME.XXXXXXXX when
 * hugetlbfs has free pages, else a directory.  The symlink is made before
 * its target so that whoever removes gdir finds the target.  Failing to
 * use hugetlbfs is not an error: the rings go to tmpfs, and
 * snb_rings_where() says so.
 */
int
rd_make_rings(const char *gdir, const char *name, char *errbuf, size_t errlen)
{
	char link[PATH_MAX], top[PATH_MAX], target[PATH_MAX];
	const char *mnt = getenv("SNB_HUGE_DIR");	/* "none": no hugetlbfs */
	size_t page;
	int i, e;

	if (mnt == NULL || *mnt == '\0')
		mnt = "/dev/hugepages";
	else if (strcmp(mnt, "none") == 0)
		mnt = NULL;
	snprintf(link, sizeof(link), "%s/%s", gdir, RINGS);
	if (mnt && snb_is_hugetlbfs(mnt, &page) &&
	    huge_pages_free(mnt, page) > 0 &&
	    huge_user_dir(mnt, top, sizeof(top)) == 0) {
		for (i = 0; i < 16; i++) {
			snprintf(target, sizeof(target), "%s/%s.%08x", top,
			    name, arc4random());
			if (symlink(target, link) == -1)
				return rd_fail(errbuf, errlen, link, NULL);
			if (mkdir(target, 0700) == 0)
				return 0;
			e = errno;
			unlink(link);
			/*
			 * ENOENT: another snb-run removed top, empty, as it
			 * left (snb_run_dir_release()) after we made sure of
			 * it.  Make it again.
			 */
			if (e == ENOENT && huge_user_dir(mnt, top,
			    sizeof(top)) == 0)
				continue;
			if (e != EEXIST) {
				fprintf(stderr, "snb: %s: %s; rings in tmpfs\n",
				    target, strerror(e));
				goto tmpfs;
			}
		}
	}
tmpfs:
	if (mkdir(link, 0700) == -1)
		return rd_fail(errbuf, errlen, link, NULL);
	return 0;
}

const char *
snb_rings_where(const char *dir, char *buf, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];
	struct statfs sf;
	struct stat st;
	size_t page;
	ssize_t n;

	snprintf(link, sizeof(link), "%s/%s", dir, RINGS);
	if ((n = readlink(link, target, sizeof(target) - 1)) >= 0)
		target[n] = '\0';
	else
		strlcpy(target, link, sizeof(target));
	if (stat(target, &st) == -1 || !S_ISDIR(st.st_mode))
		snprintf(buf, len, "missing %s", target);
	else if (snb_is_hugetlbfs(target, &page))
		snprintf(buf, len, "hugetlbfs (%zu kB pages) %s", page / 1024,
		    target);
	else if (statfs(target, &sf) == 0 && sf.f_type == TMPFS_MAGIC)
		snprintf(buf, len, "tmpfs %s", target);
	else
		snprintf(buf, len, "not tmpfs %s", target);
	return buf;
}

int
snb_ctl_nargs(const char *w)
{
	static const struct {
		const char	*word;
		int		 nargs;
	} req[] = { { "show", 0 }, { "stop", 0 }, { "clear", 0 }, { "restart", 1 },
	    { "swap", 2 } };
	size_t i;

	for (i = 0; i < sizeof(req) / sizeof(req[0]); i++)
		if (strcmp(w, req[i].word) == 0)
			return req[i].nargs;
	return -1;
}
