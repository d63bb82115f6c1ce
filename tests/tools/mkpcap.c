/*
 * mkpcap: write a deterministic, varied Ethernet capture for exercising
 * packet filters and parsers.
 *
 *	mkpcap OUT.pcap [--count N] [--seed S] [--random]
 *
 * The same count and seed always give the same file.  Nothing is sent
 * anywhere: the addresses only appear inside the packets written.
 *
 * The default mix covers IPv4 and IPv6 TCP/UDP/ICMP, IPv4 options, IPv4
 * and IPv6 fragments (whole trains and lone ones), IPv6 extension
 * headers, IPv4-in-IPv6, 802.1Q and QinQ tags, ARP, LLDP, 802.3/LLC,
 * multicast and broadcast, jumbo frames, and records truncated by a short
 * snap length.  Checksums are correct on every packet, so tools can be
 * checked for not flagging good traffic.  --random instead writes frames
 * of random bytes, 0 to 200 long, for robustness tests.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "proto.h"

#define FRAME_MAX	9216	/* biggest frame built: 9000 plus tags */
#define JUMBO_MAX	9000
#define TRAIN_MAX	16	/* frames one generator call may produce */
#define TS_BASE		1700000000	/* first record's time, seconds */
#define TS_STEP_US	1000	/* time between records */

/* Snap lengths for truncated records: Ethernet+IPv4, +TCP, ... */
static const size_t snaps[] = { 34, 54, 60, 100 };

/*
 * struct frame: one record to write.  len is the frame's length on the
 * wire; caplen, at most len, is how much of it the record holds.
 */
struct frame {
	size_t		len;
	size_t		caplen;
	uint8_t		data[FRAME_MAX];
};

/* Everything the generators produce goes through here, in order. */
static struct frame out[TRAIN_MAX];

/* splitmix64: seedable, fast, and the same on every platform. */
static uint64_t rng;

