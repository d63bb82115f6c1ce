/*
 * tx.c: everything between "this L3 packet goes out side s" and a filled
 * output slot: Ethernet and VLAN headers, the egress filter, IPv4/IPv6
 * fragmentation to the side's MTU, frames held while the next hop's MAC
 * is being resolved, and the ARP requests / neighbour solicitations that
 * resolve it.
 *
 * The usual frame is written in the next output slot itself (tx_begin()
 * and tx_end(), dp.h); one that must be fragmented, held, or does not fit
 * a slot is built in the side's scratch buffer and copied out from there.
 *
 * Every frame that leaves counts once in out-ipvX-frag-not, or in
 * out-ipvX-frag per fragment, whatever it carries (ARP and NDP too): the
 * reference counts at its fragmenter, which every outgoing frame crosses.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/stdlib.h>

#include "checksum.h"
#include "dp.h"
#include "ndp.h"
#include "proto.h"

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static inline int
is_ip(const struct side *s, uint16_t type)
{
	return type == (s->v6 ? SNB_ETH_IPV6 : SNB_ETH_IPV4);
}

/* Output slots a packet of l3len bytes takes on side s. */
uint32_t
tx_frames_big(const struct side *s, size_t l3len)
{
	size_t per = (s->mtu - (s->v6 ? SNB_IPV6_HLEN + SNB_IPV6_FRAG_HLEN :
	    SNB_IPV4_MAX_HLEN)) & ~7u;

	return (uint32_t)((l3len + per - 1) / per);
}

static inline int
slot_fits(const struct side *s, size_t flen)
{
	return flen + (s->vlan ? 4 : 0) <= s->ro->capacity;
}

/*
 * Where the next output slot's frame of flen bytes starts (after room for
 * a tag), or NULL (counted) if no slot takes it.
 */
static uint8_t *
next_slot(struct side *s, size_t flen)
{
	if (s->nout == s->room || !slot_fits(s, flen)) {
		s->lw->ctr[DROP_OUTPUT_FULL]++;
		return NULL;
	}
	return ring_slot(s->ro, s->nout)->data + (s->vlan ? 4 : 0);
}

/* tx_begin() when the frame cannot simply go to the next slot. */
uint8_t *
tx_begin_slow(struct side *s, uint16_t type, size_t l3len, const uint8_t *dst,
    const uint8_t *src)
{
	uint8_t *f;

	s->cur_l3len = l3len;
	s->cur_type = type;
	s->cur_dst = dst != NULL;
	if (s->ro != NULL && s->nout < s->room &&
	    slot_fits(s, SNB_ETH_HLEN + l3len) &&
	    (!is_ip(s, type) || l3len <= s->mtu) &&
	    (dst != NULL || (s->nh_known && s->nheld == 0))) {
		s->cur_pkt = ring_slot(s->ro, s->nout);
		f = s->cur_pkt->data + (s->vlan ? 4 : 0);
		s->cur_slot = 1;
	} else {
		f = s->scratch + SCRATCH_HEAD;
		s->cur_slot = 0;
	}
	if (l3len > 65536)	/* callers never ask; keep scratch safe */
		abort();
	eth_header(f, dst ? dst : s->nh_mac, src ? src : s->mac, type);
	s->cur = f;
	return f + SNB_ETH_HLEN;
}

/* IPv4 options a later fragment repeats: those with the copied bit. */
static size_t
copied_options(const uint8_t *ip, size_t hlen, uint8_t *out)
{
	size_t i = SNB_IPV4_HLEN, n = 0, ol;

	while (i < hlen) {
		uint8_t t = ip[i];
		if (t == SNB_IPOPT_EOL)
			break;
		if (t == SNB_IPOPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= hlen || (ol = ip[i + 1]) < 2 || i + ol > hlen)
			break;
		if (t & 0x80) {
			memcpy(out + n, ip + i, ol);
			n += ol;
		}
		i += ol;
	}
	while (n % 4)
		out[n++] = SNB_IPOPT_EOL;
	return n;
}

/*
 * Fragment the IP packet at ip (after the Ethernet header eth) into
 * output slots: RFC 791, or RFC 8200 4.5 (we only ever send IPv6 without
 * extension headers: the whole payload is fragmentable).  Out of room
 * part way (room_for() caps a huge packet's need at the ring), the
 * fragments already out go uncounted.
 */
