/*
 * xlate.c: the softwire core (RFC 7596 5 and 6).
 *
 * to_b4(): an IPv4 packet for a softwire's address and port set is
 * encapsulated in IPv6 from the softwire's BR address to its B4 (hop
 * limit 255, traffic class = the IPv4 TOS byte, the configured flow
 * label), its TTL decremented first.  Packets arrive here from the
 * internet, hairpinned from a B4, or made by the AFTR itself (ICMP
 * errors); only the counting differs.
 *
 * from_b4(): an IPv6 packet from a B4 must carry IPv4 whose source
 * address and port belong to the softwire with exactly this B4 address
 * and BR address (RFC 7596 5.2); it is then decapsulated (its TTL left
 * alone, as the vectors show), or hairpinned when its destination is one
 * of our softwires' addresses.
 */
#include <arpa/inet.h>
#include <string.h>

#include "checksum.h"
#include "dp.h"
#include "proto.h"

/*
 * Send the ICMPv4 error icmp4_error() built (len bytes, none if 0): out
 * of v4, or, if its destination is one of the softwires' addresses, to
 * that B4.  The reference hands the latter to its hairpin path as if a B4
 * had sent it: it meets the allow-incoming-icmp policy there, and with no
 * softwire for its port is dropped as RFC 7596 8.1 says, counted against
 * the IPv6 side at the length it would have had in a softwire.
 */
static void
route_error4(struct lw *lw, size_t len)
{
	struct pkt pk = { .l3 = lw->err4, .len = (uint32_t)len,
	    .flen = (uint32_t)(SNB_ETH_HLEN + len) };
	const struct softwire *sw = NULL;
	uint32_t dst;
	uint16_t port;
	uint8_t *o;

	if (len == 0)
		return;
	memcpy(&dst, pk.l3 + 16, 4);
	if (!lwaftr_bt_has_ipv4(lw->bt, dst)) {
		o = tx_begin(&lw->s4, SNB_ETH_IPV4, len, NULL, NULL);
		memcpy(o, pk.l3, len);
		if (tx_end(&lw->s4, TX_FILTER))
			cnt(lw, OUT_IPV4, SNB_ETH_HLEN + len);
		return;
	}
	if (!lw->s4.cf->allow_incoming_icmp) {
		cnt(lw, DROP_IN_POLICY_ICMPV4, pk.flen);
		cnt(lw, DROP_ALL_IPV6, pk.flen + SNB_IPV6_HLEN);
		return;
	}
	if (ipv4_b4_port(pk.l3, len, TOWARD_B4, &port))
		sw = lwaftr_bt_lookup(lw->bt, dst, port);
	if (sw != NULL) {
		to_b4(lw, &pk, sw, 1, FROM_AFTR);
		return;
	}
	cnt(lw, DROP_NO_DEST_SW_IPV4, pk.flen);
	if (lw->s4.cf->generate_icmp_errors)
		cnt(lw, DROP_IN_RFC7596_ICMPV4, pk.flen);
	else
		lw->ctr[DROP_OUT_POLICY_ICMPV4]++;
	cnt(lw, DROP_ALL_IPV6, pk.flen + SNB_IPV6_HLEN);
}

/* The packet counts as received: per origin (see to_b4). */
static void
count_in(struct lw *lw, const struct pkt *pk, enum origin origin)
{
	if (origin == FROM_INET)
		cnt(lw, IN_IPV4, pk->flen);
	else if (origin == FROM_HAIRPIN) {
		cnt(lw, IN_IPV6, pk->outer_flen);
		cnt(lw, HAIRPIN_IPV4, pk->flen);
	}
}

/*
 * Drop pk, counted in c, in the received counters and its side's drops,
 * and answer with an ICMPv4 error of this type (none if 0: "echo reply"
 * is no error).  What the AFTR made itself is neither counted nor
 * answered.
 */