static uint64_t
rnd(void)
{
	uint64_t z;

	z = (rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); the modulo bias is irrelevant for test data. */
static uint32_t
below(uint32_t n)
{
	return n ? rnd() % n : 0;
}

/* Uniform in [lo, hi]. */
static uint32_t
between(uint32_t lo, uint32_t hi)
{
	return lo + below(hi - lo + 1);
}

static bool
chance(unsigned percent)
{
	return below(100) < percent;
}

static void
rnd_fill(void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t v;

	while (len >= 8) {
		v = rnd();
		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	if (len > 0) {
		v = rnd();
		memcpy(p, &v, len);
	}
}

#define PICK(a)	((a)[below(sizeof(a) / sizeof((a)[0]))])

/* Big-endian stores: packets are built byte by byte, at any alignment. */
static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/*
 * Payload sizes: mostly small and medium, a fair share at the maximum,
 * so frames spread from 60 bytes to full size.
 */
static size_t
pick_size(size_t max)
{
	size_t n;

	switch (below(10)) {
	case 0: case 1: case 2: case 3:
		n = below(65);
		break;
	case 4: case 5: case 6:
		n = between(64, 600);
		break;
	case 7: case 8:
		n = between(600, 1500);
		break;
	default:
		n = max;
		break;
	}
	return n < max ? n : max;
}

/* Addresses. */

static void
mac_unicast(uint8_t mac[6])
{
	rnd_fill(mac, 6);
	/* Locally administered, not multicast: clearly a test address. */
	mac[0] = (mac[0] & 0xfc) | 0x02;
}

/* A host address from the private ranges, network order. */
static uint32_t
ip4_host(void)
{
	uint32_t a;

	switch (below(3)) {
	case 0:
		a = 10u << 24 | below(1u << 24);
		break;
	case 1:
		a = 192u << 24 | 168u << 16 | below(1u << 16);
		break;
	default:
		a = 172u << 24 | between(16, 31) << 16 | below(1u << 16);
		break;
	}
	/* Keep off .0 and .255 so unicast looks unicast. */
	if ((a & 0xff) == 0 || (a & 0xff) == 0xff)
		a = (a & ~0xffu) | between(1, 254);
	return htonl(a);
}

/* Global-looking unicast from the documentation prefix 2001:db8::/32. */
static void
ip6_host(uint8_t a[16])
{
	memset(a, 0, 16);
	a[0] = 0x20;
	a[1] = 0x01;
	a[2] = 0x0d;
	a[3] = 0xb8;
	rnd_fill(a + 4, 4);
	if (chance(50))
		rnd_fill(a + 8, 8);	/* SLAAC-like interface id */
	else
		a[15] = between(1, 254);	/* ::1-style */
}

static void
ip6_linklocal(uint8_t a[16], const uint8_t mac[6])
{
	memset(a, 0, 16);
	a[0] = 0xfe;
	a[1] = 0x80;
	/* Modified EUI-64 from the MAC, as a real host would have. */
	a[8] = mac[0] ^ 0x02;
	a[9] = mac[1];
	a[10] = mac[2];
	a[11] = 0xff;
	a[12] = 0xfe;
	a[13] = mac[3];
	a[14] = mac[4];
	a[15] = mac[5];
}

/* Destination MAC for an IPv4 destination: multicast maps, rest random. */
static void
mac_for_ip4(uint8_t mac[6], uint32_t dst)
{
	uint32_t h = ntohl(dst);

	if (h == 0xffffffff || (h & 0xff) == 0xff) {
		memset(mac, 0xff, 6);
	} else if ((h >> 28) == 0xe) {
		mac[0] = 0x01;
		mac[1] = 0x00;
		mac[2] = 0x5e;
		mac[3] = (h >> 16) & 0x7f;
		mac[4] = h >> 8;
		mac[5] = h;
	} else
		mac_unicast(mac);
}

static void
mac_for_ip6(uint8_t mac[6], const uint8_t dst[16])
{
	if (dst[0] == 0xff) {
		mac[0] = 0x33;
		mac[1] = 0x33;
		memcpy(mac + 2, dst + 12, 4);
	} else
		mac_unicast(mac);
}

/* Layer 2. */

/* Write an Ethernet header; return where the payload goes. */
static uint8_t *
put_eth(uint8_t *f, const uint8_t dst[6], const uint8_t src[6],
    uint16_t type)
{
	struct eth_hdr *eth = (struct eth_hdr *)f;

	memcpy(eth->dst, dst, 6);
	memcpy(eth->src, src, 6);
	eth->type = htons(type);
	return f + SNB_ETH_HLEN;
}

/*
 * Insert a VLAN tag right after the MAC addresses: the frame's type
 * field becomes tpid and the old type moves behind the TCI.  Applying it
 * twice gives QinQ, the second tag outermost.
 */
static void
add_tag(struct frame *fr, uint16_t tpid, uint16_t tci)
{
	memmove(fr->data + 16, fr->data + 12, fr->len - 12);
	put16(fr->data + 12, tpid);
	put16(fr->data + 14, tci);
	fr->len += SNB_VLAN_HLEN;
}

/* Layer 4 payloads. */

/*
 * Ports.  Wireshark picks a dissector by port (the lower one first) and
 * then by heuristics on the payload.  Opaque payloads are meant to stay
 * plain data, so client and "random" server ports come from ranges no
 * dissector registers for (as of Wireshark 4.0), and opaque payloads
 * start with a fixed ASCII tag that no heuristic takes for a header.
 */
static uint16_t
port_client(void)
{
	return between(32768, 34899);
}

static uint16_t
port_opaque(void)
{
	return between(30300, 31999);
}

/* UDP ports 5000-6000 that Wireshark decodes as something specific. */
static bool
udp_port_claimed(uint16_t port)
{
	static const uint16_t claimed[] = {
		5000, 5001, 5031, 5050, 5060, 5072, 5094, 5246, 5247, 5264,
		5265, 5350, 5351, 5353, 5355, 5404, 5405, 5436, 5555, 5567,
		5678, 5683, 5684, 5868,
	};
	size_t i;

	for (i = 0; i < sizeof(claimed) / sizeof(claimed[0]); i++)
		if (claimed[i] == port)
			return true;
	return false;
}

static void
fill_opaque(uint8_t *p, size_t len)
{
	/* Exactly 8 bytes, no terminating NUL: it is not used as a string. */
	static const char tag[8] = "mkpcap--";

	rnd_fill(p, len);
	memcpy(p, tag, len < sizeof(tag) ? len : sizeof(tag));
}

static const char *const dns_names[] = {
	"\3www\7example\3com", "\4mail\7example\3org", "\3snb\4test",
	"\4ntp1\4corp\7example", "\5video\3cdn\7example\3net",
	"\7printer\5local\4test",
};

/*
 * A DNS query or its answer (A or AAAA), well-formed so dissectors see
 * DNS, not garbage.
 */
static size_t
put_dns(uint8_t *p, bool response)
{
	const char *name = PICK(dns_names);
	size_t nlen = strlen(name) + 1, n;
	bool aaaa = chance(30);

	put16(p, below(65536));			/* id */
	put16(p + 2, response ? 0x8180 : 0x0100);	/* RD (+QR, RA) */
	put16(p + 4, 1);			/* questions */
	put16(p + 6, response ? 1 : 0);		/* answers */
	put16(p + 8, 0);
	put16(p + 10, 0);
	memcpy(p + 12, name, nlen);
	n = 12 + nlen;
	put16(p + n, aaaa ? 28 : 1);
	put16(p + n + 2, 1);			/* class IN */
	n += 4;
	if (response) {
		put16(p + n, 0xc00c);		/* name: pointer to question */
		put16(p + n + 2, aaaa ? 28 : 1);
		put16(p + n + 4, 1);
		put32(p + n + 6, between(30, 86400));
		put16(p + n + 10, aaaa ? 16 : 4);
		n += 12;
		if (aaaa)
			ip6_host(p + n);
		else {
			uint32_t a = ip4_host();

			memcpy(p + n, &a, 4);
		}
		n += aaaa ? 16 : 4;
	}
	return n;
}

/* An NTPv4 client request or server reply, 48 bytes. */
static size_t
put_ntp(uint8_t *p, bool response)
{
	/* Seconds since 1900, somewhere in late 2023. */
	uint32_t now = 3908000000u + below(1000000);

	memset(p, 0, 48);
	p[0] = 4 << 3 | (response ? 4 : 3);	/* LI 0, VN 4, mode */
	if (response) {
		p[1] = 2;			/* stratum */
		p[2] = 6;			/* poll */
		p[3] = 0xe9;			/* precision -23 */
		put32(p + 4, below(0x800));	/* root delay */
		put32(p + 8, below(0x800));	/* root dispersion */
		put32(p + 12, ip4_host());	/* reference id */
		put32(p + 16, now - 64);	/* reference */
		put32(p + 24, now);		/* origin */
		put32(p + 28, (uint32_t)rnd());
		put32(p + 32, now);		/* receive */
		put32(p + 36, (uint32_t)rnd());
	}
	put32(p + 40, now);			/* transmit */
	put32(p + 44, (uint32_t)rnd());
	return 48;
}

/* An HTTP request or response head plus body, clipped to max. */
static size_t
put_http(uint8_t *p, size_t max, bool response)
{
	static const char *const paths[] = {
		"/", "/index.html", "/api/v1/status", "/img/logo.png",
	};
	char head[256];
	size_t hlen, body;

	body = pick_size(max > 200 ? max - 200 : 0);
	if (response)
		hlen = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\n"
		    "Content-Type: application/octet-stream\r\n"
		    "Content-Length: %zu\r\n\r\n", body);
	else {
		hlen = snprintf(head, sizeof(head), "GET %s HTTP/1.1\r\n"
		    "Host: www.example.com\r\nUser-Agent: mkpcap\r\n\r\n",
		    PICK(paths));
		body = 0;
	}
	if (hlen > max)
		hlen = max;
	memcpy(p, head, hlen);
	if (hlen + body > max)
		body = max - hlen;
	rnd_fill(p + hlen, body);
	return hlen + body;
}

/* TLS application data records: what most port 443 segments carry. */
static size_t
put_tls(uint8_t *p, size_t len)
{
	if (len < 6)
		return 0;
	p[0] = 23;				/* application_data */
	put16(p + 1, 0x0303);
	put16(p + 3, len - 5);
	rnd_fill(p + 5, len - 5);
	return len;
}

/*
 * SSH: the version banner, or what follows key exchange: a length, then
 * ciphertext and MAC, here random but never shorter than a real one.
 */
static size_t
put_ssh(uint8_t *p, size_t max)
{
	static const char *const banners[] = {
		"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", "SSH-2.0-mkpcap_1.0\r\n",
	};
	const char *b;
	size_t n;

	if (chance(20)) {
		b = PICK(banners);
		n = strlen(b) < max ? strlen(b) : max;
		memcpy(p, b, n);
		return n;
	}
	n = pick_size(max);
	if (n < 52)
		n = 52 < max ? 52 : max;
	rnd_fill(p, n);
	put32(p, (n - 4 - 16) & ~(size_t)7);	/* packet length sans MAC */
	return n;
}

/*
 * A TCP segment between a client and a well-known or random server
 * port, in either direction, with a plausible flag combination; SYNs
 * carry the usual options.  At most maxlen bytes.  Checksum left zero.
 */
static size_t
put_tcp(uint8_t *l4, size_t maxlen)
{
	static const uint16_t servers[] = { 22, 80, 443, 443, 0 };
	static const uint8_t flagsets[] = {
		SNB_TCP_SYN, SNB_TCP_SYN | SNB_TCP_ACK, SNB_TCP_ACK,
		SNB_TCP_ACK, SNB_TCP_PSH | SNB_TCP_ACK,
		SNB_TCP_PSH | SNB_TCP_ACK, SNB_TCP_FIN | SNB_TCP_ACK,
		SNB_TCP_FIN | SNB_TCP_PSH | SNB_TCP_ACK, SNB_TCP_RST,
		SNB_TCP_RST | SNB_TCP_ACK,
		SNB_TCP_SYN | SNB_TCP_ECE | SNB_TCP_CWR,
		SNB_TCP_URG | SNB_TCP_PSH | SNB_TCP_ACK,
	};
	struct tcp_hdr *th = (struct tcp_hdr *)l4;
	uint16_t server = PICK(servers), client = port_client();
	bool to_server = chance(55);
	uint8_t *opt = l4 + SNB_TCP_HLEN;
	size_t olen = 0, plen = 0, room;

	if (server == 0)
		server = port_opaque();
	memset(th, 0, sizeof(*th));
	th->sport = htons(to_server ? client : server);
	th->dport = htons(to_server ? server : client);
	th->seq = htonl((uint32_t)rnd());
	th->flags = PICK(flagsets);
	if (th->flags & SNB_TCP_ACK)
		th->ack = htonl((uint32_t)rnd());
	th->win = htons(chance(80) ? between(1024, 65535) : 0);

	if (th->flags & SNB_TCP_SYN) {
		/* MSS, window scale, SACK permitted: 12 bytes. */
		opt[0] = SNB_TCPOPT_MSS;
		opt[1] = 4;
		put16(opt + 2, PICK(((const uint16_t[]){ 1460, 1440, 536 })));
		opt[4] = SNB_TCPOPT_NOP;
		opt[5] = 3;			/* window scale */
		opt[6] = 3;
		opt[7] = below(10);
		opt[8] = SNB_TCPOPT_NOP;
		opt[9] = SNB_TCPOPT_NOP;
		opt[10] = 4;			/* SACK permitted */
		opt[11] = 2;
		olen = 12;
	} else if (chance(40)) {
		/* Timestamps, NOP-aligned: 12 bytes. */
		opt[0] = SNB_TCPOPT_NOP;
		opt[1] = SNB_TCPOPT_NOP;
		opt[2] = 8;
		opt[3] = 10;
		put32(opt + 4, (uint32_t)rnd());
		put32(opt + 8, (uint32_t)rnd());
		olen = 12;
	}
	th->off = (SNB_TCP_HLEN + olen) / 4 << 4;

	room = maxlen - SNB_TCP_HLEN - olen;
	if (!(th->flags & (SNB_TCP_SYN | SNB_TCP_RST))) {
		uint8_t *pay = opt + olen;

		if (server == 80)
			plen = put_http(pay, room, !to_server);
		else if (server == 443)
			plen = put_tls(pay, pick_size(room));
		else if (server == 22)
			plen = put_ssh(pay, room);
		else {
			plen = pick_size(room);
			fill_opaque(pay, plen);
		}
		if (th->flags & SNB_TCP_URG)
			th->urp = htons(plen ? between(1, plen) : 0);
	}
	return SNB_TCP_HLEN + olen + plen;
}

/* A UDP datagram (DNS, NTP, or opaque payload); at most maxlen bytes. */
static size_t
put_udp(uint8_t *l4, size_t maxlen)
{
	struct udp_hdr *uh = (struct udp_hdr *)l4;
	uint8_t *pay = l4 + SNB_UDP_HLEN;
	uint16_t server, client = port_client();
	bool to_server = chance(55);
	size_t plen;

	switch (below(5)) {
	case 0:
		server = 53;
		plen = put_dns(pay, !to_server);
		break;
	case 1:
		server = 123;
		plen = put_ntp(pay, !to_server);
		break;
	case 2:
	case 3:
		do
			server = between(5000, 6000);
		while (udp_port_claimed(server));
		plen = pick_size(maxlen - SNB_UDP_HLEN);
		fill_opaque(pay, plen);
		break;
	default:
		server = port_opaque();
		plen = pick_size(maxlen - SNB_UDP_HLEN);
		fill_opaque(pay, plen);
		break;
	}
	uh->sport = htons(to_server ? client : server);
	uh->dport = htons(to_server ? server : client);
	uh->len = htons(SNB_UDP_HLEN + plen);
	uh->cksum = 0;
	return SNB_UDP_HLEN + plen;
}

/* A UDP datagram of exactly len bytes to a random port. */
static size_t
put_udp_len(uint8_t *l4, size_t len)
{
	struct udp_hdr *uh = (struct udp_hdr *)l4;

	uh->sport = htons(port_client());
	uh->dport = htons(port_opaque());
	uh->len = htons(len);
	uh->cksum = 0;
	fill_opaque(l4 + SNB_UDP_HLEN, len - SNB_UDP_HLEN);
	return len;
}

/* Echo request or reply with a ping(8)-style payload. */
static size_t
put_echo(uint8_t *l4, bool v6, bool reply, size_t plen)
{
	struct icmpv4_hdr *ic = (struct icmpv4_hdr *)l4;
	size_t i;

	if (v6)
		ic->type = reply ? SNB_ICMP6_ECHO_REPLY :
		    SNB_ICMP6_ECHO_REQUEST;
	else
		ic->type = reply ? SNB_ICMP_ECHO_REPLY :
		    SNB_ICMP_ECHO_REQUEST;
	ic->code = 0;
	ic->cksum = 0;
	ic->echo.id = htons(below(65536));
	ic->echo.seq = htons(below(2000));
	for (i = 0; i < plen; i++)
		l4[SNB_ICMP_HLEN + i] = 0x10 + i;
	return SNB_ICMP_HLEN + plen;
}

/* Layer 3. */

/*
 * Complete the IPv4 header at ip whose L4 payload (l4len bytes) already
 * sits after hlen bytes of header (options included, also in place), and
 * fill in the L4 and header checksums.  Returns the packet length.
 */
static size_t
ip4_finish(uint8_t *ipp, size_t hlen, size_t l4len, uint8_t proto,
    uint32_t src, uint32_t dst)
{
	struct ipv4_hdr *ip = (struct ipv4_hdr *)ipp;
	uint8_t *l4 = ipp + hlen;
	uint16_t ck;

	ip->ver_ihl = SNB_IPV4_VERSION << 4 | hlen / 4;
	ip->tos = PICK(((const uint8_t[]){ 0, 0, 0, 0x10, 0xb8, 0x02 }));
	ip->len = htons(hlen + l4len);
	ip->id = htons(below(65536));
	ip->frag_off = htons(proto == SNB_IPPROTO_TCP || chance(30) ?
	    SNB_IP_DF : 0);
	ip->ttl = PICK(((const uint8_t[]){
	    64, 64, 64, 64, 128, 128, 255, 63, 32, 1 }));
	ip->proto = proto;
	ip->src = src;
	ip->dst = dst;
	switch (proto) {
	case SNB_IPPROTO_TCP:
	case SNB_IPPROTO_UDP:
	case SNB_IPPROTO_ICMP:
	case SNB_IPPROTO_IGMP:
		/* IGMP has no pseudo-header either; sum it like ICMP. */
		ck = ipv4_l4_cksum(ip, l4, l4len, proto == SNB_IPPROTO_IGMP ?
		    SNB_IPPROTO_ICMP : proto);
		memcpy(l4 + (proto == SNB_IPPROTO_TCP ? 16 :
		    proto == SNB_IPPROTO_UDP ? 6 : 2), &ck, 2);
		break;
	}
	ip->cksum = ipv4_header_cksum(ip);
	return hlen + l4len;
}

/*
 * As ip4_finish() for IPv6.  The upper-layer header, of protocol proto,
 * sits at ip6 + hlen, after any extension headers (whose chain the caller
 * built; `first` is the next-header value for the fixed header).
 */
static size_t
ip6_finish(uint8_t *ipp, size_t hlen, size_t l4len, uint8_t first,
    uint8_t proto, const uint8_t src[16], const uint8_t dst[16],
    uint8_t hop_limit)
{
	struct ipv6_hdr *ip6 = (struct ipv6_hdr *)ipp;
	uint8_t *l4 = ipp + hlen;
	uint16_t ck;

	ip6->ver_tc_flow = htonl(SNB_IPV6_VERSION << 28 |
	    (chance(20) ? 0xb8u << 20 : 0) | below(1u << 20));
	ip6->plen = htons(hlen - SNB_IPV6_HLEN + l4len);
	ip6->next = first;
	ip6->hop_limit = hop_limit;
	memcpy(ip6->src, src, 16);
	memcpy(ip6->dst, dst, 16);
	switch (proto) {
	case SNB_IPPROTO_TCP:
	case SNB_IPPROTO_UDP:
	case SNB_IPPROTO_ICMPV6:
		ck = ipv6_l4_cksum(ip6, l4, l4len, proto);
		memcpy(l4 + (proto == SNB_IPPROTO_TCP ? 16 :
		    proto == SNB_IPPROTO_UDP ? 6 : 2), &ck, 2);
		break;
	}
	return hlen + l4len;
}

/*
 * A plain IPv4 packet (TCP, UDP or ICMP echo) at ip, at most maxlen
 * bytes; the building block for several kinds.
 */
static size_t
ip4_simple(uint8_t *ip, size_t maxlen, uint8_t proto, uint32_t src,
    uint32_t dst)
{
	size_t room = maxlen - SNB_IPV4_HLEN, l4len;
	uint8_t *l4 = ip + SNB_IPV4_HLEN;

	switch (proto) {
	case SNB_IPPROTO_TCP:
		l4len = put_tcp(l4, room);
		break;
	case SNB_IPPROTO_UDP:
		l4len = put_udp(l4, room);
		break;
	default:
		l4len = put_echo(l4, false, chance(50),
		    chance(70) ? 56 : pick_size(room - SNB_ICMP_HLEN));
		break;
	}
	return ip4_finish(ip, SNB_IPV4_HLEN, l4len, proto, src, dst);
}

static size_t
ip6_simple(uint8_t *ip, size_t maxlen, uint8_t proto, const uint8_t src[16],
    const uint8_t dst[16])
{
	size_t room = maxlen - SNB_IPV6_HLEN, l4len;
	uint8_t *l4 = ip + SNB_IPV6_HLEN;

	switch (proto) {
	case SNB_IPPROTO_TCP:
		l4len = put_tcp(l4, room);
		break;
	case SNB_IPPROTO_UDP:
		l4len = put_udp(l4, room);
		break;
	default:
		proto = SNB_IPPROTO_ICMPV6;
		l4len = put_echo(l4, true, chance(50),
		    chance(70) ? 56 : pick_size(room - SNB_ICMP6_HLEN));
		break;
	}
	return ip6_finish(ip, SNB_IPV6_HLEN, l4len, proto, proto, src, dst,
	    PICK(((const uint8_t[]){ 64, 64, 128, 255, 1 })));
}

/* Frame kinds.  Each fills out[] and returns how many frames it made. */

static const uint8_t l4_protos[] = {
	SNB_IPPROTO_TCP, SNB_IPPROTO_TCP, SNB_IPPROTO_UDP, SNB_IPPROTO_UDP,
	SNB_IPPROTO_ICMP,
};

static int
k_ipv4(struct frame *fr, uint8_t proto)
{
	uint8_t dmac[6], smac[6], *ip;
	uint32_t src = ip4_host(), dst = ip4_host();

	mac_unicast(smac);
	mac_unicast(dmac);
	ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV4);
	fr->len = SNB_ETH_HLEN + ip4_simple(ip, SNB_ETH_DATA_LEN, proto, src,
	    dst);
	return 1;
}

