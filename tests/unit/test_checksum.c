/*
 * test_checksum: the Internet checksum against published vectors, a
 * deliberately naive reference implementation, random property checks,
 * and (when installed) tshark's own checksum validation.
 */
#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checksum.h"
#include "proto.h"
#include "tap.h"

/* TAP skip: counts as a pass, says why it did not run. */
static void
skip(const char *why)
{
	printf("ok %d # SKIP %s\n", ++tap_n, why);
	fflush(stdout);
}

/* xorshift64*: tiny, deterministic, good enough to pick test cases. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static void
rnd_fill(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len-- > 0)
		*p++ = rnd() & 0xff;
}

/*
 * The reference: RFC 1071 done the slow, obvious way, big-endian 16-bit
 * words one at a time.  Returns the checksum in host order, so comparing
 * it with ntohs() of the library's result also checks byte order.
 */
static uint16_t
ref_cksum(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The checksum as the library computes it, in host order. */
static uint16_t
lib_cksum(const void *data, size_t len)
{
	return ntohs(cksum_fold(cksum_add(0, data, len)));
}

static void
put16(void *p, uint16_t v_host)
{
	uint16_t v = htons(v_host);

	memcpy(p, &v, 2);
}

static uint16_t
get16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static void
test_vectors(void)
{
	/* RFC 1071 section 3: these words sum to ddf2. */
	static const unsigned char rfc[] = {
		0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7
	};
	/* The classic header: 192.168.0.1 -> 192.168.0.199, UDP. */
	static const unsigned char hdr[20] = {
		0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00,
		0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01,
		0xc0, 0xa8, 0x00, 0xc7
	};
	unsigned char buf[64];
	int off, good;

	ok(lib_cksum(rfc, sizeof(rfc)) == 0x220d,
	    "RFC 1071 example: checksum 220d (got %04x)",
	    lib_cksum(rfc, sizeof(rfc)));
	ok(ntohs((uint16_t)~cksum_fold(cksum_add(0, rfc, sizeof(rfc)))) ==
	    0xddf2, "RFC 1071 example: sum ddf2");
	good = 1;
	for (off = 1; off < 8; off++) {
		memcpy(buf + off, rfc, sizeof(rfc));
		good &= lib_cksum(buf + off, sizeof(rfc)) == 0x220d;
	}
	ok(good, "RFC 1071 example at unaligned offsets 1..7");

	ok(ntohs(ipv4_header_cksum(hdr)) == 0xb861,
	    "IPv4 header with checksum in place: b861 (got %04x)",
	    ntohs(ipv4_header_cksum(hdr)));
	memcpy(buf + 1, hdr, sizeof(hdr));
	put16(buf + 1 + 10, 0);
	ok(ntohs(ipv4_header_cksum(buf + 1)) == 0xb861,
	    "IPv4 header, field zeroed, unaligned: b861");
	put16(buf + 1 + 10, 0x1234);
	ok(ntohs(ipv4_header_cksum(buf + 1)) == 0xb861,
	    "IPv4 header, field garbage: still b861");
	ok(cksum_fold(cksum_add(0, hdr, sizeof(hdr))) == 0,
	    "IPv4 header including its checksum folds to 0");
}

static void
test_lengths(void)
{
	unsigned char buf[512 + 8], big[65536 + 8];
	size_t len, off, bad = 0, i;
	uint32_t sum;

	rnd_fill(buf, sizeof(buf));
	for (off = 0; off < 8; off++)
		for (len = 0; len <= 512; len++)
			if (lib_cksum(buf + off, len) !=
			    ref_cksum(buf + off, len))
				bad++;
	ok(bad == 0, "random data, lengths 0..512 x offsets 0..7 match the "
	    "reference (%zu mismatches)", bad);

	ok(lib_cksum(buf, 0) == 0xffff, "empty buffer: ffff");
	buf[0] = 0xab;
	ok(lib_cksum(buf, 1) == 0x54ff, "one byte ab pads to ab00: 54ff");

	memset(big, 0xff, sizeof(big));
	bad = 0;
	for (off = 0; off < 8; off++)
		for (len = 1; len <= 300; len++)
			if (lib_cksum(big + off, len) !=
			    (len & 1 ? 0x00ff : 0x0000))
				bad++;
	ok(bad == 0, "all-0xff, lengths 1..300: 0000 even, 00ff odd "
	    "(%zu mismatches)", bad);
	ok(lib_cksum(big + 3, 65536) == 0 && ref_cksum(big + 3, 65536) == 0,
	    "all-0xff 64 KiB: carries survive, 0000");
	ok(lib_cksum(big, 65535) == ref_cksum(big, 65535),
	    "all-0xff 65535 bytes matches reference");

	rnd_fill(big, sizeof(big));
	ok(lib_cksum(big + 1, 65536) == ref_cksum(big + 1, 65536),
	    "random 64 KiB unaligned matches reference");

	/* Piecewise sums with even pieces equal the one-shot sum. */
	sum = 0;
	for (i = 0; i < 60000; i += 2 * (1 + i % 37))
		sum = cksum_add(sum, big + i,
		    i + 2 * (1 + i % 37) <= 60000 ? 2 * (1 + i % 37) :
		    60000 - i);
	ok(cksum_fold(sum) == cksum_fold(cksum_add(0, big, 60000)),
	    "piecewise sum with even pieces equals one-shot sum");
}

static void
test_inserted(void)
{
	unsigned char buf[1500 + 1];
	size_t n, len, off, bad = 0;
	uint16_t ck, sum16;

	for (n = 0; n < 10000; n++) {
		len = 2 + 2 * (rnd() % 750);
		off = 2 * (rnd() % (len / 2));
		rnd_fill(buf + 1, len);
		put16(buf + 1 + off, 0);
		ck = cksum_fold(cksum_add(0, buf + 1, len));
		memcpy(buf + 1 + off, &ck, 2);
		/* Undo the complement to see the folded sum itself. */
		sum16 = ~cksum_fold(cksum_add(0, buf + 1, len));
		if (sum16 != 0xffff)
			bad++;
	}
	ok(bad == 0, "10000 random buffers with checksum inserted sum to "
	    "ffff (%zu bad)", bad);
}

static void
test_update(void)
{
	unsigned char buf[1500];
	size_t n, len, off, bad = 0;
	uint16_t oldck, newck, oldf, newf;

	for (n = 0; n < 10000; n++) {
		len = 2 + 2 * (rnd() % 750);
		off = 2 * (rnd() % (len / 2));
		rnd_fill(buf, len);
		oldck = cksum_fold(cksum_add(0, buf, len));
		oldf = get16(buf + off);
		newf = rnd() & 0xffff;
		memcpy(buf + off, &newf, 2);
		newck = cksum_fold(cksum_add(0, buf, len));
		if (cksum_update16(oldck, oldf, newf) != newck)
			bad++;
	}
	ok(bad == 0, "cksum_update16 equals recomputation, 10000 random "
	    "cases (%zu bad)", bad);
}

/*
 * Test packets, built here and checked three ways: the library, the
 * reference over an explicitly assembled pseudo-header, and tshark.
 */
#define NPKT	5
static unsigned char pkt[NPKT][256];
static size_t pktlen[NPKT];

static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0x0a };
static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0x0b };
static const uint8_t v6_a[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x0a };
static const uint8_t v6_b[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 0xb };