static void
fragment(struct side *s, const uint8_t *eth, const uint8_t *ip, size_t len)
{
	uint8_t hdr[SNB_IPV4_MAX_HLEN], *f;	/* > IPv6's 40 + 8 */
	size_t hlen = s->v6 ? SNB_IPV6_HLEN : (ip[0] & 0x0f) * 4u, h = hlen;
	size_t off = 0, data = len - hlen, n;
	uint32_t id, nfrag = 0;
	uint16_t fo = be16(ip + 6), v;

	memcpy(hdr, ip, hlen);
	if (s->v6) {
		id = htonl(++s->lw->frag_id6);
		hdr[6] = SNB_IPPROTO_FRAGMENT;
		hdr[40] = ip[6];
		hdr[41] = 0;
		memcpy(hdr + 44, &id, 4);
		h += SNB_IPV6_FRAG_HLEN;
	} else {
		v = htons(++s->lw->frag_id4);
		memcpy(hdr + 4, &v, 2);
	}
	while (off < data) {
		n = (s->mtu - h) & ~7u;
		if (off + n >= data)
			n = data - off;
		if ((f = next_slot(s, SNB_ETH_HLEN + h + n)) == NULL)
			return;
		memcpy(f, eth, SNB_ETH_HLEN);
		f += SNB_ETH_HLEN;
		memcpy(f, hdr, h);
		if (s->v6) {
			v = htons((uint16_t)(SNB_IPV6_FRAG_HLEN + n));
			memcpy(f + 4, &v, 2);
			v = htons((uint16_t)(off | (off + n < data ?
			    SNB_IP6F_MORE : 0)));
			memcpy(f + 42, &v, 2);
		} else {
			f[0] = (uint8_t)(0x40 | (h / 4));
			v = htons((uint16_t)(h + n));
			memcpy(f + 2, &v, 2);
			v = htons((uint16_t)(((fo & SNB_IP_OFFMASK) + off / 8) |
			    (fo & (SNB_IP_DF | SNB_IP_MF)) |
			    (off + n < data ? SNB_IP_MF : 0)));
			memcpy(f + 6, &v, 2);
			v = ipv4_header_cksum(f);
			memcpy(f + 10, &v, 2);
		}
		memcpy(f + h, ip + hlen + off, n);
		tx_slot_fill(s, ring_slot(s->ro, s->nout),
		    SNB_ETH_HLEN + h + n);
		/* Later IPv4 fragments carry the "copied" options only. */
		if (off == 0 && !s->v6)
			h = SNB_IPV4_HLEN + copied_options(ip, hlen,
			    hdr + SNB_IPV4_HLEN);
		nfrag++;
		off += n;
	}
	s->lw->ctr[s->v6 ? OUT_IPV6_FRAG : OUT_IPV4_FRAG] += nfrag;
}

/*
 * Put the frame at eth (Ethernet header complete) out: in place if it is
 * slot nout's, else copied or fragmented into slots.
 */
static void
emit(struct side *s, const uint8_t *eth, size_t l3len, uint16_t type,
    int in_slot, int flags)
{
	size_t flen = SNB_ETH_HLEN + l3len;
	uint8_t *f;

	if (s->ro == NULL)
		return;
	if (is_ip(s, type) && l3len > s->mtu) {
		if (flags & TX_NOFRAG)
			s->lw->ctr[DROP_OUTPUT_FULL]++;
		else
			fragment(s, eth, eth + SNB_ETH_HLEN, l3len);
		return;
	}
	if (!in_slot) {
		if ((f = next_slot(s, flen)) == NULL)
			return;
		memcpy(f, eth, flen);
	}
	tx_slot_fill(s, ring_slot(s->ro, s->nout), flen);
	s->lw->ctr[s->v6 ? OUT_IPV6_FRAG_NOT : OUT_IPV4_FRAG_NOT]++;
}

static void
hold(struct side *s)
{
	struct held *h = &s->held[(s->held_head + s->nheld) % HELD_MAX];

	if (s->nheld == HELD_MAX || (h->l3 = malloc(s->cur_l3len)) == NULL) {
		s->lw->ctr[DROP_NEXT_HOP_UNRESOLVED]++;
		return;
	}
	memcpy(h->l3, s->cur + SNB_ETH_HLEN, s->cur_l3len);
	h->len = (uint32_t)s->cur_l3len;
	h->type = s->cur_type;
	s->nheld++;
	tx_fast(s);
}

