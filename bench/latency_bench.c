/*
 * latency_bench RATE COUNT [SKIP]: the baseline for bench/latency-run.  A
 * producer and a consumer process on one ring, using libring directly:
 * the producer paces COUNT 64-byte packets at RATE per second and stamps
 * each burst with CLOCK_MONOTONIC just before ring_commit(), as
 * snb-source --stamp does; the consumer subtracts, one clock read per
 * burst, into the histogram snb-sink --latency uses, and leaves out the
 * first SKIP packets (start-up).  Both idle as the runtime does (app.c):
 * IDLE_SPIN empty looks spinning, then IDLE_YIELD yielding, then asleep
 * on the ring's futex (ring_wait) or, for the producer ahead of its pace,
 * in nanosleep() until the next packet is due.  What the runtime adds
 * on top of this is the cost of the stages themselves.
 *
 * Prints "p50 p99 p99.9 max" in microseconds and the samples taken.
 */
#include <err.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lathist.h"
#include "ring.h"
#include "synth.h"

#define BURST		64	/* APP_BURST */
#define IDLE_SPIN	64	/* app.c's back-off */
#define IDLE_YIELD	(IDLE_SPIN + 16)
#define SLEEP_MS	100	/* app.c's safety net */

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax()	__builtin_ia32_pause()
#else
#define cpu_relax()	__asm__ __volatile__("" ::: "memory")
#endif

static struct lat_hist hist;

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void
attach(struct ring *r, const char *path, enum ring_side side)
{
	char errbuf[512];

	if (ring_attach(r, path, side, errbuf, sizeof(errbuf)) == -1 ||
	    ring_claim(r, errbuf, sizeof(errbuf)) == -1)
		errx(1, "%s", errbuf);
}

static void
back_off(unsigned *idle, struct ring *r, uint64_t wake_at)
{
	struct timespec ts;
	uint64_t now;

	if (++*idle < IDLE_SPIN)
		cpu_relax();
	else if (*idle < IDLE_YIELD)
		sched_yield();
	else if (r != NULL)
		ring_wait(r, SLEEP_MS);
	else if ((now = now_ns()) < wake_at) {
		ts.tv_sec = (time_t)((wake_at - now) / 1000000000ULL);
		ts.tv_nsec = (long)((wake_at - now) % 1000000000ULL);
		nanosleep(&ts, NULL);
	}
}

static void
consume(const char *path, uint64_t skip)
{
	struct ring r;
	uint64_t now;
	uint32_t n, i;
	unsigned idle = 0;

	attach(&r, path, RING_CONSUMER);
	for (;;) {
		if ((n = ring_avail(&r, BURST)) == 0) {
			if (ring_eof(&r))
				break;
			back_off(&idle, &r, 0);
			continue;
		}
		idle = 0;
		if (n > BURST)
			n = BURST;
		now = now_ns();
		for (i = 0; i < n; i++) {
			uint64_t ts = ring_peek(&r, i)->ts_ns;
			if (skip > 0)
				skip--;
			else if (ts != 0 && ts <= now)
				lat_add(&hist, now - ts);
		}
		ring_release(&r, n);
	}
	printf("%.1f %.1f %.1f %.1f %llu\n", lat_quantile(&hist, 0.5) / 1e3,
	    lat_quantile(&hist, 0.99) / 1e3, lat_quantile(&hist, 0.999) / 1e3,
	    hist.max / 1e3, (unsigned long long)hist.count);
	fflush(stdout);
	ring_detach(&r);
}

static void
produce(const char *path, uint64_t rate, uint64_t count)
{
	unsigned char tmpl[64];
	struct ring r;
	uint64_t sent = 0, t0, now, due;
	uint32_t n, i;
	unsigned idle = 0;

	synth_build(tmpl, sizeof(tmpl));
	attach(&r, path, RING_PRODUCER);
	t0 = now_ns();
	while (sent < count) {
		n = ring_room(&r, BURST);
		if (n > BURST)
			n = BURST;
		if (n > count - sent)
			n = (uint32_t)(count - sent);
		if (n == 0) {
			back_off(&idle, &r, 0);
			continue;
		}
		due = (uint64_t)((double)(now_ns() - t0) * rate / 1e9) + 1;
		if (due <= sent) {
			back_off(&idle, NULL, t0 + (uint64_t)((double)sent *
			    1e9 / rate));
			continue;
		}
		idle = 0;
		if (n > due - sent)
			n = (uint32_t)(due - sent);
		for (i = 0; i < n; i++) {
			struct packet *p = ring_slot(&r, i);
			p->len = sizeof(tmpl);
			p->flags = 0;
			p->wirelen = 0;
			memcpy(p->data, tmpl, sizeof(tmpl));
			synth_set_seq(p->data, sent + i);
		}
		now = now_ns();
		for (i = 0; i < n; i++)
			ring_slot(&r, i)->ts_ns = now;
		ring_commit(&r, n);
		sent += n;
	}
	ring_close(&r, RING_EOF);
	ring_detach(&r);
}

int
main(int argc, char **argv)
{
	const char *dir = getenv("SNB_RUN_DIR");
	char path[256];
	uint64_t rate, count, skip;
	int status;
	pid_t pid;

	if (argc < 3 || argc > 4)
		errx(2, "usage: latency_bench RATE COUNT [SKIP]");
	rate = strtoull(argv[1], NULL, 10);
	count = strtoull(argv[2], NULL, 10);
	skip = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
	if (rate == 0 || count == 0)
		errx(2, "RATE and COUNT must be positive");
	snprintf(path, sizeof(path), "%s/latency-bench-%ld",
	    dir && *dir ? dir : "/dev/shm", (long)getpid());
	/* The launcher's default geometry (snb-run without --slots). */
	if (ring_create(path, RING_DEFAULT_SLOTS, RING_DEFAULT_CAPACITY, 0) ==
	    -1)
		err(1, "%s", path);
	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		consume(path, skip);
		_exit(0);
	}
	produce(path, rate, count);
	if (waitpid(pid, &status, 0) == -1)
		err(1, "waitpid");
	unlink(path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