static struct ipv4_hdr *
mk_eth_ipv4(unsigned char *f, uint8_t proto, size_t l4len)
{
	struct eth_hdr *eth = (void *)f;
	struct ipv4_hdr *ip = (void *)(f + SNB_ETH_HLEN);

	memcpy(eth->dst, mac_b, 6);
	memcpy(eth->src, mac_a, 6);
	eth->type = htons(SNB_ETH_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->ver_ihl = 0x45;
	ip->len = htons(SNB_IPV4_HLEN + l4len);
	ip->id = htons(0x1c46);
	ip->frag_off = htons(SNB_IP_DF);
	ip->ttl = 64;
	ip->proto = proto;
	ip->src = htonl(0x0a000001);		/* 10.0.0.1 */
	ip->dst = htonl(0xc0a80a14);		/* 192.168.10.20 */
	ip->cksum = ipv4_header_cksum(ip);
	return ip;
}

static struct ipv6_hdr *
mk_eth_ipv6(unsigned char *f, uint8_t next, size_t l4len)
{
	struct eth_hdr *eth = (void *)f;
	struct ipv6_hdr *ip6 = (void *)(f + SNB_ETH_HLEN);

	memcpy(eth->dst, mac_b, 6);
	memcpy(eth->src, mac_a, 6);
	eth->type = htons(SNB_ETH_IPV6);
	ip6->ver_tc_flow = htonl(6u << 28 | 0x12345);
	ip6->plen = htons(l4len);
	ip6->next = next;
	ip6->hop_limit = 64;
	memcpy(ip6->src, v6_a, 16);
	memcpy(ip6->dst, v6_b, 16);
	return ip6;
}

/* Reference L4 checksum: pseudo-header bytes laid out by hand. */
static uint16_t
ref_l4(int v6, const void *iph, const unsigned char *l4, size_t len,
    uint8_t proto, size_t ckoff)
{
	unsigned char buf[512];
	size_t n = 0;
	uint16_t ck;

	if (v6) {
		memcpy(buf, (const unsigned char *)iph + 8, 32);
		buf[32] = len >> 24;
		buf[33] = len >> 16;
		buf[34] = len >> 8;
		buf[35] = len;
		buf[36] = buf[37] = buf[38] = 0;
		buf[39] = proto;
		n = 40;
	} else {
		memcpy(buf, (const unsigned char *)iph + 12, 8);
		buf[8] = 0;
		buf[9] = proto;
		buf[10] = len >> 8;
		buf[11] = len;
		n = 12;
	}
	memcpy(buf + n, l4, len);
	buf[n + ckoff] = buf[n + ckoff + 1] = 0;
	ck = ref_cksum(buf, n + len);
	if (proto == SNB_IPPROTO_UDP && ck == 0)
		ck = 0xffff;
	return ck;
}

static void
build_packets(void)
{
	struct ipv4_hdr *ip;
	struct ipv6_hdr *ip6;
	struct udp_hdr *uh;
	struct tcp_hdr *th;
	struct icmpv6_hdr *ic;
	unsigned char *l4;
	size_t plen;
	uint16_t ck;

	/* 0: IPv4 UDP, odd payload. */
	plen = 37;
	ip = mk_eth_ipv4(pkt[0], SNB_IPPROTO_UDP, SNB_UDP_HLEN + plen);
	l4 = pkt[0] + SNB_ETH_HLEN + SNB_IPV4_HLEN;
	uh = (void *)l4;
	uh->sport = htons(40000);
	uh->dport = htons(5001);
	uh->len = htons(SNB_UDP_HLEN + plen);
	rnd_fill(l4 + SNB_UDP_HLEN, plen);
	uh->cksum = ipv4_l4_cksum(ip, l4, SNB_UDP_HLEN + plen,
	    SNB_IPPROTO_UDP);
	pktlen[0] = SNB_ETH_HLEN + SNB_IPV4_HLEN + SNB_UDP_HLEN + plen;
	ok(ntohs(uh->cksum) == ref_l4(0, ip, l4, SNB_UDP_HLEN + plen,
	    SNB_IPPROTO_UDP, 6), "IPv4 UDP checksum %04x matches reference",
	    ntohs(uh->cksum));

	/* 1: IPv4 TCP with an MSS option, odd payload. */
	plen = 101;
	ip = mk_eth_ipv4(pkt[1], SNB_IPPROTO_TCP, 24 + plen);
	l4 = pkt[1] + SNB_ETH_HLEN + SNB_IPV4_HLEN;
	th = (void *)l4;
	memset(th, 0, 24);
	th->sport = htons(51000);
	th->dport = htons(8080);
	th->seq = htonl(0x01020304);
	th->ack = htonl(0xa0b0c0d0);
	th->off = 6 << 4;
	th->flags = SNB_TCP_PSH | SNB_TCP_ACK;
	th->win = htons(29200);
	l4[20] = SNB_TCPOPT_MSS;
	l4[21] = 4;
	put16(l4 + 22, 1460);
	rnd_fill(l4 + 24, plen);
	th->cksum = 0xbeef;	/* the library must ignore what is there */
	th->cksum = ipv4_l4_cksum(ip, l4, 24 + plen, SNB_IPPROTO_TCP);
	pktlen[1] = SNB_ETH_HLEN + SNB_IPV4_HLEN + 24 + plen;
	ok(ntohs(th->cksum) == ref_l4(0, ip, l4, 24 + plen, SNB_IPPROTO_TCP,
	    16), "IPv4 TCP checksum %04x matches reference", ntohs(th->cksum));

	/* 2: IPv6 UDP. */
	plen = 33;
	ip6 = mk_eth_ipv6(pkt[2], SNB_IPPROTO_UDP, SNB_UDP_HLEN + plen);
	l4 = pkt[2] + SNB_ETH_HLEN + SNB_IPV6_HLEN;
	uh = (void *)l4;
	uh->sport = htons(53000);
	uh->dport = htons(5353 + 1);
	uh->len = htons(SNB_UDP_HLEN + plen);
	rnd_fill(l4 + SNB_UDP_HLEN, plen);
	uh->cksum = ipv6_l4_cksum(ip6, l4, SNB_UDP_HLEN + plen,
	    SNB_IPPROTO_UDP);
	pktlen[2] = SNB_ETH_HLEN + SNB_IPV6_HLEN + SNB_UDP_HLEN + plen;
	ok(ntohs(uh->cksum) == ref_l4(1, ip6, l4, SNB_UDP_HLEN + plen,
	    SNB_IPPROTO_UDP, 6), "IPv6 UDP checksum %04x matches reference",
	    ntohs(uh->cksum));

	/* 3: ICMPv6 echo request, odd payload. */
	plen = 57;
	ip6 = mk_eth_ipv6(pkt[3], SNB_IPPROTO_ICMPV6, SNB_ICMP6_HLEN + plen);
	l4 = pkt[3] + SNB_ETH_HLEN + SNB_IPV6_HLEN;
	ic = (void *)l4;
	ic->type = SNB_ICMP6_ECHO_REQUEST;
	ic->code = 0;
	ic->echo.id = htons(0x4242);
	ic->echo.seq = htons(7);
	rnd_fill(l4 + SNB_ICMP6_HLEN, plen);
	ic->cksum = ipv6_l4_cksum(ip6, l4, SNB_ICMP6_HLEN + plen,
	    SNB_IPPROTO_ICMPV6);
	pktlen[3] = SNB_ETH_HLEN + SNB_IPV6_HLEN + SNB_ICMP6_HLEN + plen;
	ok(ntohs(ic->cksum) == ref_l4(1, ip6, l4, SNB_ICMP6_HLEN + plen,
	    SNB_IPPROTO_ICMPV6, 2), "ICMPv6 checksum %04x matches reference",
	    ntohs(ic->cksum));

	/* 4: IPv4 UDP with a wrong checksum, so tshark must say "bad". */
	memcpy(pkt[4], pkt[0], pktlen[0]);
	pktlen[4] = pktlen[0];
	uh = (void *)(pkt[4] + SNB_ETH_HLEN + SNB_IPV4_HLEN);
	uh->cksum ^= htons(0x0101);

	/* ICMPv4 has no pseudo-header. */
	l4 = pkt[0] + SNB_ETH_HLEN + SNB_IPV4_HLEN;
	ck = ipv4_l4_cksum(pkt[0] + SNB_ETH_HLEN, l4, 45, SNB_IPPROTO_ICMP);
	{
		unsigned char tmp[45];

		memcpy(tmp, l4, sizeof(tmp));
		tmp[2] = tmp[3] = 0;
		ok(ntohs(ck) == ref_cksum(tmp, sizeof(tmp)),
		    "ICMPv4: no pseudo-header, checksum field skipped");
	}
}

/*
 * A UDP segment whose checksum computes to 0 must carry 0xffff.  Pick
 * the last payload word so that the sum becomes exactly -0.
 */
static void
test_udp_zero(void)
{
	unsigned char f[128];
	struct ipv4_hdr *ip = NULL;
	struct ipv6_hdr *ip6 = NULL;
	unsigned char *l4;
	uint16_t ck;
	int v6;

	for (v6 = 0; v6 <= 1; v6++) {
		if (v6) {
			ip6 = mk_eth_ipv6(f, SNB_IPPROTO_UDP, 20);
			l4 = f + SNB_ETH_HLEN + SNB_IPV6_HLEN;
		} else {
			ip = mk_eth_ipv4(f, SNB_IPPROTO_UDP, 20);
			l4 = f + SNB_ETH_HLEN + SNB_IPV4_HLEN;
		}
		put16(l4, 1111);
		put16(l4 + 2, 2222);
		put16(l4 + 4, 20);
		rnd_fill(l4 + 8, 10);
		put16(l4 + 18, 0);
		ck = v6 ? ipv6_l4_cksum(ip6, l4, 20, SNB_IPPROTO_UDP) :
		    ipv4_l4_cksum(ip, l4, 20, SNB_IPPROTO_UDP);
		/*
		 * ck = ~S for the current sum S, and S + ~S is exactly
		 * 0xffff: storing ck as the last word makes the sum -0.
		 */
		memcpy(l4 + 18, &ck, 2);
		ck = v6 ? ipv6_l4_cksum(ip6, l4, 20, SNB_IPPROTO_UDP) :
		    ipv4_l4_cksum(ip, l4, 20, SNB_IPPROTO_UDP);
		ok(ck == 0xffff, "%s UDP: computed 0 is sent as ffff",
		    v6 ? "IPv6" : "IPv4");
	}
}

/*
 * Run tshark over the capture at path with checksum validation on and
 * the display filter `filter`; store the matching frame numbers, comma
 * separated, in out.  Filters name statuses ("Good", "Bad") rather than
 * using -T fields, whose numeric values are an enum internal to
 * Wireshark (this 4.0 prints 1 for Good, 0 for Bad).
 */
static int
tshark_frames(const char *path, const char *filter, char *out, size_t outsz)
{
	char cmd[1024], line[64];
	FILE *fp;
	size_t n = 0;

	snprintf(cmd, sizeof(cmd), "tshark -n -r '%s' "
	    "-o ip.check_checksum:TRUE -o udp.check_checksum:TRUE "
	    "-o tcp.check_checksum:TRUE -Y '%s' -T fields -e frame.number "
	    "2>/dev/null", path, filter);
	if ((fp = popen(cmd, "r")) == NULL)
		return -1;
	out[0] = '\0';
	while (fgets(line, sizeof(line), fp) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		n += snprintf(out + n, outsz - n, "%s%s", n ? "," : "", line);
		if (n >= outsz)
			break;
	}
	return pclose(fp) == 0 ? 0 : -1;
}

static void
test_tshark(void)
{
	/* Any present layer whose checksum is not verified good. */
	static const char notgood[] =
	    "(ip && !(ip.checksum.status == \"Good\")) || "
	    "(udp && !(udp.checksum.status == \"Good\")) || "
	    "(tcp && !(tcp.checksum.status == \"Good\")) || "
	    "(icmpv6 && !(icmpv6.checksum.status == \"Good\"))";
	char path[] = "/tmp/test_checksum.XXXXXX", got[256];
	struct pcap_pkthdr h;
	pcap_dumper_t *d;
	pcap_t *p;
	FILE *fp;
	int fd, i, rc;

	if (system("command -v tshark >/dev/null 2>&1") != 0) {
		skip("tshark not installed");
		skip("tshark not installed");
		skip("tshark not installed");
		return;
	}
	if ((fd = mkstemp(path)) == -1 || (fp = fdopen(fd, "wb")) == NULL) {
		ok(0, "create temporary pcap");
		return;
	}
	p = pcap_open_dead(DLT_EN10MB, 65535);
	if (p == NULL || (d = pcap_dump_fopen(p, fp)) == NULL) {
		ok(0, "open temporary pcap for writing");
		unlink(path);
		return;
	}
	for (i = 0; i < NPKT; i++) {
		memset(&h, 0, sizeof(h));
		h.ts.tv_sec = 1700000000;
		h.ts.tv_usec = i;
		/* Pad to the Ethernet minimum; padding is not summed. */
		h.caplen = h.len = pktlen[i] < 60 ? 60 : pktlen[i];
		pcap_dump((u_char *)d, &h, pkt[i]);
	}
	pcap_dump_close(d);
	pcap_close(p);

	rc = tshark_frames(path, "frame", got, sizeof(got));
	ok(rc == 0 && strcmp(got, "1,2,3,4,5") == 0,
	    "tshark reads the %d test packets (got '%s')", NPKT, got);
	rc = tshark_frames(path, notgood, got, sizeof(got));
	ok(rc == 0 && strcmp(got, "5") == 0, "tshark: every checksum good "
	    "except in the corrupted frame 5 (flagged: '%s')", got);
	rc = tshark_frames(path, "udp.checksum.status == \"Bad\"", got,
	    sizeof(got));
	ok(rc == 0 && strcmp(got, "5") == 0,
	    "tshark: frame 5 UDP checksum bad (got '%s')", got);
	unlink(path);
}

int
main(void)
{
	test_vectors();
	test_lengths();
	test_inserted();
	test_update();
	build_packets();
	test_udp_zero();
	test_tshark();
	return tap_done();
}
