/*
 * test_stage: a counter an app makes while the stage runs (app_counter,
 * app_gauge: lwaftr's memuse-* once non-zero) appears whole to a reader
 * of the stage file (snb-top, snb-ctl clear, the Prometheus exporter),
 * which reads without a lock: once it counts the counter in ncounters,
 * the counter's name and its gauge flag are there.  A reader thread
 * checks that while this one makes counters, round after round.
 *
 * A restart or swap of the same app (stage_take_over) goes on from the
 * predecessor's counts, but not from its gauges: those were levels of
 * the process that left (a bridge's learnt table), the successor's own
 * start at 0 and stay gauges.  A restart (stage_open keep) the same.
 *
 * The runtime's --counters-out (app_desc.counters_out) takes its words
 * out of the app's and writes the counters when the stage stops.
 *
 * The busy breaths' histogram (stage_hist_bucket, stage_busy_median):
 * any cost comes back within a bucket's width, weighted by the units of
 * work, and a successor goes on from its predecessor's.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

#include "stage.h"

#define ROUNDS	4000

static _Atomic int done;
static _Atomic unsigned long torn;
static struct stage_file *_Atomic cur;	/* the file being filled */

static void *
reader(void *arg)
{
	const struct stage_file *f;
	uint32_t n;
	unsigned long seen = 0;

	while (!atomic_load(&done)) {
		f = atomic_load(&cur);
		n = __atomic_load_n(&f->ncounters, __ATOMIC_ACQUIRE);
		if (n == 0 || n > STAGE_MAX_COUNTERS)
			continue;
		/* The last one made: odd ones are gauges ("g..."). */
		const struct stage_counter *c = &f->counters[n - 1];
		if (c->name[0] == '\0' || (c->name[0] == 'g' &&
		    !(__atomic_load_n(&c->flags, __ATOMIC_RELAXED) &
		    STAGE_COUNTER_GAUGE)))
			atomic_fetch_add(&torn, 1);
		seen++;
	}
	return (void *)seen;
}

static int
take_over(void)
{
	struct stage_file *prev, *f;
	uint64_t *c, *g;
	int ok;

	if ((prev = calloc(1, sizeof(*prev))) == NULL ||
	    (f = calloc(1, sizeof(*f))) == NULL)
		return 1;
	prev->magic = f->magic = STAGE_MAGIC;
	strlcpy(prev->app, "bridge", sizeof(prev->app));
	strlcpy(f->app, "bridge", sizeof(f->app));
	app_stage = prev;
	*app_counter("learned") = 7;
	*app_gauge("fdb-entries") = 5;
	app_stage = f;
	stage_take_over(prev);
	c = app_counter("learned");
	g = app_gauge("fdb-entries");
	ok = *c == 7 && *g == 0 && f->ncounters == 2 &&
	    (f->counters[1].flags & STAGE_COUNTER_GAUGE) &&
	    !(f->counters[0].flags & STAGE_COUNTER_GAUGE);
	printf("%s 2 - a successor goes on counting (learned %llu) but "
	    "starts its gauges afresh (fdb-entries %llu)\n", ok ? "ok" :
	    "not ok", (unsigned long long)*c, (unsigned long long)*g);
	free(prev);
	free(f);
	return !ok;
}

/*
 * A restart (stage_open keep) goes on from the file it left as a swap
 * does from its predecessor's: counts kept, gauges (lwaftr's memuse-*
 * of reassembly buffers a killed process held) back to 0.
 */
static int
restart(void)
{
	char path[] = "/tmp/test_stage.XXXXXX";
	uint64_t *c, *g;
	int fd, ok;

	if ((fd = mkstemp(path)) == -1)
		return 1;
	close(fd);
	stage_open(path, "lwaftr", "lw", 0);
	*app_counter("in-ipv4-packets") = 9;
	*app_gauge("memuse-ipv4-frag-reassembly-buffer") = 4096;
	stage_open(path, "lwaftr", "lw", 1);
	unlink(path);
	c = app_counter_find("in-ipv4-packets");
	g = app_counter_find("memuse-ipv4-frag-reassembly-buffer");
	ok = c != NULL && *c == 9 && g != NULL && *g == 0 &&
	    (app_stage->counters[1].flags & STAGE_COUNTER_GAUGE) &&
	    app_resumed();
	printf("%s 6 - a restart goes on counting (in-ipv4-packets %llu) "
	    "but starts its gauges afresh (memuse %llu), as a swap\n",
	    ok ? "ok" : "not ok", c ? (unsigned long long)*c : 0ULL,
	    g ? (unsigned long long)*g : 0ULL);
	return !ok;
}

/*
 * app_options() takes the runtime's --counters-out (app_desc.counters_out)
 * with the app's options, in both forms, not after "--"; the last one
 * given is the file the counters are written to.
 */
static int
counters_opt(void)
{
	char *a[] = { "snb-x", "--counters-out", "/nonexistent/a", "tag",
	    "--pcp", "1", "--counters-out=/tmp/test_stage.ctr", "--",
	    "--counters-out", "x", NULL };
	uint32_t pcp = 0;
	const struct app_opt opts[] = { APP_NUM("pcp", &pcp, 0, 7),
	    APP_OPT_END };
	struct stage_file *f;
	char line[64] = "";
	int i, ok;
	FILE *fp;

	ok = (f = calloc(1, sizeof(*f))) != NULL;
	app_stage = f;
	*app_counter("tagged") = 3;
	stage_counters_opt = 1;
	optind = 0;
	i = app_options(10, a, opts, APP_OPT_PERMUTE | APP_OPT_WORDS);
	ok = ok && pcp == 1 && i == 7 && strcmp(a[7], "tag") == 0 &&
	    strcmp(a[8], "--counters-out") == 0 &&
	    strcmp(stage_counters_path, "/tmp/test_stage.ctr") == 0;
	unlink("/tmp/test_stage.ctr");
	stage_counters_out();
	ok = ok && (fp = fopen("/tmp/test_stage.ctr", "r")) != NULL &&
	    fgets(line, sizeof(line), fp) != NULL && fclose(fp) == 0 &&
	    strcmp(line, "tagged 3\n") == 0;
	unlink("/tmp/test_stage.ctr");
	printf("%s 3 - --counters-out FILE and =FILE taken with the app's "
	    "options (not after --), the counters written to FILE (%.*s)\n",
	    ok ? "ok" : "not ok", (int)strcspn(line, "\n"), line);
	free(f);
	return !ok;
}

