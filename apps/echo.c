/*
 * snb-echo: answer ping and UDP echo (RFC 862) for some addresses,
 * statelessly: a reply is its request with addresses and ports swapped,
 * so any copy on any host answers alike: the model service of an anycast
 * address behind ECMP (examples/ecmp.sh).  A swap keeps a one's-complement
 * sum: UDP's checksum stays right; the ICMP type and the TTL (a reply
 * starts at 64) are patched incrementally (RFC 1624).
 */
#include <err.h>
#include <string.h>

#include "checksum.h"
#include "forward.h"
#include "proto.h"

#define MAX_ADDRS	16
#define UDP_ECHO_PORT	7
#define REPLY_TTL	64

static struct fwd fwd;		/* out[0] "out", out[1] "rest" */
static uint8_t addr[2][MAX_ADDRS][16];	/* [0] IPv4 (4 bytes), [1] IPv6 */
static int naddr[2];
static const char *const names[] = { "echo-icmp", "echo-udp", "rest",
    "drop-refused", "drop-not-echo", "drop-malformed", NULL };
static struct {
	uint64_t *icmp, *udp, *rest, *refused, *not_echo, *malformed;
} c;

static void
echo_init(int argc, char **argv)
{
	static const struct app_opt none[] = { APP_OPT_END };
	int i, v6;

	if ((i = app_options(argc, argv, none, APP_OPT_WORDS)) == argc)
		app_usage();
	for (; i < argc; i++) {
		if (naddr[0] + naddr[1] == MAX_ADDRS)
			errx(2, "too many addresses (at most %d)", MAX_ADDRS);
		v6 = strchr(argv[i], ':') != NULL;
		if (inet_pton(v6 ? AF_INET6 : AF_INET, argv[i],
		    addr[v6][naddr[v6]++]) != 1)
			errx(2, "bad address '%s': not IPv4 or IPv6", argv[i]);
	}
	fwd_init(&fwd, (const char *[]){ "in", NULL },
	    (const char *[]){ "out", "rest", NULL });
	app_counters((uint64_t **)&c, names);
	fwd.out[1].sent = c.rest;
}

/* Is the address at a (alen 4 or 16 bytes) one of ours? */
static int
mine(const uint8_t *a, size_t alen)
{
	int i, v6 = alen == 16;

	for (i = 0; i < naddr[v6]; i++)
		if (memcmp(a, addr[v6][i], alen) == 0)
			return 1;
	return 0;
}

static inline void
swap(uint8_t *a, uint8_t *b, size_t n)
{
	uint8_t t[16];

	memcpy(t, a, n), memcpy(a, b, n), memcpy(b, t, n);
}

/* Set the 16-bit word at w, covered by the checksum at ck, to v. */
static inline void
set16(uint8_t *w, uint8_t *ck, uint16_t v)
{
	uint16_t old, sum;

	memcpy(&old, w, 2), memcpy(&sum, ck, 2);
	sum = cksum_update16(sum, old, v);
	memcpy(w, &v, 2), memcpy(ck, &sum, 2);
}

/*
 * Are the checksums of an echo request right, and a UDP length within
 * the IP payload (l4len bytes at u)?  A host drops it otherwise (RFC 1122
 * 3.2.1.2, 3.2.2, 4.1.3.4); an answer would echo the damage back.  IPv6
 * has no zero (absent) UDP checksum (RFC 8200 8.1).  Summed only for the
 * few packets that are requests to us, after the cheap tests.
 */
static int
intact(const uint8_t *ip, const uint8_t *u, uint32_t l4len, uint8_t proto,
    int v6)
{
	uint16_t sum, want;
	uint32_t ulen = l4len;

	if (!v6) {
		memcpy(&sum, ip + 10, 2);
		if (sum != ipv4_header_cksum(ip))
			return 0;
	}
	if (proto == SNB_IPPROTO_UDP) {
		ulen = (uint32_t)(u[4] << 8 | u[5]);
		if (ulen < 8 || ulen > l4len)
			return 0;
	}
	memcpy(&sum, u + (proto == SNB_IPPROTO_UDP ? 6 : 2), 2);
	if (proto == SNB_IPPROTO_UDP && sum == 0)
		return !v6;
	want = v6 ? ipv6_l4_cksum(ip, u, ulen, proto) :
	    ipv4_l4_cksum(ip, u, ulen, proto);
	return sum == want;
}

/*
 * Turn frame f (len bytes) into its reply: 1 done, 0 not an echo request
 * to us (left as is; nor behind an IPv6 extension header), -1 one that
 * gets no answer: from a group MAC, a multicast, broadcast, unspecified,
 * loopback or our own address (RFC 1122 3.2.1.3, 3.2.2.6, RFC 4291 2.5.3,
 * RFC 4443 4.2), with IPv4 options (3.2.2.6), or a UDP echo from a port
 * below 1024: an echo or chargen server would loop (CERT CA-1996-01); -2 a
 * malformed one (intact()).
 */
