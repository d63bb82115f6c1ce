/*
 * snb-sink: count packets and throw them away (snb-sink(1)).
 *
 * Restart and swap.  The totals live in the hand-over state, together
 * with how far each input ring was counted.  A breath counts its bursts,
 * commits the state, and only then releases the slots: a process killed
 * after the commit leaves slots that were counted but not released, and
 * its successor releases them unread; killed before, it leaves the
 * previous state and the slots, and its successor counts them.  Either
 * way every packet is counted once.  (The stage's counters, carried over
 * by the runtime, are plain stores and could count a burst twice: they
 * only show the state.)
 */
#include <err.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "forward.h"
#include "lathist.h"
#include "synth.h"

#define SINK_MAGIC	0x316b6e6973ULL	/* "sink1" */
#define SINK_MAX_IN	24	/* input links whose position is handed over */

/* The hand-over state (app_state): 64 + 24 * 16 = 448 bytes. */
struct sink_state {
	uint64_t	magic;		/* committed by a sink's start() */
	uint64_t	packets, bytes, seq_errors, seq_lost;
	uint64_t	next_seq;	/* the number expected next ... */
	uint32_t	seq_valid;	/* ... if a --check-seq sink set it */
	uint32_t	nrings;		/* entries of in[] */
	uint64_t	t_first, t_last;	/* --summary: breaths that
						   received packets */
	struct {
		uint64_t id;		/* hash of the ring's path */
		uint64_t tail;		/* counted up to here */
	} in[SINK_MAX_IN];
};

static const char *const names[] = { "packets", "bytes", "seq-errors",
    "seq-lost", "resume-skipped", NULL };
static struct {		/* names' counters in order, then --latency's */
	uint64_t *packets, *bytes, *seq_errors, *seq_lost, *skipped, *unstamped;
} c;
static uint64_t expect = UINT64_MAX, lat_skip;
static int check_seq, summary, allow_loss, latency;
static struct port *in;
static struct sink_state *st;
static struct lat_hist hist;		/* --latency: this process's samples */

static void
sink_init(int argc, char **argv)
{
	static const struct app_opt opts[] = {
		APP_FLAG("check-seq", &check_seq),
		APP_FLAG("summary", &summary),
		APP_NUM("expect", &expect, 0, LLONG_MAX),
		APP_FLAG("allow-loss", &allow_loss),
		APP_FLAG("latency", &latency),
		APP_NUM("latency-skip", &lat_skip, 0, LLONG_MAX),
		APP_OPT_END
	};

	app_options(argc, argv, opts, 0);
	/* Unbound, "in" is refused by the runtime after init(). */
	if ((in = app_port("in")) != NULL && in->nrings > SINK_MAX_IN)
		errx(2, "%d input links: at most %d (the positions a "
		    "successor needs)", in->nrings, SINK_MAX_IN);
	app_counters((uint64_t **)&c, names);
	if (latency)
		c.unstamped = app_counter("unstamped");
}

/* FNV-1a: tells the rings apart should the launcher reorder them. */
static uint64_t
ring_id(const struct ring *r)
{
	const unsigned char *s = (const unsigned char *)r->path;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s)
		h = (h ^ *s++) * 0x100000001b3ULL;
	return h;
}

/* The counters show the state (snb-top, --counters). */
static void
show(void)
{
	*c.packets = st->packets;
	*c.bytes = st->bytes;
	*c.seq_errors = st->seq_errors;
	*c.seq_lost = st->seq_lost;
}

static void
sink_start(void)
{
	int64_t n;
	int resumed, j;

	st = app_state(sizeof(*st));
	resumed = app_resumed() && st->magic == SINK_MAGIC;
	if (!resumed) {
		/* Ours, or a predecessor that died before counting any. */
		memset(st, 0, sizeof(*st));
		st->magic = SINK_MAGIC;
		st->seq_valid = 1;	/* a fresh stream starts at 0 */
	}
	/*
	 * Only a checking sink follows the numbers; one that takes over
	 * from a sink that did not check starts at the first packet it
	 * reads.
	 */
	if (!check_seq)
		st->seq_valid = 0;
	for (j = 0; j < in->nrings; j++) {
		struct ring *r = &in->rings[j];
		uint64_t id = ring_id(r);
		/* What a predecessor counted but did not release. */
		if (resumed && j < (int)st->nrings && st->in[j].id == id &&
		    (n = app_release_to(r, st->in[j].tail)) > 0)
			*c.skipped += (uint64_t)n;
		st->in[j].id = id;
		st->in[j].tail = r->tail;
	}
	st->nrings = (uint32_t)in->nrings;
	app_state_commit();
	show();
}

