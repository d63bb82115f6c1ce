/*
 * snb-source: synthetic Ethernet/IPv4/UDP packets (snb-source(1)).
 *
 * Restart and swap.  How many packets this stream has sent is not kept
 * by us but read from the output ring: its head (plus the drops of a
 * leaky link) moves only when packets are published, so it is exact
 * however the previous process died.  The hand-over state holds the head
 * at which this source's stream began (a source swapped in for another
 * app starts a stream of its own) and the size generator, so a successor
 * goes on with the next sequence number, the remaining count and the
 * same sizes.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "synth.h"

#define SOURCE_MAGIC	0x31656372756f73ULL	/* "source1" */

/* The hand-over state (app_state). */
struct source_state {
	uint64_t	magic;		/* committed by a source's start() */
	uint64_t	base;		/* head + drops when the stream began */
	uint64_t	pos;		/* packets sent when rng was saved */
	uint64_t	rng;		/* the size generator after pos packets */
	uint64_t	seed;		/* the --seed and --size it draws for */
	uint32_t	min_size;
	uint32_t	max_size;
};

static unsigned char *tmpl;		/* a frame of max_size bytes */
static uint32_t min_size = 64, max_size = 64;
static uint64_t count = UINT64_MAX, sent, rate, seed = 1, rng;
static uint64_t t0, sent0;		/* pacing: sent0 packets at t0 */
static int seq, hold, stamp;
static struct port *out;
static struct ring *r;			/* its ring */
static struct source_state *st;

static uint64_t
parse_u64(const char *opt, const char *s)
{
	static const double mul[] = { 1e3, 1e3, 1e6, 1e9 };	/* units */
	const char *units = "kKMG", *u;
	char *end;
	double v = strtod(s, &end);

	/* !(v >= 0): NaN too, which no integer holds */
	if (end == s || !(v >= 0))
		errx(2, "bad %s '%s'", opt, s);
	if (*end != '\0' && (u = strchr(units, *end)) != NULL)
		v *= mul[u - units], end++;
	if (*end != '\0' || v > 1.8e19)
		errx(2, "bad %s '%s'", opt, s);
	return (uint64_t)v;
}

/* --count, --seed, --rate: a number with an optional k, M or G. */
static void
u64_opt(const char *opt, char *arg, void *var)
{
	*(uint64_t *)var = parse_u64(opt, arg);
	if (var == &rate && rate == 0)
		errx(2, "bad --rate '%s': 1 packet a second at least", arg);
}

static void
size_opt(const char *opt, char *arg, void *var)
{
	char *dash;

	if ((dash = strchr(arg, '-')) != NULL) {
		*dash = '\0';
		min_size = (uint32_t)parse_u64(opt, arg);
		max_size = (uint32_t)parse_u64(opt, dash + 1);
		*dash = '-';
	} else
		min_size = max_size = (uint32_t)parse_u64(opt, arg);
	if (min_size < SYNTH_MIN || max_size > RING_MAX_CAPACITY ||
	    min_size > max_size)
		errx(2, "bad --size '%s' (%d..%d bytes)", arg, SYNTH_MIN,
		    RING_MAX_CAPACITY);
}

static void
source_init(int argc, char **argv)
{
	static const struct app_opt opts[] = {
		APP_ARG("size", size_opt, NULL, NULL),
		APP_ARG("count", u64_opt, &count, NULL),
		APP_ARG("rate", u64_opt, &rate, NULL),
		APP_FLAG("seq", &seq),
		APP_ARG("seed", u64_opt, &seed, NULL),
		APP_FLAG("hold", &hold),
		APP_FLAG("stamp", &stamp),
		APP_OPT_END
	};
	app_options(argc, argv, opts, 0);
	/*
	 * Refuse here, so that a swap to a bad source leaves the old one
	 * (unbound, "out" is refused by the runtime after init()).
	 */
	if ((out = app_port("out")) != NULL &&
	    max_size > (r = &out->rings[0])->capacity)
		errx(2, "--size %u does not fit the ring's %u-byte slots",
		    max_size, r->capacity);
	if ((tmpl = malloc(max_size)) == NULL)
		err(1, NULL);
	synth_build(tmpl, max_size);
}

