/*
 * bpf_bench: snb_bpf_run() against libpcap's pcap_offline_filter() on
 * the same compiled filters and the same packets.
 *
 * For 64- and 1500-byte frames, 4096 distinct packets of a fixed mix
 * (IPv4 TCP and UDP, IPv6, 802.1Q-tagged IPv4, ARP, ICMP; addresses and
 * ports varied so that filters take both early and late exits) are run
 * through each filter repeatedly.  Each measurement lasts about 0.1 s;
 * the best of three, interleaved between the two engines, is reported
 * as ns per packet.  Match counts from one pass of each must agree.
 *
 * Output, one line per (size, expression):
 *   bpf size=64 expr="tcp port 80" snb_ns=3.1 libpcap_ns=7.9 speedup=2.55 matches=1234/1234
 */
#include <sys/types.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pcap/pcap.h>

#include "bpf.h"
#include "../tests/unit/util.h"

#define NPKTS		4096
#define TARGET_NS	100000000.0	/* one measurement, ~0.1 s */
#define REPS		3

static const char *exprs[] = {
	"tcp port 80",
	"ip and udp and dst port 53",
	"ip6 and tcp",
	"vlan and ip",
	"net 10.0.0.0/8 and not port 22",
	"tcp[tcpflags] & tcp-syn != 0",
};

/* The packet set for one frame size; all share one contiguous buffer. */
struct pktset {
	unsigned		 size;
	unsigned char		*buf;		/* NPKTS * size bytes */
	struct pcap_pkthdr	 hdr[NPKTS];	/* caplen = len = size */
};

/* Keeps results observable so no loop can be optimised away. */
static volatile unsigned sink;

static unsigned char *
put16(unsigned char *p, unsigned v)
{
	p[0] = v >> 8;
	p[1] = v;
	return p + 2;
}

static unsigned char *
put32(unsigned char *p, uint32_t v)
{
	return put16(put16(p, v >> 16), v);
}

static unsigned
port(void)
{
	static const unsigned common[] = { 80, 443, 22, 53, 8080, 123 };
	unsigned r = rnd() % 10;

	return r < 6 ? common[r] : 1024 + rnd() % 60000;
}

/* TCP (SYN one time in eight) or UDP header at p. */
static void
put_l4(unsigned char *p, int tcp)
{
	p = put16(p, port());
	p = put16(p, port());
	if (!tcp)
		return;
	p = put32(p, rnd());
	p = put32(p, rnd());
	*p++ = 5 << 4;
	*p = rnd() % 8 == 0 ? 0x02 : 0x10;
}

static uint32_t
v4addr(void)
{
	return rnd() % 2 ? 0x0a000000 | (rnd() & 0xffffff) : rnd();
}

/*
 * One frame of the mix into p, which has room for the longest headers
 * (zeroed); a 64-byte frame keeps only its first 64 bytes of them.
 */
static void
build(unsigned char *p, unsigned size)
{
	unsigned r = rnd() % 100, tcp = rnd() % 3 != 0;
	unsigned char *q;

	memcpy(p, "\x00\x11\x22\x33\x44\x55\x00\x66\x77\x88\x99\xaa", 12);
	q = p + 12;
	if (r >= 80 && r < 90) {		/* 802.1Q, then IPv4 */
		q = put16(q, 0x8100);
		q = put16(q, 100 + rnd() % 4);
	}
	if (r < 70 || (r >= 80 && r < 90)) {	/* IPv4, 5% of it ICMP */
		unsigned proto = r < 5 ? 1 : tcp ? 6 : 17;

		q = put16(q, 0x0800);
		q = put16(q, 0x4500);
		q = put16(q, size - (q - p) + 2);
		q = put32(q, rnd() % 20 == 0 ? 0x2000 : 0x4000);
		*q++ = 64;
		*q++ = proto;
		q = put16(q, 0);
		q = put32(q, v4addr());
		q = put32(q, v4addr());
		if (proto != 1)
			put_l4(q, tcp);
		else
			*q = 8;
	} else if (r < 80) {			/* IPv6 */
		q = put16(q, 0x86dd);
		q = put32(q, 0x60000000);
		q = put16(q, size - (q - p) - 36);
		*q++ = tcp ? 6 : 17;
		*q++ = 64;
		q = put32(q, 0x20010db8);
		q += 28;
		put_l4(q, tcp);
	} else {				/* ARP */
		q = put16(q, 0x0806);
		q = put32(q, 0x00010800);
		put32(q, 0x06040001);
	}
}

