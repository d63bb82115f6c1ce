/*
 * rx.c: ingress.  For a burst, the packets that plainly need a
 * binding-table lookup (unfragmented IPv4 with a port, to or from a B4)
 * are looked up together, so the table's cache misses overlap
 * (lwaftr_bt_lookup_burst); then every packet of the burst is handled in
 * order: VLAN tag, reassembly, ARP/NDP, echo to our own addresses,
 * ingress filter, and the softwire core (xlate.c).
 *
 * Lossless: a packet is taken only when both outputs have room for all
 * it can produce (fragments included).
 */
#include <string.h>

#include "checksum.h"
#include "dp.h"
#include "ndp.h"
#include "proto.h"

#define ROOM_RETRY_NS	20000		/* outputs short of room: retry */
#define PREFETCH_AHEAD	16		/* input slots asked for in advance */
#define PREFETCH_BODY	1536		/* bytes of a packet fetched early */

static inline struct side *
other(const struct side *s)
{
	return s->v6 ? &s->lw->s4 : &s->lw->s6;
}

/* Is the IP packet at l3 (len bytes) from side s a fragment? */
static inline int
is_fragment(const struct side *s, const uint8_t *l3, uint32_t len)
{
	return s->v6 ? reasm_frag6_offset(l3, len) != 0 :
	    reasm_is_fragment4(l3, len);
}

/*
 * Check the VLAN tag (and take it out, in place: the slot is ours until
 * released) and fill pk.  Returns the ethertype, or -1 if dropped here.
 */
static int
rx_frame(struct side *s, uint8_t *data, uint32_t len, struct pkt *pk)
{
	uint16_t type, tci;

	if (len < SNB_ETH_HLEN) {
		cnt(s->lw, s->v6 ? DROP_ALL_IPV6 : DROP_ALL_IPV4, len);
		return -1;
	}
	memcpy(&type, data + 12, 2);
	if (s->vlan) {
		if (len < SNB_ETH_HLEN + SNB_VLAN_HLEN ||
		    type != htons(SNB_ETH_VLAN))
			goto badtag;
		memcpy(&tci, data + 14, 2);
		if ((tci ^ s->vlan_tci) & htons(SNB_VLAN_VID_MASK))
			goto badtag;
		memmove(data + 4, data, 12);
		data += 4;
		len -= 4;
		memcpy(&type, data + 12, 2);
	}
	*pk = (struct pkt){ .eth = data, .l3 = data + SNB_ETH_HLEN,
	    .len = len - SNB_ETH_HLEN, .flen = len };
	return ntohs(type);
badtag:
	s->lw->ctr[DROP_VLAN]++;
	return -1;
}

/* Feed a fragment to s's reassembler; 1 if pk now holds a datagram. */
static int
reassemble(struct side *s, struct pkt *pk)
{
	uint64_t *ctr = s->lw->ctr;
	enum reasm_result r;
	uint8_t *out;
	size_t outlen;
	uint16_t v;

	ctr[s->v6 ? IN_IPV6_FRAG_NEEDS : IN_IPV4_FRAG_NEEDS]++;
	r = reasm_add(s->reasm, pk->l3, pk->len, lw_now(s->lw), &out,
	    &outlen);
	ctr[s->v6 ? DROP_IPV6_FRAG_EVICTED : DROP_IPV4_FRAG_EVICTED] +=
	    reasm_evicted(s->reasm) - s->reasm_evicted;
	ctr[s->v6 ? DROP_IPV6_FRAG_EXPIRED : DROP_IPV4_FRAG_EXPIRED] +=
	    reasm_expired(s->reasm) - s->reasm_expired;
	s->reasm_evicted = reasm_evicted(s->reasm);
	s->reasm_expired = reasm_expired(s->reasm);
	if (r == REASM_INVALID)
		ctr[s->v6 ? DROP_IPV6_FRAG_INVALID : DROP_IPV4_FRAG_INVALID]++;
	if (r != REASM_DONE)
		return 0;
	ctr[s->v6 ? IN_IPV6_FRAG_REASSEMBLED : IN_IPV4_FRAG_REASSEMBLED]++;
	memcpy(out - SNB_ETH_HLEN, pk->eth, SNB_ETH_HLEN);
	pk->eth = out - SNB_ETH_HLEN;
	pk->l3 = out;
	pk->len = (uint32_t)outlen;
	pk->flen = (uint32_t)(SNB_ETH_HLEN + outlen);
	if (!s->v6) {
		/* A new datagram, no longer fragmented: id 0 (the vectors'). */
		memset(out + 4, 0, 2);
		v = ipv4_header_cksum(out);
		memcpy(out + 10, &v, 2);
	}
	return 1;
}

