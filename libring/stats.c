/* stats.c: map a run directory's graphs read-only (see stats.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "stats.h"

static int
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const struct stage_file *
map_stage(const char *path)
{
	struct stage_file *f;
	struct stat st;
	int fd;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || (size_t)st.st_size < sizeof(*f)) {
		close(fd);
		return NULL;
	}
	f = mmap(NULL, sizeof(*f), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (f == MAP_FAILED)
		return NULL;
	if (f->magic != STAGE_MAGIC) {
		munmap(f, sizeof(*f));
		return NULL;
	}
	return f;
}

static int
by_label(const void *a, const void *b)
{
	return strcmp(((const struct stage_view *)a)->f->label,
	    ((const struct stage_view *)b)->f->label);
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct link_view *)a)->name,
	    ((const struct link_view *)b)->name);
}

/* Each LABEL.stage file of the graph directory dir. */
static void
load_stages(const char *dir, struct graph_view *g)
{
	char path[PATH_MAX];
	const struct stage_file *f;
	struct dirent *de;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || !ends_with(de->d_name, ".stage"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if ((f = map_stage(path)) == NULL)
			continue;
		g->stages = reallocarray(g->stages, (size_t)g->nstages + 1,
		    sizeof(*g->stages));
		if (g->stages == NULL)
			abort();
		g->stages[g->nstages].f = f;
		g->stages[g->nstages].alive = f->pid > 0 &&
		    kill(f->pid, 0) == 0;
		g->nstages++;
	}
	closedir(d);
}

/* Each ring file in dir (the graph's rings/, wherever it leads). */
static void
load_links(const char *dir, struct graph_view *g)
{
	char path[PATH_MAX], errbuf[256];
	struct link_view *l;
	struct dirent *de;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		g->links = reallocarray(g->links, (size_t)g->nlinks + 1,
		    sizeof(*g->links));
		if (g->links == NULL)
			abort();
		l = &g->links[g->nlinks];
		if (ring_attach(&l->r, path, RING_OBSERVER, errbuf,
		    sizeof(errbuf)) == -1)
			continue;
		strlcpy(l->name, de->d_name, sizeof(l->name));
		g->nlinks++;
	}
	closedir(d);
}

static void
load_graph(const char *dir, struct graph_view *g)
{
	char path[PATH_MAX];
	FILE *pf;

	snprintf(path, sizeof(path), "%s/snb-run.pid", dir);
	if ((pf = fopen(path, "re")) != NULL) {
		if (fscanf(pf, "%ld", &g->pid) != 1)
			g->pid = 0;
		fclose(pf);
	}
	/* The lock, not the pid: a dead snb-run's pid may be reused. */
	g->stale = snb_graph_stale(dir);
	g->alive = !g->stale;
	snb_rings_where(dir, g->rings, sizeof(g->rings));
	load_stages(dir, g);
	snprintf(path, sizeof(path), "%s/rings", dir);
	load_links(path, g);
	if (g->nstages)
		qsort(g->stages, (size_t)g->nstages, sizeof(*g->stages),
		    by_label);
	if (g->nlinks)
		qsort(g->links, (size_t)g->nlinks, sizeof(*g->links), by_name);
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

	if ((d = opendir(run)) == NULL) {
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
		load_graph(path, &g[n]);
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
