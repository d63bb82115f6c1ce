/*
 * graphdir.c: creating a graph directory, removing it, and finding and
 * removing stale ones (see rundir.h for the layout).
 *
 * A graph directory shows under its name only complete and goes away
 * without ever showing half-removed: it is built as .new-PID-XXXXXX
 * (snb-run.pid locked, rings/ in place) and renamed to its name, and it is
 * removed by renaming it to .rm-PID-XXXXXX first.  Only a holder of its
 * lock (its snb-run, or a remover who found it stale) renames it away, and
 * rename() never replaces a non-empty directory, so two snb-runs cannot
 * both take a name, and a clean cannot remove a graph that started under
 * the same name after the clean looked.  A .new- or .rm- directory whose
 * PID is gone is swept by snb_graph_clean(NULL).
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "graph.h"
#include "rundir.h"
#include "rundir_int.h"

#define MAX_DEPTH	8	/* of unexpected subdirectories in a graph */
#define LOCK_TRIES	5	/* a reader's LOCK_SH lasts microseconds */

enum reap { REAP_GONE, REAP_REMOVED, REAP_LIVE, REAP_ERROR };
static int	reaping;	/* removing a stale graph, not our own */

/* --- removal --- */

static int	remove_dir(int at, const char *name, const char *path,
		    int depth, char *errbuf, size_t errlen);

/*
 * Remove the hugetlbfs directory a rings symlink names, once it proves to
 * be ours: a directory of a snb-UID directory, both owned by us and not
 * writable by others.  A target that is already gone is fine.
 */
static int
remove_rings_target(const char *target, char *errbuf, size_t errlen)
{
	char parent[PATH_MAX], own[32], *slash;

	strlcpy(parent, target, sizeof(parent));
	snprintf(own, sizeof(own), "snb-%u", (unsigned)geteuid());
	/* Its parent must be /.../snb-UID: cut its own name, then look. */
	if (target[0] == '/')
		*strrchr(parent, '/') = '\0';
	if (target[0] != '/' || (slash = strrchr(parent, '/')) == NULL ||
	    strcmp(slash + 1, own))
		return rd_fail(errbuf, errlen, target, "unexpected rings "
		    "target, kept");
	if (rd_check_dir(parent, errbuf, errlen) == -1)
		return errno == ENOENT ? 0 : -1;
	/* Depth 1: a rings symlink is followed only from a graph. */
	if (remove_dir(AT_FDCWD, target, target, 1, errbuf, errlen) == -1)
		return -1;
	if (reaping)
		rd_adopt_dirs(parent);
	return 0;
}

