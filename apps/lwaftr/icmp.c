/*
 * icmp.c: ICMP in the lwAFTR.
 *
 *  - Which port of an IPv4 packet names its B4 (RFC 7596 5.1): for TCP
 *    and UDP the port on the B4's end; for an echo request or reply the
 *    identifier, but only on the end that sent the request (the id is
 *    the requester's: a B4 answering a ping has no port in it, so its
 *    reply is looked up as port 0); for an ICMP error (and, as
 *    in the reference, any other type), the port of the packet it
 *    quotes, which travelled the other way.
 *  - ICMPv4 errors (RFC 792) and ICMPv6 errors (RFC 4443) about packets
 *    we drop, rate limited per side, never about ICMP errors.
 *  - ICMPv6 errors from the B4 side about packets we tunnelled, turned
 *    into ICMPv4 errors for the internet host (RFC 7596 8.1).
 *  - Echo replies for the AFTR's own addresses.
 */
#include <arpa/inet.h>
#include <string.h>

#include "checksum.h"
#include "dp.h"
#include "proto.h"

#define ICMP6_ERR_MAX	SNB_IPV6_MIN_MTU /* RFC 4443 2.4 (c) */

static int
ports_at(const uint8_t *ip, size_t len, int toward_b4, uint16_t *port,
    int depth)
{
	uint8_t z[64];		/* a longest header and its ports */
	size_t hlen, l4len;
	const uint8_t *l4;

	if (depth > 0 && len < sizeof(z)) {
		/*
		 * The reference reads a quoted packet's ports where its
		 * header says, past the quote's end when it is cut short:
		 * we read zeros there, as it does in a fresh buffer, so a
		 * softwire of all ports takes it there and here.  Nor
		 * does it ask whether the quote is a later fragment.
		 */
		memset(z, 0, sizeof(z));
		memcpy(z, ip, len);
		ip = z;
		len = sizeof(z);
	}
	if (len < SNB_IPV4_HLEN)
		return 0;
	hlen = (ip[0] & 0x0f) * 4u;
	if (hlen > len || (depth == 0 && (hlen < SNB_IPV4_HLEN ||
	    (be16(ip + 6) & SNB_IP_OFFMASK) != 0)))
		return 0;
	l4 = ip + hlen;
	l4len = len - hlen;
	switch (ip[9]) {
	default:
		/*
		 * Like the reference: whatever the protocol, ports are
		 * where TCP and UDP have them (SCTP, DCCP, UDP-Lite do).
		 * It reads them past a shorter packet's end, so a softwire
		 * of all ports (psid-length 0) takes a packet with no room
		 * for them (a bare header, GRE's 4 bytes cut short): we
		 * read zeros there, as it does in a fresh buffer.
		 */
		if (l4len < 4) {	/* depth 0 only: z is free */
			memset(z, 0, 4);
			memcpy(z, l4, l4len);
			l4 = z;
		}
		memcpy(port, l4 + (toward_b4 ? 2 : 0), 2);
		return 1;
	case SNB_IPPROTO_ICMP:
		if (l4len < SNB_ICMP_HLEN)
			return 0;
		switch (l4[0]) {
		case SNB_ICMP_ECHO_REQUEST:
		case SNB_ICMP_ECHO_REPLY:
			/* The id names the requester's end only. */
			if (toward_b4 == (l4[0] == SNB_ICMP_ECHO_REPLY))
				memcpy(port, l4 + 4, 2);
			else
				*port = 0;
			return 1;
		default:
			/*
			 * An error quotes a packet, which went the other
			 * way.  Like the reference, any other type is read
			 * as if it quoted one too (RFC 7596 names no port
			 * for it, and its softwire must be found somehow).
			 */
			if (depth > 0)
				return 0;
			return ports_at(l4 + SNB_ICMP_HLEN, l4len -
			    SNB_ICMP_HLEN, !toward_b4, port, depth + 1);
		}
	}
}

int
ipv4_b4_port(const uint8_t *ip, size_t len, int toward_b4, uint16_t *port)
{
	return ports_at(ip, len, toward_b4, port, 0);
}

/*
 * May side s send an ICMP error of `bytes` (frame) bytes?  never: the
 * packet is one not to answer.  relay: the error translates one that
 * came in, which the reference sends whatever generate-icmp-errors says.
 * Then the rate limit: err_rate_packets per err_rate_period seconds.  A
 * refusal by the policy or the limit is counted.
 */