static double
dabs(double x)
{
	return x < 0 ? -x : x;
}

/* Breaths of ns for units each, n times, into f's histogram. */
static void
breaths(struct stage_file *f, uint64_t ns, uint64_t units, int n)
{
	while (n-- > 0) {
		f->busy_units += units;
		f->busy_hist[stage_hist_bucket(ns, units)] += units;
	}
}

static int
busy_hist(void)
{
	static const double cost[] = { 0.0625, 0.3, 1, 2.5, 7.9, 8.2, 20.6,
	    41.3, 96, 1000, 12345, 65000 };
	struct stage_file *f, *g;
	double m, worst = 0;
	size_t i;
	int ok;

	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    (g = calloc(1, sizeof(*g))) == NULL)
		return 1;
	ok = stage_busy_median(f) == 0;
	/* One cost at a time: back within half a bucket (1/32 ns, 0.8%). */
	for (i = 0; i < sizeof(cost) / sizeof(cost[0]); i++) {
		memset(f, 0, sizeof(*f));
		breaths(f, (uint64_t)(cost[i] * 64 * 1000 + 0.5), 64000, 3);
		m = stage_busy_median(f);
		if (dabs(m - cost[i]) > cost[i] * 0.008 + 1.0 / 32)
			ok = 0;
		if (cost[i] >= 8 && dabs(m - cost[i]) / cost[i] > worst)
			worst = dabs(m - cost[i]) / cost[i];
	}
	/* Beyond the last octave: the last bucket, not past the array. */
	ok = ok && stage_hist_bucket(UINT64_C(1) << 40, 1) == STAGE_HIST - 1 &&
	    stage_hist_bucket(0, 5) == 0;
	/* Weighted by units: 100 units at 41 ns outweigh 10 breaths of one
	 * unit at 4100 ns (preempted), though those are more breaths. */
	memset(f, 0, sizeof(*f));
	breaths(f, 4100, 1, 10);
	breaths(f, 4100, 100, 1);
	m = stage_busy_median(f);
	ok = ok && dabs(m - 41) < 0.5;
	/* A successor goes on from its predecessor's breaths. */
	f->magic = g->magic = STAGE_MAGIC;
	strlcpy(f->app, "sink", sizeof(f->app));
	strlcpy(g->app, "sink", sizeof(g->app));
	app_stage = g;
	stage_take_over(f);
	breaths(g, 4100, 1, 200);
	ok = ok && g->busy_units == 310 && stage_busy_median(g) > 4000;
	printf("%s 4 - busy breaths' median: any cost back within its bucket "
	    "(worst %.2f%% from 8 ns), weighted by units, carried over\n",
	    ok ? "ok" :
	    "not ok", worst * 100);
	free(f);
	free(g);
	return !ok;
}

/*
 * As getopt_long: an abbreviation unique among the app's long options is
 * --counters-out; an option of the app's that is exactly the word is the
 * app's.
 */
static int
counters_abbrev(void)
{
	char *a[] = { "snb-x", "--counters", "A", "--count", "5", "--counte",
	    "C", NULL };
	uint32_t count = 0;
	const struct app_opt opts[] = { APP_NUM("count", &count, 0, 9),
	    APP_OPT_END };
	int ok;

	stage_counters_opt = 1;
	optind = 0;
	ok = app_options(7, a, opts, 0) == 7 && count == 5 &&
	    strcmp(stage_counters_path, "C") == 0;
	printf("%s 5 - abbreviations of --counters-out are taken as "
	    "getopt_long takes them; an option of the app's exactly so is "
	    "left\n", ok ? "ok" : "not ok");
	return !ok;
}

int
main(void)
{
	struct stage_file *f, *all;
	pthread_t t;
	char name[32];
	int r, i;
	void *seen;

	/* A fresh file each round, as a new stage's (none reused: the
	 * reader may still look at an old one). */
	if ((all = calloc(ROUNDS, sizeof(*all))) == NULL)
		return 1;
	atomic_store(&cur, all);
	if (pthread_create(&t, NULL, reader, NULL) != 0)
		return 1;
	for (r = 0; r < ROUNDS; r++) {
		f = &all[r];
		app_stage = f;
		atomic_store(&cur, f);
		for (i = 0; i < 64; i++) {
			snprintf(name, sizeof(name), "%c%d-%d", i & 1 ? 'g' :
			    'c', r, i);
			if (i & 1)
				app_gauge(name);
			else
				app_counter(name);
		}
	}
	atomic_store(&done, 1);
	pthread_join(t, &seen);
	printf("1..6\n%s 1 - counters made under a reader: %lu torn of %lu "
	    "looks\n", torn ? "not ok" : "ok", (unsigned long)torn,
	    (unsigned long)seen);
	free(all);
	return (torn != 0) | take_over() | counters_opt() | busy_hist() |
	    counters_abbrev() | restart();
}
