/* graph_check.c: graph_check() (graph.h), one pass for each of its checks. */
#define _GNU_SOURCE		/* asprintf */
#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "graph.h"
#include "graph_int.h"

/*
 * Merge the stages that name the same device into one (DESIGN 4): each
 * later stage into the first, which keeps its place; the rest close up.
 */
static int
merge_devices(struct graph *g, char *errbuf, size_t errlen)
{
	struct strtab devs = { 0 };
	struct stage *s, *t;
	char *key, **v;
	int *into, i, j, k, n, rc = -1;

	/* into[j]: the stage j merges into, or -1; then its new index. */
	into = gr_xrealloc(NULL, (size_t)g->nstages, sizeof(*into));
	for (j = 0; j < g->nstages; j++) {
		t = &g->stages[j];
		into[j] = -1;
		if (t->argc == 0)
			continue;
		/* "APP DEVICE": app names have no spaces. */
		if (asprintf(&key, "%s %s", t->app, t->argv[0]) == -1)
			err(1, NULL);
		if ((i = gr_strtab_get(&devs, key)) == -1 && t->info->device)
			gr_strtab_put(&devs, key, j);
		free(key);
		if (i == -1)
			continue;
		s = &g->stages[i];
		/* Both have options (more words than the device): other ones? */
		for (k = 0; s->argc == t->argc && k < s->argc; k++)
			if (strcmp(s->argv[k], t->argv[k]))
				break;
		if (s->argc > 1 && t->argc > 1 && k < s->argc) {
			gr_fail(errbuf, errlen, t->pos, "%s %s declared again with "
			    "other options (first at %d:%d)", t->app, t->argv[0],
			    s->pos.line, s->pos.col);
			goto out;
		}
		if (s->labelled && t->labelled) {
			gr_fail(errbuf, errlen, t->pos, "%s %s labelled twice "
			    "('%s' and '%s')", t->app, t->argv[0], s->label,
			    t->label);
			goto out;
		}
		if (t->labelled) {
			strlcpy(s->label, t->label, sizeof(s->label));
			s->labelled = 1;
		}
		/* The merged stage keeps the longer words (its options). */
		if (t->argc > s->argc) {
			v = s->argv, k = s->argc;
			s->argv = t->argv, s->argc = t->argc;
			t->argv = v, t->argc = k;
		}
		/* graph_free() may still see it if a later stage fails. */
		graph_words_free(t->argv);
		t->argv = NULL;
		t->argc = 0;
		into[j] = i;
	}
	for (j = n = 0; j < g->nstages; j++) {
		if (into[j] >= 0)
			into[j] = into[into[j]];	/* into[j] < j: done */
		else {
			g->stages[n] = g->stages[j];
			into[j] = n++;
		}
	}
	g->nstages = n;
	for (k = 0; k < g->nlinks; k++) {
		g->links[k].from = into[g->links[k].from];
		g->links[k].to = into[g->links[k].to];
	}
	rc = 0;
out:
	gr_strtab_free(&devs);
	free(into);
	return rc;
}

/*
 * Label each unlabelled stage with its app's name (a device's: APP-DEVICE),
 * or when another stage has that label, the name followed by 2, 3 and so
 * on: the first number free.  Numbers a name tried once stay taken (labels
 * are only ever added), so each name goes on from where it stopped instead
 * of trying 2, 3... again: linear, with the same labels.  Copy K of an
 * unlabelled stage in copies (graph_parse.c) is labelled APP.K, or when
 * one of APP.1 .. APP.N is taken APP2.K and so on, one base for all N
 * copies of the element, so that the label says which copy and snb-ctl
 * can roll them by their base (a device's label names its device, which
 * tells copies apart).
 */
#define COPY_LABEL	"%.50s%.0d.%d"	/* APP, base n > 1 or 0 (no digits), K */

/* The number of the first base (1: APP, 2: APP2 ...) free for N copies. */
static int
copy_base(struct strtab *taken, const char *want, int ncopies)
{
	char l[GRAPH_NAME_MAX];
	int n, k;

	for (n = 1;; n++) {
		for (k = 1; k <= ncopies; k++) {
			snprintf(l, sizeof(l), COPY_LABEL, want, n > 1 ? n : 0,
			    k);
			if (gr_strtab_get(taken, l) != -1)
				break;
		}
		if (k > ncopies)
			return n;
	}
}

