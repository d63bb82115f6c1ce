/*
 * test_graph: the graph language's parser and checker, without starting
 * anything: positions in errors, device merging, auto labels, cycles of
 * lossless links, name lengths, graphs of 20,000 stages, and random
 * mutations of valid graphs that must never crash (run under ASan too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "tap.h"

static struct app_info generic, source_info, sink_info, nic_info, tee_info,
    lw_info;

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
	strcpy(lw_info.app, "lwaftr");
	add_port(&lw_info, "v4", 0, 1);
	add_port(&lw_info, "v6", 0, 1);
	add_port(&lw_info, "v4", 1, 1);
	add_port(&lw_info, "v6", 1, 1);
}

static void
set_infos(struct graph *g)
{
	int i;

	for (i = 0; i < g->nstages; i++) {
		const char *a = g->stages[i].app;
		g->stages[i].info = !strcmp(a, "source") ? &source_info :
		    !strcmp(a, "sink") ? &sink_info : !strcmp(a, "nic") ?
		    &nic_info : !strcmp(a, "tee") ? &tee_info :
		    !strcmp(a, "lwaftr") ? &lw_info : &generic;
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

/* A name of n characters: "p" and then digits, distinct in the last. */
static const char *
long_name(size_t n, char last)
{
	static char buf[2][128];
	static int k;
	char *b = buf[k++ % 2];

	memset(b, '0', n);
	b[0] = 'p';
	b[n - 1] = last;
	b[n] = '\0';
	return b;
}

/* "source | filter ip | ... | sink" with n filters. */
static char *
long_chain(int n)
{
	char *t, *c;
	int i;

	/* Room for the tests to close it into a cycle. */
	if ((t = malloc(256 + (size_t)n * 12)) == NULL)
		abort();
	c = t + sprintf(t, "source");
	for (i = 0; i < n; i++)
		c += sprintf(c, " | filter ip");
	sprintf(c, " | sink");
	return t;
}

