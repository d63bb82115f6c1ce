/*
 * test_idle: the runtime's idling (libring/idle.c) on real rings, in one
 * process: the test plays the stage's empty breaths (idle_wait() after
 * each, as app_main does) and its peers (other handles on the same
 * rings, a thread for a peer that acts while the stage sleeps).  The
 * idle cap is made 5 s: a sleep that nothing ends shows as 5 s.
 *
 *  1. Packets that come in after the breath looked (the race of issue
 *     11), while an output is full: the stage breathes again rather than
 *     sleep on that output, which may not drain for long.  If the next
 *     breath leaves them too, the stage waits for room: it sleeps on the
 *     full output, and the consumer's release ends the sleep.
 *  2. Such races are counted in a row: a breath that moved packets ends
 *     the row, so the 8th race in a day is no reason to nap.
 *  3. More input rings than one futex wait takes (20): a packet on the
 *     last one ends the sleep.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "idle.h"
#include "ring.h"
#include "stage.h"
#include "tap.h"
#include "util.h"

#define NSLOTS	8
#define NIN	20

static char dir[64];
static struct idle idle;

static void
on_wake(int sig)
{
	(void)sig;
}

/* Make ring NAME and attach to it as side (a stage's side is claimed). */
static void
ring_at(struct ring *r, const char *name, enum ring_side side)
{
	char path[128], errbuf[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((access(path, F_OK) == -1 && ring_create(path, NSLOTS, 256, 0)) ||
	    ring_attach(r, path, side, errbuf, sizeof(errbuf)) ||
	    ((side == RING_PRODUCER || side == RING_CONSUMER) &&
	    ring_claim(r, errbuf, sizeof(errbuf)))) {
		printf("Bail out! %s: %s\n", path, errbuf);
		exit(1);
	}
}

static void
put(struct ring *r, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct packet *p = ring_slot(r, i);
		p->len = 64;
		memset(p->data, 0xab, 64);
	}
	ring_commit(r, n);
}

/* Empty breaths up to the one before the first look at the rings. */
static void
idle_until_look(void)
{
	unsigned n = 0;

	while (idle_wait(&idle) == 0 || n++ < 15)
		;
}

/* The breath after which the stage looks: how long it took, slept? */
static double
look(uint64_t *slept)
{
	uint64_t before = app_stage->idle_sleeps;
	double t0 = now();

	idle_wait(&idle);
	*slept = app_stage->idle_sleeps - before;
	return (now() - t0) * 1e3;
}

struct later {
	struct ring	*r;
	int		 release;	/* 1: release a slot, 0: commit one */
};

/*
 * The peer acts once the stage sleeps on its ring (its waiting word is
 * set), or after 3 s if it never does (a sleep on other rings only).
 */
static void *
peer_later(void *va)
{
	struct later *l = va;
	struct timespec ts = { 0, 1000000L };
	_Atomic uint32_t *w = l->release ? &l->r->shm->prod.waiting :
	    &l->r->shm->cons.waiting;
	int i;

	for (i = 0; i < 3000 && atomic_load(w) == 0; i++)
		nanosleep(&ts, NULL);
	if (l->release) {
		ring_avail(l->r, 1);
		ring_release(l->r, 1);
	} else
		put(l->r, 1);
	return NULL;
}

static void
test_race_full_output(void)
{
	static struct ring in, out, *rings[2] = { &in, &out };
	struct ring in_peer, out_peer;
	struct later l;
	pthread_t th;
	uint64_t slept;
	double ms;

	ring_at(&in, "in", RING_CONSUMER);
	ring_at(&in_peer, "in", RING_PRODUCER);
	ring_at(&out, "out", RING_PRODUCER);
	ring_at(&out_peer, "out", RING_CONSUMER);
	app_rings = rings;
	app_nrings = 2;
	put(&out, NSLOTS);	/* its consumer reads nothing */

	idle_until_look();
	put(&in_peer, 1);	/* after the breath looked at the input */
	ms = look(&slept);
	ok(slept == 0 && ms < 1000, "a packet that came after the breath, "
	    "an output full: no sleep, the stage breathes again (%.1f ms)",
	    ms);

	/* The next breath leaves it too: the app waits for room. */
	l.r = &out_peer;
	l.release = 1;
	pthread_create(&th, NULL, peer_later, &l);
	ms = look(&slept);
	pthread_join(th, NULL);
	ok(slept == 1 && ms < 2500, "held again: it sleeps on the full "
	    "output, and the release of a slot ends the sleep (%.1f ms)", ms);

	ring_avail(&in, 1);
	ring_release(&in, 1);
	idle_busy(&idle);
	ring_release(&out_peer, ring_avail(&out_peer, NSLOTS));
	ring_detach(&in_peer);
	ring_detach(&out_peer);
}

/* After test_race_full_output: its rings, the output has room now. */
static void
test_races_in_a_row(void)
{
	struct ring in_peer;
	uint64_t slept, total = 0;
	int k;

	ring_at(&in_peer, "in", RING_PRODUCER);
	for (k = 0; k < 12; k++) {
		idle_until_look();
		put(&in_peer, 1);	/* the race */
		look(&slept);
		total += slept;
		/* The breath after takes the packet. */
		ring_avail(app_rings[0], 1);
		ring_release(app_rings[0], 1);
		idle_busy(&idle);
	}
	ok(total == 0, "12 races, each followed by a breath that moved the "
	    "packet: never a nap (%llu)", (unsigned long long)total);
	ring_detach(&in_peer);
}

static void
test_many_inputs(void)
{
	static struct ring in[NIN], *rings[NIN];
	struct ring peer;
	struct later l;
	pthread_t th;
	uint64_t slept;
	char name[16];
	double ms;
	int i;

	for (i = 0; i < NIN; i++) {
		snprintf(name, sizeof(name), "many%d", i);
		ring_at(&in[i], name, RING_CONSUMER);
		rings[i] = &in[i];
	}
	ring_at(&peer, name, RING_PRODUCER);	/* the last */
	app_rings = rings;
	app_nrings = NIN;

	idle_until_look();
	l.r = &peer;
	l.release = 0;
	pthread_create(&th, NULL, peer_later, &l);
	ms = look(&slept);
	pthread_join(th, NULL);
	ok(slept == 1 && ms < 2500, "%d input rings: a packet on the last "
	    "ends the sleep (%.1f ms)", NIN, ms);
	ring_detach(&peer);
}

static void
cleanup(void)
{
	char cmd[128];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "test_idle: %s left behind\n", dir);
	}
}

int
main(void)
{
	struct sigaction sa;
	sigset_t block, wake_mask;

	snprintf(dir, sizeof(dir), "/dev/shm/snb-test-idle-XXXXXX");
	if (mkdtemp(dir) == NULL) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	atexit(cleanup);
	/* As app_main: the wake signal blocked but while asleep. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_wake;
	sigaction(RING_WAKE_SIGNAL, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, RING_WAKE_SIGNAL);
	sigprocmask(SIG_BLOCK, &block, &wake_mask);
	sigdelset(&wake_mask, RING_WAKE_SIGNAL);
	setenv("SNB_IDLE_CAP_MS", "5000", 1);
	alarm(60);
	stage_open(NULL, "test", "test", 0);
	idle_init(&idle, &wake_mask);

	test_race_full_output();
	test_races_in_a_row();
	test_many_inputs();
	return tap_done();
}