static int
k_tcp4(void)
{
	return k_ipv4(&out[0], SNB_IPPROTO_TCP);
}

static int
k_udp4(void)
{
	return k_ipv4(&out[0], SNB_IPPROTO_UDP);
}

static int
k_ipv6(struct frame *fr, uint8_t proto)
{
	uint8_t dmac[6], smac[6], src[16], dst[16], *ip;

	mac_unicast(smac);
	mac_unicast(dmac);
	ip6_host(src);
	ip6_host(dst);
	ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV6);
	fr->len = SNB_ETH_HLEN + ip6_simple(ip, SNB_ETH_DATA_LEN, proto, src,
	    dst);
	return 1;
}

static int
k_tcp6(void)
{
	return k_ipv6(&out[0], SNB_IPPROTO_TCP);
}

static int
k_udp6(void)
{
	return k_ipv6(&out[0], SNB_IPPROTO_UDP);
}

/*
 * ICMPv4: echo request/reply, or an error (unreachable, fragmentation
 * needed, time exceeded) quoting the offending packet: its header and
 * either 8 bytes of payload (RFC 792) or more (RFC 1812).
 */
static int
k_icmp4(void)
{
	struct frame *fr = &out[0];
	struct icmpv4_hdr *ic;
	uint8_t dmac[6], smac[6], orig[SNB_ETH_FRAME_LEN], *ip, *l4;
	uint32_t src = ip4_host(), dst = ip4_host();
	size_t olen, qlen, l4len;

	mac_unicast(smac);
	mac_unicast(dmac);
	ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV4);
	if (chance(50)) {
		fr->len = SNB_ETH_HLEN + ip4_simple(ip, SNB_ETH_DATA_LEN,
		    SNB_IPPROTO_ICMP, src, dst);
		return 1;
	}

	/* The quoted packet went from dst towards some third host. */
	olen = ip4_simple(orig, 600, chance(60) ? SNB_IPPROTO_UDP :
	    SNB_IPPROTO_TCP, dst, ip4_host());
	qlen = chance(50) ? SNB_IPV4_HLEN + 8 : olen;
	if (qlen > olen)
		qlen = olen;
	l4 = ip + SNB_IPV4_HLEN;
	ic = (struct icmpv4_hdr *)l4;
	memset(ic, 0, sizeof(*ic));
	switch (below(5)) {
	case 0:
		ic->type = SNB_ICMP_DEST_UNREACH;
		ic->code = SNB_ICMP_UNREACH_PORT;
		break;
	case 1:
		ic->type = SNB_ICMP_DEST_UNREACH;
		ic->code = SNB_ICMP_UNREACH_HOST;
		break;
	case 2:
		ic->type = SNB_ICMP_DEST_UNREACH;
		ic->code = SNB_ICMP_UNREACH_NEEDFRAG;
		ic->frag.mtu = htons(PICK(((const uint16_t[]){
		    1480, 1400, 1280, 576 })));
		break;
	case 3:
		ic->type = SNB_ICMP_DEST_UNREACH;
		ic->code = SNB_ICMP_UNREACH_ADMIN;
		break;
	default:
		ic->type = SNB_ICMP_TIME_EXCEEDED;
		ic->code = SNB_ICMP_TIMXCEED_TTL;
		orig[8] = 1;			/* it ran out of TTL */
		((struct ipv4_hdr *)orig)->cksum = ipv4_header_cksum(orig);
		break;
	}
	memcpy(l4 + SNB_ICMP_HLEN, orig, qlen);
	l4len = SNB_ICMP_HLEN + qlen;
	fr->len = SNB_ETH_HLEN + ip4_finish(ip, SNB_IPV4_HLEN, l4len,
	    SNB_IPPROTO_ICMP, src, dst);
	return 1;
}