/*
 * ARP on v4, as the reference's ARP app: every request is counted and
 * one for our address answered (to its sender's hardware address); a
 * reply is counted, and one from the next hop we resolve teaches us its
 * MAC (the latest reply wins).  Requests teach nothing.  What is not
 * Ethernet/IPv4 ARP, or neither request nor reply, is dropped: counted
 * in drop-all-ipv4-iface where the reference drops it silently.
 */
static void
arp_input(struct lw *lw, struct pkt *pk)
{
	struct side *s4 = &lw->s4;
	struct arp_msg m;
	uint32_t own, nh;
	uint8_t *o;

	if (arp_parse(pk->l3, pk->len, &m) == -1 ||
	    (m.op != SNB_ARP_REQUEST && m.op != SNB_ARP_REPLY)) {
		cnt(lw, DROP_ALL_IPV4, pk->flen);
		return;
	}
	memcpy(&own, s4->cf->ip, 4);
	memcpy(&nh, s4->cf->nh_ip, 4);
	if (m.op == SNB_ARP_REQUEST) {
		cnt(lw, IN_ARP_REQUEST, pk->flen);
		if (m.tpa != own)
			return;
		o = tx_begin(s4, SNB_ETH_ARP, ARP_PKT_LEN, m.sha, NULL);
		arp_build(o, SNB_ARP_REPLY, s4->mac, own, m.sha, m.spa);
		/* counted when made, as the reference (before the filter) */
		cnt(lw, OUT_ARP_REPLY, SNB_ETH_HLEN + ARP_PKT_LEN);
		tx_end(s4, TX_FILTER);
		return;
	}
	cnt(lw, IN_ARP_REPLY, pk->flen);
	if (!s4->cf->has_nh_mac && m.spa == nh)
		tx_learn(s4, m.sha);
}

/*
 * Neighbour discovery on v6, as the reference's NDP app where RFC 4861
 * lets it (snb-lwaftr(1) lists where it does not).  A message that fails
 * the checks every one must pass (ndp_parse's NDP_BAD) is dropped and
 * counted in drop-all-ipv6-iface; the rest count as in-ndp-ns/in-ndp-na.
 *
 * NS for our address: a solicited NA with Router and Solicited set (not
 * Override, as the reference) to the solicitation's source, on its
 * Ethernet source address; from the unspecified address (duplicate
 * address detection) an NA with S clear to all-nodes (RFC 4861 7.2.4).
 *
 * NA: while the next hop is unknown, a solicited one for it gives its MAC
 * (the target link-layer option, else the frame's source); the first
 * one wins, later ones change nothing.
 */