static int
error_ok(struct side *s, int never, int relay, size_t bytes)
{
	/* conf.c keeps the period above 0 */
	uint64_t now, period = s->cf->err_rate_period * 1000000000ULL;

	if (!relay && !s->cf->generate_icmp_errors) {
		s->lw->ctr[s->v6 ? DROP_OUT_POLICY_ICMPV6 :
		    DROP_OUT_POLICY_ICMPV4]++;
		return 0;
	}
	if (never)
		return 0;
	if ((now = lw_now(s->lw)) - s->rl_start >= period) {
		s->rl_start = now;
		s->rl_used = 0;
	}
	if (s->rl_used >= s->cf->err_rate_packets) {
		if (s->v6)
			cnt(s->lw, DROP_OVER_RATE_ICMPV6, bytes);
		else
			s->lw->ctr[DROP_OVER_RATE_ICMPV4]++;
		return 0;
	}
	s->rl_used++;
	return 1;
}

/*
 * RFC 1812 4.3.2.7: no ICMPv4 error about the IPv4 packet at ip (len
 * bytes) if it is an ICMP error (an ICMP too short to say what it is
 * counts as one), a fragment other than the first, or from a broadcast,
 * multicast, zero or loopback source.
 */
static int
no_error_about(const uint8_t *ip, size_t len)
{
	size_t hlen = (ip[0] & 0x0f) * 4u;
	uint8_t t = len > hlen ? ip[hlen] : SNB_ICMP_DEST_UNREACH;

	/* types 4 and 5: source quench, redirect */
	return (ip[9] == SNB_IPPROTO_ICMP && (t == SNB_ICMP_DEST_UNREACH ||
	    t == SNB_ICMP_TIME_EXCEEDED || t == SNB_ICMP_PARAM_PROBLEM ||
	    t == 4 || t == 5)) || reasm_is_fragment4(ip, len) ||
	    ip[12] >= 224 || ip[12] == 0 || ip[12] == 127;
}

/*
 * An ICMPv4 error about the IPv4 packet at ip (len bytes): from our
 * external address to its source, quoting as much of it as fits in 576
 * bytes.  mtu: the next-hop MTU of a "fragmentation needed"; relay: it
 * translates an ICMPv6 error (see error_ok).  Built in lw->err4; returns
 * its length, 0 if error_ok() or no_error_about() say no.
 */
size_t
icmp4_error(struct lw *lw, const uint8_t *ip, size_t len, uint8_t type,
    uint8_t code, uint16_t mtu, int relay)
{
	uint8_t *e = lw->err4, *icmp = e + SNB_IPV4_HLEN;
	size_t quote = len, total;
	uint16_t v;

	if (quote > ICMP4_ERR_MAX - SNB_IPV4_HLEN - SNB_ICMP_HLEN)
		quote = ICMP4_ERR_MAX - SNB_IPV4_HLEN - SNB_ICMP_HLEN;
	total = SNB_IPV4_HLEN + SNB_ICMP_HLEN + quote;
	if (!error_ok(&lw->s4, no_error_about(ip, len), relay,
	    SNB_ETH_HLEN + total))
		return 0;
	memset(e, 0, SNB_IPV4_HLEN + SNB_ICMP_HLEN);	/* id 0, no flags */
	e[0] = 0x45;
	v = htons((uint16_t)total);
	memcpy(e + 2, &v, 2);
	e[8] = 255;
	e[9] = SNB_IPPROTO_ICMP;
	memcpy(e + 12, lw->s4.cf->ip, 4);
	memcpy(e + 16, ip + 12, 4);	/* to the offender's source */
	v = ipv4_header_cksum(e);
	memcpy(e + 10, &v, 2);
	icmp[0] = type;
	icmp[1] = code;
	v = htons(mtu);
	memcpy(icmp + 6, &v, 2);
	memcpy(icmp + SNB_ICMP_HLEN, ip, quote);
	v = ipv4_l4_cksum(e, icmp, SNB_ICMP_HLEN + quote, SNB_IPPROTO_ICMP);
	memcpy(icmp + 2, &v, 2);
	cnt(lw, OUT_ICMPV4_ERROR, SNB_ETH_HLEN + total);
	return total;
}

/*
 * An ICMPv6 error from src to the source of the IPv6 packet pk, on the v6
 * side.  The reference answers from the BR address of the softwire the
 * lookup found, else from the address the packet was sent to.
 */
