/*
 * test_rundir: graph directories (libring/graphdir.c, rundir.c).
 *
 *  1. snb_graph_create: the directory, its rings/, snb-run.pid with our
 *     pid, locked; the name is checked.
 *  2. A live graph is refused by name, is not stale, cannot be cleaned.
 *  3. A graph whose creator died is stale, whatever pid its file names
 *     (pid reuse), and a graph of the same name replaces it completely,
 *     unexpected files and directories included; symlinks are removed,
 *     never followed (except rings, to a directory of ours only).
 *  4. snb_graph_clean by name and all at once; leftovers of a creator or
 *     remover that died are swept.
 *  5. Graph directories that are symlinks or writable by others are
 *     refused, not removed.
 *  6. snb_run_dir_release: the run directory goes if we made it and it is
 *     empty, never otherwise; one removed under us (by the process that
 *     made it) is made again for the next graph.
 *
 * Rings stay in tmpfs here (SNB_HUGE_DIR=none); tests/rundir.bats does
 * hugetlbfs.  Everything lives in a private directory under /dev/shm.
 */
#define _GNU_SOURCE	/* nftw() */

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

#include "rundir.h"
#include "tap.h"

static char top[64], run[PATH_MAX];
static pid_t main_pid;

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void
cleanup(void)
{
	if (getpid() != main_pid || top[0] == '\0')
		return;
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	top[0] = '\0';
}

static const char *
path_in(const char *dir, const char *name)
{
	static char bufs[16][PATH_MAX];
	static int n;

	n = (n + 1) % 16;
	snprintf(bufs[n], sizeof(bufs[n]), "%s/%s", dir, name);
	return bufs[n];
}

static int
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Entries of dir other than . and .., or -1 if it cannot be read. */
static int
count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void
touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd == -1 || write(fd, "x", 1) != 1)
		ok(0, "create %s: %s", path, strerror(errno));
	if (fd != -1)
		close(fd);
}

/*
 * A child that creates graph name and either leaves at once, lock and
 * directory left behind (a SIGKILLed snb-run), or holds it until killed.
 * Returns its pid once the graph is there.
 */
static pid_t
graph_child(const char *name, int hold)
{
	char dir[PATH_MAX], errbuf[512];
	int fds[2], fd;
	char c = 0;
	pid_t pid;

	if (pipe(fds) == -1)
		return -1;
	fflush(stdout);
	if ((pid = fork()) == 0) {
		close(fds[0]);
		fd = snb_graph_create(name, dir, sizeof(dir), errbuf,
		    sizeof(errbuf));
		c = fd >= 0 ? 'y' : 'n';
		if (write(fds[1], &c, 1) != 1 || !hold || fd < 0)
			_exit(0);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid == -1 || read(fds[0], &c, 1) != 1 || c != 'y') {
		close(fds[0]);
		return -1;
	}
	close(fds[0]);
	if (!hold)
		waitpid(pid, NULL, 0);
	return pid;
}