static void
nd_input(struct lw *lw, struct pkt *pk)
{
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
	struct side *s6 = &lw->s6;
	struct ndp_msg m;
	uint8_t mac[6], *o;
	const uint8_t *dst;
	uint32_t flags;
	int r;

	if ((r = ndp_parse(pk->l3, pk->len, &m)) == NDP_BAD) {
		cnt(lw, DROP_ALL_IPV6, pk->flen);
		return;
	}
	if (m.type == SNB_ICMP6_NEIGHBOR_SOLICIT) {
		cnt(lw, IN_NDP_NS, pk->flen);
		if (r != NDP_OK || memcmp(m.target, s6->cf->ip, 16) != 0)
			return;
		flags = NDP_NA_ROUTER;
		if (m.src[0] == 0 && memcmp(m.src, m.src + 1, 15) == 0) {
			dst = all_nodes;
			ndp_multicast_mac(all_nodes, mac);
		} else {
			dst = m.src;
			flags |= NDP_NA_SOLICITED;
			memcpy(mac, pk->eth + 6, 6);
		}
		o = tx_begin(s6, SNB_ETH_IPV6, NDP_PKT_LEN, mac, NULL);
		ndp_build_na(o, s6->cf->ip, dst, s6->mac, flags);
		cnt(lw, OUT_NDP_NA, SNB_ETH_HLEN + NDP_PKT_LEN);
		tx_end(s6, TX_FILTER);
		return;
	}
	cnt(lw, IN_NDP_NA, pk->flen);
	if (r != NDP_OK || s6->nh_known ||
	    !(m.flags & NDP_NA_SOLICITED) || m.lladdr_bad ||
	    memcmp(m.target, s6->cf->nh_ip, 16) != 0)
		return;
	tx_learn(s6, m.lladdr ? m.lladdr : pk->eth + 6);
}

/*
 * The length the IP header at l3 (len bytes there) gives its packet, if
 * the header is whole and sane; else 0.
 */
static uint32_t
ip_len(int v6, const uint8_t *l3, uint32_t len)
{
	uint32_t hlen = (l3[0] & 0x0f) * 4u, n;

	if (v6) {
		if (len < SNB_IPV6_HLEN || (l3[0] >> 4) != 6)
			return 0;
		n = SNB_IPV6_HLEN + be16(l3 + 4);
		return n > len ? 0 : n;
	}
	if (len < SNB_IPV4_HLEN || (l3[0] >> 4) != 4 || hlen < SNB_IPV4_HLEN)
		return 0;
	n = be16(l3 + 2);
	return n < hlen || n > len ? 0 : n;
}

/*
 * One frame from side s.  iplen: 0, or the frame has a burst key (plain
 * IP, tagged as s wants, no fragment, this IP length: key() checked it
 * all) and sw is its lookup.
 */