void
icmp6_error(struct lw *lw, const struct pkt *pk, const uint8_t *src,
    uint8_t type, uint8_t code)
{
	const uint8_t *ip6 = pk->l3;
	size_t quote = pk->len, total;
	uint8_t *o, *icmp;
	uint32_t w;
	uint16_t v;

	if (quote > ICMP6_ERR_MAX - SNB_IPV6_HLEN - SNB_ICMP6_HLEN)
		quote = ICMP6_ERR_MAX - SNB_IPV6_HLEN - SNB_ICMP6_HLEN;
	total = SNB_IPV6_HLEN + SNB_ICMP6_HLEN + quote;
	/* Not about ICMPv6 errors, not to multicast (RFC 4443 2.4 (e)). */
	if (!error_ok(&lw->s6, ip6[8] == 0xff ||
	    (ip6[6] == SNB_IPPROTO_ICMPV6 && pk->len > SNB_IPV6_HLEN &&
	    ip6[SNB_IPV6_HLEN] < 128), 0, SNB_ETH_HLEN + total))
		return;
	o = tx_begin(&lw->s6, SNB_ETH_IPV6, total, NULL, NULL);
	w = htonl(6u << 28);
	memcpy(o, &w, 4);
	v = htons((uint16_t)(total - SNB_IPV6_HLEN));
	memcpy(o + 4, &v, 2);
	o[6] = SNB_IPPROTO_ICMPV6;
	o[7] = 255;
	memcpy(o + 8, src, 16);
	memcpy(o + 24, ip6 + 8, 16);
	icmp = o + SNB_IPV6_HLEN;
	icmp[0] = type;
	icmp[1] = code;
	memset(icmp + 2, 0, 6);
	memcpy(icmp + SNB_ICMP6_HLEN, ip6, quote);
	v = ipv6_l4_cksum(o, icmp, SNB_ICMP6_HLEN + quote,
	    SNB_IPPROTO_ICMPV6);
	memcpy(icmp + 2, &v, 2);
	if (tx_end(&lw->s6, TX_FILTER)) {
		cnt(lw, OUT_ICMPV6_ERROR, SNB_ETH_HLEN + total);
		cnt(lw, OUT_IPV6, SNB_ETH_HLEN + total);
	}
}

/*
 * An ICMPv6 error arriving on the B4 side (next header 58, not NDP, not
 * an echo for us).  If it quotes a packet we tunnelled to a B4 (from one
 * of our BR addresses to the softwire's B4, carrying IPv4 for that
 * softwire), tell the IPv4 host that sent it: "fragmentation needed" with
 * the MTU less our 40 bytes for "packet too big", "host unreachable" for
 * anything else.  Returns the length of that error, as icmp4_error();
 * an error not translated is counted as a drop, one over the rate limit
 * in drop-over-rate-limit-icmpv4-packets.
 */
size_t
icmp6_translate(struct lw *lw, struct pkt *pk)
{
	const uint8_t *icmp = pk->l3 + SNB_IPV6_HLEN, *q6, *q4;
	size_t ilen = pk->len - SNB_IPV6_HLEN, q4len;
	const struct softwire *sw = NULL;
	uint32_t dst, mtu6;
	uint16_t port, mtu = 0;
	uint8_t code;

	if (!lw->s6.cf->allow_incoming_icmp) {
		drop6(lw, pk, DROP_IN_POLICY_ICMPV6);
		return 0;
	}
	if (ilen < SNB_ICMP6_HLEN + SNB_IPV6_HLEN + SNB_IPV4_HLEN ||
	    icmp[0] < SNB_ICMP6_DEST_UNREACH ||
	    icmp[0] > SNB_ICMP6_PARAM_PROBLEM || be16(icmp + 2) !=
	    ntohs(ipv6_l4_cksum(pk->l3, icmp, ilen, SNB_IPPROTO_ICMPV6))) {
		drop6(lw, pk, DROP_UNKNOWN_PROTO_ICMPV6);
		return 0;
	}
	/* Only these codes are for the sender of what we tunnelled. */
	if (icmp[0] == SNB_ICMP6_PACKET_TOO_BIG && icmp[1] != 0) {
		drop6(lw, pk, DROP_TOO_BIG_ICMPV6);
		return 0;
	}
	if (icmp[0] == SNB_ICMP6_TIME_EXCEEDED &&
	    icmp[1] != SNB_ICMP6_TIMXCEED_HOPS) {
		drop6(lw, pk, DROP_OVER_TIME_ICMPV6);
		return 0;
	}
	q6 = icmp + SNB_ICMP6_HLEN;
	q4 = q6 + SNB_IPV6_HLEN;
	q4len = ilen - SNB_ICMP6_HLEN - SNB_IPV6_HLEN;
	memcpy(&dst, q4 + 16, 4);
	if (q6[6] == SNB_IPPROTO_IPIP && (q4[0] >> 4) == 4 &&
	    ipv4_b4_port(q4, q4len, TOWARD_B4, &port))
		sw = lwaftr_bt_lookup(lw->bt, dst, port);
	if (sw == NULL || memcmp(sw->b4, q6 + 24, 16) != 0 ||
	    memcmp(sw->br, q6 + 8, 16) != 0) {
		drop6(lw, pk, DROP_IN_RFC7596_ICMPV6);
		return 0;
	}
	/*
	 * Nor one quoting what no ICMPv4 error may be about: it is not
	 * relayed either, as the reference's drop of an ICMPv4 packet it
	 * would answer with an error (drop-in-by-rfc7596-icmpv4) is counted.
	 */
	if (no_error_about(q4, q4len)) {
		drop6(lw, pk, DROP_IN_RFC7596_ICMPV6);
		return 0;
	}
	code = SNB_ICMP_UNREACH_HOST;
	if (icmp[0] == SNB_ICMP6_PACKET_TOO_BIG) {
		memcpy(&mtu6, icmp + 4, 4);
		mtu6 = ntohl(mtu6);
		code = SNB_ICMP_UNREACH_NEEDFRAG;
		mtu = mtu6 < SNB_IPV6_HLEN ? 0 : mtu6 - SNB_IPV6_HLEN > 65535 ?
		    65535 : (uint16_t)(mtu6 - SNB_IPV6_HLEN);
	}
	cnt(lw, IN_IPV6, pk->flen);
	return icmp4_error(lw, q4, q4len, SNB_ICMP_DEST_UNREACH, code, mtu, 1);
}

