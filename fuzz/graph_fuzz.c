/*
 * graph_fuzz: libFuzzer target for the graph language (libring/graph*.c):
 * graph_parse(), then graph_check() against a few fixed apps, and
 * graph_words() and app_info_parse() on the same bytes.
 *
 * Build and run (from the repository root; `make fuzz` does this):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring \
 *	    fuzz/graph_fuzz.c libring/graph.c libring/graph_parse.c \
 *	    libring/graph_check.c -lbsd -o build/fuzz_graph
 *	mkdir -p build/fuzz-graph-corpus
 *	build/fuzz_graph -max_total_time=600 -dict=fuzz/graph.dict \
 *	    build/fuzz-graph-corpus fuzz/corpus/graph
 *
 * The input is the text up to its first NUL.  Beyond "no crash, no leak",
 * each run checks properties: an error is "LINE:COL: message" with LINE
 * inside the text; a checked graph has unique labels, links between
 * existing stages and ports, one link per output port, and no cycle of
 * lossless links outside devices (found again here the slow, obvious way),
 * and a graph refused for a cycle has one.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* The apps: a filter-like default, and each shape the checker knows. */
static struct app_info generic, source_info, sink_info, nic_info, tee_info,
    join_info, lw_info;

static void
add_port(struct app_info *in, const char *name, int out, int required)
{
	snprintf(in->ports[in->nports].name, sizeof(in->ports[0].name), "%s",
	    name);
	in->ports[in->nports].out = out;
	in->ports[in->nports].required = required;
	in->nports++;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	strcpy(generic.app, "filter");
	add_port(&generic, "in", 0, 1);
	add_port(&generic, "out", 1, 1);
	add_port(&generic, "reject", 1, 0);
	strcpy(source_info.app, "source");
	add_port(&source_info, "out", 1, 1);
	strcpy(sink_info.app, "sink");
	add_port(&sink_info, "in", 0, 1);
	strcpy(nic_info.app, "nic");
	nic_info.device = 1;
	add_port(&nic_info, "in", 0, 0);
	add_port(&nic_info, "out", 1, 0);
	strcpy(tee_info.app, "tee");
	add_port(&tee_info, "in", 0, 1);
	add_port(&tee_info, "*", 1, 0);
	strcpy(join_info.app, "join");
	add_port(&join_info, "*", 0, 0);
	add_port(&join_info, "out", 1, 1);
	strcpy(lw_info.app, "lwaftr");
	add_port(&lw_info, "v4", 0, 1);
	add_port(&lw_info, "v6", 0, 1);
	add_port(&lw_info, "v4", 1, 1);
	add_port(&lw_info, "v6", 1, 1);
	return 0;
}

static const struct app_info *
info_of(const char *app)
{
	if (strcmp(app, "source") == 0)
		return &source_info;
	if (strcmp(app, "sink") == 0)
		return &sink_info;
	if (strcmp(app, "nic") == 0 || strcmp(app, "vhost") == 0)
		return &nic_info;
	if (strcmp(app, "tee") == 0)
		return &tee_info;
	if (strcmp(app, "join") == 0)
		return &join_info;
	if (strcmp(app, "lwaftr") == 0)
		return &lw_info;
	return &generic;
}

static void
check_message(const char *err, const char *text)
{
	long line, col, lines = 1;
	const char *c;
	char *end;

	for (c = text; *c; c++)
		lines += *c == '\n';
	line = strtol(err, &end, 10);
	if (*end != ':' || line < 1 || line > lines)
		abort();
	col = strtol(end + 1, &end, 10);
	if (*end != ':' || col < 1 || end[1] != ' ' || end[2] == '\0')
		abort();
}

static int
port_ok(const struct app_info *in, const char *name, int out)
{
	int p;

	for (p = 0; p < in->nports; p++)
		if (in->ports[p].out == out && (!strcmp(in->ports[p].name,
		    name) || !strcmp(in->ports[p].name, "*")))
			return 1;
	return 0;
}

static int
cycle_link(const struct graph *g, const struct link *l)
{
	return !l->leaky && !g->stages[l->from].info->device &&
	    !g->stages[l->to].info->device;
}

/* Is `to` reachable from `from` over cycle links?  Quadratic on purpose. */
static int
reaches(const struct graph *g, int from, int to, char *seen)
{
	int i;

	if (from == to)
		return 1;
	if (seen[from])
		return 0;
	seen[from] = 1;
	for (i = 0; i < g->nlinks; i++)
		if (g->links[i].from == from && cycle_link(g, &g->links[i]) &&
		    reaches(g, g->links[i].to, to, seen))
			return 1;
	return 0;
}

static int
has_cycle_slowly(const struct graph *g)
{
	char *seen;
	int i, found = 0;

	if ((seen = malloc((size_t)g->nstages + 1)) == NULL)
		abort();
	for (i = 0; i < g->nlinks && !found; i++) {
		if (!cycle_link(g, &g->links[i]))
			continue;
		memset(seen, 0, (size_t)g->nstages + 1);
		found = reaches(g, g->links[i].to, g->links[i].from, seen);
	}
	free(seen);
	return found;
}

static void
check_graph(const struct graph *g)
{
	int i, j;

	for (i = 0; i < g->nstages; i++) {
		if (g->stages[i].label[0] == '\0' || strlen(g->stages[i].label)
		    >= GRAPH_NAME_MAX)
			abort();
		for (j = 0; j < i; j++)
			if (!strcmp(g->stages[i].label, g->stages[j].label))
				abort();
	}
	for (i = 0; i < g->nlinks; i++) {
		const struct link *l = &g->links[i];
		if (l->from < 0 || l->from >= g->nstages || l->to < 0 ||
		    l->to >= g->nstages ||
		    !port_ok(g->stages[l->from].info, l->from_port, 1) ||
		    !port_ok(g->stages[l->to].info, l->to_port, 0))
			abort();
		for (j = 0; j < i; j++)
			if (g->links[j].from == l->from &&
			    !strcmp(g->links[j].from_port, l->from_port))
				abort();
	}
	if (has_cycle_slowly(g))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct graph g;
	struct app_info info;
	char err[512], *text, **w, **v;
	int i, n, rc;

	/* an exact-size copy, so a read past the end is caught */
	if ((text = malloc(size + 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	if (graph_parse(&g, text, err, sizeof(err)) == 0) {
		for (i = 0; i < g.nstages; i++)
			g.stages[i].info = info_of(g.stages[i].app);
		/* The slow checks stay slow: keep them to small graphs. */
		rc = graph_check(&g, err, sizeof(err));
		if (rc == 0 && g.nstages <= 300 && g.nlinks <= 300)
			check_graph(&g);
		if (rc == -1) {
			check_message(err, text);
			if (strstr(err, ": cycle of lossless links ") &&
			    g.nlinks <= 300 && !has_cycle_slowly(&g))
				abort();
		}
	} else
		check_message(err, text);
	graph_free(&g);

	if ((w = graph_words(text, &n, err, sizeof(err))) != NULL) {
		for (v = w, i = 0; *v; v++)
			i++;
		if (i != n)
			abort();
		graph_words_free(w);
	} else
		check_message(err, text);

	if (app_info_parse(&info, text, err, sizeof(err)) == 0) {
		if (info.app[0] == '\0' || info.nports > 32)
			abort();
		for (i = 0; i < info.nports; i++)
			if (info.ports[i].name[0] == '\0' ||
			    strlen(info.ports[i].name) >= PORT_NAME_MAX)
				abort();
	}
	free(text);
	return 0;
}
