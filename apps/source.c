/*
 * snb-source: synthetic Ethernet/IPv4/UDP packets, as fast as the graph
 * takes them or at a fixed rate.  --seq numbers them for snb-sink
 * --check-seq; --size MIN-MAX draws sizes at random.
 */
#include <err.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "synth.h"

static unsigned char *tmpl;		/* a frame of max_size bytes */
static uint32_t min_size = 64, max_size = 64;
static uint64_t count = UINT64_MAX, sent, rate, seed = 1;
static uint64_t t_start;
static int seq, hold;
static struct port *out;

static uint64_t
parse_u64(const char *opt, const char *s)
{
	char *end;
	double mul = 1;
	double v;

	v = strtod(s, &end);
	if (end == s || v < 0)
		errx(2, "bad %s '%s'", opt, s);
	if (*end == 'k' || *end == 'K')
		mul = 1e3, end++;
	else if (*end == 'M')
		mul = 1e6, end++;
	else if (*end == 'G')
		mul = 1e9, end++;
	if (*end != '\0' || v * mul > 1.8e19)
		errx(2, "bad %s '%s'", opt, s);
	return (uint64_t)(v * mul);
}

static void
source_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'c' },
		{ "rate", required_argument, NULL, 'r' },
		{ "seq", no_argument, NULL, 'q' },
		{ "seed", required_argument, NULL, 'S' },
		{ "hold", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 }
	};
	char *dash;
	int ch;

	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			if ((dash = strchr(optarg, '-')) != NULL) {
				*dash = '\0';
				min_size = (uint32_t)parse_u64("--size", optarg);
				max_size = (uint32_t)parse_u64("--size", dash + 1);
				*dash = '-';
			} else
				min_size = max_size =
				    (uint32_t)parse_u64("--size", optarg);
			if (min_size < SYNTH_MIN || max_size > RING_MAX_CAPACITY
			    || min_size > max_size)
				errx(2, "bad --size '%s' (%d..%d bytes)", optarg,
				    SYNTH_MIN, RING_MAX_CAPACITY);
			break;
		case 'c':
			count = parse_u64("--count", optarg);
			break;
		case 'r':
			rate = parse_u64("--rate", optarg);
			if (rate == 0)
				errx(2, "bad --rate '%s'", optarg);
			break;
		case 'q':
			seq = 1;
			break;
		case 'S':
			seed = parse_u64("--seed", optarg);
			break;
		case 'H':
			hold = 1;
			break;
		default:
			errx(2, "usage: snb-source [--size N|MIN-MAX] "
			    "[--count N] [--rate PPS] [--seq] [--seed N] [--hold]");
		}
	}
	if (optind != argc)
		errx(2, "unexpected argument '%s'", argv[optind]);
	if ((tmpl = malloc(max_size)) == NULL)
		err(1, NULL);
	synth_build(tmpl, max_size);
}

/* xorshift64*: cheap, deterministic sizes for a given --seed. */
static uint32_t
next_size(void)
{
	seed ^= seed >> 12;
	seed ^= seed << 25;
	seed ^= seed >> 27;
	return min_size + (uint32_t)((seed * 2685821657736338717ULL) >> 33) %
	    (max_size - min_size + 1);
}

static int
source_breathe(void)
{
	uint32_t n, i, len;
	struct ring *r;

	if (out == NULL && (out = app_port("out")) == NULL)
		errx(1, "output port 'out' is not connected");
	r = &out->rings[0];
	if (max_size > r->capacity)
		errx(2, "--size %u does not fit the ring's %u-byte slots",
		    max_size, r->capacity);
	if (sent >= count) {
		/* --hold: keep the graph up (for inspection) until stopped. */
		if (hold)
			app_wake_at(app_now_ns() + 1000000000ULL);
		else
			app_done();
		return 0;
	}
	n = ring_room(r, APP_BURST);
	if (n > APP_BURST)
		n = APP_BURST;
	if (n > count - sent)
		n = (uint32_t)(count - sent);
	if (rate) {
		uint64_t now = app_now_ns(), due;
		if (t_start == 0)
			t_start = now;
		due = (uint64_t)((double)(now - t_start) * rate / 1e9) + 1;
		if (due <= sent) {
			app_wake_at(t_start + (uint64_t)((double)sent * 1e9 /
			    rate));
			return 0;
		}
		if (n > due - sent)
			n = (uint32_t)(due - sent);
	}
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
	ring_commit(r, n);
	sent += n;
	return (int)n;
}

static const struct port_desc ports[] = {
	{ "out", PORT_OUT | PORT_REQUIRED },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "source",
	.usage = "[--size N|MIN-MAX] [--count N] [--rate PPS] [--seq] "
	    "[--seed N] [--hold]",
	.summary = "Generate synthetic Ethernet/IPv4/UDP packets.",
	.ports = ports,
	.init = source_init,
	.breathe = source_breathe,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