/*
 * If the ICMP (on v6: ICMPv6) packet pk is an echo request (code 0) to our
 * own address on side s, answer it and return 1; else 0.  The reply is a
 * new datagram as the reference's responders make it: addresses and MACs
 * swapped, TTL / hop limit 64, and both checksums computed afresh (the
 * request's are not checked: a corrupt request still gets a correct reply,
 * as from the reference).  The IPv4 flags stay: the reference means to
 * clear them but masks the field in host (little-endian) byte order, so
 * it keeps the first byte (flags, DF included) and clears the top three
 * bits of the second; we make the same bytes (snabb-diff shows them).
 */
int
echo(struct lw *lw, struct side *s, struct pkt *pk)
{
	uint8_t *ip = pk->l3, *o, *icmp;
	int v6 = s->v6;
	size_t hlen = v6 ? SNB_IPV6_HLEN : (ip[0] & 0x0f) * 4u;
	size_t alen = v6 ? 16 : 4, src = v6 ? 8 : 12, dst = src + alen;
	uint16_t c;

	if (memcmp(ip + dst, s->cf->ip, alen) != 0 ||
	    pk->len < hlen + SNB_ICMP_HLEN || ip[hlen] != (v6 ?
	    SNB_ICMP6_ECHO_REQUEST : SNB_ICMP_ECHO_REQUEST) ||
	    ip[hlen + 1] != 0 || pk->eth == NULL)
		return 0;
	cnt(lw, v6 ? IN_ICMPV6_ECHO : IN_ICMPV4_ECHO, pk->flen);
	o = tx_begin(s, v6 ? SNB_ETH_IPV6 : SNB_ETH_IPV4, pk->len, pk->eth + 6,
	    pk->eth);
	memcpy(o, ip, pk->len);
	memcpy(o + src, ip + dst, alen);
	memcpy(o + dst, ip + src, alen);
	icmp = o + hlen;
	icmp[0] = v6 ? SNB_ICMP6_ECHO_REPLY : SNB_ICMP_ECHO_REPLY;
	memset(icmp + 2, 0, 2);
	if (v6) {
		o[7] = 64;
		c = ipv6_l4_cksum(o, icmp, pk->len - hlen, SNB_IPPROTO_ICMPV6);
	} else {
		o[7] &= 0x1f;		/* as the reference: see above */
		o[8] = 64;
		memset(o + 10, 0, 2);
		c = ipv4_header_cksum(o);
		memcpy(o + 10, &c, 2);
		c = ipv4_l4_cksum(o, icmp, pk->len - hlen, SNB_IPPROTO_ICMP);
	}
	memcpy(icmp + 2, &c, 2);
	if (tx_end(s, 0))
		cnt(lw, v6 ? OUT_ICMPV6_ECHO : OUT_ICMPV4_ECHO, pk->flen);
	return 1;
}