static void
auto_labels(struct graph *g)
{
	struct strtab taken = { 0 }, next = { 0 }, bases = { 0 };
	struct stage *s, *t;
	char want[GRAPH_NAME_MAX], key[GRAPH_NAME_MAX], *c;
	int i, n, ncopies;

	for (i = 0; i < g->nstages; i++)
		if (g->stages[i].labelled)
			gr_strtab_put(&taken, g->stages[i].label, i);
	for (i = 0; i < g->nstages; i++) {
		if ((s = &g->stages[i])->labelled)
			continue;
		strlcpy(want, s->app, sizeof(want));
		if (s->info->device && s->argc > 0) {
			strlcat(want, "-", sizeof(want));
			strlcat(want, s->argv[0], sizeof(want));
			for (c = want; *c; c++)
				if (!name_char(*c))
					*c = '_';
		}
		/* Copy K: APP.K, or APP2.K, APP3.K ..., chosen for all. */
		if (s->copy && !s->info->device) {
			snprintf(key, sizeof(key), "%d:%d", s->pos.line,
			    s->pos.col);
			if ((n = gr_strtab_get(&bases, key)) == -1) {
				/* An element's copies share its position. */
				for (t = s, ncopies = 0; t < g->stages +
				    g->nstages; t++)
					if (!t->labelled && t->copy > ncopies &&
					    t->pos.line == s->pos.line &&
					    t->pos.col == s->pos.col)
						ncopies = t->copy;
				n = copy_base(&taken, want, ncopies);
				gr_strtab_put(&bases, key, n);
			}
			snprintf(s->label, sizeof(s->label), COPY_LABEL, want,
			    n > 1 ? n : 0, s->copy);
			gr_strtab_put(&taken, s->label, i);
			continue;
		}
		strlcpy(s->label, want, sizeof(s->label));
		if (gr_strtab_get(&taken, s->label) != -1) {
			if ((n = gr_strtab_get(&next, want)) == -1)
				n = 2;
			do
				snprintf(s->label, sizeof(s->label), "%.50s%d",
				    want, n++);
			while (gr_strtab_get(&taken, s->label) != -1);
			gr_strtab_put(&next, want, n);
		}
		gr_strtab_put(&taken, s->label, i);
	}
	gr_strtab_free(&taken);
	gr_strtab_free(&next);
	gr_strtab_free(&bases);
}

/*
 * A graph's links by stage, in link order, as adjacency lists (CSR):
 * stage s's are link[first[s]] .. link[first[s + 1] - 1], with to[] the
 * stage at the far end.  For the port checks (all) every link is listed
 * under both its ends.  For cycles only the links a cycle can run
 * through, under their source: lossless links between stages that are
 * not devices.  A leaky link drops rather than waits; a device's input
 * goes to the wire and its output comes from the wire, and it drops when
 * full (README "Devices"), so `nic x | filter | nic x` is no cycle.
 */
struct adj {
	int	*first, *to, *link;
	int	*deg, *queue, *prev;	/* scratch, one per stage */
};

static void
adj_build(struct adj *a, const struct graph *g, int all)
{
	const struct link *l;
	size_t n = (size_t)g->nstages, m = (size_t)g->nlinks * 2;
	int i, end, pass, s;

	a->first = calloc(n + 1, sizeof(int));
	a->to = gr_xrealloc(NULL, m, sizeof(int));
	a->link = gr_xrealloc(NULL, m, sizeof(int));
	a->deg = gr_xrealloc(NULL, n, sizeof(int));
	a->queue = gr_xrealloc(NULL, n, sizeof(int));
	a->prev = gr_xrealloc(NULL, n, sizeof(int));
	if (a->first == NULL)
		err(1, NULL);
	/* Count each stage's links, then fill (prev: where the next goes). */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < g->nlinks; i++) {
			l = &g->links[i];
			for (end = 0; end < 2; end++) {
				if (end == 0 ? !all && (l->leaky ||
				    g->stages[l->from].info->device ||
				    g->stages[l->to].info->device) :
				    !all || l->to == l->from)
					continue;
				s = end ? l->to : l->from;
				if (pass == 0) {
					a->first[s + 1]++;
					continue;
				}
				a->to[a->prev[s]] = end ? l->from : l->to;
				a->link[a->prev[s]++] = i;
			}
		}
		for (i = 0; pass == 0 && i < (int)n; i++) {
			a->first[i + 1] += a->first[i];
			a->prev[i] = a->first[i];
		}
	}
}

