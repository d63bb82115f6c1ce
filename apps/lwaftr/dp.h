/*
 * dp.h: the lwAFTR data path's internals (lwaftr.h maps the files).
 * Calls run one way: main.c -> rx.c (ingress) -> xlate.c (the softwire
 * core) -> icmp.c -> tx.c (output).  All state is one struct lw, which
 * main.c owns and passes down by pointer; a side points back at it so
 * that tx.c can count.
 *
 * Byte counters count Ethernet frames without their VLAN tag, which is
 * what the reference's counters (and so the conformance vectors) count.
 */
#ifndef LWAFTR_DP_H
#define LWAFTR_DP_H

#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "bpf.h"
#include "lwaftr.h"
#include "reasm.h"

/*
 * The counters, named as in the reference's softwire-state.  P(x) makes
 * the pair x-bytes / x-packets (enum x and x + 1), S(x) a single one.
 * Kept in private memory and published to the stage file once per breath;
 * only counters that ever moved get a slot there (see publish_counters).
 */
#define LW_PAIRS(P) \
	P(DROP_ALL_IPV4, "drop-all-ipv4-iface") \
	P(DROP_ALL_IPV6, "drop-all-ipv6-iface") \
	P(DROP_BAD_CKSUM_ICMPV4, "drop-bad-checksum-icmpv4") \
	P(DROP_IN_POLICY_ICMPV4, "drop-in-by-policy-icmpv4") \
	P(DROP_IN_POLICY_ICMPV6, "drop-in-by-policy-icmpv6") \
	P(DROP_IN_RFC7596_ICMPV4, "drop-in-by-rfc7596-icmpv4") \
	P(DROP_IN_RFC7596_ICMPV6, "drop-in-by-rfc7596-icmpv6") \
	P(DROP_MISPLACED_NOT_IPV4, "drop-misplaced-not-ipv4") \
	P(DROP_MISPLACED_NOT_IPV6, "drop-misplaced-not-ipv6") \
	P(DROP_NO_DEST_SW_IPV4, "drop-no-dest-softwire-ipv4") \
	P(DROP_NO_SRC_SW_IPV6, "drop-no-source-softwire-ipv6") \
	P(DROP_OVER_MTU_DF_IPV4, "drop-over-mtu-but-dont-fragment-ipv4") \
	P(DROP_OVER_RATE_ICMPV6, "drop-over-rate-limit-icmpv6") \
	P(DROP_OVER_TIME_ICMPV6, "drop-over-time-but-not-hop-limit-icmpv6") \
	P(DROP_TOO_BIG_ICMPV6, "drop-too-big-type-but-not-code-icmpv6") \
	P(DROP_TTL_ZERO_IPV4, "drop-ttl-zero-ipv4") \
	P(DROP_UNKNOWN_PROTO_ICMPV6, "drop-unknown-protocol-icmpv6") \
	P(DROP_UNKNOWN_PROTO_IPV6, "drop-unknown-protocol-ipv6") \
	P(HAIRPIN_IPV4, "hairpin-ipv4") \
	P(IN_ARP_REPLY, "in-arp-reply") \
	P(IN_ARP_REQUEST, "in-arp-request") \
	P(IN_ICMPV4_ECHO, "in-icmpv4-echo") \
	P(IN_ICMPV6_ECHO, "in-icmpv6-echo") \
	P(IN_IPV4, "in-ipv4") \
	P(IN_IPV6, "in-ipv6") \
	P(IN_NDP_NA, "in-ndp-na") \
	P(IN_NDP_NS, "in-ndp-ns") \
	P(OUT_ARP_REPLY, "out-arp-reply") \
	P(OUT_ARP_REQUEST, "out-arp-request") \
	P(OUT_ICMPV4_ECHO, "out-icmpv4-echo") \
	P(OUT_ICMPV4_ERROR, "out-icmpv4-error") \
	P(OUT_ICMPV6_ECHO, "out-icmpv6-echo") \
	P(OUT_ICMPV6_ERROR, "out-icmpv6-error") \
	P(OUT_IPV4, "out-ipv4") \
	P(OUT_IPV6, "out-ipv6") \
	P(OUT_NDP_NA, "out-ndp-na") \
	P(OUT_NDP_NS, "out-ndp-ns")
