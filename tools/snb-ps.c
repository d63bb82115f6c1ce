/*
 * snb-ps: list graphs, running or stale, their stages and where their
 * rings live.
 */
#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rundir.h"
#include "stats.h"

#define USAGE	"usage: snb-ps [--json] [GRAPH]\n"

static void
print_json(struct graph_view *g, int n)
{
	int i, j;

	printf("{\"graphs\":[");
	for (i = 0; i < n; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_str(stdout, g[i].name);
		printf(",\"pid\":%ld,\"alive\":%s,\"stale\":%s,\"rings\":",
		    g[i].pid, g[i].alive ? "true" : "false",
		    g[i].stale ? "true" : "false");
		json_str(stdout, g[i].rings);
		printf(",\"stages\":[");
		for (j = 0; j < g[i].nstages; j++) {
			const struct stage_file *f = g[i].stages[j].f;
			printf("%s{\"label\":", j ? "," : "");
			json_str(stdout, f->label);
			printf(",\"app\":");
			json_str(stdout, f->app);
			printf(",\"pid\":%d,\"alive\":%s,\"restarts\":%llu,"
			    "\"packets_in\":%llu,\"packets_out\":%llu}",
			    f->pid, g[i].stages[j].alive ? "true" : "false",
			    (unsigned long long)f->restarts,
			    (unsigned long long)f->packets_in,
			    (unsigned long long)f->packets_out);
		}
		printf("],\"links\":[");
		for (j = 0; j < g[i].nlinks; j++) {
			printf("%s", j ? "," : "");
			json_str(stdout, g[i].links[j].name);
		}
		printf("]}");
	}
	printf("]}\n");
}

/*
 * One line per stage; a graph without stage files (stale before its
 * stages started) still gets one, so that it shows.
 */
static void
print_text(struct graph_view *g, int n)
{
	int i, j;

	printf("%-20s %-8s %-16s %-12s %-8s %-7s %s\n", "GRAPH", "PID",
	    "STAGE", "APP", "PID", "STATE", "RINGS");
	for (i = 0; i < n; i++) {
		if (g[i].nstages == 0)
			printf("%-20s %-8ld %-16s %-12s %-8s %-7s %s\n",
			    g[i].name, g[i].pid, "-", "-", "-",
			    g[i].stale ? "stale" : "running", g[i].rings);
		for (j = 0; j < g[i].nstages; j++) {
			const struct stage_file *f = g[i].stages[j].f;
			printf("%-20s %-8ld %-16s %-12s %-8d %-7s %s\n",
			    g[i].name, g[i].pid, f->label, f->app, f->pid,
			    g[i].stale ? "stale" : g[i].stages[j].alive ?
			    "running" : "gone", g[i].rings);
		}
	}
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct graph_view *g;
	char errbuf[512];
	const char *run;
	int ch, json = 0, n;

	cli_begin(argc, argv);
	cli_output();
	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = 1;
			break;
		case 'h':
			printf(USAGE "List graphs (running or stale), their "
			    "stages and where their rings live.  See "
			    "snb-ps(1).\n");
			return 0;
		default:
			fprintf(stderr, USAGE);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, USAGE);
		return 2;
	}
	if ((run = snb_run_dir(errbuf, sizeof(errbuf))) == NULL)
		errx(1, "run directory: %s", errbuf);
	atexit(snb_run_dir_release);	/* if we made it: empty */
	if ((n = graphs_load(run, argv[optind], &g, errbuf, sizeof(errbuf)))
	    == -1)
		errx(1, "%s", errbuf);
	if (argv[optind] && n == 0)
		errx(1, "no graph '%s' (in %s)", argv[optind], run);
	if (json)
		print_json(g, n);
	else
		print_text(g, n);
	graphs_free(g, n);
	return 0;
}