/* Remove one entry of the directory fd; directories recursively. */
static int
remove_entry(int fd, const char *path, const char *name, int depth,
    char *errbuf, size_t errlen)
{
	char sub[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	snprintf(sub, sizeof(sub), "%s/%s", path, name);
	/* A graph's rings symlink leads to its hugetlbfs directory. */
	if (depth == 0 && strcmp(name, RINGS) == 0 &&
	    (n = readlinkat(fd, name, target, sizeof(target) - 1)) >= 0) {
		target[n] = '\0';
		if (remove_rings_target(target, errbuf, errlen) == -1)
			fprintf(stderr, "snb: %s\n", errbuf);
	}
	if (unlinkat(fd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR)
		return rd_fail(errbuf, errlen, sub, NULL);
	if (depth >= MAX_DEPTH)
		return rd_fail(errbuf, errlen, sub, "directories nested too "
		    "deep");
	return remove_dir(fd, name, sub, depth + 1, errbuf, errlen);
}

/*
 * Remove everything in the directory fd, whatever its name.  Passes repeat
 * while entries remain: a stage still exiting may add a file meanwhile.
 */
static int
empty_dir(int fd, const char *path, int depth, char *errbuf, size_t errlen)
{
	struct dirent *de;
	DIR *d;
	int dfd, pass, left = 1, r = 0;

	if ((dfd = dup(fd)) == -1 || (d = fdopendir(dfd)) == NULL) {
		r = rd_fail(errbuf, errlen, path, NULL);
		if (dfd != -1)
			close(dfd);
		return r;
	}
	/* The dup shares fd's offset: each pass reads from the start. */
	for (pass = 0; pass < 3 && left && r == 0; pass++) {
		rewinddir(d);
		for (left = 0; r == 0 && (de = readdir(d)) != NULL; ) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			left = 1;
			r = remove_entry(fd, path, de->d_name, depth, errbuf,
			    errlen);
		}
	}
	closedir(d);
	return r;
}

/*
 * Remove directory name (path) of the directory at and all it holds,
 * checked on the descriptor before it is emptied.
 */
static int
remove_dir(int at, const char *name, const char *path, int depth,
    char *errbuf, size_t errlen)
{
	struct stat st;
	int fd, r;

	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* O_NOFOLLOW on a symlink: ELOOP (or ENOTDIR). */
	if (fd == -1)
		return errno == ENOENT ? 0 : rd_fail(errbuf, errlen, path,
		    errno == ELOOP || errno == ENOTDIR ? "not a directory (or "
		    "a symbolic link), refused" : NULL);
	if (fstat(fd, &st) == -1 || rd_check_stat(path, &st, errbuf, errlen)) {
		close(fd);
		return -1;
	}
	r = empty_dir(fd, path, depth, errbuf, errlen);
	close(fd);
	if (r == 0 && unlinkat(at, name, AT_REMOVEDIR) == -1 &&
	    errno != ENOENT)
		r = rd_fail(errbuf, errlen, path, NULL);
	return r;
}

/* Remove the graph directory path (already renamed out of sight). */
#define remove_tree(path, errbuf, errlen) \
	remove_dir(AT_FDCWD, (path), (path), 0, (errbuf), (errlen))

/*
 * Rename dir to a fresh .rm-PID-XXXXXX next to it (rename() replaces the
 * empty directory mkdtemp made) and remove that.
 */
static int
rename_and_remove(const char *dir, char *errbuf, size_t errlen)
{
	const char *slash = strrchr(dir, '/');
	char tmp[PATH_MAX];
	int r;

	snprintf(tmp, sizeof(tmp), "%.*s.rm-%ld-XXXXXX",
	    slash ? (int)(slash + 1 - dir) : 0, dir, (long)getpid());
	if (mkdtemp(tmp) == NULL)
		return rd_fail(errbuf, errlen, tmp, NULL);
	if (rename(dir, tmp) == 0)
		return remove_tree(tmp, errbuf, errlen);
	r = errno == ENOENT ? 0 : rd_fail(errbuf, errlen, dir, NULL);
	rmdir(tmp);
	return r;
}

int
snb_graph_remove(const char *dir, char *errbuf, size_t errlen)
{
	if (rd_check_dir(dir, errbuf, errlen) == -1)
		return errno == ENOENT ? 0 : -1;
	return rename_and_remove(dir, errbuf, errlen);
}

int
snb_graph_stale(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, unlocked;

	snprintf(path, sizeof(path), "%s/%s", dir, PID_FILE);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		/* A graph shows only with its pid file: this one lost it. */
		return errno == ENOENT && lstat(dir, &st) == 0 &&
		    S_ISDIR(st.st_mode);
	unlocked = flock(fd, LOCK_SH | LOCK_NB) == 0;
	close(fd);
	return unlocked;
}

/*
 * Remove the graph run/name if it is stale (saying so): its pid file
 * locked for removal (*pid gets the pid in it), or none there (nothing to
 * lock: stale).
 */
static enum reap
reap(const char *run, const char *name, long *pid, char *errbuf,
    size_t errlen)
{
	const struct timespec pause = { 0, 5 * 1000 * 1000 };
	char dir[PATH_MAX], path[PATH_MAX], buf[32];
	struct stat a, b;
	ssize_t n;
	int fd, i, r;

	snprintf(dir, sizeof(dir), "%s/%s", run, name);
	if (rd_check_dir(dir, errbuf, errlen) == -1)
		return errno == ENOENT ? REAP_GONE : REAP_ERROR;
	*pid = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, PID_FILE);
	for (i = 0;; i++) {
		if (i == LOCK_TRIES)
			return REAP_LIVE;
		if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) ==
		    -1) {
			if (errno == ENOENT)
				break;
			rd_fail(errbuf, errlen, path, NULL);
			return REAP_ERROR;
		}
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		*pid = strtol(buf, NULL, 10);
		/* Still the file of the graph called dir (not replaced)? */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 &&
		    stat(path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			break;
		close(fd);
		nanosleep(&pause, NULL);
	}
	reaping = 1;
	r = rename_and_remove(dir, errbuf, errlen);
	reaping = 0;
	if (fd >= 0)
		close(fd);
	if (r == -1)
		return REAP_ERROR;
	rd_adopt_dirs(NULL);
	fprintf(stderr, "snb: removed stale graph %s\n", name);
	return REAP_REMOVED;
}

int
snb_graph_name_check(const char *name, char *errbuf, size_t errlen)
{
	if (name_ok(name) && strlen(name) <= SNB_GRAPH_NAME_MAX)
		return 0;
	snprintf(errbuf, errlen, "bad graph name '%s' (%s; at most %d)", name,
	    NAME_CHARS, SNB_GRAPH_NAME_MAX);
	return -1;
}