#define LW_SINGLES(S) \
	S(DROP_OUT_POLICY_ICMPV4, "drop-out-by-policy-icmpv4-packets") \
	S(DROP_OUT_POLICY_ICMPV6, "drop-out-by-policy-icmpv6-packets") \
	S(DROP_OVER_RATE_ICMPV4, "drop-over-rate-limit-icmpv4-packets") \
	S(DROP_IPV4_FRAG_DISABLED, "drop-ipv4-frag-disabled") \
	S(DROP_IPV6_FRAG_DISABLED, "drop-ipv6-frag-disabled") \
	S(DROP_IPV4_FRAG_INVALID, "drop-ipv4-frag-invalid-reassembly") \
	S(DROP_IPV6_FRAG_INVALID, "drop-ipv6-frag-invalid-reassembly") \
	S(DROP_IPV4_FRAG_EVICTED, "drop-ipv4-frag-random-evicted") \
	S(DROP_IPV6_FRAG_EVICTED, "drop-ipv6-frag-random-evicted") \
	S(DROP_IPV4_FRAG_EXPIRED, "drop-ipv4-frag-expired") \
	S(DROP_IPV6_FRAG_EXPIRED, "drop-ipv6-frag-expired") \
	S(DROP_NEXT_HOP_UNRESOLVED, "drop-next-hop-unresolved-packets") \
	S(DROP_OUTPUT_FULL, "drop-output-full-packets") \
	S(DROP_VLAN, "drop-wrong-vlan-packets") \
	S(IN_IPV4_FRAG_NEEDS, "in-ipv4-frag-needs-reassembly") \
	S(IN_IPV4_FRAG_REASSEMBLED, "in-ipv4-frag-reassembled") \
	S(IN_IPV4_FRAG_UNNEEDED, "in-ipv4-frag-reassembly-unneeded") \
	S(IN_IPV6_FRAG_NEEDS, "in-ipv6-frag-needs-reassembly") \
	S(IN_IPV6_FRAG_REASSEMBLED, "in-ipv6-frag-reassembled") \
	S(IN_IPV6_FRAG_UNNEEDED, "in-ipv6-frag-reassembly-unneeded") \
	S(OUT_IPV4_FRAG, "out-ipv4-frag") \
	S(OUT_IPV4_FRAG_NOT, "out-ipv4-frag-not") \
	S(OUT_IPV6_FRAG, "out-ipv6-frag") \
	S(OUT_IPV6_FRAG_NOT, "out-ipv6-frag-not")

#define LW_P_ENUM(x, s)	x, x##_PKTS,
#define LW_S_ENUM(x, s)	x,
enum lw_counter {
	LW_PAIRS(LW_P_ENUM)
	LW_SINGLES(LW_S_ENUM)
	LW_NCOUNTERS
};

/* One side of the AFTR: v4 (external, internet) or v6 (internal, B4s). */
#define HELD_MAX	64	/* frames waiting for the next hop */

struct held {
	uint16_t	 type;		/* ethertype, host order */
	uint32_t	 len;
	uint8_t		*l3;
};

struct side {
	struct lw	*lw;		/* the instance it belongs to */
	const char	*name;		/* port name: "v4" or "v6" */
	int		 v6;
	const struct lwaftr_side *cf;
	struct port	*in, *out;
	struct ring	*ro;		/* out->rings[0], NULL when unbound */
	uint32_t	 room, nout;	/* output slots this breath, used */
	uint64_t	 nbytes;	/* ... and the bytes of those used */
	uint32_t	 mtu;
	uint32_t	 fast_l3;	/* tx_begin() builds L3 packets of
					   1 .. fast_l3 bytes to the next hop
					   in the next slot: see tx_fast() */
	int		 vlan;		/* tagging: vlan_tci is the tag */
	uint16_t	 vlan_tci;	/* network order */
	uint8_t		 mac[6];
	uint8_t		 nh_mac[6];
	int		 nh_known;	/* nh_mac: configured or learnt */
	uint64_t	 sol_due;	/* next solicitation, 0: none sent */
	struct snb_bpf	*ingress, *egress;
	struct reasm	*reasm;
	uint64_t	 reasm_evicted, reasm_expired;
	uint64_t	 rl_start;	/* ICMP error rate limit window */
	uint32_t	 rl_used;
	struct held	 held[HELD_MAX];
	int		 held_head, nheld;
	/* The frame being built (tx_begin .. tx_end). */
	uint8_t		*cur;		/* its Ethernet header */
	struct packet	*cur_pkt;	/* its slot, when cur_slot */
	size_t		 cur_l3len;
	uint16_t	 cur_type;
	int		 cur_slot;	/* built in place in slot nout */
	int		 cur_dst;	/* caller gave the destination MAC */
	uint8_t		*scratch;	/* frames too big or held: built here */
};