static void
make_set(struct pktset *s, unsigned size)
{
	unsigned i;

	s->size = size;
	if ((s->buf = calloc(NPKTS, size)) == NULL) {
		perror("calloc");
		exit(1);
	}
	for (i = 0; i < NPKTS; i++) {
		unsigned char frame[128] = { 0 };

		build(frame, size);
		memcpy(s->buf + (size_t)i * size, frame,
		    size < sizeof(frame) ? size : sizeof(frame));
		s->hdr[i].caplen = s->hdr[i].len = size;
	}
}

/* One engine over the whole set, passes times; returns accept count. */
static unsigned
pass_snb(const struct snb_bpf *p, const struct pktset *s, unsigned passes)
{
	unsigned i, n = 0, acc = 0;

	while (passes--)
		for (i = 0; i < NPKTS; i++) {
			unsigned r = snb_bpf_run(p, s->buf + (size_t)i * s->size,
			    s->size, s->size);

			n += r != 0;
			acc += r;
		}
	sink += acc;
	return n;
}

static unsigned
pass_pcap(const struct bpf_program *prog, const struct pktset *s,
    unsigned passes)
{
	unsigned i, n = 0, acc = 0;

	while (passes--)
		for (i = 0; i < NPKTS; i++) {
			int r = pcap_offline_filter(prog, &s->hdr[i],
			    s->buf + (size_t)i * s->size);

			n += r != 0;
			acc += r;
		}
	sink += acc;
	return n;
}

/* Passes that make one measurement last about TARGET_NS. */
static unsigned
calibrate(const struct snb_bpf *p, const struct bpf_program *prog,
    const struct pktset *s)
{
	double t = now() * 1e9, dt;

	if (p != NULL)
		pass_snb(p, s, 1);
	else
		pass_pcap(prog, s, 1);
	dt = now() * 1e9 - t;
	return dt > 0 && TARGET_NS / dt > 1 ? (unsigned)(TARGET_NS / dt) : 1;
}

static double
ns_per_pkt(double t0, unsigned passes)
{
	return (now() * 1e9 - t0) / ((double)passes * NPKTS);
}

/* Measure one expression on one set; returns 0 if the counts differ. */
static int
bench(pcap_t *pd, const char *expr, const struct pktset *s)
{
	struct bpf_program prog;
	struct snb_bpf *p;
	char err[256];
	double t, best_snb = 1e30, best_pcap = 1e30, v;
	unsigned rep, ps, pp, m_snb, m_pcap;

	if (pcap_compile(pd, &prog, expr, 1, PCAP_NETMASK_UNKNOWN) != 0) {
		fprintf(stderr, "%s: %s\n", expr, pcap_geterr(pd));
		return 0;
	}
	if ((p = snb_bpf_load(prog.bf_insns, prog.bf_len, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "%s: %s\n", expr, err);
		pcap_freecode(&prog);
		return 0;
	}
	m_snb = pass_snb(p, s, 1);
	m_pcap = pass_pcap(&prog, s, 1);
	ps = calibrate(p, NULL, s);
	pp = calibrate(NULL, &prog, s);
	for (rep = 0; rep < REPS; rep++) {
		t = now() * 1e9;
		pass_snb(p, s, ps);
		if ((v = ns_per_pkt(t, ps)) < best_snb)
			best_snb = v;
		t = now() * 1e9;
		pass_pcap(&prog, s, pp);
		if ((v = ns_per_pkt(t, pp)) < best_pcap)
			best_pcap = v;
	}
	printf("bpf size=%u expr=\"%s\" snb_ns=%.2f libpcap_ns=%.2f "
	    "speedup=%.2f matches=%u/%u%s\n", s->size, expr, best_snb,
	    best_pcap, best_pcap / best_snb, m_snb, m_pcap,
	    m_snb == m_pcap ? "" : " MISMATCH");
	fflush(stdout);
	snb_bpf_free(p);
	pcap_freecode(&prog);
	return m_snb == m_pcap;
}

int
main(void)
{
	static struct pktset sets[2];
	static const unsigned sizes[2] = { 64, 1500 };
	pcap_t *pd;
	unsigned i, j;
	int good = 1;

	rngstate = 0x2545f4914f6cdd1dULL;	/* the packets of earlier runs */
	if ((pd = pcap_open_dead(DLT_EN10MB, 65535)) == NULL) {
		fprintf(stderr, "pcap_open_dead failed\n");
		return 1;
	}
	for (i = 0; i < 2; i++) {
		make_set(&sets[i], sizes[i]);
		for (j = 0; j < sizeof(exprs) / sizeof(exprs[0]); j++)
			good &= bench(pd, exprs[j], &sets[i]);
		free(sets[i].buf);
	}
	pcap_close(pd);
	return good ? 0 : 1;
}