static void
drop4(struct lw *lw, const struct pkt *pk, enum origin origin,
    enum lw_counter c, uint8_t type, uint8_t code, uint16_t mtu)
{
	if (origin == FROM_AFTR)
		return;
	cnt(lw, c, pk->flen);
	count_in(lw, pk, origin);
	if (origin == FROM_INET)
		cnt(lw, DROP_ALL_IPV4, pk->flen);
	else
		cnt(lw, DROP_ALL_IPV6, pk->outer_flen);
	if (type != 0)
		route_error4(lw, icmp4_error(lw, pk->l3, pk->len, type, code,
		    mtu, 0));
}

void
to_b4(struct lw *lw, struct pkt *pk, const struct softwire *sw,
    int looked_up, enum origin origin)
{
	struct side *s6 = &lw->s6;
	uint8_t *ip = pk->l3, *o;
	size_t len = pk->len, hlen = (ip[0] & 0x0f) * 4u;
	uint32_t dst, w;
	uint16_t port, c, old, new, v;

	/*
	 * ICMP from the internet or hairpinned from a B4 (the reference
	 * sends both through the same checks), not the errors we made.
	 */
	if (origin != FROM_AFTR && ip[9] == SNB_IPPROTO_ICMP) {
		if (!lw->s4.cf->allow_incoming_icmp) {
			drop4(lw, pk, origin, DROP_IN_POLICY_ICMPV4, 0, 0, 0);
			return;
		}
		if (len < hlen + SNB_ICMP_HLEN || be16(ip + hlen + 2) !=
		    ntohs(ipv4_l4_cksum(ip, ip + hlen, len - hlen,
		    SNB_IPPROTO_ICMP))) {
			drop4(lw, pk, origin, DROP_BAD_CKSUM_ICMPV4, 0, 0, 0);
			return;
		}
	}
	if (!looked_up) {
		sw = NULL;	/* no port: no softwire's */
		memcpy(&dst, ip + 16, 4);
		if (ipv4_b4_port(ip, len, TOWARD_B4, &port))
			sw = lwaftr_bt_lookup(lw->bt, dst, port);
	}
	if (sw == NULL) {
		/*
		 * "Host unreachable", but ICMP matching no softwire is
		 * dropped silently (RFC 7596 8.1); the reference asks the
		 * generate-icmp-errors policy first.
		 */
		if (ip[9] == SNB_IPPROTO_ICMP && origin != FROM_AFTR &&
		    lw->s4.cf->generate_icmp_errors) {
			cnt(lw, DROP_IN_RFC7596_ICMPV4, pk->flen);
			drop4(lw, pk, origin, DROP_NO_DEST_SW_IPV4, 0, 0, 0);
		} else
			drop4(lw, pk, origin, DROP_NO_DEST_SW_IPV4,
			    SNB_ICMP_DEST_UNREACH, SNB_ICMP_UNREACH_HOST, 0);
		return;
	}
	/*
	 * Decrement the TTL in place: an ICMP error quotes the packet as we
	 * would have sent it (the vectors show TTL 0 in "time exceeded").
	 */
	memcpy(&old, ip + 8, 2);
	if (ip[8] > 0)
		ip[8]--;
	memcpy(&new, ip + 8, 2);
	memcpy(&c, ip + 10, 2);
	c = cksum_update16(c, old, new);
	memcpy(ip + 10, &c, 2);
	if (ip[8] == 0) {
		drop4(lw, pk, origin, DROP_TTL_ZERO_IPV4,
		    SNB_ICMP_TIME_EXCEEDED, SNB_ICMP_TIMXCEED_TTL, 0);
		return;
	}
	if (len + SNB_IPV6_HLEN > s6->mtu && (be16(ip + 6) & SNB_IP_DF)) {
		drop4(lw, pk, origin, DROP_OVER_MTU_DF_IPV4,
		    SNB_ICMP_DEST_UNREACH, SNB_ICMP_UNREACH_NEEDFRAG,
		    (uint16_t)(s6->mtu - SNB_IPV6_HLEN));
		return;
	}
	o = tx_begin(s6, SNB_ETH_IPV6, SNB_IPV6_HLEN + len, NULL, NULL);
	w = htonl(6u << 28 | (uint32_t)ip[1] << 20 |
	    (s6->cf->flow_label & 0xfffff));
	memcpy(o, &w, 4);
	v = htons((uint16_t)len);
	memcpy(o + 4, &v, 2);
	o[6] = SNB_IPPROTO_IPIP;
	o[7] = 255;
	memcpy(o + 8, sw->br, 16);
	memcpy(o + 24, sw->b4, 16);
	memcpy(o + SNB_IPV6_HLEN, ip, len);
	if (tx_end(s6, TX_FILTER)) {
		count_in(lw, pk, origin);
		cnt(lw, OUT_IPV6, SNB_ETH_HLEN + SNB_IPV6_HLEN + len);
	}
}

