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
 * start at 0 and stay gauges.
 *
 * The runtime's --counters-out (app_desc.counters_out) takes its words
 * out of the app's and writes the counters when the stage stops.
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

/* --counters-out is taken out of an app's words, in both forms. */
static int
counters_opt(void)
{
	char *a1[] = { "snb-x", "--counters-out", "/nonexistent/a", "mux",
	    "--pcp", "1", NULL };
	char *a2[] = { "snb-x", "tag", "--counters-out=/tmp/test_stage.ctr",
	    "--", "--counters-out", "x", NULL };
	struct stage_file *f;
	char line[64] = "";
	int n1 = 6, n2 = 6, ok;
	FILE *fp;

	ok = (f = calloc(1, sizeof(*f))) != NULL;
	app_stage = f;
	*app_counter("tagged") = 3;
	stage_counters_opt(&n1, a1);
	ok = ok && n1 == 4 && strcmp(a1[1], "mux") == 0 &&
	    strcmp(a1[3], "1") == 0 && a1[4] == NULL;
	stage_counters_opt(&n2, a2);
	ok = ok && n2 == 5 && strcmp(a2[1], "tag") == 0 &&
	    strcmp(a2[2], "--") == 0 && strcmp(a2[3], "--counters-out") == 0;
	/* The last one given is the file. */
	unlink("/tmp/test_stage.ctr");
	stage_counters_out();
	ok = ok && (fp = fopen("/tmp/test_stage.ctr", "r")) != NULL &&
	    fgets(line, sizeof(line), fp) != NULL && fclose(fp) == 0 &&
	    strcmp(line, "tagged 3\n") == 0;
	unlink("/tmp/test_stage.ctr");
	printf("%s 3 - --counters-out FILE and =FILE taken out of the words "
	    "(not after --), the counters written to FILE (%.*s)\n",
	    ok ? "ok" : "not ok", (int)strcspn(line, "\n"), line);
	free(f);
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
	printf("1..3\n%s 1 - counters made under a reader: %lu torn of %lu "
	    "looks\n", torn ? "not ok" : "ok", (unsigned long)torn,
	    (unsigned long)seen);
	free(all);
	return (torn != 0) | take_over() | counters_opt();
}
