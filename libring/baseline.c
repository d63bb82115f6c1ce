/*
 * baseline.c: snb-ctl clear.  A stage adds to its counters with plain
 * stores while anyone may look, and a link's counters are its ring's
 * positions: neither can be zeroed from outside without losing counts
 * (the stage's next store would overwrite the zero with old + n) or
 * breaking the ring.  So clear zeroes nothing: it writes what every
 * counter holds now to the graph's counters.base, and views show each
 * counter less that.  The file is written under another name and renamed,
 * so a reader sees the old baseline or the new one, whole.
 *
 *	time UNIXTIME
 *	stage LABEL APP IN OUT BUSY_NS BREATHS BUSY_BREATHS
 *	counter LABEL VALUE NAME
 *	link FROM:PORT=TO:PORT PACKETS BYTES DROPS
 *
 * Gauges (app_gauge) are levels, not counts: they are not cleared.
 * Prometheus gets the raw counters (snb-top --prometheus): its counters
 * must only go up, and its rate() already starts where a user looks.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "stats.h"

#define BASE_FILE	"counters.base"

static void
write_base(FILE *f, const struct graph_view *g)
{
	const struct stage_file *s;
	int i, j;

	fprintf(f, "time %lld\n", (long long)time(NULL));
	for (i = 0; i < g->nstages; i++) {
		s = g->stages[i].f;
		fprintf(f, "stage %s %s %" PRIu64 " %" PRIu64 " %" PRIu64
		    " %" PRIu64 " %" PRIu64 "\n", s->label, s->app,
		    (uint64_t)s->packets_in, (uint64_t)s->packets_out,
		    (uint64_t)s->busy_ns, (uint64_t)s->breaths,
		    (uint64_t)s->busy_breaths);
		for (j = 0; j < (int)s->ncounters && j < STAGE_MAX_COUNTERS;
		    j++)
			if (!(s->counters[j].flags & STAGE_COUNTER_GAUGE))
				fprintf(f, "counter %s %" PRIu64 " %.*s\n",
				    s->label, (uint64_t)s->counters[j].value,
				    (int)sizeof(s->counters[j].name),
				    s->counters[j].name);
	}
	for (i = 0; i < g->nlinks; i++)
		fprintf(f, "link %s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		    g->links[i].name,
		    (uint64_t)atomic_load(&g->links[i].r.shm->prod.head),
		    (uint64_t)atomic_load(&g->links[i].r.shm->prod.bytes),
		    (uint64_t)atomic_load(&g->links[i].r.shm->prod.drops));
}

int
graph_clear(const char *dir, char *errbuf, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	struct graph_view *g;
	FILE *f;
	int n = -1;

	if ((g = calloc(1, sizeof(*g))) == NULL)
		abort();
	graph_load(dir, g);
	snprintf(path, sizeof(path), "%s/%s", dir, BASE_FILE);
	snprintf(tmp, sizeof(tmp), "%s/.%s", dir, BASE_FILE);
	if ((f = fopen(tmp, "we")) == NULL)
		snprintf(errbuf, errlen, "%s: %s", tmp, strerror(errno));
	else {
		write_base(f, g);
		if (fclose(f) == EOF || rename(tmp, path) == -1) {
			snprintf(errbuf, errlen, "%s: %s", path,
			    strerror(errno));
			unlink(tmp);
		} else
			n = g->nstages;
	}
	graphs_free(g, 1);
	return n;
}

/* One "counter" line: its base goes to the counter of that name. */
static void
counter_base(struct stage_view *s, uint64_t v, const char *name)
{
	const struct stage_file *f = s->f;
	int k;

	for (k = 0; k < (int)f->ncounters && k < STAGE_MAX_COUNTERS; k++)
		if (strncmp(f->counters[k].name, name,
		    sizeof(f->counters[k].name)) == 0 &&
		    !(f->counters[k].flags & STAGE_COUNTER_GAUGE))
			s->base.c[k] = v;
}

void
baseline_load(const char *dir, struct graph_view *g)
{
	char path[PATH_MAX], line[512], label[128], app[64], name[128];
	struct stage_view *s, *cur = NULL;
	struct stage_base b;
	uint64_t v[3];
	long long t;
	FILE *f;
	int j;

	snprintf(path, sizeof(path), "%s/%s", dir, BASE_FILE);
	if ((f = fopen(path, "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "time %lld", &t) == 1)
			g->cleared = (long)t;
		else if (sscanf(line, "stage %127s %63s %" SCNu64 " %" SCNu64
		    " %" SCNu64 " %" SCNu64 " %" SCNu64, label, app, &b.in,
		    &b.out, &b.busy_ns, &b.breaths, &b.busy_breaths) == 7) {
			/* Another app since: its counters started afresh. */
			for (cur = NULL, j = 0; j < g->nstages; j++) {
				s = &g->stages[j];
				if (strcmp(s->f->label, label) == 0 && strncmp(
				    s->f->app, app, sizeof(s->f->app)) == 0) {
					memcpy(b.c, s->base.c, sizeof(b.c));
					s->base = b;
					cur = s;
				}
			}
		} else if (sscanf(line, "counter %127s %" SCNu64 " %127[^\n]",
		    label, &v[0], name) == 3) {
			if (cur != NULL && strcmp(cur->f->label, label) == 0)
				counter_base(cur, v[0], name);
		} else if (sscanf(line, "link %127s %" SCNu64 " %" SCNu64
		    " %" SCNu64, name, &v[0], &v[1], &v[2]) == 4) {
			for (j = 0; j < g->nlinks; j++)
				if (strcmp(g->links[j].name, name) == 0) {
					g->links[j].base_packets = v[0];
					g->links[j].base_bytes = v[1];
					g->links[j].base_drops = v[2];
				}
		}
	}
	fclose(f);
}