static void
stop_child(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* --- 1. create --- */

static void
test_create(void)
{
	char dir[PATH_MAX], errbuf[512], where[PATH_MAX + 64], buf[32];
	const char *bad[] = { "", ".hidden", "a/b", "..",
	    "0123456789012345678901234567890123456789012345678901234567890123"
	};
	struct stat st;
	int fd, flags, i, n;
	FILE *f;

	fd = snb_graph_create("g1", dir, sizeof(dir), errbuf, sizeof(errbuf));
	if (!ok(fd >= 0, "snb_graph_create g1 %s", fd < 0 ? errbuf : ""))
		return;
	ok(strcmp(dir, path_in(run, "g1")) == 0, "dir is %s/g1: %s", run,
	    dir);
	ok(lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	    (st.st_mode & 07777) == 0700, "graph directory 0700");
	ok(lstat(path_in(dir, "rings"), &st) == 0 && S_ISDIR(st.st_mode) &&
	    (st.st_mode & 07777) == 0700, "rings/ a 0700 directory "
	    "(SNB_HUGE_DIR=none)");
	buf[0] = '\0';
	if ((f = fopen(path_in(dir, "snb-run.pid"), "r")) != NULL) {
		if (fgets(buf, sizeof(buf), f) == NULL)
			buf[0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	ok(strtol(buf, NULL, 10) == (long)getpid(), "snb-run.pid holds our "
	    "pid %ld: '%s'", (long)getpid(), buf);
	flags = fcntl(fd, F_GETFD);
	ok(flags != -1 && (flags & FD_CLOEXEC), "the lock descriptor is "
	    "close-on-exec");
	ok(snb_graph_stale(dir) == 0, "our own graph is not stale");
	ok(count_entries(run) == 1, "nothing else in the run directory "
	    "(%d entries: no temporary left)", count_entries(run));
	snb_rings_where(dir, where, sizeof(where));
	ok(strncmp(where, "tmpfs ", 6) == 0 && strstr(where, "/g1/rings"),
	    "snb_rings_where: %s", where);
	touch(path_in(dir, "rings/a:out=b:in"));
	touch(path_in(dir, "a.stage"));
	ok(snb_graph_remove(dir, errbuf, sizeof(errbuf)) == 0 &&
	    !exists(dir) && count_entries(run) == 0, "snb_graph_remove "
	    "leaves an empty run directory %s", errbuf);
	close(fd);
	ok(snb_graph_remove(dir, errbuf, sizeof(errbuf)) == 0,
	    "snb_graph_remove of a gone graph is no error");

	for (i = 0, n = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++)
		if (snb_graph_create(bad[i], dir, sizeof(dir), errbuf,
		    sizeof(errbuf)) == -1 && strstr(errbuf, "bad graph name"))
			n++;
	ok(n == (int)(sizeof(bad) / sizeof(bad[0])) &&
	    count_entries(run) == 0, "bad names refused (%d of %zu): %s", n,
	    sizeof(bad) / sizeof(bad[0]), errbuf);
}

/* --- 2. live --- */

static void
test_live(void)
{
	char dir[PATH_MAX], errbuf[512], want[128];
	pid_t pid = graph_child("live", 1);
	int fd;

	if (!ok(pid > 0, "a child runs graph 'live'"))
		return;
	snprintf(dir, sizeof(dir), "%s/live", run);
	ok(snb_graph_stale(dir) == 0, "a live graph is not stale");
	snprintf(want, sizeof(want), "graph 'live' is already running "
	    "(pid %ld)", (long)pid);
	fd = snb_graph_create("live", dir, sizeof(dir), errbuf,
	    sizeof(errbuf));
	ok(fd == -1 && strcmp(errbuf, want) == 0, "a second 'live' is "
	    "refused: %s", errbuf);
	ok(snb_graph_clean("live", errbuf, sizeof(errbuf)) == -1 &&
	    strstr(errbuf, "is running"), "clean refuses it: %s", errbuf);
	ok(snb_graph_clean(NULL, errbuf, sizeof(errbuf)) == 0,
	    "clean all removes nothing");
	ok(exists(path_in(dir, "snb-run.pid")) &&
	    exists(path_in(dir, "rings")) && count_entries(run) == 1,
	    "the live graph is untouched, no temporary left");
	stop_child(pid);
	ok(snb_graph_stale(dir) == 1, "stale once its creator is killed");
	ok(snb_graph_clean("live", errbuf, sizeof(errbuf)) == 1 &&
	    count_entries(run) == 0, "then snb_graph_clean removes it");
	ok(snb_graph_clean("live", errbuf, sizeof(errbuf)) == -1 &&
	    strstr(errbuf, "no graph 'live'"), "cleaning a missing graph: "
	    "%s", errbuf);
}

/* --- 3. stale --- */

static void
test_stale(void)
{
	char dir[PATH_MAX], errbuf[512], outside[PATH_MAX];
	int fd;

	if (!ok(graph_child("s", 0) > 0, "a child made graph 's' and died"))
		return;
	snprintf(dir, sizeof(dir), "%s/s", run);
	ok(snb_graph_stale(dir) == 1, "its graph is stale");

	/* pid reuse: the file names a live process (us); still stale. */
	fd = open(path_in(dir, "snb-run.pid"), O_WRONLY | O_TRUNC);
	if (fd == -1 || dprintf(fd, "%ld\n", (long)getpid()) < 0)
		ok(0, "rewrite pid file: %s", strerror(errno));
	if (fd != -1)
		close(fd);
	ok(snb_graph_stale(dir) == 1, "stale although its pid file names "
	    "a live process");

	/* Whatever a crashed graph or a user left there. */
	touch(path_in(dir, "ctl"));
	touch(path_in(dir, "a.stage"));
	touch(path_in(dir, "a.stage.new"));
	touch(path_in(dir, "rings/a:out=b:in"));
	touch(path_in(dir, "unexpected"));
	mkdir(path_in(dir, "sub"), 0700);
	mkdir(path_in(dir, "sub/deeper"), 0700);
	touch(path_in(dir, "sub/deeper/file"));
	mkfifo(path_in(dir, "fifo"), 0600);
	snprintf(outside, sizeof(outside), "%s/outside", top);
	mkdir(outside, 0700);
	touch(path_in(outside, "keep"));
	if (symlink(outside, path_in(dir, "link")) == -1 ||
	    symlink(outside, path_in(dir, "sub/link")) == -1)
		ok(0, "symlink: %s", strerror(errno));

	fd = snb_graph_create("s", dir, sizeof(dir), errbuf, sizeof(errbuf));
	ok(fd >= 0, "a new 's' replaces the stale one %s", fd < 0 ? errbuf :
	    "");
	ok(count_entries(dir) == 2 && exists(path_in(dir, "snb-run.pid")) &&
	    count_entries(path_in(dir, "rings")) == 0, "only the new "
	    "graph's files are there (%d entries)", count_entries(dir));
	ok(count_entries(run) == 1, "nothing else in the run directory");
	ok(exists(path_in(outside, "keep")), "symlinks were removed, not "
	    "followed");
	if (fd >= 0) {
		snb_graph_remove(dir, errbuf, sizeof(errbuf));
		close(fd);
	}
}

/*
 * A rings symlink is followed to a directory <x>/snb-UID/NAME of ours
 * (hugetlbfs), and nowhere else.
 */
static void
test_rings_link(void)
{
	char dir[PATH_MAX], errbuf[512], huge[PATH_MAX], target[PATH_MAX];
	char foreign[PATH_MAX];

	snprintf(huge, sizeof(huge), "%s/huge/snb-%u", top,
	    (unsigned)geteuid());
	snprintf(target, sizeof(target), "%s/r.12345678", huge);
	snprintf(foreign, sizeof(foreign), "%s/notours", top);
	mkdir(path_in(top, "huge"), 0755);
	mkdir(huge, 0700);
	mkdir(target, 0700);
	mkdir(foreign, 0700);
	touch(path_in(target, "a:out=b:in"));
	touch(path_in(foreign, "a:out=b:in"));

	if (!ok(graph_child("r", 0) > 0, "stale graph 'r'"))
		return;
	snprintf(dir, sizeof(dir), "%s/r", run);
	rmdir(path_in(dir, "rings"));
	if (symlink(target, path_in(dir, "rings")) == -1)
		ok(0, "symlink: %s", strerror(errno));
	ok(snb_graph_clean("r", errbuf, sizeof(errbuf)) == 1 &&
	    !exists(dir) && !exists(target) && exists(huge),
	    "the rings directory behind the symlink is removed with it");

	if (!ok(graph_child("r", 0) > 0, "stale graph 'r' again"))
		return;
	rmdir(path_in(dir, "rings"));
	if (symlink(foreign, path_in(dir, "rings")) == -1)
		ok(0, "symlink: %s", strerror(errno));
	ok(snb_graph_clean("r", errbuf, sizeof(errbuf)) == 1 &&
	    !exists(dir) && exists(path_in(foreign, "a:out=b:in")),
	    "a rings symlink to a directory not in snb-UID is not followed");
}

/* --- 4. clean --- */

static void
test_clean(void)
{
	char errbuf[512], path[PATH_MAX];
	pid_t live = graph_child("l", 1);
	int n;

	if (!ok(live > 0 && graph_child("s1", 0) > 0 &&
	    graph_child("s2", 0) > 0, "one live and two stale graphs"))
		goto out;
	/* What a snb-run killed while it made or removed a graph leaves. */
	snprintf(path, sizeof(path), "%s/.new-999999999-abcdef", run);
	mkdir(path, 0700);
	touch(path_in(path, "snb-run.pid"));
	snprintf(path, sizeof(path), "%s/.rm-999999999-abcdef", run);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.new-%ld-abcdef", run,
	    (long)getpid());
	mkdir(path, 0700);
	/* Not a graph: left alone. */
	touch(path_in(run, "somefile"));

	n = snb_graph_clean(NULL, errbuf, sizeof(errbuf));
	ok(n == 2, "clean all removed %d stale graphs", n);
	ok(!exists(path_in(run, "s1")) && !exists(path_in(run, "s2")) &&
	    exists(path_in(run, "l/snb-run.pid")), "the stale ones went, "
	    "the live one is untouched");
	ok(!exists(path_in(run, ".new-999999999-abcdef")) &&
	    !exists(path_in(run, ".rm-999999999-abcdef")) && exists(path),
	    "leftovers of dead processes swept, a live process's kept");
	rmdir(path);
	unlink(path_in(run, "somefile"));
out:
	stop_child(live);
	snb_graph_clean(NULL, errbuf, sizeof(errbuf));
	ok(count_entries(run) == 0, "run directory empty at the end");
}

/* --- 5. untrusted graph directories --- */

static void
test_untrusted(void)
{
	char dir[PATH_MAX], errbuf[512], elsewhere[PATH_MAX];
	int fd;

	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", top);
	mkdir(elsewhere, 0700);
	touch(path_in(elsewhere, "keep"));
	if (symlink(elsewhere, path_in(run, "sym")) == -1)
		ok(0, "symlink: %s", strerror(errno));
	fd = snb_graph_create("sym", dir, sizeof(dir), errbuf,
	    sizeof(errbuf));
	ok(fd == -1 && strstr(errbuf, "symbolic link"), "a graph directory "
	    "that is a symlink is refused: %s", errbuf);
	ok(snb_graph_clean("sym", errbuf, sizeof(errbuf)) == -1 &&
	    strstr(errbuf, "symbolic link"), "and not cleaned: %s", errbuf);
	ok(exists(path_in(elsewhere, "keep")) && count_entries(run) == 1,
	    "nothing removed behind it, no temporary left");
	unlink(path_in(run, "sym"));

	mkdir(path_in(run, "ww"), 0700);
	chmod(path_in(run, "ww"), 0777);
	touch(path_in(run, "ww/keep"));
	fd = snb_graph_create("ww", dir, sizeof(dir), errbuf,
	    sizeof(errbuf));
	ok(fd == -1 && strstr(errbuf, "writable by others"), "a world-"
	    "writable graph directory is refused: %s", errbuf);
	ok(snb_graph_remove(path_in(run, "ww"), errbuf, sizeof(errbuf)) ==
	    -1 && exists(path_in(run, "ww/keep")), "and not removed: %s",
	    errbuf);
	unlink(path_in(run, "ww/keep"));
	rmdir(path_in(run, "ww"));
}

/* Create graph name, remove it, release: as snb-run does. */
static int
graph_and_release(const char *name)
{
	char dir[PATH_MAX], errbuf[512];
	int fd;

	if ((fd = snb_graph_create(name, dir, sizeof(dir), errbuf,
	    sizeof(errbuf))) == -1) {
		printf("# %s\n", errbuf);
		return -1;
	}
	if (snb_graph_remove(dir, errbuf, sizeof(errbuf)) == -1)
		printf("# %s\n", errbuf);
	close(fd);
	snb_run_dir_release();
	return 0;
}

static void
test_release(void)
{
	char dir[PATH_MAX], errbuf[512];
	int fd;

	/* main() made run (snb_run_dir()): it goes with the last graph. */
	ok(graph_and_release("rel1") == 0 && !exists(run), "the run "
	    "directory we made goes when its graph does");
	/* Gone under the next graph's feet: made again. */
	fd = snb_graph_create("rel2", dir, sizeof(dir), errbuf,
	    sizeof(errbuf));
	ok(fd >= 0 && exists(path_in(run, "rel2/snb-run.pid")), "a run "
	    "directory removed after snb_run_dir() found it is made again: "
	    "%s", fd == -1 ? errbuf : "");
	if (fd >= 0) {
		touch(path_in(run, "other"));
		snb_graph_remove(dir, errbuf, sizeof(errbuf));
		close(fd);
		snb_run_dir_release();
	}
	ok(exists(path_in(run, "other")), "one that holds anything else "
	    "stays");
	unlink(path_in(run, "other"));
	/* There before this graph: it stays, empty. */
	ok(graph_and_release("rel3") == 0 && exists(run) &&
	    count_entries(run) == 0, "one that was there before stays");
}

int
main(void)
{
	char errbuf[512];

	main_pid = getpid();
	strlcpy(top, "/dev/shm/snb-test-XXXXXX", sizeof(top));
	if (mkdtemp(top) == NULL) {
		printf("Bail out! mkdtemp %s: %s\n", top, strerror(errno));
		return 1;
	}
	atexit(cleanup);
	alarm(60);
	snprintf(run, sizeof(run), "%s/run", top);
	setenv("SNB_RUN_DIR", run, 1);
	setenv("SNB_HUGE_DIR", "none", 1);
	if (snb_run_dir(errbuf, sizeof(errbuf)) == NULL) {
		printf("Bail out! %s\n", errbuf);
		return 1;
	}

	test_create();
	test_live();
	test_stale();
	test_rings_link();
	test_clean();
	test_untrusted();
	test_release();

	cleanup();
	return tap_done();
}