static inline void
input(struct side *s, uint8_t *data, uint32_t len, uint32_t iplen,
    const struct softwire *sw)
{
	struct lw *lw = s->lw;
	int type, v6 = s->v6, ip = v6 ? SNB_ETH_IPV6 : SNB_ETH_IPV4;
	struct pkt pk;
	uint32_t n;

	if (iplen != 0) {
		if (s->vlan) {	/* as rx_frame(): the tag out, in place */
			memmove(data + 4, data, 12);
			data += 4;
			len -= 4;
		}
		pk = (struct pkt){ .eth = data, .l3 = data + SNB_ETH_HLEN,
		    .len = iplen, .flen = len };
		lw->ctr[v6 ? IN_IPV6_FRAG_UNNEEDED : IN_IPV4_FRAG_UNNEEDED]++;
		if (s->ingress && snb_bpf_run(s->ingress, pk.eth, pk.flen,
		    pk.flen) == 0)
			return;
		/* from a B4 it is IPv4 in IPv6: no ICMPv6, no NDP */
		if (v6)
			from_b4(lw, &pk, sw, 1);
		else if (pk.l3[9] != SNB_IPPROTO_ICMP || !echo(lw, s, &pk))
			to_b4(lw, &pk, sw, 1, FROM_INET);
		return;
	}
	if ((type = rx_frame(s, data, len, &pk)) == -1)
		return;
	if (type == ip && is_fragment(s, pk.l3, pk.len)) {
		if (!reassemble(s, &pk))
			return;
	} else
		lw->ctr[v6 ? IN_IPV6_FRAG_UNNEEDED : IN_IPV4_FRAG_UNNEEDED]++;
	/* The reference filters right after reassembly: ARP, NDP and echo
	 * requests pass the ingress filter too. */
	if (s->ingress && snb_bpf_run(s->ingress, pk.eth, pk.flen,
	    pk.flen) == 0)
		return;
	/* The reference's ARP app takes only frames long enough for ARP;
	 * a shorter one goes on as "not IPv4". */
	if (type == SNB_ETH_ARP && !v6 && pk.len >= ARP_PKT_LEN) {
		arp_input(lw, &pk);
		return;
	}
	if (type != ip || (n = ip_len(v6, pk.l3, pk.len)) == 0) {
		cnt(lw, type != ip ? (v6 ? DROP_MISPLACED_NOT_IPV6 :
		    DROP_MISPLACED_NOT_IPV4) : v6 ? IN_IPV6 : IN_IPV4,
		    pk.flen);
		cnt(lw, v6 ? DROP_ALL_IPV6 : DROP_ALL_IPV4, pk.flen);
		return;
	}
	pk.len = n;
	if (pk.l3[v6 ? 6 : 9] == (v6 ? SNB_IPPROTO_ICMPV6 : SNB_IPPROTO_ICMP)) {
		/*
		 * The reference's NDP app takes every neighbour discovery
		 * type (133-137) and answers NS and NA only: router
		 * solicitations and advertisements and redirects end there,
		 * not in the lwAFTR's ICMPv6 counters.  We count them as
		 * dropped (snb-lwaftr(1) CAVEATS).
		 */
		if (v6 && n > SNB_IPV6_HLEN + 1 &&
		    (pk.l3[SNB_IPV6_HLEN] == SNB_ICMP6_NEIGHBOR_SOLICIT ||
		    pk.l3[SNB_IPV6_HLEN] == SNB_ICMP6_NEIGHBOR_ADVERT)) {
			nd_input(lw, &pk);
			return;
		}
		if (v6 && n >= SNB_IPV6_HLEN + 4 /* type to checksum */ &&
		    pk.l3[SNB_IPV6_HLEN] >= SNB_ICMP6_ROUTER_SOLICIT &&
		    pk.l3[SNB_IPV6_HLEN] <= SNB_ICMP6_REDIRECT) {
			cnt(lw, DROP_ALL_IPV6, pk.flen);
			return;
		}
		if (echo(lw, s, &pk))
			return;
	}
	if (v6)
		from_b4(lw, &pk, NULL, 0);
	else
		to_b4(lw, &pk, NULL, 0, FROM_INET);
}

/*
 * The L3 part of a frame from side s, if it is untagged/tagged as s
 * wants and of ethertype `type`; else NULL.  For the burst lookups only:
 * touches nothing.
 */
static inline const uint8_t *
peek_l3(const struct side *s, const uint8_t *d, uint32_t len, uint16_t type,
    uint32_t *l3len)
{
	uint16_t t, tci;
	uint32_t off = SNB_ETH_HLEN;

	if (len < SNB_ETH_HLEN + SNB_VLAN_HLEN)
		return NULL;
	memcpy(&t, d + 12, 2);
	if (s->vlan) {
		memcpy(&tci, d + 14, 2);
		if (t != htons(SNB_ETH_VLAN) ||
		    ((tci ^ s->vlan_tci) & htons(SNB_VLAN_VID_MASK)))
			return NULL;
		memcpy(&t, d + 16, 2);
		off += SNB_VLAN_HLEN;
	}
	if (t != htons(type))
		return NULL;
	*l3len = len - off;
	return d + off;
}

