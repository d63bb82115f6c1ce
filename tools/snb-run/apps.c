/*
 * apps.c: the installed apps (snb-run --list, "did you mean"), and
 * snb-run -c's question to every stage: do your words hold?
 *
 * An installed app is an executable snb-NAME next to snb-run, then in
 * $SNB_PATH, then in $PATH (the first of a name wins) that answers
 * --describe; the tools (snb-run, snb-ctl, snb-top, snb-ps) are not apps.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

#include "app.h"
#include "run.h"

static const char *const tools[] = { "run", "ctl", "top", "ps", NULL };

struct found {
	char	name[APP_NAME_MAX];
	char	path[PATH_MAX];
};

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct found *)a)->name,
	    ((const struct found *)b)->name);
}

/* Every snb-NAME in dir not seen before, added to *f (n of them). */
static void
scan_dir(const char *dir, struct found **f, int *n)
{
	struct dirent *de;
	struct stat st;
	char path[PATH_MAX];
	const char *name;
	DIR *d;
	int i;

	if ((d = opendir(*dir ? dir : ".")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "snb-", 4) != 0 ||
		    strlen(de->d_name + 4) >= APP_NAME_MAX)
			continue;
		name = de->d_name + 4;
		for (i = 0; tools[i] && strcmp(tools[i], name); i++)
			;
		if (tools[i] || !name_ok(name))
			continue;
		for (i = 0; i < *n && strcmp((*f)[i].name, name); i++)
			;
		snprintf(path, sizeof(path), "%s/%s", *dir ? dir : ".",
		    de->d_name);
		if (i < *n || stat(path, &st) == -1 || !S_ISREG(st.st_mode) ||
		    access(path, X_OK) == -1)
			continue;
		if ((*f = reallocarray(*f, (size_t)*n + 1, sizeof(**f))) ==
		    NULL)
			err(1, NULL);
		strlcpy((*f)[*n].name, name, sizeof((*f)[0].name));
		strlcpy((*f)[*n].path, path, sizeof((*f)[0].path));
		(*n)++;
	}
	closedir(d);
}