/*
 * IPv4 with options (ihl 6..15): router alert, record route or timestamp,
 * padded with NOP/EOL to a 4-byte boundary.
 */
static int
k_ipopt(void)
{
	struct frame *fr = &out[0];
	uint8_t dmac[6], smac[6], *ip, *opt, *l4;
	uint32_t src = ip4_host(), dst = ip4_host(), a;
	size_t olen, n, i, l4len;
	uint8_t proto;

	mac_unicast(smac);
	mac_unicast(dmac);
	ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV4);
	opt = ip + SNB_IPV4_HLEN;
	switch (below(3)) {
	case 0:
		opt[0] = SNB_IPOPT_RA;
		opt[1] = 4;
		opt[2] = opt[3] = 0;
		olen = 4;
		break;
	case 1:
		/* Record route with n slots, the first few filled. */
		n = between(1, 9);
		opt[0] = SNB_IPOPT_RR;
		opt[1] = 3 + 4 * n;
		memset(opt + 3, 0, 4 * n);
		i = below(n + 1);
		opt[2] = 4 + 4 * i;
		while (i-- > 0) {
			a = ip4_host();
			memcpy(opt + 3 + 4 * i, &a, 4);
		}
		olen = 3 + 4 * n;
		break;
	default:
		/* Timestamps only (flag 0), n slots, some filled. */
		n = between(1, 9);
		opt[0] = SNB_IPOPT_TS;
		opt[1] = 4 + 4 * n;
		memset(opt + 4, 0, 4 * n);
		i = below(n + 1);
		opt[2] = 5 + 4 * i;
		opt[3] = 0;
		while (i-- > 0)
			put32(opt + 4 + 4 * i, between(0, 86399999));
		olen = 4 + 4 * n;
		break;
	}
	/* A NOP sometimes leads; an EOL and zeros fill to 4 bytes. */
	if (olen % 4 != 0) {
		memset(opt + olen, SNB_IPOPT_EOL, 4 - olen % 4);
		olen += 4 - olen % 4;
	} else if (olen <= 36 && chance(30)) {
		memmove(opt + 4, opt, olen);
		memset(opt, SNB_IPOPT_NOP, 4);
		olen += 4;
	}
	l4 = opt + olen;
	proto = PICK(l4_protos);
	if (proto == SNB_IPPROTO_TCP)
		l4len = put_tcp(l4, 600);
	else if (proto == SNB_IPPROTO_UDP)
		l4len = put_udp(l4, 600);
	else
		l4len = put_echo(l4, false, chance(50), 56);
	fr->len = SNB_ETH_HLEN + ip4_finish(ip, SNB_IPV4_HLEN + olen, l4len,
	    proto, src, dst);
	return 1;
}