/* snb-run.pid in the new graph directory: our pid, locked. */
static int
make_pid_file(const char *gdir, char *errbuf, size_t errlen)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", gdir, PID_FILE);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (fd == -1 || flock(fd, LOCK_EX | LOCK_NB) == -1 ||
	    dprintf(fd, "%ld\n", (long)getpid()) < 0) {
		rd_fail(errbuf, errlen, path, NULL);
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

int
snb_graph_create(const char *name, char *dir, size_t dirlen, char *errbuf,
    size_t errlen)
{
	char tmp[PATH_MAX], why[512];
	const char *run;
	enum reap r;
	long pid;
	int fd, i;

	if (snb_graph_name_check(name, errbuf, errlen) == -1)
		return -1;
	/* Said as snb-ps and snb-ctl say it: SNB_RUN_DIR may be the cause. */
	if ((run = snb_run_dir(why, sizeof(why))) == NULL) {
		snprintf(errbuf, errlen, "run directory: %s", why);
		return -1;
	}
	if ((size_t)snprintf(dir, dirlen, "%s/%s", run, name) >= dirlen) {
		snprintf(errbuf, errlen, "%s/%s: path too long", run, name);
		return -1;
	}
	for (i = 0;; i++) {
		snprintf(tmp, sizeof(tmp), "%s/.new-%ld-XXXXXX", run,
		    (long)getpid());
		if (mkdtemp(tmp) != NULL)
			break;
		/* Removed, empty, by the snb-run that had made it? */
		if (errno != ENOENT || i == 3)
			return rd_fail(errbuf, errlen, tmp, NULL);
		if (rd_remake_run_dir(errbuf, errlen) == -1)
			return -1;
	}
	if (rd_make_rings(tmp, name, errbuf, errlen) == -1 ||
	    (fd = make_pid_file(tmp, errbuf, errlen)) == -1)
		goto fail;
	for (i = 0; i < 4; i++) {
		if (rename(tmp, dir) == 0)
			return fd;
		if (errno != EEXIST && errno != ENOTEMPTY && errno != ENOTDIR) {
			rd_fail(errbuf, errlen, dir, NULL);
			break;
		}
		r = reap(run, name, &pid, errbuf, errlen);
		if (r == REAP_LIVE) {
			snprintf(errbuf, errlen, "graph '%s' is already "
			    "running (pid %ld)", name, pid);
			break;
		}
		if (r == REAP_ERROR)
			break;
	}
	if (i == 4)
		rd_fail(errbuf, errlen, dir, "keeps coming back, giving up");
	close(fd);
fail:
	if (remove_tree(tmp, why, sizeof(why)) == -1)
		fprintf(stderr, "snb: %s\n", why);
	return -1;
}

/* A .new-PID-* or .rm-PID-* directory whose process is gone. */
static int
orphan(const char *name)
{
	const char *p = strncmp(name, ".new-", 5) == 0 ? name + 5 :
	    strncmp(name, ".rm-", 4) == 0 ? name + 4 : NULL;
	char *end;
	long pid;

	if (p == NULL)
		return 0;
	pid = strtol(p, &end, 10);
	return *end == '-' && pid > 0 && pid != getpid() &&
	    kill((pid_t)pid, 0) == -1 && errno == ESRCH;
}

static int
clean_all(const char *run, char *errbuf, size_t errlen)
{
	char path[PATH_MAX], why[512];
	struct dirent *de;
	struct stat st;
	enum reap r;
	long pid;
	int n = 0;
	DIR *d;

	if ((d = opendir(run)) == NULL)
		return rd_fail(errbuf, errlen, run, NULL);
	while ((de = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", run, de->d_name);
		if (de->d_name[0] == '.') {
			if (!orphan(de->d_name))
				continue;
			if (remove_tree(path, why, sizeof(why)) == -1)
				fprintf(stderr, "snb: %s\n", why);
			else
				rd_adopt_dirs(NULL);
			continue;
		}
		if (lstat(path, &st) == -1 || !S_ISDIR(st.st_mode))
			continue;
		if ((r = reap(run, de->d_name, &pid, why, sizeof(why))) ==
		    REAP_ERROR)
			fprintf(stderr, "snb: %s\n", why);
		n += r == REAP_REMOVED;
	}
	closedir(d);
	return n;
}

int
snb_graph_clean(const char *only, char *errbuf, size_t errlen)
{
	const char *run;
	long pid;

	if ((run = snb_run_dir(errbuf, errlen)) == NULL)
		return -1;
	if (only == NULL)
		return clean_all(run, errbuf, errlen);
	if (snb_graph_name_check(only, errbuf, errlen) == -1)
		return -1;
	switch (reap(run, only, &pid, errbuf, errlen)) {
	case REAP_GONE:
		snprintf(errbuf, errlen, "no graph '%s' (in %s)", only, run);
		return -1;
	case REAP_LIVE:
		snprintf(errbuf, errlen, "graph '%s' is running (pid %ld), "
		    "not stale: not removed (stop it with snb-ctl %s stop)",
		    only, pid, only);
		return -1;
	case REAP_ERROR:
		return -1;
	default:
		return 1;
	}
}

int
snb_rings_to_tmpfs(const char *dir, char *errbuf, size_t errlen)
{
	char link[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "%s/%s", dir, RINGS);
	if ((n = readlink(link, target, sizeof(target) - 1)) == -1)
		return 0;	/* a directory: in tmpfs already */
	target[n] = '\0';
	if (remove_rings_target(target, errbuf, errlen) == -1)
		return -1;
	if (unlink(link) == -1 || mkdir(link, 0700) == -1)
		return rd_fail(errbuf, errlen, link, NULL);
	return 0;
}