/* Unfragmented IPv4 at ip (at most len bytes): its length, or 0. */
static inline uint32_t
plain_ipv4(const uint8_t *ip, uint32_t len)
{
	uint32_t tot;
	uint16_t fo;

	if (len < SNB_IPV4_HLEN || ip[0] < 0x45 || ip[0] > 0x4f)
		return 0;
	tot = be16(ip + 2);
	memcpy(&fo, ip + 6, 2);		/* tested in network order */
	if (tot < (ip[0] & 0x0f) * 4u || tot > len ||
	    (fo & htons(SNB_IP_MF | SNB_IP_OFFMASK)))
		return 0;
	return tot;
}

/*
 * The B4's port of an unfragmented IPv4 packet: TCP and UDP here, the
 * rest (ICMP) in icmp.c.
 */
static inline int
b4_port(const uint8_t *ip, uint32_t len, int toward_b4, uint16_t *port)
{
	uint32_t hlen = (ip[0] & 0x0f) * 4u;

	if ((ip[9] == SNB_IPPROTO_TCP || ip[9] == SNB_IPPROTO_UDP) &&
	    len >= hlen + 4) {
		memcpy(port, ip + hlen + (toward_b4 ? 2 : 0), 2);
		return 1;
	}
	return ipv4_b4_port(ip, len, toward_b4, port);
}

/*
 * The burst lookup key of a frame from side s, if it is plain IPv4 (in
 * IPv6 from a B4) with a port: from v4 its (destination, port), from v6
 * its inner (source, port).  Returns the IP length (IPv4's from v4,
 * IPv6's from v6), 0 if no key.
 */
static inline uint32_t
key(const struct side *s, const uint8_t *d, uint32_t len, uint32_t *addr,
    uint16_t *port)
{
	const uint8_t *ip;
	uint32_t l3len, tot, plen;

	if (!s->v6) {
		if ((ip = peek_l3(s, d, len, SNB_ETH_IPV4, &l3len)) == NULL ||
		    (tot = plain_ipv4(ip, l3len)) == 0 ||
		    memcmp(ip + 16, s->cf->ip, 4) == 0 ||
		    !b4_port(ip, tot, TOWARD_B4, port))
			return 0;
		memcpy(addr, ip + 16, 4);
		return tot;
	}
	if ((ip = peek_l3(s, d, len, SNB_ETH_IPV6, &l3len)) == NULL ||
	    l3len < SNB_IPV6_HLEN + SNB_IPV4_HLEN ||
	    ip[6] != SNB_IPPROTO_IPIP || (ip[0] >> 4) != 6 ||
	    SNB_IPV6_HLEN + (plen = be16(ip + 4)) > l3len ||
	    (tot = plain_ipv4(ip + SNB_IPV6_HLEN, plen)) == 0 ||
	    !b4_port(ip + SNB_IPV6_HLEN, tot, FROM_B4, port))
		return 0;
	memcpy(addr, ip + SNB_IPV6_HLEN + 12, 4);
	return SNB_IPV6_HLEN + plen;
}

/*
 * Output frames one input frame of len bytes may make, on the side it
 * arrived at (same) and the other one.  A fragment may complete a
 * datagram of any size; anything else makes at most one packet on each
 * side (an ICMP error here, the translated packet there), fragmented.
 * plain: the frame is known to be no fragment (it has a burst key).
 */
static inline void
needs(const struct side *in, const uint8_t *d, uint32_t len, int plain,
    uint32_t *same, uint32_t *oth)
{
	const uint8_t *ip;
	uint32_t l3len;

	if (!plain && (ip = peek_l3(in, d, len, in->v6 ? SNB_ETH_IPV6 :
	    SNB_ETH_IPV4, &l3len)) != NULL && is_fragment(in, ip, l3len))
		len = 65535 + SNB_IPV6_HLEN;
	*oth = tx_frames(other(in), len + (in->v6 ? 0 : SNB_IPV6_HLEN));
	*same = in->v6 ? 1 + tx_frames(in, len) : 1;
}

