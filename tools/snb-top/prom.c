/*
 * prom.c: the counters of every graph in the Prometheus text exposition
 * format (version 0.0.4), named by its conventions: snb_ then what is
 * counted, base units (seconds, bytes), _total on counters, one family per
 * quantity (packets, bytes and errors never share a name), each family's
 * samples together after its HELP and TYPE.  Labels: graph, stage, app
 * (and port for an app's per-port counter); a link's from, from_port, to,
 * to_port.  The values are raw: a counter only goes up while its stage
 * lives (snb-ctl clear does not touch them).
 */
#include <ctype.h>
#include <err.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "top.h"

/* A label value, escaped as the format wants (\\, \", \n). */
static void
label(FILE *f, const char *name, const char *v, size_t max, int first)
{
	size_t i;

	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	for (i = 0; i < max && v[i]; i++) {
		if (v[i] == '\\' || v[i] == '"')
			fprintf(f, "\\%c", v[i]);
		else if (v[i] == '\n')
			fputs("\\n", f);
		else
			putc(v[i], f);
	}
	putc('"', f);
}

static void
family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A stage's sample up to its value; port: an app counter's, or "". */
static void
stage_labels(FILE *f, const char *metric, const struct graph_view *g,
    const struct stage_file *s, const char *port)
{
	fprintf(f, "%s{", metric);
	label(f, "graph", g->name, sizeof(g->name), 1);
	label(f, "stage", s->label, sizeof(s->label), 0);
	label(f, "app", s->app, sizeof(s->app), 0);
	if (port[0])
		label(f, "port", port, strlen(port), 0);
	fputs("} ", f);
}

static void
link_labels(FILE *f, const char *metric, const struct graph_view *g,
    const struct link_view *l)
{
	fprintf(f, "%s{", metric);
	label(f, "graph", g->name, sizeof(g->name), 1);
	label(f, "from", l->from, sizeof(l->from), 0);
	label(f, "from_port", l->from_port, sizeof(l->from_port), 0);
	label(f, "to", l->to, sizeof(l->to), 0);
	label(f, "to_port", l->to_port, sizeof(l->to_port), 0);
	fputs("} ", f);
}

enum { S_UP, S_IN, S_OUT, S_BUSY, S_BREATHS, S_RESTARTS, L_PACKETS, L_BYTES,
    L_DROPS, L_SLOTS, L_USED, NFAM };

/* A stage's families, then (after the apps' counters) a link's. */
static const struct {
	const char	*name, *type, *help;
} fam[NFAM] = {
	{ "snb_stage_up", "gauge", "1 if the stage's process is running." },
	{ "snb_stage_packets_in_total", "counter",
	    "Packets the stage took from its input links." },
	{ "snb_stage_packets_out_total", "counter",
	    "Packets the stage put on its output links." },
	{ "snb_stage_busy_seconds_total", "counter",
	    "Time the stage spent in breaths that moved packets." },
	{ "snb_stage_busy_breaths_total", "counter",
	    "Breaths (polls of its app) that moved packets." },
	{ "snb_stage_restarts_total", "counter",
	    "Times the launcher restarted the stage." },
	{ "snb_link_packets_total", "counter",
	    "Packets put on the link (its ring)." },
	{ "snb_link_bytes_total", "counter",
	    "Bytes of the packets put on the link: frames without preamble "
	    "and FCS." },
	{ "snb_link_drops_total", "counter",
	    "Packets a leaky link dropped because its ring was full." },
	{ "snb_ring_slots", "gauge", "Slots of the link's ring." },
	{ "snb_ring_slots_used", "gauge",
	    "Slots of the link's ring holding packets not yet taken." },
};

/* Family k's sample of stage or link j of g (busy time in ns). */
static uint64_t
value(int k, const struct graph_view *g, int j)
{
	const volatile struct stage_file *s = k < L_PACKETS ?
	    g->stages[j].f : NULL;
	const struct ring *r = k < L_PACKETS ? NULL : &g->links[j].r;

	switch (k) {
	case S_UP:
		return g->stages[j].alive && s->exit_state == STAGE_RUNNING;
	case S_IN:
		return s->packets_in;
	case S_OUT:
		return s->packets_out;
	case S_BUSY:
		return s->busy_ns;
	case S_BREATHS:
		return s->busy_breaths;
	case S_RESTARTS:
		return s->restarts;
	case L_PACKETS:
		return atomic_load(&r->shm->prod.head);
	case L_BYTES:
		return atomic_load(&r->shm->prod.bytes);
	case L_DROPS:
		return atomic_load(&r->shm->prod.drops);
	case L_SLOTS:
		return (uint64_t)r->mask + 1;
	default:
		return ring_fill(r);
	}
}

