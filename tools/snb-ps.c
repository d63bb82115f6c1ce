/*
 * snb-ps: list running graphs and their stages.
 */
#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static void
print_json(struct graph_view *g, int n)
{
	int i, j;

	printf("{\"graphs\":[");
	for (i = 0; i < n; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_str(stdout, g[i].name);
		printf(",\"pid\":%ld,\"alive\":%s,\"stages\":[", g[i].pid,
		    g[i].alive ? "true" : "false");
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
	int ch, json = 0, n, i, j;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = 1;
			break;
		case 'h':
			printf("usage: snb-ps [--json] [GRAPH]\nList running "
			    "graphs and their stages.  See snb-ps(1).\n");
			return 0;
		default:
			fprintf(stderr, "usage: snb-ps [--json] [GRAPH]\n");
			return 2;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "usage: snb-ps [--json] [GRAPH]\n");
		return 2;
	}
	if ((run = snb_run_dir(errbuf, sizeof(errbuf))) == NULL)
		errx(1, "run directory: %s", errbuf);
	if ((n = graphs_load(run, argv[optind], &g, errbuf, sizeof(errbuf)))
	    == -1)
		errx(1, "%s", errbuf);
	if (argv[optind] && n == 0)
		errx(1, "no graph '%s' (in %s)", argv[optind], run);
	if (json)
		print_json(g, n);
	else {
		printf("%-20s %-8s %-16s %-12s %-8s %s\n", "GRAPH", "PID",
		    "STAGE", "APP", "PID", "STATE");
		for (i = 0; i < n; i++)
			for (j = 0; j < g[i].nstages; j++) {
				const struct stage_file *f = g[i].stages[j].f;
				printf("%-20s %-8ld %-16s %-12s %-8d %s\n",
				    g[i].name, g[i].pid, f->label, f->app,
				    f->pid, g[i].stages[j].alive ? "running" :
				    "gone");
			}
	}
	graphs_free(g, n);
	return 0;
}
