/* stats.c: map a run directory's graphs read-only (see stats.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/string.h>

#include "rundir.h"
#include "stage.h"
#include "stats.h"

/* The graph's order (snb-run's stages file), then by label. */
static int
by_order(const void *a, const void *b)
{
	const struct stage_view *x = a, *y = b;

	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return strcmp(x->f->label, y->f->label);
}

/* By the order of the stage they leave, then by name. */
static int
by_from(const void *a, const void *b)
{
	const struct link_view *x = a, *y = b;

	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Each LABEL.stage file of the graph directory dir, or (links) each ring
 * file in dir (the graph's rings/, wherever it leads).
 */
static void
load_dir(const char *dir, struct graph_view *g, int links)
{
	char path[PATH_MAX], errbuf[256];
	const struct stage_file *f;
	struct link_view *l;
	struct dirent *de;
	size_t n;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (de->d_name[0] == '.' || (!links && (n < 6 ||
		    strcmp(de->d_name + n - 6, ".stage") != 0)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (links) {
			g->links = reallocarray(g->links, (size_t)g->nlinks + 1,
			    sizeof(*g->links));
			if (g->links == NULL)
				abort();
			l = &g->links[g->nlinks];
			memset(l, 0, sizeof(*l));
			if (ring_attach(&l->r, path, RING_OBSERVER, errbuf,
			    sizeof(errbuf)) == -1)
				continue;
			strlcpy(l->name, de->d_name, sizeof(l->name));
			/* FROM:PORT=TO:PORT (labels and ports hold no ':', '='). */
			sscanf(l->name, "%63[^:=]:%63[^=]=%63[^:]:%63s", l->from,
			    l->from_port, l->to, l->to_port);
			g->nlinks++;
			continue;
		}
		if ((f = stage_map(path)) == NULL)
			continue;
		if (f->magic != STAGE_MAGIC) {
			munmap((void *)f, sizeof(*f));
			continue;
		}
		g->stages = reallocarray(g->stages, (size_t)g->nstages + 1,
		    sizeof(*g->stages));
		if (g->stages == NULL)
			abort();
		g->stages[g->nstages++] = (struct stage_view){ .f = f,
		    .alive = f->pid > 0 && kill(f->pid, 0) == 0 };
	}
	closedir(d);
}

/*
 * Each stage's place in the graph's text, from the stages file snb-run
 * writes (one label a line); a stage it does not name goes last.
 */
static void
load_order(const char *dir, struct graph_view *g)
{
	char path[PATH_MAX], line[128];
	int i, n = 0;
	FILE *f;

	for (i = 0; i < g->nstages; i++)
		g->stages[i].order = INT_MAX;
	snprintf(path, sizeof(path), "%s/stages", dir);
	if ((f = fopen(path, "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		for (i = 0; i < g->nstages; i++)
			if (strcmp(g->stages[i].f->label, line) == 0)
				g->stages[i].order = n;
		n++;
	}
	fclose(f);
}

void
graph_load(const char *dir, struct graph_view *g)
{
	char path[PATH_MAX];
	struct stat st;
	FILE *pf;
	int i, j;

	snprintf(path, sizeof(path), "%s/snb-run.pid", dir);
	if ((pf = fopen(path, "re")) != NULL) {
		if (fscanf(pf, "%ld", &g->pid) != 1)
			g->pid = 0;
		fclose(pf);
	}
	/* The lock, not the pid: a dead snb-run's pid may be reused. */
	g->stale = snb_graph_stale(dir);
	g->alive = !g->stale;
	/* snb-run writes its pid file once, as it makes the graph. */
	if (g->alive && stat(path, &st) == 0)
		g->started = (long)st.st_mtime;
	snb_rings_where(dir, g->rings, sizeof(g->rings));
	load_dir(dir, g, 0);
	snprintf(path, sizeof(path), "%s/rings", dir);
	load_dir(path, g, 1);
	load_order(dir, g);
	for (j = 0; j < g->nlinks; j++)
		g->links[j].order = INT_MAX;
	for (i = 0; i < g->nstages; i++)
		for (j = 0; j < g->nlinks; j++) {
			if (strcmp(g->links[j].to, g->stages[i].f->label) == 0)
				g->stages[i].inputs++;
			if (strcmp(g->links[j].from, g->stages[i].f->label) == 0)
				g->links[j].order = g->stages[i].order;
		}
	if (g->nstages)
		qsort(g->stages, (size_t)g->nstages, sizeof(*g->stages),
		    by_order);
	if (g->nlinks)
		qsort(g->links, (size_t)g->nlinks, sizeof(*g->links), by_from);
	baseline_load(dir, g);
}

static int
graph_by_name(const void *a, const void *b)
{
	return strcmp(((const struct graph_view *)a)->name,
	    ((const struct graph_view *)b)->name);
}

int
graphs_load(const char *run, const char *only, struct graph_view **gv,
    char *errbuf, size_t errlen)
{
	char path[PATH_MAX];
	struct graph_view *g = NULL;
	struct dirent *de;
	struct stat st;
	int n = 0;
	DIR *d;

	*gv = NULL;
	/* snb-run removes a run directory it made with its last graph. */
	if ((d = opendir(run)) == NULL && errno == ENOENT)
		return 0;
	if (d == NULL) {
		snprintf(errbuf, errlen, "%s: %s", run, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || (only && strcmp(only, de->d_name)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", run, de->d_name);
		if (lstat(path, &st) == -1 || !S_ISDIR(st.st_mode))
			continue;
		if ((g = reallocarray(g, (size_t)n + 1, sizeof(*g))) == NULL)
			abort();
		memset(&g[n], 0, sizeof(g[n]));
		strlcpy(g[n].name, de->d_name, sizeof(g[n].name));
		graph_load(path, &g[n]);
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(g, (size_t)n, sizeof(*g), graph_by_name);
	*gv = g;
	return n;
}

void
graphs_free(struct graph_view *gv, int n)
{
	int i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < gv[i].nstages; j++)
			munmap((void *)gv[i].stages[j].f,
			    sizeof(struct stage_file));
		for (j = 0; j < gv[i].nlinks; j++)
			ring_detach(&gv[i].links[j].r);
		free(gv[i].stages);
		free(gv[i].links);
	}
	free(gv);
}

void
json_str(FILE *f, const char *s)
{
	putc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			putc(*s, f);
	}
	putc('"', f);
}