/*
 * IGMPv2 membership report (with the router alert option routers
 * expect) or a UDP datagram, to an IPv4 multicast group or to a
 * broadcast address.
 */
static int
k_mcast4(void)
{
	struct frame *fr = &out[0];
	uint8_t dmac[6], smac[6], *ip, *l4;
	uint32_t src = ip4_host(), dst;
	size_t l4len;

	switch (below(4)) {
	case 0:
		dst = htonl(0xffffffff);
		break;
	case 1:
		dst = htonl(192u << 24 | 168u << 16 | between(0, 255) << 8 |
		    255);
		break;
	default:
		dst = htonl(239u << 24 | below(1u << 24));
		break;
	}
	mac_unicast(smac);
	mac_for_ip4(dmac, dst);
	ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV4);
	if ((ntohl(dst) >> 28) == 0xe && chance(40)) {
		ip[20] = SNB_IPOPT_RA;
		ip[21] = 4;
		ip[22] = ip[23] = 0;
		l4 = ip + 24;
		l4[0] = 0x16;			/* v2 membership report */
		l4[1] = 0;
		l4[2] = l4[3] = 0;
		memcpy(l4 + 4, &dst, 4);
		fr->len = SNB_ETH_HLEN + ip4_finish(ip, 24, 8,
		    SNB_IPPROTO_IGMP, src, dst);
		ip[8] = 1;			/* TTL 1, as for all IGMP */
		((struct ipv4_hdr *)ip)->cksum = ipv4_header_cksum(ip);
		return 1;
	}
	l4 = ip + SNB_IPV4_HLEN;
	l4len = put_udp_len(l4, SNB_UDP_HLEN + pick_size(1000));
	fr->len = SNB_ETH_HLEN + ip4_finish(ip, SNB_IPV4_HLEN, l4len,
	    SNB_IPPROTO_UDP, src, dst);
	return 1;
}

/*
 * Split the IPv4 packet (no options) of frame `whole` into fragments for
 * a link of the given MTU, as frames into fr[]; returns how many.
 */
static int
fragment4(const struct frame *whole, size_t mtu, struct frame *fr, int max)
{
	const uint8_t *ip = whole->data + SNB_ETH_HLEN;
	size_t total = whole->len - SNB_ETH_HLEN - SNB_IPV4_HLEN;
	size_t chunk = (mtu - SNB_IPV4_HLEN) & ~(size_t)7, off, n;
	struct ipv4_hdr *fip;
	int i;

	for (i = 0, off = 0; off < total && i < max; i++, off += n) {
		n = total - off < chunk ? total - off : chunk;
		memcpy(fr[i].data, whole->data, SNB_ETH_HLEN + SNB_IPV4_HLEN);
		memcpy(fr[i].data + SNB_ETH_HLEN + SNB_IPV4_HLEN,
		    ip + SNB_IPV4_HLEN + off, n);
		fip = (struct ipv4_hdr *)(fr[i].data + SNB_ETH_HLEN);
		fip->len = htons(SNB_IPV4_HLEN + n);
		fip->frag_off = htons((off + n < total ? SNB_IP_MF : 0) |
		    off / 8);
		fip->cksum = ipv4_header_cksum(fip);
		fr[i].len = SNB_ETH_HLEN + SNB_IPV4_HLEN + n;
	}
	return i;
}

/*
 * Move the chosen fragments to the front of out[]: the whole train (in
 * order or reversed), or only the first, or one later fragment alone.
 */
static int
pick_fragments(struct frame *fr, int n)
{
	static struct frame tmp;
	int i, k;

	if (n < 2)
		return n;
	switch (below(4)) {
	case 0:
	case 1:
		if (chance(25))
			for (i = 0; i < n / 2; i++) {
				tmp = fr[i];
				fr[i] = fr[n - 1 - i];
				fr[n - 1 - i] = tmp;
			}
		return n;
	case 2:
		return 1;
	default:
		k = between(1, n - 1);
		fr[0] = fr[k];
		return 1;
	}
}

/* An IPv4 UDP or ICMP datagram of 1600-4000 bytes, fragmented. */
static int
k_frag4(void)
{
	static struct frame whole;
	uint8_t dmac[6], smac[6], *ip, *l4;
	uint32_t src = ip4_host(), dst = ip4_host();
	size_t l4len = between(1600, 4000), mtu;
	uint8_t proto = chance(70) ? SNB_IPPROTO_UDP : SNB_IPPROTO_ICMP;
	int n;

	mac_unicast(smac);
	mac_unicast(dmac);
	ip = put_eth(whole.data, dmac, smac, SNB_ETH_IPV4);
	l4 = ip + SNB_IPV4_HLEN;
	if (proto == SNB_IPPROTO_UDP)
		put_udp_len(l4, l4len);
	else
		put_echo(l4, false, false, l4len - SNB_ICMP_HLEN);
	whole.len = SNB_ETH_HLEN + ip4_finish(ip, SNB_IPV4_HLEN, l4len,
	    proto, src, dst);
	/* Fragments never carry DF. */
	((struct ipv4_hdr *)ip)->frag_off = 0;
	mtu = PICK(((const size_t[]){ 1500, 1500, 1280, 576 }));
	n = fragment4(&whole, mtu, out, TRAIN_MAX);
	return pick_fragments(out, n);
}

/*
 * IPv6 fragments: the UDP or ICMPv6 datagram is split behind a fragment
 * header (RFC 8200 4.5), then handled like k_frag4's.
 */
static int
k_frag6(void)
{
	static uint8_t whole[4096 + SNB_IPV6_HLEN];
	uint8_t dmac[6], smac[6], src[16], dst[16], *l4;
	size_t l4len = between(1500, 4000), chunk, off, n;
	uint8_t proto = chance(70) ? SNB_IPPROTO_UDP : SNB_IPPROTO_ICMPV6;
	uint32_t id = (uint32_t)rnd();
	struct ipv6_frag_hdr *fh;
	struct ipv6_hdr *ip6;
	struct frame *fr;
	int i;

	mac_unicast(smac);
	mac_unicast(dmac);
	ip6_host(src);
	ip6_host(dst);
	l4 = whole + SNB_IPV6_HLEN;
	if (proto == SNB_IPPROTO_UDP)
		put_udp_len(l4, l4len);
	else
		put_echo(l4, true, false, l4len - SNB_ICMP6_HLEN);
	ip6_finish(whole, SNB_IPV6_HLEN, l4len, proto, proto, src, dst, 64);

	chunk = (PICK(((const size_t[]){ 1500, 1280 })) - SNB_IPV6_HLEN -
	    SNB_IPV6_FRAG_HLEN) & ~(size_t)7;
	for (i = 0, off = 0; off < l4len && i < TRAIN_MAX; i++, off += n) {
		fr = &out[i];
		n = l4len - off < chunk ? l4len - off : chunk;
		ip6 = (struct ipv6_hdr *)put_eth(fr->data, dmac, smac,
		    SNB_ETH_IPV6);
		memcpy(ip6, whole, SNB_IPV6_HLEN);
		ip6->next = SNB_IPPROTO_FRAGMENT;
		ip6->plen = htons(SNB_IPV6_FRAG_HLEN + n);
		fh = (struct ipv6_frag_hdr *)(ip6 + 1);
		fh->next = proto;
		fh->reserved = 0;
		fh->off_m = htons(off | (off + n < l4len ? SNB_IP6F_MORE : 0));
		fh->id = htonl(id);
		memcpy(fh + 1, l4 + off, n);
		fr->len = SNB_ETH_HLEN + SNB_IPV6_HLEN + SNB_IPV6_FRAG_HLEN + n;
	}
	return pick_fragments(out, i);
}

