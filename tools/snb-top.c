/*
 * snb-top: live rates of running graphs, per stage and per link, from the
 * counters in shared memory.  --once prints one interval; --json and
 * --prometheus print machine-readable forms.
 */
#include <err.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rundir.h"
#include "stats.h"

/* What we sample of a link at one instant. */
struct link_sample {
	uint64_t	packets, bytes, drops, fill;
};

struct stage_sample {
	uint64_t	in, out, busy_ns, c[STAGE_MAX_COUNTERS];
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
sample(struct graph_view *g, int n, struct link_sample **ls,
    struct stage_sample **ss)
{
	int i, j, k, nl = 0, ns = 0;

	for (i = 0; i < n; i++) {
		nl += g[i].nlinks;
		ns += g[i].nstages;
	}
	*ls = calloc((size_t)nl + 1, sizeof(**ls));
	*ss = calloc((size_t)ns + 1, sizeof(**ss));
	if (*ls == NULL || *ss == NULL)
		err(1, NULL);
	nl = ns = 0;
	for (i = 0; i < n; i++) {
		for (j = 0; j < g[i].nlinks; j++, nl++) {
			struct ring_shm *s = g[i].links[j].r.shm;
			(*ls)[nl].packets = atomic_load(&s->prod.head);
			(*ls)[nl].bytes = atomic_load(&s->prod.bytes);
			(*ls)[nl].drops = atomic_load(&s->prod.drops);
			(*ls)[nl].fill = ring_fill(&g[i].links[j].r);
		}
		for (j = 0; j < g[i].nstages; j++, ns++) {
			const volatile struct stage_file *f = g[i].stages[j].f;
			(*ss)[ns].in = f->packets_in;
			(*ss)[ns].out = f->packets_out;
			(*ss)[ns].busy_ns = f->busy_ns;
			for (k = 0; k < STAGE_MAX_COUNTERS; k++)
				(*ss)[ns].c[k] = f->counters[k].value;
		}
	}
}

/* Fraction of the interval a stage spent in breaths that moved packets. */
static double
busy(const struct stage_sample *a, const struct stage_sample *b, double dt)
{
	double f = (double)(b->busy_ns - a->busy_ns) / 1e9 / dt;

	return f > 1 ? 1 : f;
}

static void
print_text(struct graph_view *g, int n, struct link_sample *a,
    struct link_sample *b, struct stage_sample *sa, struct stage_sample *sb,
    double dt)
{
	int i, j, k, l = 0, s = 0;

	for (i = 0; i < n; i++) {
		printf("graph %s (snb-run pid %ld%s)\n", g[i].name, g[i].pid,
		    g[i].alive ? "" : ", stale");
		printf("  %-16s %-10s %8s %12s %12s %5s  %s\n", "STAGE", "APP",
		    "PID", "IN pps", "OUT pps", "BUSY", "COUNTERS");
		for (j = 0; j < g[i].nstages; j++, s++) {
			const struct stage_file *f = g[i].stages[j].f;
			printf("  %-16s %-10s %8d %12.0f %12.0f %4.0f%% ",
			    f->label, f->app, f->pid,
			    (sb[s].in - sa[s].in) / dt,
			    (sb[s].out - sa[s].out) / dt,
			    100 * busy(&sa[s], &sb[s], dt));
			for (k = 0; k < (int)f->ncounters &&
			    k < STAGE_MAX_COUNTERS; k++)
				printf(" %s=%" PRIu64, f->counters[k].name,
				    sb[s].c[k]);
			printf("\n");
		}
		printf("  %-40s %12s %10s %10s %9s\n", "LINK", "pps", "Mbit/s",
		    "drops/s", "fill");
		for (j = 0; j < g[i].nlinks; j++, l++)
			printf("  %-40s %12.0f %10.1f %10.0f %5" PRIu64 "/%"
			    PRIu64 "\n", g[i].links[j].name,
			    (b[l].packets - a[l].packets) / dt,
			    (b[l].bytes - a[l].bytes) * 8 / dt / 1e6,
			    (b[l].drops - a[l].drops) / dt, b[l].fill,
			    (uint64_t)g[i].links[j].r.mask + 1);
	}
}

static void
print_json(struct graph_view *g, int n, struct link_sample *a,
    struct link_sample *b, struct stage_sample *sa, struct stage_sample *sb,
    double dt)
{
	int i, j, k, l = 0, s = 0;

	printf("{\"interval\":%.3f,\"graphs\":[", dt);
	for (i = 0; i < n; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_str(stdout, g[i].name);
		printf(",\"pid\":%ld,\"stages\":[", g[i].pid);
		for (j = 0; j < g[i].nstages; j++, s++) {
			const struct stage_file *f = g[i].stages[j].f;
			printf("%s{\"label\":", j ? "," : "");
			json_str(stdout, f->label);
			printf(",\"app\":");
			json_str(stdout, f->app);
			printf(",\"pid\":%d,\"packets_in\":%" PRIu64
			    ",\"packets_out\":%" PRIu64 ",\"in_pps\":%.1f,"
			    "\"out_pps\":%.1f,\"restarts\":%" PRIu64
			    ",\"busy_ns\":%" PRIu64 ",\"busy\":%.4f"
			    ",\"counters\":{", f->pid, sb[s].in, sb[s].out,
			    (sb[s].in - sa[s].in) / dt,
			    (sb[s].out - sa[s].out) / dt,
			    (uint64_t)f->restarts, sb[s].busy_ns,
			    busy(&sa[s], &sb[s], dt));
			for (k = 0; k < (int)f->ncounters &&
			    k < STAGE_MAX_COUNTERS; k++) {
				printf("%s", k ? "," : "");
				json_str(stdout, f->counters[k].name);
				printf(":%" PRIu64, sb[s].c[k]);
			}
			printf("}}");
		}
		printf("],\"links\":[");
		for (j = 0; j < g[i].nlinks; j++, l++) {
			printf("%s{\"name\":", j ? "," : "");
			json_str(stdout, g[i].links[j].name);
			printf(",\"packets\":%" PRIu64 ",\"bytes\":%" PRIu64
			    ",\"drops\":%" PRIu64 ",\"fill\":%" PRIu64
			    ",\"size\":%" PRIu64 ",\"pps\":%.1f,\"bps\":%.1f,"
			    "\"drops_per_s\":%.1f}", b[l].packets, b[l].bytes,
			    b[l].drops, b[l].fill,
			    (uint64_t)g[i].links[j].r.mask + 1,
			    (b[l].packets - a[l].packets) / dt,
			    (b[l].bytes - a[l].bytes) * 8 / dt,
			    (b[l].drops - a[l].drops) / dt);
		}
		printf("]}");
	}
	printf("]}\n");
}

/* Prometheus text format: absolute counters, one scrape. */
static void
print_prometheus(struct graph_view *g, int n)
{
	int i, j, k;

	printf("# HELP snb_link_packets_total Packets published on a link.\n"
	    "# TYPE snb_link_packets_total counter\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < g[i].nlinks; j++)
			printf("snb_link_packets_total{graph=\"%s\",link=\"%s\"}"
			    " %" PRIu64 "\n", g[i].name, g[i].links[j].name,
			    (uint64_t)atomic_load(&g[i].links[j].r.shm->prod.head));
	printf("# HELP snb_link_bytes_total Bytes published on a link.\n"
	    "# TYPE snb_link_bytes_total counter\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < g[i].nlinks; j++)
			printf("snb_link_bytes_total{graph=\"%s\",link=\"%s\"}"
			    " %" PRIu64 "\n", g[i].name, g[i].links[j].name,
			    (uint64_t)atomic_load(&g[i].links[j].r.shm->prod.bytes));
	printf("# HELP snb_link_drops_total Packets a leaky link dropped.\n"
	    "# TYPE snb_link_drops_total counter\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < g[i].nlinks; j++)
			printf("snb_link_drops_total{graph=\"%s\",link=\"%s\"}"
			    " %" PRIu64 "\n", g[i].name, g[i].links[j].name,
			    (uint64_t)atomic_load(&g[i].links[j].r.shm->prod.drops));
	printf("# HELP snb_link_fill Packets waiting in a link.\n"
	    "# TYPE snb_link_fill gauge\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < g[i].nlinks; j++)
			printf("snb_link_fill{graph=\"%s\",link=\"%s\"} %" PRIu64
			    "\n", g[i].name, g[i].links[j].name,
			    ring_fill(&g[i].links[j].r));
	printf("# HELP snb_stage_busy_seconds_total Time a stage spent in "
	    "breaths that moved packets.\n"
	    "# TYPE snb_stage_busy_seconds_total counter\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < g[i].nstages; j++) {
			const struct stage_file *f = g[i].stages[j].f;
			printf("snb_stage_busy_seconds_total{graph=\"%s\","
			    "stage=\"%s\",app=\"%s\"} %.9f\n", g[i].name,
			    f->label, f->app, f->busy_ns / 1e9);
		}
	printf("# HELP snb_stage_counter A stage's own counters.\n"
	    "# TYPE snb_stage_counter counter\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < g[i].nstages; j++) {
			const struct stage_file *f = g[i].stages[j].f;
			for (k = 0; k < (int)f->ncounters &&
			    k < STAGE_MAX_COUNTERS; k++)
				printf("snb_stage_counter{graph=\"%s\",stage="
				    "\"%s\",app=\"%s\",counter=\"%.48s\"} %"
				    PRIu64 "\n", g[i].name, f->label, f->app,
				    f->counters[k].name, f->counters[k].value);
		}
	printf("# HELP snb_stage_restarts_total Restarts by the launcher.\n"
	    "# TYPE snb_stage_restarts_total counter\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < g[i].nstages; j++)
			printf("snb_stage_restarts_total{graph=\"%s\",stage="
			    "\"%s\"} %" PRIu64 "\n", g[i].name,
			    g[i].stages[j].f->label,
			    (uint64_t)g[i].stages[j].f->restarts);
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: snb-top [--once] [--json | --prometheus] "
	    "[-i seconds] [GRAPH]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "once", no_argument, NULL, '1' },
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct link_sample *la, *lb;
	struct stage_sample *sa, *sb;
	struct graph_view *g;
	char errbuf[512], *end;
	const char *run, *only;
	double interval = 1, t0;
	int ch, once = 0, json = 0, prom = 0, n;

	while ((ch = getopt_long(argc, argv, "1jpi:h", opts, NULL)) != -1) {
		switch (ch) {
		case '1':
			once = 1;
			break;
		case 'j':
			json = once = 1;
			break;
		case 'p':
			prom = once = 1;
			break;
		case 'i':
			interval = strtod(optarg, &end);
			if (*end || interval < 0.01 || interval > 3600)
				errx(2, "bad interval '%s'", optarg);
			break;
		case 'h':
			printf("usage: snb-top [--once] [--json | --prometheus] "
			    "[-i seconds] [GRAPH]\nLive rates of running "
			    "graphs.  See snb-top(1).\n");
			return 0;
		default:
			usage();
		}
	}
	if (argc - optind > 1 || (json && prom))
		usage();
	only = argv[optind];
	if ((run = snb_run_dir(errbuf, sizeof(errbuf))) == NULL)
		errx(1, "run directory: %s", errbuf);
	for (;;) {
		if ((n = graphs_load(run, only, &g, errbuf, sizeof(errbuf))) ==
		    -1)
			errx(1, "%s", errbuf);
		if (only && n == 0)
			errx(1, "no graph '%s' (in %s)", only, run);
		if (prom) {
			print_prometheus(g, n);
			graphs_free(g, n);
			return 0;
		}
		sample(g, n, &la, &sa);
		t0 = now_s();
		usleep((useconds_t)(interval * 1e6));
		sample(g, n, &lb, &sb);
		if (json)
			print_json(g, n, la, lb, sa, sb, now_s() - t0);
		else {
			if (!once)
				printf("\033[H\033[2J");
			print_text(g, n, la, lb, sa, sb, now_s() - t0);
			fflush(stdout);
		}
		free(la);
		free(lb);
		free(sa);
		free(sb);
		graphs_free(g, n);
		if (once)
			return 0;
	}
}
