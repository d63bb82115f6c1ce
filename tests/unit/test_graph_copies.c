/*
 * test_graph_copies: copies in the graph language ("Nx( ... )", "Nx
 * element"; graph_parse.c).  Each short form must give the very graph
 * its written-out form gives (the same stages, words, labels and links,
 * compared as sets), copy labels must say which copy, and every misuse
 * must be an error at its line and column.  Random mutations of graphs
 * with copies must never crash (run under ASan too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "tap.h"

static struct app_info filter_info, source_info, sink_info, nic_info,
    lb_info, join_info, lw_info;

static void
add_port(struct app_info *in, const char *name, int out, int required)
{
	strcpy(in->ports[in->nports].name, name);
	in->ports[in->nports].out = out;
	in->ports[in->nports].required = required;
	in->nports++;
}

static void
setup_infos(void)
{
	strcpy(filter_info.app, "filter");
	add_port(&filter_info, "in", 0, 1);
	add_port(&filter_info, "out", 1, 1);
	add_port(&filter_info, "reject", 1, 0);
	strcpy(source_info.app, "source");
	add_port(&source_info, "out", 1, 1);
	strcpy(sink_info.app, "sink");
	add_port(&sink_info, "in", 0, 1);
	strcpy(nic_info.app, "nic");
	nic_info.device = 1;
	add_port(&nic_info, "in", 0, 0);
	add_port(&nic_info, "out", 1, 0);
	strcpy(lb_info.app, "lb");
	add_port(&lb_info, "in", 0, 1);
	add_port(&lb_info, "*", 1, 0);
	strcpy(join_info.app, "join");
	add_port(&join_info, "*", 0, 0);
	add_port(&join_info, "out", 1, 1);
	strcpy(lw_info.app, "lwaftr");
	add_port(&lw_info, "v4", 0, 1);
	add_port(&lw_info, "v6", 0, 1);
	add_port(&lw_info, "v4", 1, 1);
	add_port(&lw_info, "v6", 1, 1);
}

static int
run(const char *text, struct graph *g, char *err, size_t len)
{
	const char *a;
	int i, rc;

	memset(g, 0, sizeof(*g));
	err[0] = '\0';
	if ((rc = graph_parse(g, text, err, len)) != 0)
		return rc;
	for (i = 0; i < g->nstages; i++) {
		a = g->stages[i].app;
		g->stages[i].info = !strcmp(a, "source") ? &source_info :
		    !strcmp(a, "sink") ? &sink_info : !strcmp(a, "nic") ?
		    &nic_info : !strcmp(a, "lb") ? &lb_info :
		    !strcmp(a, "join") ? &join_info : !strcmp(a, "lwaftr") ?
		    &lw_info : &filter_info;
	}
	return graph_check(g, err, len);
}

static int
cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The graph as text that does not depend on the order of its stages and
 * links: one line per stage (label, app, words) and per link (labels and
 * ports at both ends, leaky or not), sorted.
 */
static char *
canon(const struct graph *g)
{
	char **lines, *out, *c;
	size_t len = 1;
	int i, j, n = g->nstages + g->nlinks;

	if ((lines = calloc((size_t)n + 1, sizeof(*lines))) == NULL)
		abort();
	for (i = 0; i < g->nstages; i++) {
		const struct stage *s = &g->stages[i];
		if ((c = lines[i] = malloc(4096)) == NULL)
			abort();
		c += sprintf(c, "stage %s %s", s->label, s->app);
		for (j = 0; j < s->argc; j++)
			c += snprintf(c, 256, " '%s'", s->argv[j]);
	}
	for (j = 0; j < g->nlinks; j++) {
		const struct link *l = &g->links[j];
		if ((lines[i + j] = malloc(512)) == NULL)
			abort();
		sprintf(lines[i + j], "link %s [%s] |%s [%s] %s",
		    g->stages[l->from].label, l->from_port, l->leaky ? "~" : "",
		    l->to_port, g->stages[l->to].label);
	}
	qsort(lines, (size_t)n, sizeof(*lines), cmp_lines);
	for (i = 0; i < n; i++)
		len += strlen(lines[i]) + 1;
	if ((out = malloc(len)) == NULL)
		abort();
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		strcat(out, lines[i]);
		strcat(out, "\n");
		free(lines[i]);
	}
	free(lines);
	return out;
}

