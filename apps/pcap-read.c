/*
 * snb-pcap-read: replay a pcap or pcapng file of Ethernet frames into the
 * graph, once or --loop N times, as fast as the graph takes them.  Records
 * are read only when the output has room, so nothing is ever held back or
 * lost, and timestamps keep libpcap's nanosecond precision.
 */
#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "app.h"

static const char *file;
static pcap_t *pc;
static uint64_t loops = 1, pass, pass_sent;
static uint64_t *packets, *drop_oversize;
static int warned;
static struct port *out;

/*
 * With --loop, the first pass keeps the records in memory (up to
 * CACHE_MAX bytes) and later passes replay them from there: reopening and
 * parsing a file of one record per pass would cost a syscall per packet.
 */
#define CACHE_MAX	(256u << 20)
struct record {
	uint32_t	caplen, wirelen;
	uint64_t	ts_ns;
	size_t		off;		/* into cache */
};
static struct record *recs;
static size_t nrecs, rec_cap, cache_len, cache_cap, cur;
static unsigned char *cache;
static int caching, cached;

static void
cache_drop(void)
{
	free(recs);
	free(cache);
	recs = NULL;
	cache = NULL;
	nrecs = rec_cap = cache_len = cache_cap = 0;
	caching = cached = 0;
}

static void
cache_add(const struct packet *p)
{
	if (cache_len + p->len > CACHE_MAX) {
		cache_drop();
		return;
	}
	if (nrecs == rec_cap) {
		rec_cap = rec_cap ? rec_cap * 2 : 1024;
		if ((recs = reallocarray(recs, rec_cap, sizeof(*recs))) == NULL)
			err(1, NULL);
	}
	while (cache_len + p->len > cache_cap) {
		cache_cap = cache_cap ? cache_cap * 2 : 65536;
		if ((cache = realloc(cache, cache_cap)) == NULL)
			err(1, NULL);
	}
	recs[nrecs].caplen = p->len;
	recs[nrecs].wirelen = p->wirelen;
	recs[nrecs].ts_ns = p->ts_ns;
	recs[nrecs].off = cache_len;
	memcpy(cache + cache_len, p->data, p->len);
	cache_len += p->len;
	nrecs++;
}

/* Later passes from memory. */
static int
replay_cached(struct ring *r, uint32_t n)
{
	uint32_t i = 0;

	while (i < n) {
		if (cur == nrecs) {
			cur = 0;
			if (++pass >= loops && loops != 0) {
				ring_commit(r, i);
				*packets += i;
				app_done();
				return (int)i;
			}
		}
		struct record *rc = &recs[cur++];
		struct packet *p = ring_slot(r, i++);
		p->len = (uint16_t)rc->caplen;
		p->flags = 0;
		p->wirelen = rc->wirelen;
		p->ts_ns = rc->ts_ns;
		memcpy(p->data, cache + rc->off, rc->caplen);
	}
	ring_commit(r, i);
	*packets += i;
	return (int)i;
}

static void
open_file(void)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	const char *lt;
	FILE *fp;
	int dlt;

	/* Opening the file ourselves makes every message name it. */
	if (strcmp(file, "-") == 0)
		fp = stdin;
	else if ((fp = fopen(file, "rbe")) == NULL)
		err(1, "%s", file);
	pc = pcap_fopen_offline_with_tstamp_precision(fp,
	    PCAP_TSTAMP_PRECISION_NANO, errbuf);
	if (pc == NULL)
		errx(1, "%s: %s", file, errbuf);
	if ((dlt = pcap_datalink(pc)) != DLT_EN10MB) {
		lt = pcap_datalink_val_to_name(dlt);
		errx(1, "%s: link type %s (%d) is not supported, only EN10MB",
		    file, lt ? lt : "unknown", dlt);
	}
	pass_sent = 0;
}

static void
pcap_read_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "loop", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	char *end;
	int ch;

	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			loops = strtoull(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end != '\0')
				errx(2, "bad --loop '%s'", optarg);
			break;
		default:
			errx(2, "usage: snb-pcap-read [--loop N] FILE");
		}
	}
	if (argc - optind != 1)
		errx(2, "usage: snb-pcap-read [--loop N] FILE");
	file = argv[optind];
	if (strcmp(file, "-") == 0 && loops != 1)
		errx(2, "--loop needs a file, not standard input");
	packets = app_counter("packets");
	drop_oversize = app_counter("drop-oversize");
	caching = loops != 1;
	open_file();
}

/* End of one pass: start the next one, or say we are done (return 0). */
static int
next_pass(void)
{
	pcap_close(pc);
	pc = NULL;
	pass++;
	/* A pass that sent nothing would loop forever doing nothing. */
	if ((loops != 0 && pass >= loops) || pass_sent == 0)
		return 0;
	if (caching) {
		caching = 0;
		cached = 1;
		cur = 0;
		return 1;
	}
	open_file();
	return 1;
}

static int
pcap_read_breathe(void)
{
	struct pcap_pkthdr *h;
	const u_char *data;
	struct packet *p;
	struct ring *r;
	uint32_t n, i = 0;
	int rc, handled = 0, done = 0;

	if (out == NULL && (out = app_port("out")) == NULL)
		errx(1, "output port 'out' is not connected");
	r = &out->rings[0];
	if ((n = ring_room(r, APP_BURST)) > APP_BURST)
		n = APP_BURST;
	if (cached)
		return replay_cached(r, n);
	while (i < n) {
		rc = pcap_next_ex(pc, &h, &data);
		if (rc == PCAP_ERROR_BREAK) {
			if (!next_pass()) {
				done = 1;
				break;
			}
			if (cached) {
				ring_commit(r, i);
				*packets += i;
				return handled + replay_cached(r, n - i);
			}
			continue;
		}
		if (rc != 1) {
			/* Deliver what we have, then end the stream as a
			 * dying pipe writer would, so consumers finish. */
			ring_commit(r, i);
			ring_close(r);
			errx(1, "%s: %s", file, pcap_geterr(pc));
		}
		handled++;
		if (h->caplen > r->capacity) {
			(*drop_oversize)++;
			if (!warned)
				warnx("%s: dropping records larger than %u "
				    "bytes (first: %u bytes)", file,
				    r->capacity, h->caplen);
			warned = 1;
			continue;
		}
		p = ring_slot(r, i++);
		pass_sent++;
		p->len = (uint16_t)h->caplen;
		p->flags = 0;
		p->wirelen = h->len != h->caplen ? h->len : 0;
		p->ts_ns = (uint64_t)h->ts.tv_sec * 1000000000ULL +
		    (uint64_t)h->ts.tv_usec;
		memcpy(p->data, data, h->caplen);
		if (caching)
			cache_add(p);
	}
	ring_commit(r, i);
	*packets += i;
	if (done)
		app_done();
	return handled;
}

static void
pcap_read_stop(int eof)
{
	if (pc != NULL)
		pcap_close(pc);
	pc = NULL;
	cache_drop();
}

static const struct port_desc ports[] = {
	{ "out", PORT_OUT | PORT_REQUIRED },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "pcap-read",
	.usage = "[--loop N] FILE",
	.summary = "Replay an Ethernet pcap/pcapng file (--loop 0: forever).",
	.ports = ports,
	.init = pcap_read_init,
	.breathe = pcap_read_breathe,
	.stop = pcap_read_stop,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