static void
adj_free(struct adj *a)
{
	free(a->first);
	free(a->to);
	free(a->link);
	free(a->deg);
	free(a->queue);
	free(a->prev);
}

/*
 * Do the links before link `limit` form a cycle?  Kahn's algorithm: take
 * away stages that nothing enters until none is left (no cycle) or every
 * one left is entered (a cycle).  Iterative, O(stages + links).
 */
static int
has_cycle(struct adj *a, int n, int limit)
{
	int i, e, head = 0, tail = 0;

	memset(a->deg, 0, (size_t)n * sizeof(int));
	for (i = 0; i < n; i++)
		for (e = a->first[i]; e < a->first[i + 1] &&
		    a->link[e] < limit; e++)
			a->deg[a->to[e]]++;
	for (i = 0; i < n; i++)
		if (a->deg[i] == 0)
			a->queue[tail++] = i;
	while (head < tail) {
		i = a->queue[head++];
		for (e = a->first[i]; e < a->first[i + 1] &&
		    a->link[e] < limit; e++)
			if (--a->deg[a->to[e]] == 0)
				a->queue[tail++] = a->to[e];
	}
	return tail < n;
}

/* Append "LABEL" or " -> LABEL" to buf. */
static void
cycle_name(char *buf, size_t len, const char *label)
{
	if (buf[0])
		strlcat(buf, " -> ", len);
	strlcat(buf, label, len);
}

/*
 * Refuse a cycle of lossless links (DESIGN 6): its rings can all fill and
 * deadlock, and its stages never see end of stream, so packets circle
 * forever.  The error points at the '|' that closes the first cycle in
 * reading order: the links before it form none, found by bisection over
 * the number of links (O((stages + links) log links)), so a path back
 * from that link's target to its source through earlier links exists, and
 * the shortest one (breadth first) is the cycle shown.
 */
static int
check_cycles(struct graph *g, char *errbuf, size_t errlen)
{
	struct adj a;
	struct link *l;
	char names[640];
	int n = g->nstages, lo = 0, hi = g->nlinks, mid, i, e, head, tail;
	int len, *path;

	adj_build(&a, g, 0);
	if (g->nlinks == 0 || !has_cycle(&a, n, g->nlinks)) {
		adj_free(&a);
		return 0;
	}
	/* Links [0, lo) form no cycle, links [0, hi) do. */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		*(has_cycle(&a, n, mid) ? &hi : &lo) = mid;
	}
	l = &g->links[lo];
	for (i = 0; i < n; i++)
		a.prev[i] = -1;
	a.prev[l->to] = l->to;
	a.queue[0] = l->to;
	for (head = 0, tail = 1; head < tail && a.prev[l->from] == -1; ) {
		i = a.queue[head++];
		for (e = a.first[i]; e < a.first[i + 1] && a.link[e] < lo; e++)
			if (a.prev[a.to[e]] == -1) {
				a.prev[a.to[e]] = i;
				a.queue[tail++] = a.to[e];
			}
	}
	/* The path to -> ... -> from, collected backwards. */
	path = a.deg;
	for (len = 0, i = l->from; ; i = a.prev[i]) {
		path[len++] = i;
		if (i == l->to)
			break;
	}
	names[0] = '\0';
	for (i = len - 1; i >= 0; i--) {
		/* A long cycle is shown by its ends. */
		if (len > 8 && i == len - 4) {
			i = 3;
			cycle_name(names, sizeof(names), "...");
		}
		cycle_name(names, sizeof(names), g->stages[path[i]].label);
	}
	cycle_name(names, sizeof(names), g->stages[l->to].label);
	if (len > 8) {
		i = (int)strlen(names);
		snprintf(names + i, sizeof(names) - (size_t)i, " (%d stages)",
		    len);
	}
	adj_free(&a);
	return gr_fail(errbuf, errlen, l->pos, "cycle of lossless links %s: make "
	    "one of its links leaky ('|~')", names);
}