/* The short form and the written-out form give the same graph. */
static void
expect_same(const char *short_form, const char *full, const char *what)
{
	struct graph a, b;
	char ea[512], eb[512], *ca = NULL, *cb = NULL;
	int ra, rb;

	ra = run(short_form, &a, ea, sizeof(ea));
	rb = run(full, &b, eb, sizeof(eb));
	if (ra == 0 && rb == 0) {
		ca = canon(&a);
		cb = canon(&b);
	}
	ok(ra == 0 && rb == 0 && strcmp(ca, cb) == 0, "%s%s%s%s%s", what,
	    ra ? ": " : "", ra ? ea : "", rb ? ": written out: " : "",
	    rb ? eb : "");
	if (ca && cb && strcmp(ca, cb))
		fprintf(stderr, "# short:\n%s# written out:\n%s", ca, cb);
	free(ca);
	free(cb);
	graph_free(&a);
	graph_free(&b);
}

static void
expect_error(const char *text, const char *msg)
{
	struct graph g;
	char err[512];

	ok(run(text, &g, err, sizeof(err)) == -1 && strstr(err, msg) != NULL,
	    "error for \"%s\": want \"%s\", got \"%s\"", text, msg, err);
	graph_free(&g);
}

static int
has_label(const struct graph *g, const char *label)
{
	int i;

	for (i = 0; i < g->nstages; i++)
		if (strcmp(g->stages[i].label, label) == 0)
			return 1;
	return 0;
}