/*
 * IPv6 with a hop-by-hop options header (router alert or padding) and
 * sometimes a destination options header after it, then UDP, TCP or
 * ICMPv6 echo.
 */
static int
k_ext6(void)
{
	struct frame *fr = &out[0];
	uint8_t dmac[6], smac[6], src[16], dst[16], *ip, *ext, *l4;
	uint8_t proto = PICK(l4_protos);
	size_t elen, l4len;
	bool dstopts = chance(30);

	if (proto == SNB_IPPROTO_ICMP)
		proto = SNB_IPPROTO_ICMPV6;
	mac_unicast(smac);
	ip6_host(src);
	ip6_host(dst);
	mac_for_ip6(dmac, dst);
	ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV6);
	ext = ip + SNB_IPV6_HLEN;
	/* Hop-by-hop, 8 bytes: one option padded out with PadN. */
	ext[0] = dstopts ? SNB_IPPROTO_DSTOPTS : proto;
	ext[1] = 0;
	if (chance(50)) {
		ext[2] = SNB_IP6OPT_RTALERT;
		ext[3] = 2;
		ext[4] = ext[5] = 0;		/* MLD */
		ext[6] = SNB_IP6OPT_PADN;
		ext[7] = 0;
	} else {
		ext[2] = SNB_IP6OPT_PADN;
		ext[3] = 4;
		memset(ext + 4, 0, 4);
	}
	elen = 8;
	if (dstopts) {
		/* Destination options, 16 bytes of padding. */
		ext[8] = proto;
		ext[9] = 1;
		ext[10] = SNB_IP6OPT_PADN;
		ext[11] = 12;
		memset(ext + 12, 0, 12);
		elen += 16;
	}
	l4 = ext + elen;
	if (proto == SNB_IPPROTO_TCP)
		l4len = put_tcp(l4, 1000);
	else if (proto == SNB_IPPROTO_UDP)
		l4len = put_udp(l4, 1000);
	else
		l4len = put_echo(l4, true, chance(50), 56);
	fr->len = SNB_ETH_HLEN + ip6_finish(ip, SNB_IPV6_HLEN + elen, l4len,
	    SNB_IPPROTO_HOPOPTS, proto, src, dst, 64);
	return 1;
}

/*
 * ICMPv6: echo (often), neighbour solicitation (also DAD) and
 * advertisement, router solicitation, and errors quoting the packet that
 * caused them (packet too big, unreachable incl. the lwAFTR's "source
 * address failed policy", time exceeded), within the 1280-byte minimum
 * MTU.
 */
static int
k_icmp6(void)
{
	struct frame *fr = &out[0];
	uint8_t dmac[6] = { 0 }, smac[6], src[16], dst[16], tgt[16], tmac[6];
	uint8_t orig[SNB_ETH_DATA_LEN], *ip, *l4;
	struct icmpv6_hdr *ic;
	size_t l4len = 0, olen;
	uint8_t hlim = 255;

	mac_unicast(smac);
	ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV6);	/* dmac later */
	l4 = ip + SNB_IPV6_HLEN;
	ic = (struct icmpv6_hdr *)l4;
	memset(ic, 0, sizeof(*ic));
	switch (below(8)) {
	case 0:
	case 1:
		ip6_host(src);
		ip6_host(dst);
		l4len = put_echo(l4, true, chance(50), chance(70) ? 56 :
		    pick_size(1400));
		hlim = 64;
		break;
	case 2:
	case 3:
		/* Neighbour solicitation to the solicited-node group. */
		mac_unicast(tmac);
		ip6_linklocal(tgt, tmac);
		if (chance(80))
			ip6_linklocal(src, smac);
		else
			memset(src, 0, 16);	/* DAD: from :: */
		memset(dst, 0, 16);
		dst[0] = 0xff;
		dst[1] = 0x02;
		dst[11] = 0x01;
		dst[12] = 0xff;
		memcpy(dst + 13, tgt + 13, 3);
		ic->type = SNB_ICMP6_NEIGHBOR_SOLICIT;
		memcpy(l4 + 8, tgt, 16);
		l4len = 24;
		if (src[0] != 0) {		/* DAD carries no SLLA */
			l4[24] = SNB_ND_OPT_SOURCE_LLADDR;
			l4[25] = 1;
			memcpy(l4 + 26, smac, 6);
			l4len = 32;
		}
		break;
	case 4:
		/* Solicited neighbour advertisement back to the asker. */
		ip6_linklocal(src, smac);
		mac_unicast(tmac);
		ip6_linklocal(dst, tmac);
		ic->type = SNB_ICMP6_NEIGHBOR_ADVERT;
		ic->rest = htonl(0x60000000);	/* solicited, override */
		memcpy(l4 + 8, src, 16);
		l4[24] = SNB_ND_OPT_TARGET_LLADDR;
		l4[25] = 1;
		memcpy(l4 + 26, smac, 6);
		l4len = 32;
		break;
	case 5:
		ip6_linklocal(src, smac);
		memset(dst, 0, 16);
		dst[0] = 0xff;
		dst[1] = 0x02;
		dst[15] = 0x02;			/* all routers */
		ic->type = SNB_ICMP6_ROUTER_SOLICIT;
		l4[8] = SNB_ND_OPT_SOURCE_LLADDR;
		l4[9] = 1;
		memcpy(l4 + 10, smac, 6);
		l4len = 16;
		break;
	default:
		/* An error about a packet dst sent earlier. */
		ip6_host(src);
		ip6_host(dst);
		ip6_host(tgt);
		/*
		 * Quote the whole packet: tshark validates the quoted
		 * TCP/UDP checksum and calls a clipped one bad.
		 */
		olen = ip6_simple(orig, SNB_IPV6_MIN_MTU - SNB_IPV6_HLEN -
		    SNB_ICMP6_HLEN, chance(60) ? SNB_IPPROTO_UDP :
		    SNB_IPPROTO_TCP, dst, tgt);
		switch (below(4)) {
		case 0:
			ic->type = SNB_ICMP6_PACKET_TOO_BIG;
			ic->mtu = htonl(PICK(((const uint32_t[]){
			    1280, 1400, 1480 })));
			break;
		case 1:
			ic->type = SNB_ICMP6_DEST_UNREACH;
			ic->code = SNB_ICMP6_UNREACH_POLICY;
			break;
		case 2:
			ic->type = SNB_ICMP6_DEST_UNREACH;
			ic->code = PICK(((const uint8_t[]){
			    SNB_ICMP6_UNREACH_NOROUTE, SNB_ICMP6_UNREACH_ADDR,
			    SNB_ICMP6_UNREACH_PORT, SNB_ICMP6_UNREACH_ADMIN }));
			break;
		default:
			ic->type = SNB_ICMP6_TIME_EXCEEDED;
			ic->code = SNB_ICMP6_TIMXCEED_HOPS;
			orig[7] = 1;
			break;
		}
		memcpy(l4 + SNB_ICMP6_HLEN, orig, olen);
		l4len = SNB_ICMP6_HLEN + olen;
		hlim = 64;
		break;
	}
	mac_for_ip6(dmac, dst);
	memcpy(((struct eth_hdr *)fr->data)->dst, dmac, 6);
	fr->len = SNB_ETH_HLEN + ip6_finish(ip, SNB_IPV6_HLEN, l4len,
	    SNB_IPPROTO_ICMPV6, SNB_IPPROTO_ICMPV6, src, dst, hlim);
	return 1;
}