/*
 * The metric of an app's counter: snb_app_ and its name with every
 * character Prometheus does not allow as '_', then _total for a counter
 * ("drop-nomatch" -> snb_app_drop_nomatch_total); a gauge has no suffix.
 * A per-port counter NAME[PORT] ("rx[a]" of snb-bridge) is NAME's metric
 * with a port label.  port gets the port, or "".
 */
static void
app_metric(const struct stage_counter *c, char *out, size_t len, char *port,
    size_t plen)
{
	char name[sizeof(c->name) + 1], *br;
	size_t i, n;

	memcpy(name, c->name, sizeof(c->name));
	name[sizeof(c->name)] = '\0';
	port[0] = '\0';
	if ((br = strchr(name, '[')) != NULL && br > name &&
	    name[strlen(name) - 1] == ']') {
		name[strlen(name) - 1] = '\0';
		strlcpy(port, br + 1, plen);
		*br = '\0';
	}
	n = (size_t)snprintf(out, len, "snb_app_");
	for (i = 0; name[i] && n + 1 < len; i++)	/* the C locale's */
		out[n++] = isalnum((unsigned char)name[i]) ? name[i] : '_';
	out[n] = '\0';
	if (!(c->flags & STAGE_COUNTER_GAUGE))
		strlcat(out, "_total", len);
}

/* One family per app counter name, in the order first met. */
static void
app_families(FILE *f, struct graph_view *g, int n)
{
	struct {
		char				 m[80], port[64];
		const struct graph_view		*g;
		const struct stage_file		*s;
		const struct stage_counter	*c;
	} *a = NULL;
	char help[160];
	const char *type;
	size_t na = 0, x, y;
	int i, j, k;

	for (i = 0; i < n; i++)
		for (j = 0; j < g[i].nstages; j++) {
			const struct stage_file *s = g[i].stages[j].f;
			for (k = 0; k < (int)s->ncounters &&
			    k < STAGE_MAX_COUNTERS; k++) {
				if ((a = reallocarray(a, na + 1,
				    sizeof(*a))) == NULL)
					err(1, NULL);
				a[na].g = &g[i];
				a[na].s = s;
				a[na].c = &s->counters[k];
				app_metric(a[na].c, a[na].m, sizeof(a[na].m),
				    a[na].port, sizeof(a[na].port));
				/* Two names of s can map to one series. */
				for (y = 0; y < na && (a[y].s != s ||
				    strcmp(a[y].m, a[na].m) != 0 ||
				    strcmp(a[y].port, a[na].port) != 0); y++)
					;
				na += y == na;
			}
		}
	for (x = 0; x < na; x++) {
		for (y = 0; y < x && strcmp(a[y].m, a[x].m) != 0; y++)
			;
		if (y < x)
			continue;	/* its family is out */
		type = a[x].c->flags & STAGE_COUNTER_GAUGE ? "gauge" :
		    "counter";
		snprintf(help, sizeof(help), "The app's %s %.*s (see its "
		    "manual page).", type, (int)strcspn(a[x].c->name, "["),
		    a[x].c->name);
		family(f, a[x].m, type, help);
		for (y = x; y < na; y++)
			if (strcmp(a[y].m, a[x].m) == 0) {
				stage_labels(f, a[y].m, a[y].g, a[y].s,
				    a[y].port);
				fprintf(f, "%" PRIu64 "\n",
				    (uint64_t)a[y].c->value);
			}
	}
	free(a);
}

void
prom_write(FILE *f, struct graph_view *g, int n)
{
	uint64_t v;
	int i, j, k;

	family(f, "snb_graph_start_time_seconds", "gauge",
	    "When the graph's snb-run started, in seconds since the epoch.");
	for (i = 0; i < n; i++)
		if (g[i].alive && g[i].started) {
			fputs("snb_graph_start_time_seconds{", f);
			label(f, "graph", g[i].name, sizeof(g[i].name), 1);
			fprintf(f, "} %ld\n", g[i].started);
		}
	for (k = 0; k < NFAM; k++) {
		if (k == L_PACKETS)
			app_families(f, g, n);
		family(f, fam[k].name, fam[k].type, fam[k].help);
		for (i = 0; i < n; i++)
			for (j = 0; j < (k < L_PACKETS ? g[i].nstages :
			    g[i].nlinks); j++) {
				if (k < L_PACKETS)
					stage_labels(f, fam[k].name, &g[i],
					    g[i].stages[j].f, "");
				else
					link_labels(f, fam[k].name, &g[i],
					    &g[i].links[j]);
				v = value(k, &g[i], j);
				if (k == S_BUSY)
					fprintf(f, "%.9f\n", v / 1e9);
				else
					fprintf(f, "%" PRIu64 "\n", v);
			}
	}
}