int
main(void)
{
	static const char *seeds[] = {
		"source | lb | 4x( w: filter tcp | vlan 3 ) | join | sink",
		"source | lb |~ 2x [in] filter [out] |~ join | sink",
		"source | l: lb | 2x( [v4] w: lwaftr c{}.conf [v6] ) | join | "
		    "sink\nsource | m: lb | 2x( [v6] @w [v4] ) | join | sink",
		"2x(\n nic q{0} | filter |\n nic q{0}\n)",
	};
	struct graph g;
	char err[512], buf[512];
	unsigned seed = 7;
	int i, k, len, at;

	setup_infos();

	expect_same("source | l: lb | 4x( w: filter tcp | v: filter udp ) | "
	    "j: join | sink",
	    "source | l: lb ; j: join | sink ;"
	    "@l [1] | w.1: filter tcp | v.1: filter udp | @j ;"
	    "@l [2] | w.2: filter tcp | v.2: filter udp | @j ;"
	    "@l [3] | w.3: filter tcp | v.3: filter udp | @j ;"
	    "@l [4] | w.4: filter tcp | v.4: filter udp | @j",
	    "4x( chain ) is four chains between lb and join");
	expect_same("source | lb | 3x filter tcp | join | sink",
	    "source | lb: lb ; join: join | sink ;"
	    "@lb [1] | filter.1: filter tcp | @join ;"
	    "@lb [2] | filter.2: filter tcp | @join ;"
	    "@lb [3] | filter.3: filter tcp | @join",
	    "3x element: unlabelled copies are labelled APP.K");
	expect_same("source | lb |~ 2x( filter ) |~ join | sink",
	    "source | lb: lb ; join: join | sink ;"
	    "@lb [1] |~ filter.1: filter |~ @join ;"
	    "@lb [2] |~ filter.2: filter |~ @join",
	    "a leaky '|~' around copies makes each copy's link leaky");
	expect_same("source | l: lb | 2x( [v4] w: lwaftr c{}.conf [v6] ) | "
	    "j6: join | sink\n"
	    "source | m: lb | 2x [v6] @w [v4] | j4: join | sink",
	    "source | l: lb ; source | m: lb ; j6: join | sink ; "
	    "j4: join | sink\n"
	    "@l [1] | [v4] w.1: lwaftr c1.conf [v6] | @j6\n"
	    "@l [2] | [v4] w.2: lwaftr c2.conf [v6] | @j6\n"
	    "@m [1] | [v6] @w.1 [v4] | @j4\n"
	    "@m [2] | [v6] @w.2 [v4] | @j4",
	    "@w in copy K is w.K: lwaftr's two sides, and {} is K");
	expect_same("2x(\n nic q{0} | filter {}x{0} |\n nic q{0}\n)",
	    "nic q0 | filter.1: filter 1x0 | nic q0 ;"
	    "nic q1 | filter.2: filter 2x1 | nic q1",
	    "copies over a chain from a device back to it; {0} is K - 1");
	ok(run("source | lb | 2x filter | join | sink ; source | lb | "
	    "2x filter | join | sink ; source | filter | sink", &g, err,
	    sizeof(err)) == 0 && has_label(&g, "filter.1") &&
	    has_label(&g, "filter.2") && has_label(&g, "filter2.1") &&
	    has_label(&g, "filter2.2") && has_label(&g, "filter"),
	    "two unlabelled sets of copies: filter.K and filter2.K: %s", err);
	graph_free(&g);
	/* One base for all the copies of an element: filter.1 is taken, so
	 * filter2.1 and filter2.2 (not filter2.1 and filter.2, which a roll
	 * of "filter" would mix with the sink). */
	ok(run("source | filter.1: sink ; source | lb | 2x filter | join | "
	    "sink", &g, err, sizeof(err)) == 0 && has_label(&g, "filter2.1") &&
	    has_label(&g, "filter2.2") && !has_label(&g, "filter.2"),
	    "a label taken by another stage moves the whole set of copies to "
	    "filter2.K: %s", err);
	graph_free(&g);
	ok(run("source | lb | 3x filter | join | sink ; source | filter.3: "
	    "sink", &g, err, sizeof(err)) == 0 && has_label(&g, "filter2.1") &&
	    has_label(&g, "filter2.2") && has_label(&g, "filter2.3") &&
	    !has_label(&g, "filter.1"), "also when the taken one is the last "
	    "copy's, declared after: %s", err);
	graph_free(&g);
	ok(run("source | lb | 8x( [in] w: filter [out] ) | join | sink", &g,
	    err, sizeof(err)) == 0 && g.nstages == 12 && g.nlinks == 18 &&
	    g.stages[2].copy == 1 && g.stages[9].copy == 8 &&
	    g.stages[0].copy == 0, "copy numbers on the stages: %s", err);
	graph_free(&g);
	ok(run("source | lb | 1024x filter | join | sink", &g, err,
	    sizeof(err)) == 0 && g.nstages == 1028 &&
	    has_label(&g, "filter.1024"), "1024 copies: %s", err);
	graph_free(&g);

	expect_error("source | lb | 0x filter | join", "1:15: 0 copies: from "
	    "1 to 1024");
	expect_error("source | lb | 1025x filter | join", "1:15: 1025 copies");
	expect_error("source | lb | 99999999999x filter", "1:15: 99999999999 "
	    "copies");
	expect_error("source | lb | 2x( a: filter | 3x filter ) | join",
	    "1:31: copies inside copies");
	expect_error("source | lb | 2x( filter | sink",
	    "1:32: expected '|' or the ')' that closes the copies opened at "
	    "1:15, found end of input");
	expect_error("source | lb | 2x( filter tcp) | join | sink",
	    "(a ')' that closes stands alone");
	expect_error("source | lb | 2x( filter ; sink )", "1:26: expected '|' "
	    "or the ')'");
	expect_error("source | lb [o] | 2x filter | join", "1:13: output port "
	    "[o] before copies");
	expect_error("source | lb | 2x filter | 2x filter | join",
	    "1:27: copies right after copies");
	expect_error("source | lb | 2x( ) | join", "1:19: expected an app "
	    "name, found ')'");
	expect_error("source | lb | 2x( filter | ) | join", "1:26: missing "
	    "stage after '|'");
	expect_error("source | lb | 2x( @nowhere ) | join", "1:19: no stage "
	    "labelled 'nowhere.1' or 'nowhere'");
	expect_error("2x( [v4] filter ) | join | sink", "1:5: input port [v4] "
	    "on the first stage of a chain");
	expect_error("source | lb | 2x( filter [x] )", "1:26: output port [x] "
	    "on the last stage of a chain");
	expect_error("w.2: sink ; source | lb | 2x w: filter | join",
	    "1:30: label 'w.2' already defined at 1:1");
	expect_error("source | lb | 2x "
	    "p0000000000000000000000000000000000000000000000000000000000001: "
	    "filter | join", "1:18: label 'p000000000000000000000000000000000"
	    "0000000000000000000000000001.1' too long (at most 63");
	expect_error("source [out] )", "1:14: expected '|', ';' or end of "
	    "line, found ')' outside copies");
	expect_error("source | l: lb | 3x filter | join | sink ; @l [3] | "
	    "sink",
	    "already feeds");

	expect_error("source | lb | [o1] 2x filter | join", "1:15: input "
	    "port [o1] before copies: write it inside");
	expect_error("source | lb | 2x( filter ) [o1] | join", "1:28: output "
	    "port [o1] after copies: write it inside");
	expect_error("source | lb | 2x( w: filter ) | join | sink ; @w | sink",
	    "1:47: no stage labelled 'w', only its copies w.1 ...");
	expect_error("source | 2x filter | sink", "1:1: no output port '1' on "
	    "source (outputs: out); copies are fed by outputs 1 to N: put a "
	    "stage that spreads (lb, tee) before them");
	expect_error("source | lb | 2x(filter) | join", "1:15: '2x(filter)': "
	    "copies are written '2x( chain )', a space after the '('");
	expect_error("nic tap:a | 2x filter | sink", "no output port '1' on "
	    "nic (outputs: out); copies are fed by outputs 1 to N: put a "
	    "device's queues inside them, as in 'Nx( nic DEVICE/q{0} | ... )', "
	    "or lb after it");
	expect_error("source | pcap-write out{}.pcap", "1:21: '{}' outside "
	    "copies");
	expect_error("source | filter 'q{0}'", "1:17: '{0}' outside copies");

	/* A ')' quoted is a word, and "2x" after an app name is a word. */
	ok(run("source | lb | 2x( filter ')' 2x ) | join | sink", &g, err,
	    sizeof(err)) == 0 && g.stages[2].argc == 2 &&
	    !strcmp(g.stages[2].argv[0], ")") &&
	    !strcmp(g.stages[2].argv[1], "2x"), "quoted ')' and a word "
	    "'2x' reach the app: %s", err);
	graph_free(&g);

	/* Random mutations of graphs with copies: no crash, no leak. */
	for (i = 0; i < 100000; i++) {
		strcpy(buf, seeds[i % (sizeof(seeds) / sizeof(seeds[0]))]);
		len = (int)strlen(buf);
		for (k = 0; k < 1 + rand_r(&seed) % 4; k++) {
			at = rand_r(&seed) % (len + 1);
			if (rand_r(&seed) % 2 && at < len)
				memmove(buf + at, buf + at + 1, (size_t)(len-- -
				    at));
			else if (len + 1 < (int)sizeof(buf)) {
				memmove(buf + at + 1, buf + at, (size_t)(len -
				    at + 1));
				buf[at] = "()x2{}|@[] "[rand_r(&seed) % 11];
				len++;
			}
		}
		run(buf, &g, err, sizeof(err));
		graph_free(&g);
	}
	ok(1, "100000 mutated graphs with copies parsed without a crash");
	return tap_done();
}