static int
reply(uint8_t *f, uint32_t len)
{
	static const uint8_t zero[16];
	uint32_t l3 = SNB_ETH_HLEN, l4, end, i;
	uint16_t type;
	uint8_t *ip, *src, *dst, *u, proto, ask, bad;
	size_t alen;

	if (len < SNB_ETH_HLEN + SNB_VLAN_HLEN)
		return 0;
	memcpy(&type, f + 12, 2);
	if (type == htons(SNB_ETH_VLAN)) {	/* one 802.1Q tag */
		memcpy(&type, f + 16, 2);
		l3 += SNB_VLAN_HLEN;
	}
	ip = f + l3;
	if (type == htons(SNB_ETH_IPV4)) {
		const struct ipv4_hdr *h = (const void *)ip;

		if (len < l3 + SNB_IPV4_HLEN || ipv4_version(h) != 4 ||
		    ipv4_hlen(h) < SNB_IPV4_HLEN || ipv4_is_fragment(h))
			return 0;
		alen = 4, src = ip + 12, dst = ip + 16, proto = h->proto;
		l4 = l3 + ipv4_hlen(h), end = l3 + ntohs(h->len);
		ask = proto == SNB_IPPROTO_ICMP ? 8 : 0;
		bad = src[0] == 0 || src[0] == 127 || src[0] >= 224;
	} else if (type == htons(SNB_ETH_IPV6)) {
		if (len < l3 + SNB_IPV6_HLEN || ip[0] >> 4 != 6)
			return 0;
		alen = 16, src = ip + 8, dst = ip + 24, proto = ip[6];
		l4 = l3 + SNB_IPV6_HLEN, end = l4 + (uint32_t)(ip[4] << 8 | ip[5]);
		ask = proto == SNB_IPPROTO_ICMPV6 ? 128 : 0;
		bad = src[0] == 0xff || (memcmp(src, zero, 15) == 0 &&
		    src[15] <= 1);	/* ::, ::1 */
	} else
		return 0;
	if (!mine(dst, alen) || end > len || end < l4 + 8)
		return 0;
	u = f + l4;
	/* Nor did one from our own address (a host drops such martians,
	 * as it does loopback sources). */
	bad |= (f[6] & 1) || mine(src, alen);
	if (proto == SNB_IPPROTO_UDP) {
		if (u[2] != 0 || u[3] != UDP_ECHO_PORT)
			return 0;
		bad |= (u[0] << 8 | u[1]) < 1024;
	} else if (ask == 0 || u[0] != ask || u[1] != 0)
		return 0;
	if (!intact(ip, u, end - l4, proto, alen == 16))
		return -2;
	/* IPv4 options but padding: a stateless echo would not update a
	 * record route or timestamp, nor reverse a source route. */
	for (i = l3 + SNB_IPV4_HLEN; alen == 4 && i < l4; i++)
		bad |= f[i] > 1;
	if (bad)
		return -1;
	if (proto == SNB_IPPROTO_UDP)
		swap(u, u + 2, 2);
	else
		set16(u, u + 2, htons((uint16_t)(alen == 4 ? 0 : 129) << 8));
	if (alen == 4)
		set16(ip + 8, ip + 10, htons(REPLY_TTL << 8 | ip[9]));
	else
		ip[7] = REPLY_TTL;	/* hop limit: no header checksum */
	swap(src, dst, alen);
	swap(f, f + SNB_ETH_ALEN, SNB_ETH_ALEN);
	(*(proto == SNB_IPPROTO_UDP ? c.udp : c.icmp))++;
	return 1;
}

/* The reply is made in the output slot; the rest leaves as it came. */
static uint32_t
from_ring(void *ctx, int from, struct ring *r, uint32_t n)
{
	struct fwd_out *o = &fwd.out[0];
	int rest = fwd.out[1].ring != NULL, k;
	uint32_t i, len;

	for (i = 0; i < n; i++) {
		const struct packet *p = ring_peek(r, i);

		len = packet_len(r, p);
		if (!fwd_room(&fwd, 0) || (rest && !fwd_room(&fwd, 1)))
			break;
		k = ring_put_packet(o->ring, o->used, p, len) ?
		    reply(ring_slot(o->ring, o->used)->data, len) : 0;
		if (k > 0)
			o->used++;
		else if (k == -1)
			(*c.refused)++;
		else if (k == -2)
			(*c.malformed)++;
		else if (rest)
			fwd_put(&fwd, 1, p, len);
		else
			(*c.not_echo)++;
	}
	return i;
}

static int
echo_breathe(void)
{
	return fwd_take(&fwd, from_ring, NULL);
}

static const struct app_desc desc = {
	.name = "echo",
	.usage = "ADDRESS ...",
	.summary = "Answer ping and UDP echo (port 7) for IPv4 and IPv6 "
	    "addresses; pass the rest to 'rest' or drop it.",
	.ports = (const struct port_desc[]){ { "in", PORT_IN | PORT_REQUIRED },
	    { "out", PORT_OUT | PORT_REQUIRED }, { "rest", PORT_OUT },
	    { NULL, 0 } },
	.init = echo_init,
	.breathe = echo_breathe,
};

APP_MAIN(desc)