#define ICMP4_ERR_MAX	576	/* RFC 1812 4.3.2.3: whole error <= 576 */

/* An lwAFTR: everything the data path reads and changes. */
struct lw {
	struct side		 s4, s6;
	struct lwaftr_bt	*bt;
	uint64_t		 now;		/* the breath's clock, 0: unread */
	int			 room_taken;	/* held frames left mid-burst */
	uint16_t		 frag_id4;	/* the last fragment ids used */
	uint32_t		 frag_id6;
	uint64_t		 ctr[LW_NCOUNTERS];
	uint8_t			 err4[ICMP4_ERR_MAX]; /* icmp4_error() builds */
};

/* A packet being handled: an untagged Ethernet frame and its L3 part. */
struct pkt {
	uint8_t		*eth;		/* 14 bytes before l3; NULL if none */
	uint8_t		*l3;
	uint32_t	 len;		/* L3 bytes (IP: the IP length) */
	uint32_t	 flen;		/* frame bytes, for counters */
	uint32_t	 outer_flen;	/* hairpinned: the IPv6 frame's */
};

/* Where a packet handed to the encapsulation comes from. */
enum origin {
	FROM_INET,		/* arrived on v4 */
	FROM_HAIRPIN,		/* decapsulated from a B4, to another B4 */
	FROM_AFTR		/* made here (an ICMP error) */
};

/* Count one packet of `bytes` in the pair c. */
static inline void
cnt(struct lw *lw, enum lw_counter c, size_t bytes)
{
	lw->ctr[c] += bytes;
	lw->ctr[c + 1]++;
}

/* An IPv6 packet from a B4 dropped: counted in c, as received and dropped. */
static inline void
drop6(struct lw *lw, const struct pkt *pk, enum lw_counter c)
{
	cnt(lw, c, pk->flen);
	cnt(lw, IN_IPV6, pk->flen);
	cnt(lw, DROP_ALL_IPV6, pk->flen);
}

/* The clock, read at most once a breath: packets of a burst share it. */
static inline uint64_t
lw_now(struct lw *lw)
{
	if (lw->now == 0)
		lw->now = app_now_ns();
	return lw->now;
}

/* ctl.c: a config request (app_desc's control; conf: CONF's path) */
int	lw_control(struct lw *lw, const char *conf, int argc, char **argv,
	    FILE *out);

/* rx.c */
int	rx_burst(struct side *in, struct ring *r);

/* xlate.c */
void	to_b4(struct lw *lw, struct pkt *pk, const struct softwire *sw,
	    int looked_up, enum origin origin);
void	from_b4(struct lw *lw, struct pkt *pk, const struct softwire *sw,
	    int looked_up);

/* icmp.c */
#define TOWARD_B4	1
#define FROM_B4		0
int	ipv4_b4_port(const uint8_t *ip, size_t len, int toward_b4,
	    uint16_t *port);
size_t	icmp4_error(struct lw *lw, const uint8_t *ip, size_t len,
	    uint8_t type, uint8_t code, uint16_t mtu, int relay);
void	icmp6_error(struct lw *lw, const struct pkt *pk, const uint8_t *src,
	    uint8_t type, uint8_t code);
size_t	icmp6_translate(struct lw *lw, struct pkt *pk);
int	echo(struct lw *lw, struct side *s, struct pkt *pk);