static void
expect_ok(const char *text, const char *what)
{
	struct graph g;
	char err[512];

	ok(run(text, &g, err, sizeof(err)) == 0, "%s: %s", what, err);
	graph_free(&g);
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

	/* Cycles of lossless links (issue 11 item 8). */
	expect_error("source --count 10 | a: filter ip | b: filter ip | @a",
	    "1:49: cycle of lossless links a -> b -> a: make one of its links "
	    "leaky ('|~')");
	expect_ok("source --count 10 | a: filter ip | b: filter ip |~ @a",
	    "a cycle with a leaky link");
	expect_ok("source --count 10 | a: filter ip |~ b: filter ip | @a",
	    "a cycle with a leaky link elsewhere in it");
	expect_error("src: source | t: tee [a] |~ @t ; @t [b] | @t ; "
	    "@t [c] | sink", "1:41: cycle of lossless links t -> t: make one "
	    "of its links leaky");
	expect_ok("src: source | t: tee [a] |~ @t ; @t [b] |~ @t ; @t [c] | "
	    "sink", "leaky self-links");
	expect_error("a: filter x | b: filter y | c: filter z\n"
	    "source | [in] @a\n@c | @b ; @c [reject] | sink",
	    "3:4: cycle of lossless links b -> c -> b");
	/* The '|' that closes the first cycle in reading order. */
	expect_error("s: source | t: tee [1] | a: filter | b: filter | sink ;"
	    " @b [reject] | @a ; @t [2] | [in] @t",
	    "1:69: cycle of lossless links a -> b -> a");
	expect_ok("nic veth0 | filter tcp | nic veth0",
	    "a device carries no cycle through it");
	expect_ok("lw: lwaftr lw.conf\nnic eth1 | [v6] @lw [v4] | nic eth0\n"
	    "nic eth0 | [v4] @lw [v6] | nic eth1", "the lwAFTR of DESIGN 4");
	expect_ok("n: nic veth0 | t: tee [1] | @n ; @t [2] | sink",
	    "a device loop through a label");
	expect_error("nic e0 | a: filter x | b: filter y | nic e0 ; "
	    "@b [reject] | @a", "1:59: cycle of lossless links a -> b -> a");
	{
		/* A long cycle is shown by its ends. */
		char *t = long_chain(30), *c;

		c = strstr(t, " | sink");
		strcpy(c, " | @f ; @f [reject] | sink");
		c = strstr(t, " | filter ip");
		memcpy(c, " | f: filter", 12);
		expect_error(t, "cycle of lossless links f -> filter -> filter2 "
		    "-> ... -> filter26 -> filter27 -> filter28 -> filter29 -> f"
		    " (30 stages)");
		free(t);
	}

	/* Names that do not fit are refused, not cut (issue 11 item 15). */
	snprintf(buf, sizeof(buf), "s: source | t: tee [%s] | sink ; "
	    "@t [%s] | sink", long_name(63, '1'), long_name(63, '2'));
	expect_error(buf, "1:20: port name 'p00000");
	expect_error(buf, "too long (at most 31 characters)");
	snprintf(buf, sizeof(buf), "s: source | t: tee [%s] | sink ; "
	    "@t [%s] | sink", long_name(32, '1'), long_name(32, '2'));
	expect_error(buf, "1:20: port name");
	snprintf(buf, sizeof(buf), "s: source | t: tee [%s] | sink ; "
	    "@t [%s] | sink", long_name(31, '1'), long_name(31, '2'));
	ok(run(buf, &g, err, sizeof(err)) == 0 && g.nlinks == 3 &&
	    !strcmp(g.links[1].from_port, long_name(31, '1')) &&
	    !strcmp(g.links[2].from_port, long_name(31, '2')),
	    "31-character port names kept whole: %s", err);
	graph_free(&g);
	snprintf(buf, sizeof(buf), "%s: source | sink", long_name(64, 'a'));
	expect_error(buf, "1:1: label 'p000");
	expect_error(buf, "too long (at most 63 characters)");
	snprintf(buf, sizeof(buf), "source | @%s", long_name(64, 'a'));
	expect_error(buf, "1:10: label '@p000");
	snprintf(buf, sizeof(buf), "source | a%s", long_name(64, 'a'));
	expect_error(buf, "1:10: app name 'ap000");
	snprintf(buf, sizeof(buf), "%s: source | sink", long_name(63, 'a'));
	expect_ok(buf, "a 63-character label");
	{
		struct app_info in;

		snprintf(buf, sizeof(buf), "snb-describe 1\napp x\nout %s\n",
		    long_name(32, '1'));
		ok(app_info_parse(&in, buf, err, sizeof(err)) == -1 &&
		    strstr(err, "too long"), "--describe: a 32-character port "
		    "name refused: %s", err);
		snprintf(buf, sizeof(buf), "snb-describe 1\napp x\nout %s "
		    "required\n", long_name(31, '1'));
		ok(app_info_parse(&in, buf, err, sizeof(err)) == 0 &&
		    in.nports == 1 && in.ports[0].required &&
		    !strcmp(in.ports[0].name, long_name(31, '1')),
		    "--describe: a 31-character port name kept: %s", err);
		snprintf(buf, sizeof(buf), "snb-describe 1\napp %s\n",
		    long_name(64, 'a'));
		ok(app_info_parse(&in, buf, err, sizeof(err)) == -1,
		    "--describe: a 64-character app name refused: %s", err);
	}

	/* Auto labels as before the hash tables: the first number free. */
	ok(run("filter: source | filter x | filter2: filter y | filter z | "
	    "filter3 | sink", &g, err, sizeof(err)) == 0 &&
	    !strcmp(g.stages[1].label, "filter3") &&
	    !strcmp(g.stages[3].label, "filter4") &&
	    !strcmp(g.stages[4].label, "filter32"),
	    "auto labels skip user labels and keep numbering: %s", err);
	graph_free(&g);

	/* 20,000 stages: linear checks (issue 11 item 21; no timing here). */
	{
		char *t = long_chain(20000), name[32];

		ok(run(t, &g, err, sizeof(err)) == 0 && g.nstages == 20002 &&
		    g.nlinks == 20001 && !strcmp(g.stages[1].label, "filter")
		    && !strcmp(g.stages[20000].label, "filter20000"),
		    "a 20,000-stage chain: %s", err);
		for (i = 2, k = 0; i <= 20000; i++) {
			snprintf(name, sizeof(name), "filter%d", i);
			k += strcmp(g.stages[i].label, name) != 0;
		}
		ok(k == 0, "its labels are filter, filter2 ... filter20000");
		graph_free(&g);
		/* The same chain closed into a cycle. */
		strcpy(strstr(t, " | sink"), " | @f ; @f [reject] | sink");
		memcpy(strstr(t, " | filter ip"), " | f: filter", 12);
		ok(run(t, &g, err, sizeof(err)) == -1 && strstr(err, "cycle of "
		    "lossless links f -> filter -> filter2 -> ... ") &&
		    strstr(err, "-> filter19999 -> f (20000 stages)"),
		    "a 20,000-stage cycle: %s", err);
		graph_free(&g);
		free(t);
	}
	{
		/* Many devices, each written twice: one stage each. */
		char *t, *c;

		if ((t = malloc(10000 * 64)) == NULL)
			abort();
		for (c = t, i = 0; i < 10000; i++)
			c += sprintf(c, "nic e%d | filter | nic e%d\n", i, i);
		ok(run(t, &g, err, sizeof(err)) == 0 && g.nstages == 20000 &&
		    !strcmp(g.stages[19998].label, "nic-e9999") &&
		    g.links[19999].to == 19998 && g.links[19999].from == 19999,
		    "10,000 device loops: %s", err);
		graph_free(&g);
		free(t);
	}

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