/* Ask for the first two lines of the input slot i places after r's tail. */
static inline void
prefetch_slot(const struct ring *r, uint32_t i)
{
	const char *a = (const char *)r->slots + ((r->tail + i) & r->mask) *
	    (uint64_t)r->slot_size;

	__builtin_prefetch(a);
	__builtin_prefetch(a + 64);
}

/*
 * A burst from ring r of side in (v4 or v6); returns the packets taken.
 * The first pass (prefetch, keys, batched lookups) covers the packets
 * whose worst case fits the outputs together: those need no check in
 * the second pass.  When the outputs are short of room (a consumer
 * lags), it stops there rather than look up packets that will stay in
 * the ring; the second pass then checks the packets after it one by
 * one, against what was really used, and they are looked up singly.
 */
int
rx_burst(struct side *in, struct ring *r)
{
	uint32_t addr[APP_BURST], len[APP_BURST], n, i, nk = 0, nfit;
	uint32_t want_same = 0, want_other = 0, same, oth, iplen[APP_BURST];
	uint32_t free_in, free_out;
	uint16_t port[APP_BURST];
	const struct softwire *sw[APP_BURST];
	struct packet *p[APP_BURST];
	int k[APP_BURST];
	struct side *out = other(in);
	struct lw *lw = in->lw;
	const char *a, *e;

	if ((n = ring_avail(r, APP_BURST)) > APP_BURST)
		n = APP_BURST;
	/* Output slots free, for the whole first pass (unbound: any). */
	free_in = in->ro != NULL ? in->room - in->nout : UINT32_MAX;
	free_out = out->ro != NULL ? out->room - out->nout : UINT32_MAX;
	/*
	 * The slots were written on another core: ask for all their first
	 * lines (headers up to the inner ports) at once, not one miss after
	 * the other.
	 */
	for (i = 0; i < n && i < PREFETCH_AHEAD; i++)
		prefetch_slot(r, i);
	for (i = 0; i < n; i++) {
		if (i + PREFETCH_AHEAD < n)
			prefetch_slot(r, i + PREFETCH_AHEAD);
		p[i] = ring_peek(r, i);
		len[i] = packet_len(r, p[i]);	/* read once: see ring.h */
		iplen[i] = key(in, p[i]->data, len[i], &addr[nk], &port[nk]);
		needs(in, p[i]->data, len[i], iplen[i] != 0, &same, &oth);
		if (want_same + same > free_in ||
		    want_other + oth > free_out)
			break;
		want_same += same;
		want_other += oth;
		k[i] = iplen[i] != 0 ? (int)nk++ : -1;
		/*
		 * The rest of the packet, for the copy in the second pass,
		 * two lines a step (the second may be one past its end).
		 */
		a = (const char *)p[i];
		e = a + (len[i] + PACKET_HDR < PREFETCH_BODY ?
		    len[i] + PACKET_HDR : PREFETCH_BODY);
		for (a += 128; a < e; a += 128) {
			__builtin_prefetch(a);
			__builtin_prefetch(a + 64);
		}
	}
	nfit = i;
	if (nk > 0)
		lwaftr_bt_lookup_burst(lw->bt, addr, port, (int)nk, sw);
	lw->room_taken = 0;
	for (i = 0; i < n; i++) {
		/* Frames released by an answer to our solicitation took room
		 * the burst's sum did not count: check each packet from now. */
		if (i >= nfit || lw->room_taken) {
			if (i >= nfit) {
				p[i] = ring_peek(r, i);
				len[i] = packet_len(r, p[i]);
				k[i] = -1;
				iplen[i] = 0;
			}
			needs(in, p[i]->data, len[i], k[i] >= 0, &same, &oth);
			if (!room_for(in, same) || !room_for(out, oth)) {
				app_wake_at(lw_now(lw) + ROOM_RETRY_NS);
				break;
			}
		}
		input(in, p[i]->data, len[i], iplen[i],
		    k[i] >= 0 ? sw[k[i]] : NULL);
	}
	ring_release(r, i);
	return (int)i;
}