int
graph_stage_fit(const struct graph *g, int i, const struct app_info *info,
    const int *links, int n, struct misfit *m)
{
	const struct link *l;
	const char *name;
	uint32_t conn = 0;	/* bit p: port p has a link */
	int k, out, p, known;

	for (k = 0; k < n; k++) {
		l = &g->links[links ? links[k] : k];
		for (out = 1; out >= 0; out--) {
			name = out ? l->from_port : l->to_port;
			if ((out ? l->from : l->to) != i)
				continue;
			/* A port of its own name, or "*": any name. */
			for (p = known = 0; p < info->nports; p++) {
				if (info->ports[p].out != out)
					continue;
				if (strcmp(info->ports[p].name, name) == 0) {
					known = 1;
					conn |= p < 32 ? 1u << p : 0;
				} else if (!strcmp(info->ports[p].name, "*"))
					known = 1;
			}
			if (!known) {
				*m = (struct misfit){ links ? links[k] : k, out,
				    -1 };
				return -1;
			}
		}
	}
	for (p = 0; p < info->nports && p < 32; p++)
		if (info->ports[p].required && !(conn & 1u << p)) {
			*m = (struct misfit){ -1, info->ports[p].out, p };
			return -1;
		}
	return 0;
}

/* graph_check()'s words for a misfit of stage i. */
static int
misfit_error(struct graph *g, int i, const struct misfit *m, char *errbuf,
    size_t errlen)
{
	const struct stage *s = &g->stages[i];
	const struct link *l = m->link < 0 ? NULL : &g->links[m->link];
	const char *dir = m->out ? "output" : "input";
	char list[256] = "";
	int p;

	if (m->link == -1)
		return gr_fail(errbuf, errlen, s->pos, "%s port '%s' of %s is not "
		    "connected", dir, s->info->ports[m->port].name, s->label);
	for (p = 0; p < s->info->nports; p++) {
		if (s->info->ports[p].out != m->out)
			continue;
		if (list[0])
			strlcat(list, ", ", sizeof(list));
		strlcat(list, strcmp(s->info->ports[p].name, "*") ?
		    s->info->ports[p].name : "any name", sizeof(list));
	}
	if (list[0] == '\0')
		strlcpy(list, "none", sizeof(list));
	return gr_fail(errbuf, errlen, m->out ? l->from_pos : l->to_pos, "no %s "
	    "port '%s' on %s (%ss: %s)%s", dir, m->out ? l->from_port :
	    l->to_port, s->app, dir, list, m->out && s->copy == 0 &&
	    g->stages[l->to].copy > 0 ? s->info->device ? "; copies are fed "
	    "by outputs 1 to N: put a device's queues inside them, as in "
	    "'Nx( nic DEVICE/q{0} | ... )', or lb after it" : "; copies are "
	    "fed by outputs 1 to N: put a stage that spreads (lb, tee) before "
	    "them" : "");
}

/* One output feeds one input: refuse a second link from a port. */
static int
check_feeds(struct graph *g, char *errbuf, size_t errlen)
{
	struct strtab outs = { 0 };
	struct link *l, *f;
	char *key;
	int i, j, rc = 0;

	for (i = 0; i < g->nlinks && rc == 0; i++) {
		l = &g->links[i];
		if (asprintf(&key, "%d %s", l->from, l->from_port) == -1)
			err(1, NULL);
		if ((j = gr_strtab_get(&outs, key)) == -1)
			gr_strtab_put(&outs, key, i);
		free(key);
		if (j == -1)
			continue;
		f = &g->links[j];
		rc = gr_fail(errbuf, errlen, l->from_pos, "output '%s' of %s "
		    "already feeds %s (at %d:%d); one output feeds one input: "
		    "use tee to copy it or lb to spread it", l->from_port,
		    g->stages[l->from].label, g->stages[f->to].label,
		    f->from_pos.line, f->from_pos.col);
	}
	gr_strtab_free(&outs);
	return rc;
}

int
graph_check(struct graph *g, char *errbuf, size_t errlen)
{
	struct misfit m;
	struct adj a;
	int i, rc = 0;

	if (merge_devices(g, errbuf, errlen) == -1)
		return -1;
	auto_labels(g);
	adj_build(&a, g, 1);
	for (i = 0; i < g->nstages && rc == 0; i++)
		if (graph_stage_fit(g, i, g->stages[i].info, a.link +
		    a.first[i], a.first[i + 1] - a.first[i], &m) == -1)
			rc = misfit_error(g, i, &m, errbuf, errlen);
	adj_free(&a);
	if (rc == 0 && (rc = check_feeds(g, errbuf, errlen)) == 0)
		rc = check_cycles(g, errbuf, errlen);
	return rc;
}
