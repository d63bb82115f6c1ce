/*
 * snb-sink: count packets and throw them away.  With --check-seq it checks
 * the sequence numbers snb-source --seq writes, so a test can prove that a
 * graph delivered every packet once and in order.
 */
#include <err.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "synth.h"

static uint64_t *packets, *bytes, *seq_errors, *seq_lost;
static uint64_t next_seq, expect = UINT64_MAX, t_first, t_last;
static int check_seq, summary, allow_loss;
static struct port *in;

static void
sink_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "check-seq", no_argument, NULL, 'c' },
		{ "summary", no_argument, NULL, 's' },
		{ "expect", required_argument, NULL, 'e' },
		{ "allow-loss", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	char *end;
	int ch;

	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			check_seq = 1;
			break;
		case 's':
			summary = 1;
			break;
		case 'l':
			allow_loss = 1;
			break;
		case 'e':
			expect = strtoull(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0')
				errx(2, "bad --expect '%s'", optarg);
			break;
		default:
			errx(2, "usage: snb-sink [--check-seq [--allow-loss]] "
			    "[--summary] [--expect N]");
		}
	}
	if (optind != argc)
		errx(2, "unexpected argument '%s'", argv[optind]);
	packets = app_counter("packets");
	bytes = app_counter("bytes");
	seq_errors = app_counter("seq-errors");
	seq_lost = app_counter("seq-lost");
}

static int
sink_breathe(void)
{
	uint32_t n, i;
	int j, total = 0;

	if (in == NULL && (in = app_port("in")) == NULL)
		return 0;
	for (j = 0; j < in->nrings; j++) {
		struct ring *r = &in->rings[j];
		if ((n = ring_avail(r, APP_BURST)) == 0)
			continue;
		if (n > APP_BURST)
			n = APP_BURST;
		for (i = 0; i < n; i++) {
			struct packet *p = ring_peek(r, i);
			*bytes += p->len;
			if (check_seq) {
				uint64_t s = synth_seq(p->data, p->len);
				/* A gap is loss; going back is an error. */
				if (s > next_seq && allow_loss)
					*seq_lost += s - next_seq;
				else if (s != next_seq)
					(*seq_errors)++;
				next_seq = s + 1;
			}
		}
		ring_release(r, n);
		*packets += n;
		total += (int)n;
	}
	if (total && summary) {
		t_last = app_now_ns();
		if (t_first == 0)
			t_first = t_last;
	}
	return total;
}

static void
sink_stop(int eof)
{
	double secs = (double)(t_last - t_first) / 1e9;

	if (summary)
		fprintf(stderr, "sink: %" PRIu64 " packets, %" PRIu64
		    " bytes, %.3f s, %.3f Mpps, %.3f Gbps, %" PRIu64
		    " sequence errors, %" PRIu64 " lost\n", *packets, *bytes,
		    secs, secs > 0 ? *packets / secs / 1e6 : 0.0,
		    secs > 0 ? *bytes * 8 / secs / 1e9 : 0.0, *seq_errors,
		    *seq_lost);
	if (eof && expect != UINT64_MAX && *packets != expect) {
		fprintf(stderr, "snb-sink: received %" PRIu64 " packets, "
		    "expected %" PRIu64 "\n", *packets, expect);
		exit(1);
	}
	if (eof && check_seq && *seq_errors) {
		fprintf(stderr, "snb-sink: %" PRIu64 " sequence errors\n",
		    *seq_errors);
		exit(1);
	}
}

static const struct port_desc ports[] = {
	{ "in", PORT_IN | PORT_REQUIRED },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "sink",
	.usage = "[--check-seq [--allow-loss]] [--summary] [--expect N]",
	.summary = "Count packets and discard them.",
	.ports = ports,
	.init = sink_init,
	.breathe = sink_breathe,
	.stop = sink_stop,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