/* tx.c */
#define TX_FILTER	0x1	/* the side's egress filter applies */
#define TX_NOFRAG	0x2	/* drop rather than fragment */
#define SOLICIT_INTERVAL 3000000000ULL	/* ARP/NS while unresolved: the
					   reference's 3 s */
#define SCRATCH_HEAD	64	/* room for VLAN tag and Ethernet header */
#define SCRATCH_SIZE	(SCRATCH_HEAD + 65536 + 128)

void	tx_fini(struct side *s);
uint8_t *tx_begin_slow(struct side *s, uint16_t type, size_t l3len,
	    const uint8_t *dst, const uint8_t *src);
int	tx_end_slow(struct side *s, int flags);
void	tx_flush_held(struct side *s);
void	tx_solicit(struct side *s);
void	tx_learn(struct side *s, const uint8_t mac[6]);
void	tx_fast(struct side *s);
uint32_t tx_frames_big(const struct side *s, size_t l3len);

/* Output slots a packet of l3len bytes takes on side s (fragments). */
static inline uint32_t
tx_frames(const struct side *s, size_t l3len)
{
	return l3len <= s->mtu ? 1 : tx_frames_big(s, l3len);
}

/* Room for n more frames on s (capped: a huge packet must not wedge). */
static inline int
room_for(const struct side *s, uint32_t n)
{
	if (s->ro == NULL)
		return 1;
	if (n > s->ro->mask + 1)
		n = (uint32_t)s->ro->mask + 1;
	return s->room - s->nout >= n;
}

/* The big-endian 16 bits at p (any alignment), in host order. */
static inline uint16_t
be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* An Ethernet header at f. */
static inline void
eth_header(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	uint16_t t = htons(type);

	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	memcpy(f + 12, &t, 2);
}

/*
 * Finish slot nout of s, p, holding a frame of flen bytes, untagged, that
 * starts 4 bytes into the slot's data when s tags: move the MACs forward
 * over those 4 bytes and put the tag between them and the ethertype.
 */
static inline void
tx_slot_fill(struct side *s, struct packet *p, size_t flen)
{
	if (s->vlan) {
		uint16_t tpid = htons(0x8100);
		memmove(p->data, p->data + 4, 12);
		memcpy(p->data + 12, &tpid, 2);
		memcpy(p->data + 14, &s->vlan_tci, 2);
		flen += 4;
	}
	p->len = (uint16_t)flen;
	p->flags = 0;
	p->wirelen = 0;
	p->ts_ns = 0;
	s->nbytes += flen;
	s->nout++;
}

/*
 * Begin a frame of ethertype `type` carrying l3len (> 0) bytes out of side
 * s; returns where the L3 bytes go.  dst/src: MAC addresses, NULL for the
 * next hop and our own.  The usual frame (to the next hop, fits the MTU
 * and a slot, room left) is built in the next output slot itself.
 */
static inline uint8_t *
tx_begin(struct side *s, uint16_t type, size_t l3len, const uint8_t *dst,
    const uint8_t *src)
{
	struct packet *p;
	uint8_t *f;

	if (__builtin_expect(dst != NULL || src != NULL ||
	    l3len > s->fast_l3 || s->nout >= s->room, 0))
		return tx_begin_slow(s, type, l3len, dst, src);
	p = ring_slot(s->ro, s->nout);
	f = p->data + (s->vlan ? 4 : 0);
	eth_header(f, s->nh_mac, s->mac, type);
	s->cur = f;
	s->cur_pkt = p;
	s->cur_l3len = l3len;
	s->cur_type = type;
	s->cur_dst = 0;
	s->cur_slot = 1;
	return f + 14;
}

/*
 * Send the frame begun by tx_begin().  Returns 1 if it went out or waits
 * for the next hop, 0 if the egress filter took it.
 */
static inline int
tx_end(struct side *s, int flags)
{
	if (__builtin_expect(!s->cur_slot || ((flags & TX_FILTER) &&
	    s->egress != NULL), 0))
		return tx_end_slow(s, flags);
	tx_slot_fill(s, s->cur_pkt, 14 + s->cur_l3len);
	s->lw->ctr[s->v6 ? OUT_IPV6_FRAG_NOT : OUT_IPV4_FRAG_NOT]++;
	return 1;
}

#endif