/* xorshift64*: cheap, deterministic sizes for a given --seed. */
static uint32_t
next_size(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return min_size + (uint32_t)((rng * 2685821657736338717ULL) >> 33) %
	    (max_size - min_size + 1);
}

static void
save_sizes(void)
{
	st->pos = sent;
	st->rng = rng;
	app_state_commit();
}

/*
 * The stage owns the ring now: go on with the stream a predecessor of
 * ours left, or begin one.  The state is committed before the first
 * packet, so a successor never finds a stream without its base.
 */
static void
source_start(void)
{
	/* Every packet the output ring ever took from this stage. */
	uint64_t head = r->head + atomic_load_explicit(&r->shm->prod.drops,
	    memory_order_relaxed);
	uint64_t k;

	st = app_state(sizeof(*st));
	if (!app_resumed() || st->magic != SOURCE_MAGIC || head < st->base) {
		/* Ours, or a predecessor that died before sending any. */
		memset(st, 0, sizeof(*st));
		st->magic = SOURCE_MAGIC;
		st->base = head;
	}
	sent = head - st->base;
	/*
	 * The same sizes as before: the saved generator, stepped over the
	 * packets (at most a burst) published after it was saved.  Other
	 * sizes or another seed start their sequence from --seed.
	 */
	if (st->seed == seed && st->min_size == min_size &&
	    st->max_size == max_size && st->pos <= sent &&
	    sent - st->pos <= APP_BURST) {
		rng = st->rng;
		for (k = st->pos; k < sent; k++)
			next_size();
	} else
		rng = seed;
	st->seed = seed;
	st->min_size = min_size;
	st->max_size = max_size;
	save_sizes();
	/* The pace goes on from here: no burst for the time we were away. */
	t0 = app_now_ns();
	sent0 = sent;
}

static int
source_breathe(void)
{
	uint64_t now;
	uint32_t n, i, len;

	if (sent >= count) {
		/* --hold: keep the graph up (for inspection) until stopped. */
		if (hold)
			app_wake_at(app_now_ns() + 1000000000ULL);
		else
			app_done();
		return 0;
	}
	n = app_room(out, APP_BURST);
	if (n > count - sent)
		n = (uint32_t)(count - sent);
	if (rate) {
		uint64_t due;

		now = app_now_ns();
		due = sent0 + (uint64_t)((double)(now - t0) * rate / 1e9) + 1;
		if (due <= sent) {
			app_wake_at(t0 + (uint64_t)((double)(sent - sent0) *
			    1e9 / rate));
			return 0;
		}
		if (n > due - sent)
			n = (uint32_t)(due - sent);
	}
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		struct packet *p = ring_slot(r, i);
		len = min_size == max_size ? max_size : next_size();
		p->len = (uint16_t)len;
		p->flags = 0;
		p->wirelen = 0;
		p->ts_ns = 0;
		memcpy(p->data, tmpl, len);
		if (min_size != max_size)
			synth_set_len(p->data, len);
		if (seq)
			synth_set_seq(p->data, sent + i);
	}
	if (stamp) {
		/* As late as possible: latency runs from publication. */
		now = app_now_ns();
		for (i = 0; i < n; i++)
			ring_slot(r, i)->ts_ns = now;
	}
	ring_commit(r, n);
	sent += n;
	/* The ring counts the packets; only the sizes need saving. */
	if (min_size != max_size)
		save_sizes();
	return (int)n;
}

static const struct app_desc desc = {
	.name = "source",
	.usage = "[--count N] [--hold] [--rate PPS] [--seed N] [--seq] "
	    "[--size N | MIN-MAX] [--stamp]",
	.summary = "Generate synthetic Ethernet/IPv4/UDP packets.",
	.ports = (const struct port_desc[]){ { "out", PORT_OUT | PORT_REQUIRED },
	    { NULL, 0 } },
	.init = source_init,
	.start = source_start,
	.breathe = source_breathe,
};

APP_MAIN(desc)