/*
 * IPv4 in IPv6 (next header 4), as between an lwAFTR and its B4s
 * (RFC 7596): the B4 side uses a per-subscriber address, the AFTR a
 * fixed one.
 */
static int
k_ipip6(void)
{
	static const uint8_t aftr[16] = {
		0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, [15] = 0x01
	};
	struct frame *fr = &out[0];
	uint8_t dmac[6], smac[6], b4[16], *ip;
	size_t inner;
	bool up = chance(50);

	mac_unicast(smac);
	mac_unicast(dmac);
	ip6_host(b4);
	ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV6);
	inner = ip4_simple(ip + SNB_IPV6_HLEN, SNB_ETH_DATA_LEN -
	    SNB_IPV6_HLEN, PICK(l4_protos), ip4_host(), ip4_host());
	fr->len = SNB_ETH_HLEN + ip6_finish(ip, SNB_IPV6_HLEN, inner,
	    SNB_IPPROTO_IPIP, SNB_IPPROTO_IPIP, up ? b4 : aftr,
	    up ? aftr : b4, 64);
	return 1;
}

/* ARP request (broadcast, sometimes gratuitous) or reply (unicast). */
static int
k_arp_frame(struct frame *fr)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	struct arp_hdr *arp;
	uint8_t smac[6], dmac[6];
	bool reply = chance(40);

	mac_unicast(smac);
	mac_unicast(dmac);
	arp = (struct arp_hdr *)put_eth(fr->data, reply ? dmac : bcast, smac,
	    SNB_ETH_ARP);
	arp->htype = htons(SNB_ARP_HTYPE_ETHER);
	arp->ptype = htons(SNB_ETH_IPV4);
	arp->hlen = 6;
	arp->plen = 4;
	arp->op = htons(reply ? SNB_ARP_REPLY : SNB_ARP_REQUEST);
	memcpy(arp->sha, smac, 6);
	arp->spa = ip4_host();
	if (reply)
		memcpy(arp->tha, dmac, 6);
	else
		memset(arp->tha, 0, 6);
	arp->tpa = !reply && chance(15) ? arp->spa : ip4_host();
	fr->len = SNB_ETH_HLEN + SNB_ARP_LEN;
	return 1;
}

static int
k_arp(void)
{
	return k_arp_frame(&out[0]);
}

/* Something for a VLAN to carry: IPv4, IPv6 or ARP. */
static void
inner_frame(struct frame *fr)
{
	switch (below(7)) {
	case 0:
	case 1:
		k_ipv4(fr, PICK(l4_protos));
		break;
	case 2:
		k_ipv4(fr, SNB_IPPROTO_ICMP);
		break;
	case 3:
	case 4:
		k_ipv6(fr, PICK(l4_protos));
		break;
	default:
		k_arp_frame(fr);
		break;
	}
}

static uint16_t
tci(uint16_t vid)
{
	return below(8) << SNB_VLAN_PCP_SHIFT | vid;
}

static int
k_vlan(void)
{
	static const uint16_t vids[] = { 1, 1, 100, 100, 4094, 0 };
	uint16_t vid = PICK(vids);

	inner_frame(&out[0]);
	add_tag(&out[0], SNB_ETH_VLAN, tci(vid ? vid : between(2, 4093)));
	return 1;
}

/* Double tagged: 802.1ad (or legacy 802.1Q-in-802.1Q) over 802.1Q. */
static int
k_qinq(void)
{
	static const uint16_t outer[] = { 100, 200, 4094 };
	static const uint16_t inner[] = { 1, 100, 4094, 0 };
	uint16_t vid = PICK(inner);

	inner_frame(&out[0]);
	add_tag(&out[0], SNB_ETH_VLAN, tci(vid ? vid : between(2, 4093)));
	add_tag(&out[0], chance(75) ? SNB_ETH_QINQ : SNB_ETH_VLAN,
	    tci(PICK(outer)));
	return 1;
}

/* LLDP: chassis id, port id, TTL, system name, end (IEEE 802.1AB). */
static int
k_lldp(void)
{
	static const uint8_t nearest[6] = { 0x01, 0x80, 0xc2, 0, 0, 0x0e };
	static const char *const ports[] = { "eth0", "ge-0/0/1", "swp12" };
	static const char *const names[] = { "sw1.lab", "tor-3", "edge" };
	struct frame *fr = &out[0];
	uint8_t smac[6], *p;
	const char *port = PICK(ports), *name = PICK(names);
	size_t n;

	mac_unicast(smac);
	p = put_eth(fr->data, nearest, smac, SNB_ETH_LLDP);
	/* TLV header: 7-bit type, 9-bit length. */
	put16(p, 1 << 9 | 7);
	p[2] = 4;				/* chassis id is a MAC */
	memcpy(p + 3, smac, 6);
	p += 9;
	n = strlen(port);
	put16(p, 2 << 9 | (1 + n));
	p[2] = 5;				/* port id is an ifname */
	memcpy(p + 3, port, n);
	p += 3 + n;
	put16(p, 3 << 9 | 2);
	put16(p + 2, 120);			/* TTL seconds */
	p += 4;
	if (chance(50)) {
		n = strlen(name);
		put16(p, 5 << 9 | n);
		memcpy(p + 2, name, n);
		p += 2 + n;
	}
	put16(p, 0);				/* end */
	p += 2;
	fr->len = p - fr->data;
	return 1;
}

/*
 * An 802.3 frame, the type field holding a length: a spanning tree BPDU
 * (configuration or topology change) behind an LLC header.
 */
static int
k_8023(void)
{
	static const uint8_t stp[6] = { 0x01, 0x80, 0xc2, 0, 0, 0 };
	struct frame *fr = &out[0];
	uint8_t smac[6], *p;
	size_t blen;

	mac_unicast(smac);
	p = put_eth(fr->data, stp, smac, 0);
	p[0] = 0x42;				/* LLC: DSAP, SSAP, UI */
	p[1] = 0x42;
	p[2] = 0x03;
	p += 3;
	put16(p, 0);				/* protocol id */
	p[2] = 0;				/* version */
	if (chance(20)) {
		p[3] = 0x80;			/* topology change notice */
		blen = 4;
	} else {
		p[3] = 0;			/* configuration */
		p[4] = chance(10) ? 0x01 : 0;	/* flags */
		put16(p + 5, 0x8000);		/* root priority */
		mac_unicast(p + 7);
		put32(p + 13, chance(30) ? 0 : between(1, 200) * 100);
		put16(p + 17, 0x8000);		/* bridge priority */
		memcpy(p + 19, smac, 6);
		put16(p + 25, 0x8000 | between(1, 48));	/* port id */
		put16(p + 27, between(0, 3) << 8);	/* message age */
		put16(p + 29, 20 << 8);		/* max age, 1/256 s */
		put16(p + 31, 2 << 8);		/* hello time */
		put16(p + 33, 15 << 8);		/* forward delay */
		blen = 35;
	}
	put16(fr->data + 12, 3 + blen);
	fr->len = SNB_ETH_HLEN + 3 + blen;
	return 1;
}