/* The snb-* executables where apps are looked for, sorted by name. */
static int
scan(struct found **f)
{
	const char *env[2] = { getenv("SNB_PATH"), getenv("PATH") };
	char self[PATH_MAX], *slash, *dirs, *d, *save;
	ssize_t len;
	int i, n = 0;

	*f = NULL;
	if ((len = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[len] = '\0';
		if ((slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			scan_dir(self, f, &n);
		}
	}
	for (i = 0; i < 2; i++) {
		if (env[i] == NULL || (dirs = strdup(env[i])) == NULL)
			continue;
		for (d = strtok_r(dirs, ":", &save); d;
		    d = strtok_r(NULL, ":", &save))
			scan_dir(d, f, &n);
		free(dirs);
	}
	qsort(*f, (size_t)n, sizeof(**f), by_name);
	return n;
}

int
list_apps(void)
{
	char text[8192], errbuf[1024], *s;
	struct found *f;
	int i, n;

	n = scan(&f);
	for (i = 0; i < n; i++) {
		/* Not an app if it does not describe itself. */
		if (describe_text(f[i].path, text, sizeof(text), errbuf,
		    sizeof(errbuf)) == -1 || strncmp(text, "snb-describe ",
		    13) != 0)
			continue;
		s = strstr(text, "\nsummary ");
		s = s ? s + 9 : "";
		printf("%-12s %.*s\n", f[i].name, (int)strcspn(s, "\n"), s);
	}
	free(f);
	return 0;
}

/*
 * Optimal string alignment distance: insertions, deletions,
 * substitutions and swaps of two neighbours ("fliter") cost 1 each.
 */
static int
distance(const char *a, const char *b)
{
	int d[APP_NAME_MAX + 1][APP_NAME_MAX + 1];
	int la = (int)strlen(a), lb = (int)strlen(b), i, j, c, v;

	if (la > APP_NAME_MAX || lb > APP_NAME_MAX)
		return APP_NAME_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			c = a[i - 1] != b[j - 1];
			v = d[i - 1][j - 1] + c;
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

/*
 * The installed app NAME: its path into path, 0.  Else -1, with the
 * nearest installed app in near ("" if none is near enough: a third of
 * the name may be wrong, at least one letter, at most 3).
 */
int
find_app(const char *name, char *path, size_t pathlen, char *near,
    size_t nearlen)
{
	struct found *f;
	int i, n, d, limit = (int)strlen(name) / 3;

	limit = limit < 1 ? 1 : limit > 3 ? 3 : limit;
	near[0] = '\0';
	n = scan(&f);
	for (i = 0; i < n; i++) {
		if ((d = distance(name, f[i].name)) == 0) {
			strlcpy(path, f[i].path, pathlen);
			break;
		}
		if (d <= limit) {
			limit = d - 1;	/* only a nearer one replaces it */
			strlcpy(near, f[i].name, nearlen);
		}
	}
	free(f);
	return i < n ? 0 : -1;
}

/* *s (NULL: "") followed by a and b, in a new string. */
static void
append(char **s, const char *a, const char *b)
{
	char *t;

	if (asprintf(&t, "%s%s%s", *s ? *s : "", a, b) == -1)
		err(1, NULL);
	free(*s);
	*s = t;
}

/* The checks under way, in the graph's order; see check_stages(). */
struct check {
	int	 stage;
	pid_t	 pid;
	int	 err;		/* its standard error, a memfd */
};

/*
 * Wait for check c, copy what it said to our standard error, then say
 * where the stage is if it refused; its status into *rc if the first.
 */
static void
finish_check(struct check *c, const char *where, int *rc)
{
	char buf[4096];
	struct stage *s = &g.stages[c->stage];
	ssize_t n;
	off_t off = 0;
	int st;

	while (waitpid(c->pid, &st, 0) == -1)
		if (errno != EINTR)
			err(1, "waitpid");
	while ((n = pread(c->err, buf, sizeof(buf), off)) > 0) {
		fwrite(buf, 1, (size_t)n, stderr);
		off += n;
	}
	close(c->err);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return;
	/* Words refused (2) are not a file missing (1), nor a crash. */
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
		warnx("%s%d:%d: stage '%s' (%s) refuses its words", where,
		    s->pos.line, s->pos.col, s->label, s->app);
	else if (WIFEXITED(st))
		warnx("%s%d:%d: stage '%s' (%s) would not start (status %d)",
		    where, s->pos.line, s->pos.col, s->label, s->app,
		    WEXITSTATUS(st));
	else
		warnx("%s%d:%d: stage '%s' (%s) was killed by signal %d (%s) "
		    "checking its words", where, s->pos.line, s->pos.col,
		    s->label, s->app, WTERMSIG(st), strsignal(WTERMSIG(st)));
	if (*rc == 0)
		*rc = WIFEXITED(st) && WEXITSTATUS(st) == 2 ? 2 : 1;
}

/*
 * snb-run -c: run every stage's app with --snb-check (its ports bound to
 * rings of the graph's geometry in private memory, see app.h): its init()
 * checks its words as it would at start, and nothing is started.  Stages
 * of the same app, words and ports are asked once (a chain of 20,000
 * filters is one question), CHECK_PARALLEL at a time.  What each app says
 * is kept apart and shown whole, in the graph's order, each refusal
 * followed by where the stage is.  Returns 0, or the first refusing
 * stage's status (2 for words that are wrong, 1 for what is missing,
 * such as a file).
 */
#define CHECK_PARALLEL	8
int
check_stages(const char *where)
{
	struct check run[CHECK_PARALLEL], *c;
	char **keys;
	int i, j, rc = 0, nkeys = 0, done = 0;

	/*
	 * What decides a stage's check: its app, its words, and its ports
	 * (name and direction of every link end, in the graph's order), as
	 * one string, keys[i].
	 */
	if ((keys = calloc((size_t)g.nstages, sizeof(*keys))) == NULL)
		err(1, NULL);
	for (i = 0; i < g.nstages; i++) {
		append(&keys[i], "", g.stages[i].app);
		for (j = 0; j < g.stages[i].argc; j++)
			append(&keys[i], "\001", g.stages[i].argv[j]);
	}
	for (j = 0; j < g.nlinks; j++) {
		append(&keys[g.links[j].to], "\002in ", g.links[j].to_port);
		append(&keys[g.links[j].from], "\002out ",
		    g.links[j].from_port);
	}
	/* Check k (of nkeys) runs in run[k % CHECK_PARALLEL]. */
	for (i = 0; i < g.nstages; i++) {
		/* keys[0 .. nkeys - 1]: the keys asked so far */
		for (j = 0; j < nkeys && strcmp(keys[j], keys[i]); j++)
			;
		if (j < nkeys) {
			free(keys[i]);
			continue;
		}
		keys[nkeys++] = keys[i];
		/* A full window: the oldest check finishes first. */
		if (nkeys - done > CHECK_PARALLEL)
			finish_check(&run[done++ % CHECK_PARALLEL], where, &rc);
		c = &run[(nkeys - 1) % CHECK_PARALLEL];
		c->stage = i;
		c->pid = spawn(i, procs[i].kind->path, g.stages[i].argv,
		    g.stages[i].argc, NULL, &c->err, NULL);
	}
	while (done < nkeys)
		finish_check(&run[done++ % CHECK_PARALLEL], where, &rc);
	for (j = 0; j < nkeys; j++)
		free(keys[j]);
	free(keys);
	return rc;
}