/* Forget the oldest held frame. */
static void
unhold(struct side *s)
{
	struct held *h = &s->held[s->held_head];

	free(h->l3);
	h->l3 = NULL;
	s->held_head = (s->held_head + 1) % HELD_MAX;
	s->nheld--;
	tx_fast(s);
}

/* tx_end() for frames filtered, held, fragmented or built aside. */
int
tx_end_slow(struct side *s, int flags)
{
	size_t flen = SNB_ETH_HLEN + s->cur_l3len;

	if ((flags & TX_FILTER) && s->egress != NULL &&
	    snb_bpf_run(s->egress, s->cur, (unsigned)flen,
	    (unsigned)flen) == 0)
		return 0;
	if (!s->cur_dst && (!s->nh_known || s->nheld > 0)) {
		hold(s);
		return 1;
	}
	emit(s, s->cur, s->cur_l3len, s->cur_type, s->cur_slot, flags);
	return 1;
}

/* Send held frames while there is room, in order. */
void
tx_flush_held(struct side *s)
{
	while (s->nheld > 0 && s->nh_known) {
		struct held *h = &s->held[s->held_head];
		uint8_t *f = s->scratch + SCRATCH_HEAD;

		if (!room_for(s, tx_frames(s, h->len)))
			return;
		eth_header(f, s->nh_mac, s->mac, h->type);
		memcpy(f + SNB_ETH_HLEN, h->l3, h->len);
		emit(s, f, h->len, h->type, 0, 0);
		unhold(s);
	}
}

void
tx_learn(struct side *s, const uint8_t mac[6])
{
	memcpy(s->nh_mac, mac, 6);
	s->nh_known = 1;
	tx_fast(s);
	if (s->nheld > 0)
		s->lw->room_taken = 1;
	tx_flush_held(s);
}

/*
 * Ask for the next hop's MAC, as the reference does: at the first breath,
 * then every SOLICIT_INTERVAL while it is unknown (a frame waiting for it
 * asks for nothing more).  v4: an ARP request, broadcast.  v6: a neighbour
 * solicitation to the target's solicited-node group and that group's MAC
 * (RFC 4861 7.2.2).  Counted when made; the egress filter applies, as it
 * does to every frame the reference sends.
 */
void
tx_solicit(struct side *s)
{
	static const uint8_t zero[6];
	uint8_t dst[6], group[16], *o;
	uint32_t spa, tpa;

	if (s->v6) {
		ndp_solicited_node(s->cf->nh_ip, group);
		ndp_multicast_mac(group, dst);
		o = tx_begin(s, SNB_ETH_IPV6, NDP_PKT_LEN, dst, NULL);
		ndp_build_ns(o, s->cf->ip, s->mac, s->cf->nh_ip);
		cnt(s->lw, OUT_NDP_NS, SNB_ETH_HLEN + NDP_PKT_LEN);
	} else {
		memcpy(&spa, s->cf->ip, 4);
		memcpy(&tpa, s->cf->nh_ip, 4);
		o = tx_begin(s, SNB_ETH_ARP, ARP_PKT_LEN, bcast, NULL);
		arp_build(o, SNB_ARP_REQUEST, s->mac, spa, zero, tpa);
		cnt(s->lw, OUT_ARP_REQUEST, SNB_ETH_HLEN + ARP_PKT_LEN);
	}
	tx_end(s, TX_FILTER);
	s->sol_due = lw_now(s->lw) + SOLICIT_INTERVAL;
}

/*
 * What tx_begin() may build in place without a look at the rest: frames
 * to the next hop (known, none held before them) that fit the MTU and a
 * slot with room for a tag.  Called whenever one of those changes.
 */
void
tx_fast(struct side *s)
{
	uint32_t cap;

	if (s->ro == NULL || !s->nh_known || s->nheld != 0) {
		s->fast_l3 = 0;
		return;
	}
	cap = s->ro->capacity - SNB_ETH_HLEN - SNB_VLAN_HLEN;
	s->fast_l3 = s->mtu < cap ? s->mtu : cap;
}

/* At exit: what still waits for the next hop is lost. */
void
tx_fini(struct side *s)
{
	while (s->nheld > 0) {
		unhold(s);
		s->lw->ctr[DROP_NEXT_HOP_UNRESOLVED]++;
	}
	free(s->scratch);
	s->scratch = NULL;
}