static void
count_seq(const struct packet *p, uint32_t len)
{
	uint64_t s = synth_seq(p->data, len);

	if (!st->seq_valid) {
		st->seq_valid = 1;
		st->next_seq = s;
	}
	/* A gap is loss; going back is an error. */
	if (s > st->next_seq && allow_loss)
		st->seq_lost += s - st->next_seq;
	else if (s != st->next_seq)
		st->seq_errors++;
	st->next_seq = s + 1;
}

static void
count_latency(const struct packet *p, uint64_t now)
{
	uint64_t ts = p->ts_ns;

	/* 0 or not of our clock (a capture's time since the epoch). */
	if (ts == 0 || ts > now)
		(*c.unstamped)++;
	else if (lat_skip > 0)
		lat_skip--;
	else
		lat_add(&hist, now - ts);
}

static int
sink_breathe(void)
{
	uint32_t n[SINK_MAX_IN], i, len;
	uint64_t now = 0;
	int j, total = 0;

	for (j = 0; j < in->nrings; j++) {
		struct ring *r = &in->rings[j];
		if ((n[j] = fwd_burst(r)) == 0)
			continue;
		/* One clock read per burst: the time it was found. */
		if (latency)
			now = app_now_ns();
		for (i = 0; i < n[j]; i++) {
			struct packet *p = ring_peek(r, i);
			len = packet_len(r, p);
			st->bytes += len;
			if (check_seq)
				count_seq(p, len);
			if (latency)
				count_latency(p, now);
		}
		st->packets += n[j];
		st->in[j].tail = r->tail + n[j];
		total += (int)n[j];
	}
	if (total == 0)
		return 0;
	if (summary) {
		st->t_last = now ? now : app_now_ns();
		if (st->t_first == 0)
			st->t_first = st->t_last;
	}
	/* Counted, committed, then released: see the top of the file. */
	app_state_commit();
	for (j = 0; j < in->nrings; j++)
		ring_release(&in->rings[j], n[j]);
	show();
	return total;
}

static void
sink_stop(int eof)
{
	double secs = (double)(st->t_last - st->t_first) / 1e9;

	if (summary)
		fprintf(stderr, "sink: %" PRIu64 " packets, %" PRIu64
		    " bytes, %.3f s, %.3f Mpps, %.3f Gbps, %" PRIu64
		    " sequence errors, %" PRIu64 " lost\n", st->packets,
		    st->bytes, secs, secs > 0 ? st->packets / secs / 1e6 : 0.0,
		    secs > 0 ? st->bytes * 8 / secs / 1e9 : 0.0,
		    st->seq_errors, st->seq_lost);
	if (latency)
		fprintf(stderr, "sink: latency %" PRIu64 " packets: p50 %.1f "
		    "us, p99 %.1f us, p99.9 %.1f us, max %.1f us\n",
		    hist.count, lat_quantile(&hist, 0.5) / 1e3,
		    lat_quantile(&hist, 0.99) / 1e3,
		    lat_quantile(&hist, 0.999) / 1e3, hist.max / 1e3);
	if (eof && expect != UINT64_MAX && st->packets != expect)
		errx(1, "received %" PRIu64 " packets, expected %" PRIu64,
		    st->packets, expect);
	if (eof && check_seq && st->seq_errors)
		errx(1, "%" PRIu64 " sequence errors", st->seq_errors);
}

static const struct app_desc desc = {
	.name = "sink",
	.usage = "[--check-seq [--allow-loss]] [--expect N] "
	    "[--latency [--latency-skip N]] [--summary]",
	.summary = "Count packets and discard them.",
	.ports = (const struct port_desc[]){ { "in", PORT_IN | PORT_REQUIRED },
	    { NULL, 0 } },
	.init = sink_init,
	.start = sink_start,
	.breathe = sink_breathe,
	.stop = sink_stop,
};

APP_MAIN(desc)