/* Jumbo frames: UDP over IPv4 or IPv6, 1515 to 9000 bytes. */
static int
k_jumbo(void)
{
	struct frame *fr = &out[0];
	uint8_t dmac[6], smac[6], src[16], dst[16], *ip;
	size_t len = between(SNB_ETH_FRAME_LEN + 1, JUMBO_MAX), l3;

	mac_unicast(smac);
	mac_unicast(dmac);
	if (chance(60)) {
		ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV4);
		l3 = len - SNB_ETH_HLEN;
		put_udp_len(ip + SNB_IPV4_HLEN, l3 - SNB_IPV4_HLEN);
		ip4_finish(ip, SNB_IPV4_HLEN, l3 - SNB_IPV4_HLEN,
		    SNB_IPPROTO_UDP, ip4_host(), ip4_host());
	} else {
		ip6_host(src);
		ip6_host(dst);
		ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV6);
		l3 = len - SNB_ETH_HLEN;
		put_udp_len(ip + SNB_IPV6_HLEN, l3 - SNB_IPV6_HLEN);
		ip6_finish(ip, SNB_IPV6_HLEN, l3 - SNB_IPV6_HLEN,
		    SNB_IPPROTO_UDP, SNB_IPPROTO_UDP, src, dst, 64);
	}
	fr->len = len;
	return 1;
}

/* IPv6 UDP to a multicast group: all nodes, mDNS-free site scope. */
static int
k_mcast6(void)
{
	struct frame *fr = &out[0];
	uint8_t dmac[6], smac[6], src[16], dst[16], *ip;
	size_t l4len;

	mac_unicast(smac);
	ip6_host(src);
	memset(dst, 0, 16);
	dst[0] = 0xff;
	dst[1] = chance(50) ? 0x02 : 0x05;
	if (dst[1] == 0x02)
		dst[15] = 0x01;
	else
		rnd_fill(dst + 12, 4);
	mac_for_ip6(dmac, dst);
	ip = put_eth(fr->data, dmac, smac, SNB_ETH_IPV6);
	l4len = put_udp_len(ip + SNB_IPV6_HLEN, SNB_UDP_HLEN +
	    pick_size(1000));
	fr->len = SNB_ETH_HLEN + ip6_finish(ip, SNB_IPV6_HLEN, l4len,
	    SNB_IPPROTO_UDP, SNB_IPPROTO_UDP, src, dst, 1);
	return 1;
}

/*
 * A large ordinary frame that will be recorded truncated (see
 * truncate_some()); this kind just guarantees some are present.
 */
static int
k_trunc(void)
{
	int n = chance(50) ? k_tcp4() : k_udp6();

	/* Any snap length shorter than the (padded) frame. */
	do
		out[0].caplen = PICK(snaps);
	while (out[0].caplen >= out[0].len && out[0].caplen > 34);
	return n;
}

/*
 * struct kind: one frame generator and its weight in the mix.  Weights
 * are relative; the first pass through the table runs every kind once so
 * that even a short capture has a bit of everything.
 */
struct kind {
	int		(*gen)(void);
	unsigned	weight;
};

static const struct kind kinds[] = {
	{ k_tcp4, 20 }, { k_udp4, 14 }, { k_icmp4, 6 }, { k_ipopt, 4 },
	{ k_frag4, 3 }, { k_mcast4, 3 }, { k_tcp6, 9 }, { k_udp6, 7 },
	{ k_icmp6, 6 }, { k_ext6, 3 }, { k_frag6, 2 }, { k_ipip6, 3 },
	{ k_mcast6, 2 }, { k_vlan, 8 }, { k_qinq, 3 }, { k_arp, 5 },
	{ k_lldp, 1 }, { k_8023, 2 }, { k_jumbo, 2 }, { k_trunc, 2 },
};
#define NKINDS	(sizeof(kinds) / sizeof(kinds[0]))

static int
generate(uint64_t call)
{
	unsigned total = 0, r;
	size_t i;

	if (call < NKINDS)
		return kinds[call].gen();
	for (i = 0; i < NKINDS; i++)
		total += kinds[i].weight;
	r = below(total);
	for (i = 0; r >= kinds[i].weight; i++)
		r -= kinds[i].weight;
	return kinds[i].gen();
}

/* Random frames for --random: any bytes, any length up to 200. */
static int
generate_random(void)
{
	out[0].len = below(201);
	rnd_fill(out[0].data, out[0].len);
	return 1;
}

/*
 * Pad short frames to the Ethernet minimum, as a NIC would, and cut a
 * few records short as a small snap length would.
 */
static void
finish_frame(struct frame *fr)
{
	if (fr->len < SNB_ETH_ZLEN) {
		memset(fr->data + fr->len, 0, SNB_ETH_ZLEN - fr->len);
		fr->len = SNB_ETH_ZLEN;
	}
	if (fr->caplen == 0 && chance(3))
		fr->caplen = PICK(snaps);
	if (fr->caplen == 0 || fr->caplen > fr->len)
		fr->caplen = fr->len;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: mkpcap OUT.pcap [--count N] [--seed S] "
	    "[--random]\n");
	exit(1);
}

/* Parse a decimal (or 0x hex) unsigned number; false if it is not one. */
static bool
parse_u64(const char *s, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long n;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || n > max)
		return false;
	*v = n;
	return true;
}

int
main(int argc, char **argv)
{
	const char *path = NULL, *val;
	uint64_t count = 2000, seed = 1, call, written = 0;
	bool random_mode = false;
	struct pcap_pkthdr h;
	pcap_dumper_t *d;
	pcap_t *p;
	int i, j, n;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--random") == 0) {
			random_mode = true;
		} else if (strcmp(argv[i], "--count") == 0 ||
		    strcmp(argv[i], "--seed") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "mkpcap: %s needs a value\n",
				    argv[i]);
				usage();
			}
			val = argv[++i];
			if (strcmp(argv[i - 1], "--count") == 0) {
				/* Bounded so a typo cannot fill the disk. */
				if (!parse_u64(val, 10000000, &count)) {
					fprintf(stderr, "mkpcap: bad --count "
					    "'%s'\n", val);
					return 1;
				}
			} else if (!parse_u64(val, UINT64_MAX, &seed)) {
				fprintf(stderr, "mkpcap: bad --seed '%s'\n",
				    val);
				return 1;
			}
		} else if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage();
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "mkpcap: unknown option '%s'\n",
			    argv[i]);
			usage();
		} else if (path == NULL) {
			path = argv[i];
		} else {
			fprintf(stderr, "mkpcap: extra argument '%s'\n",
			    argv[i]);
			usage();
		}
	}
	if (path == NULL)
		usage();

	/* Distinct streams for the two modes, even with equal seeds. */
	rng = seed ^ (random_mode ? 0x52414e444f4dULL : 0);

	if ((p = pcap_open_dead(DLT_EN10MB, 65535)) == NULL) {
		fprintf(stderr, "mkpcap: pcap_open_dead failed\n");
		return 1;
	}
	if ((d = pcap_dump_open(p, path)) == NULL) {
		fprintf(stderr, "mkpcap: %s\n", pcap_geterr(p));
		pcap_close(p);
		return 1;
	}
	for (call = 0; written < count; call++) {
		for (j = 0; j < TRAIN_MAX; j++)
			out[j].caplen = 0;
		n = random_mode ? generate_random() : generate(call);
		for (j = 0; j < n && written < count; j++, written++) {
			if (!random_mode)
				finish_frame(&out[j]);
			else
				out[j].caplen = out[j].len;
			memset(&h, 0, sizeof(h));
			h.ts.tv_sec = TS_BASE + written * TS_STEP_US / 1000000;
			h.ts.tv_usec = written * TS_STEP_US % 1000000;
			h.caplen = out[j].caplen;
			h.len = out[j].len;
			pcap_dump((u_char *)d, &h, out[j].data);
		}
	}
	if (pcap_dump_flush(d) == -1 || ferror(pcap_dump_file(d))) {
		fprintf(stderr, "mkpcap: %s: write error\n", path);
		pcap_dump_close(d);
		pcap_close(p);
		return 1;
	}
	pcap_dump_close(d);
	pcap_close(p);
	return 0;
}
