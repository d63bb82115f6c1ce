/*
 * snb-filter: pass the packets a tcpdump expression matches.  libpcap
 * compiles the expression; our own interpreter (bpf.h) runs it.  Packets
 * that do not match go to the optional "reject" port, or are counted in
 * drop-nomatch when nothing is bound there.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "forward.h"
#include "bpf.h"

#define PARSE_PREFIX	"can't parse filter expression: "

static struct snb_bpf *prog;
static struct fwd fwd;
static uint64_t *drop_nomatch;

static void
filter_init(int argc, char **argv)
{
	static int need_reject;
	static const struct app_opt opts[] = {
		APP_FLAG("reject-port", &need_reject),
		APP_OPT_END
	};
	char errbuf[256], *expr = NULL, *msg;
	struct bpf_program bp;
	size_t len;
	pcap_t *pd;
	int i, first = app_options(argc, argv, opts, APP_OPT_WORDS);
	FILE *m;

	/* The words, one space between, as tcpdump takes them. */
	if ((m = open_memstream(&expr, &len)) == NULL)
		err(1, NULL);
	for (i = first; i < argc; i++)
		fprintf(m, "%s%s", i > first ? " " : "", argv[i]);
	if (fclose(m) == EOF)
		err(1, NULL);
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
	fwd_init(&fwd, (const char *[]){ "in", NULL },
	    (const char *[]){ "out", "reject", NULL });
	fwd.out[0].sent = app_counter("matched");
	fwd.out[1].sent = app_counter("rejected");
	drop_nomatch = app_counter("drop-nomatch");
	if (need_reject && fwd.out[1].ring == NULL)
		errx(2, "--reject-port given but port 'reject' is not "
		    "connected");
}

/* Matches to "out" (0), the rest to "reject" (1) or dropped. */
static int
classify(void *ctx, int from, const struct packet *p, uint32_t len)
{
	uint32_t wire = p->wirelen;

	if (snb_bpf_run(prog, p->data, len, wire ? wire : len))
		return 0;
	if (fwd.out[1].ring != NULL)
		return 1;
	(*drop_nomatch)++;
	return FWD_DROP;
}

static int
filter_breathe(void)
{
	return fwd_breathe(&fwd, classify, NULL);
}

static const struct app_desc desc = {
	.name = "filter",
	.usage = "[--reject-port] [EXPRESSION ...]",
	.summary = "Pass packets matching a tcpdump filter expression; "
	    "send the rest to 'reject' or drop them.",
	.ports = (const struct port_desc[]){ { "in", PORT_IN | PORT_REQUIRED },
	    { "out", PORT_OUT | PORT_REQUIRED }, { "reject", PORT_OUT },
	    { NULL, 0 } },
	.init = filter_init,
	.breathe = filter_breathe,
};

APP_MAIN(desc)
