/*
 * snb-filter: pass the packets a tcpdump expression matches.  libpcap
 * compiles the expression; our own interpreter (bpf.h) runs it.  Packets
 * that do not match go to the optional "reject" port, or are counted in
 * drop-nomatch when nothing is bound there.
 */
#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "app.h"
#include "bpf.h"

#define PARSE_PREFIX	"can't parse filter expression: "

static struct snb_bpf *prog;
static struct port *in, *out, *rej;
static uint64_t *matched, *rejected, *drop_nomatch, *drop_oversize;
static int need_reject, first_ring;

static char *
join_words(int argc, char **argv)
{
	size_t len = 1;
	char *s;
	int i;

	for (i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if ((s = malloc(len)) == NULL)
		err(1, NULL);
	s[0] = '\0';
	for (i = 0; i < argc; i++) {
		if (i > 0)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

static void
filter_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reject-port", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	char errbuf[256], *expr, *msg;
	struct bpf_program bp;
	pcap_t *pd;
	int ch;

	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			need_reject = 1;
			break;
		default:
			errx(2, "usage: snb-filter [--reject-port] EXPRESSION...");
		}
	}
	expr = join_words(argc - optind, argv + optind);
	if ((pd = pcap_open_dead(DLT_EN10MB, 65535)) == NULL)
		errx(1, "pcap_open_dead failed");
	if (pcap_compile(pd, &bp, expr, 1, PCAP_NETMASK_UNKNOWN) == -1) {
		/* Our message already says what libpcap 1.10 prefixes. */
		msg = pcap_geterr(pd);
		if (strncmp(msg, PARSE_PREFIX, strlen(PARSE_PREFIX)) == 0)
			msg += strlen(PARSE_PREFIX);
		errx(2, "bad filter expression '%s': %s", expr, msg);
	}
	/* libpcap accepts a few programs our interpreter refuses (bpf.h). */
	if ((prog = snb_bpf_load(bp.bf_insns, bp.bf_len, errbuf,
	    sizeof(errbuf))) == NULL)
		errx(2, "unsupported filter expression '%s': %s", expr, errbuf);
	pcap_freecode(&bp);
	pcap_close(pd);
	free(expr);
	matched = app_counter("matched");
	rejected = app_counter("rejected");
	drop_nomatch = app_counter("drop-nomatch");
	drop_oversize = app_counter("drop-oversize");
	/* Ports are bound already: a replacement refuses in standby. */
	if ((in = app_port("in")) == NULL)
		errx(2, "input port 'in' is not connected");
	if ((out = app_port("out")) == NULL)
		errx(2, "output port 'out' is not connected");
	rej = app_port("reject");
	if (need_reject && rej == NULL)
		errx(2, "--reject-port given but port 'reject' is not "
		    "connected");
}

/*
 * Copy one packet into slot i of o.  The length is read once and clamped
 * here, because the producer of the input ring could rewrite it after
 * ring_peek() checked it.  Returns 0 when o's slots are too small.
 */
static int
filter_breathe(void)
{
	struct ring *ro, *rr;
	uint32_t n, i, n_out, n_rej, len, wire;
	int j, total = 0;

	ro = &out->rings[0];
	rr = rej ? &rej->rings[0] : NULL;
	/* Start with a different input ring each breath: fan-in fairness. */
	for (j = 0; j < in->nrings; j++) {
		struct ring *r = &in->rings[(first_ring + j) % in->nrings];

		/* Any packet may go either way: both outputs need room. */
		if ((n = ring_avail(r, APP_BURST)) > APP_BURST)
			n = APP_BURST;
		n = app_room(rej, app_room(out, n));
		n_out = n_rej = 0;
		for (i = 0; i < n; i++) {
			struct packet *p = ring_peek(r, i);

			len = packet_len(r, p);
			wire = p->wirelen;
			if (snb_bpf_run(prog, p->data, len, wire ? wire : len)) {
				(*matched)++;
				if (ring_put_packet(ro, n_out, p, len))
					n_out++;
				else
					(*drop_oversize)++;
			} else if (rr == NULL) {
				(*drop_nomatch)++;
			} else {
				(*rejected)++;
				if (ring_put_packet(rr, n_rej, p, len))
					n_rej++;
				else
					(*drop_oversize)++;
			}
		}
		/*
		 * Release before commit: a stage killed in between loses
		 * what it held instead of sending it twice after a restart.
		 */
		ring_release(r, n);
		ring_commit(ro, n_out);
		if (rr)
			ring_commit(rr, n_rej);
		total += (int)n;
	}
	if (in->nrings > 0)
		first_ring = (first_ring + 1) % in->nrings;
	return total;
}

static const struct port_desc ports[] = {
	{ "in", PORT_IN | PORT_REQUIRED },
	{ "out", PORT_OUT | PORT_REQUIRED },
	{ "reject", PORT_OUT },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "filter",
	.usage = "[--reject-port] EXPRESSION...",
	.summary = "Pass packets matching a tcpdump filter expression; "
	    "send the rest to 'reject' or drop them.",
	.ports = ports,
	.init = filter_init,
	.breathe = filter_breathe,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
