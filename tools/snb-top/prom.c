/*
 * prom.c: the counters of every graph in the Prometheus text exposition
 * format (version 0.0.4), named by its conventions: snb_ then what is
 * counted, base units (seconds, bytes), _total on counters, one family per
 * quantity (packets, bytes and errors never share a name), each family's
 * samples together after its HELP and TYPE.  Labels: graph, stage, app
 * (and port for an app's per-port counter); a link's from, from_port, to,
 * to_port.  The values are raw: a counter
 * only goes up while its stage lives (snb-ctl clear does not touch them).
 */
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

enum { S_UP, S_IN, S_OUT, S_BUSY, S_BREATHS, S_RESTARTS };

static const struct {
	const char	*name, *type, *help;
} stage_fam[] = {
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
};

/* Sample which of stage v (busy time in ns: printed in seconds). */
static uint64_t
stage_value(int which, const struct stage_view *v)
{
	const volatile struct stage_file *s = v->f;

	switch (which) {
	case S_UP:
		return v->alive && s->exit_state == STAGE_RUNNING;
	case S_IN:
		return s->packets_in;
	case S_OUT:
		return s->packets_out;
	case S_BUSY:
		return s->busy_ns;
	case S_BREATHS:
		return s->busy_breaths;
	default:
		return s->restarts;
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
	for (i = 0; name[i] && n + 1 < len; i++)
		out[n++] = (name[i] >= 'a' && name[i] <= 'z') ||
		    (name[i] >= 'A' && name[i] <= 'Z') ||
		    (name[i] >= '0' && name[i] <= '9') ? name[i] : '_';
	out[n] = '\0';
	if (!(c->flags & STAGE_COUNTER_GAUGE))
		strlcat(out, "_total", len);
}

/*
 * Counter k of stage s as a sample of family fam: 1 if it is one (and not
 * the same series as an earlier counter of s, which two names can map to).
 */
static int
app_sample(const struct stage_file *s, int k, const char *fam, char *port,
    size_t plen)
{
	char m[80], m2[80], p2[64];
	int j;

	app_metric(&s->counters[k], m, sizeof(m), port, plen);
	if (strcmp(m, fam) != 0)
		return 0;
	for (j = 0; j < k; j++) {
		app_metric(&s->counters[j], m2, sizeof(m2), p2, sizeof(p2));
		if (strcmp(m2, m) == 0 && strcmp(p2, port) == 0)
			return 0;
	}
	return 1;
}

/* One family per app counter name, in the order first met. */
static void
app_families(FILE *f, struct graph_view *g, int n)
{
	char (*names)[80] = NULL, m[80], port[64], help[160];
	int i, j, k, x, nn = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j < g[i].nstages; j++) {
			const struct stage_file *s = g[i].stages[j].f;
			for (k = 0; k < (int)s->ncounters &&
			    k < STAGE_MAX_COUNTERS; k++) {
				app_metric(&s->counters[k], m, sizeof(m), port,
				    sizeof(port));
				for (x = 0; x < nn && strcmp(names[x], m); x++)
					;
				if (x < nn)
					continue;
				if ((names = reallocarray(names, (size_t)nn + 1,
				    sizeof(*names))) == NULL)
					abort();
				strlcpy(names[nn++], m, sizeof(*names));
			}
		}
	for (x = 0; x < nn; x++) {
		const char *type = NULL;
		for (i = 0; i < n; i++)
			for (j = 0; j < g[i].nstages; j++) {
				const struct stage_file *s = g[i].stages[j].f;
				for (k = 0; k < (int)s->ncounters &&
				    k < STAGE_MAX_COUNTERS; k++) {
					const struct stage_counter *c =
					    &s->counters[k];
					if (!app_sample(s, k, names[x], port,
					    sizeof(port)))
						continue;
					if (type == NULL) {
						type = c->flags &
						    STAGE_COUNTER_GAUGE ?
						    "gauge" : "counter";
						snprintf(help, sizeof(help),
						    "The app's %s %.*s (see "
						    "its manual page).", type,
						    (int)strcspn(c->name, "["),
						    c->name);
						family(f, names[x], type, help);
					}
					stage_labels(f, names[x], &g[i], s,
					    port);
					fprintf(f, "%" PRIu64 "\n",
					    (uint64_t)c->value);
				}
			}
	}
	free(names);
}

enum { L_PACKETS, L_BYTES, L_DROPS, L_SLOTS, L_USED };

static const struct {
	const char	*name, *type, *help;
} link_fam[] = {
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

static uint64_t
link_value(int which, struct link_view *l)
{
	struct ring_shm *r = l->r.shm;

	switch (which) {
	case L_PACKETS:
		return atomic_load(&r->prod.head);
	case L_BYTES:
		return atomic_load(&r->prod.bytes);
	case L_DROPS:
		return atomic_load(&r->prod.drops);
	case L_SLOTS:
		return (uint64_t)l->r.mask + 1;
	default:
		return ring_fill(&l->r);
	}
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
	for (k = 0; k < (int)(sizeof(stage_fam) / sizeof(stage_fam[0])); k++) {
		family(f, stage_fam[k].name, stage_fam[k].type,
		    stage_fam[k].help);
		for (i = 0; i < n; i++)
			for (j = 0; j < g[i].nstages; j++) {
				stage_labels(f, stage_fam[k].name, &g[i],
				    g[i].stages[j].f, "");
				v = stage_value(k, &g[i].stages[j]);
				if (k == S_BUSY)
					fprintf(f, "%.9f\n", v / 1e9);
				else
					fprintf(f, "%" PRIu64 "\n", v);
			}
	}
	app_families(f, g, n);
	for (k = 0; k < (int)(sizeof(link_fam) / sizeof(link_fam[0])); k++) {
		family(f, link_fam[k].name, link_fam[k].type,
		    link_fam[k].help);
		for (i = 0; i < n; i++)
			for (j = 0; j < g[i].nlinks; j++) {
				link_labels(f, link_fam[k].name, &g[i],
				    &g[i].links[j]);
				fprintf(f, "%" PRIu64 "\n",
				    link_value(k, &g[i].links[j]));
			}
	}
}
