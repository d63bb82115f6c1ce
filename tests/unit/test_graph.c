/*
 * test_graph: the graph language's parser and checker, without starting
 * anything: positions in errors, device merging, auto labels, and random
 * mutations of valid graphs that must never crash (run under ASan too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "tap.h"

static struct app_info generic, source_info, sink_info, nic_info, tee_info;

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
}

static void
set_infos(struct graph *g)
{
	int i;

	for (i = 0; i < g->nstages; i++) {
		const char *a = g->stages[i].app;
		g->stages[i].info = !strcmp(a, "source") ? &source_info :
		    !strcmp(a, "sink") ? &sink_info : !strcmp(a, "nic") ?
		    &nic_info : !strcmp(a, "tee") ? &tee_info : &generic;
	}
}

/* Parse and check; returns 0 or -1 with the message in err. */
static int
run(const char *text, struct graph *g, char *err, size_t len)
{
	int rc;

	memset(g, 0, sizeof(*g));
	err[0] = '\0';
	if ((rc = graph_parse(g, text, err, len)) == 0) {
		set_infos(g);
		rc = graph_check(g, err, len);
	}
	return rc;
}

static void
expect_error(const char *text, const char *msg)
{
	struct graph g;
	char err[512], shown[256], *c;

	/* TAP descriptions are one line. */
	snprintf(shown, sizeof(shown), "%s", text);
	for (c = shown; *c; c++)
		if (*c == '\n')
			*c = '/';
	ok(run(text, &g, err, sizeof(err)) == -1 && strstr(err, msg) != NULL,
	    "error for \"%s\": want \"%s\", got \"%s\"", shown, msg, err);
	graph_free(&g);
}

int
main(void)
{
	static const char *seeds[] = {
		"source | filter tcp | sink",
		"s: source | t: tee | j: filter | sink ; @t [1] | [in] @j",
		"nic eth0 | filter 'tcp port 80' | nic eth0",
		"# c\nsource \\\n --count 1 |\n filter \"a b\" [reject] | sink\n",
		"lw: filter x\nnic e1 | [in] @lw [out] | nic e0\n",
	};
	struct graph g;
	char err[512], buf[512], **w;
	unsigned seed = 1;
	int i, k, n, crashes = 0;

	setup_infos();

	ok(run(seeds[0], &g, err, sizeof(err)) == 0 && g.nstages == 3 &&
	    g.nlinks == 2, "a three-stage chain: %s", err);
	graph_free(&g);

	ok(run(seeds[2], &g, err, sizeof(err)) == 0 && g.nstages == 2 &&
	    !strcmp(g.stages[0].label, "nic-eth0") && g.nlinks == 2 &&
	    g.links[1].to == 0, "a device written twice is one stage: %s", err);
	graph_free(&g);

	ok(run("source | filter a | filter b | sink", &g, err, sizeof(err)) ==
	    0 && !strcmp(g.stages[1].label, "filter") &&
	    !strcmp(g.stages[2].label, "filter2"), "auto labels are unique");
	graph_free(&g);

	ok(run("filter: source | filter x | sink", &g, err, sizeof(err)) == 0 &&
	    strcmp(g.stages[1].label, "filter2") == 0, "auto labels avoid "
	    "user labels: %s", err);
	graph_free(&g);

	ok(run("nic eth0 --promisc | sink ; source | nic eth0 --mtu 9000",
	    &g, err, sizeof(err)) == -1 && strstr(err, "other options"),
	    "one device with two sets of options: %s", err);
	graph_free(&g);

	ok(run("source | t: tee |~ sink ; @t [1] |~\n sink", &g, err,
	    sizeof(err)) == 0 && g.nlinks == 3 && !g.links[0].leaky &&
	    g.links[1].leaky && g.links[2].leaky,
	    "|~ makes a leaky link, also at the end of a line: %s", err);
	graph_free(&g);

	expect_error("source |~ | sink", "1:8: missing stage after '|'");
	expect_error("source | | sink", "1:8: missing stage after '|'");
	expect_error("source | filter 'x", "1:17: unbalanced ' quote");
	expect_error("source | sink ;\n [p] sink", "2:2: input port [p] on the "
	    "first stage");
	expect_error("source\n| sink", "2:1: expected an app name, found '|'");
	expect_error("s: source | sink ; @s | sink", "already feeds");
	expect_error("source [x] | sink", "1:8: no output port 'x' on source "
	    "(outputs: out)");
	expect_error("source | [q] tee", "1:10: no input port 'q' on tee "
	    "(inputs: in)");
	expect_error("filter | sink", "input port 'in' of filter is not "
	    "connected");
	expect_error("", "empty graph");
	expect_error("source | @x", "1:10: no stage labelled 'x'");
	expect_error("a: source | sink ; a: sink", "1:20: label 'a' already "
	    "defined at 1:1");
	expect_error("source | BAD", "1:10: bad app name 'BAD'");
	expect_error("source [x]] | sink", "1:8: bad port name 'x]'");

	w = graph_words("filter 'tcp port 80' \"a\\\"b\" c\\ d", &n, err,
	    sizeof(err));
	ok(w && n == 4 && !strcmp(w[1], "tcp port 80") && !strcmp(w[2],
	    "a\"b") && !strcmp(w[3], "c d"), "graph_words splits like a shell");
	graph_words_free(w);
	ok(graph_words("a | b", &n, err, sizeof(err)) == NULL &&
	    strstr(err, "'|'"), "graph_words refuses '|': %s", err);

	/* Random mutations: any result is fine, a crash is not. */
	for (i = 0; i < 200000; i++) {
		const char *s = seeds[i % 5];
		size_t len = strlen(s);

		memcpy(buf, s, len + 1);
		for (k = 0; k < 1 + (int)(rand_r(&seed) % 4); k++) {
			size_t at = rand_r(&seed) % (len + 1);
			switch (rand_r(&seed) % 4) {
			case 0:
				buf[at] = "|;[]@:'\"\\#\n a-"[rand_r(&seed) % 15];
				break;
			case 1:
				buf[at] = '\0';
				len = at;
				break;
			case 2:
				buf[at] = (char)(rand_r(&seed) % 255 + 1);
				break;
			default:
				if (len + 1 < sizeof(buf)) {
					memmove(buf + at + 1, buf + at,
					    len - at + 1);
					buf[at] = "[]|@"[rand_r(&seed) % 4];
					len++;
				}
			}
			if (at == len)
				buf[len] = '\0';
		}
		buf[sizeof(buf) - 1] = '\0';
		run(buf, &g, err, sizeof(err));
		graph_free(&g);
		if ((w = graph_words(buf, &n, err, sizeof(err))) != NULL)
			graph_words_free(w);
	}
	ok(crashes == 0, "200000 mutated graphs parsed without a crash");
	return tap_done();
}