void
from_b4(struct lw *lw, struct pkt *pk, const struct softwire *sw,
    int looked_up)
{
	uint8_t *ip6 = pk->l3, *ip = ip6 + SNB_IPV6_HLEN, *o;
	size_t plen = pk->len - SNB_IPV6_HLEN, len, hlen;
	struct pkt in4;
	uint32_t src, dst;
	uint16_t port;

	if (ip6[6] == SNB_IPPROTO_ICMPV6) {
		route_error4(lw, icmp6_translate(lw, pk));
		return;
	}
	if (ip6[6] != SNB_IPPROTO_IPIP || plen < SNB_IPV4_HLEN ||
	    (ip[0] >> 4) != 4 || (hlen = (ip[0] & 0x0f) * 4u) <
	    SNB_IPV4_HLEN || (len = be16(ip + 2)) < hlen || len > plen) {
		drop6(lw, pk, DROP_UNKNOWN_PROTO_IPV6);
		return;
	}
	if (!looked_up) {
		sw = NULL;
		memcpy(&src, ip + 12, 4);
		if (ipv4_b4_port(ip, len, FROM_B4, &port))
			sw = lwaftr_bt_lookup(lw->bt, src, port);
	}
	if (sw == NULL || memcmp(sw->b4, ip6 + 8, 16) != 0 ||
	    memcmp(sw->br, ip6 + 24, 16) != 0) {
		drop6(lw, pk, DROP_NO_SRC_SW_IPV6);
		icmp6_error(lw, pk, sw != NULL ? sw->br : ip6 + 24,
		    SNB_ICMP6_DEST_UNREACH, SNB_ICMP6_UNREACH_POLICY);
		return;
	}
	in4 = (struct pkt){ .l3 = ip, .len = (uint32_t)len,
	    .flen = (uint32_t)(SNB_ETH_HLEN + len), .outer_flen = pk->flen };
	memcpy(&dst, ip + 16, 4);
	if (lw->s6.cf->hairpinning && lwaftr_bt_has_ipv4(lw->bt, dst)) {
		to_b4(lw, &in4, NULL, 0, FROM_HAIRPIN);
		return;
	}
	if (len > lw->s4.mtu && (be16(ip + 6) & SNB_IP_DF)) {
		/* As a router would: "fragmentation needed" to the B4. */
		cnt(lw, DROP_OVER_MTU_DF_IPV4, in4.flen);
		cnt(lw, IN_IPV6, pk->flen);
		cnt(lw, DROP_ALL_IPV6, pk->flen);
		route_error4(lw, icmp4_error(lw, ip, len, SNB_ICMP_DEST_UNREACH,
		    SNB_ICMP_UNREACH_NEEDFRAG, (uint16_t)lw->s4.mtu, 0));
		return;
	}
	o = tx_begin(&lw->s4, SNB_ETH_IPV4, len, NULL, NULL);
	memcpy(o, ip, len);
	if (tx_end(&lw->s4, TX_FILTER)) {
		cnt(lw, IN_IPV6, pk->flen);
		cnt(lw, OUT_IPV4, SNB_ETH_HLEN + len);
	}
}
