/*
 * snb-lwaftr: a lightweight 4over6 AFTR (RFC 7596).  Port v4 faces the
 * IPv4 internet, port v6 the B4s; each is an input and an output.
 *
 * A breath takes a burst from each input.  For a burst, the packets that
 * plainly need a binding-table lookup (unfragmented IPv4 with a port, to
 * or from a B4) are looked up together, so the table's cache misses
 * overlap (lwaftr_bt_lookup_burst); then every packet of the burst is
 * handled in order: VLAN tag, reassembly, ARP/NDP, echo to our own
 * addresses, ingress filter, and the softwire core (xlate.c).  Output is
 * written straight into the output rings' slots (tx.c).
 *
 * Lossless: a packet is taken only when both outputs have room for all
 * it can produce (fragments included).  SIGHUP re-reads CONF and swaps in
 * the new binding table if the whole file is good.
 */
#include <err.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "checksum.h"
#include "dp.h"
#include "ndp.h"
#include "proto.h"

uint64_t		 lw_ctr[LW_NCOUNTERS];
struct side		 lw_s4 = { .name = "v4" }, lw_s6 = { .name = "v6",
			    .v6 = 1 };
struct lwaftr_conf	 lw_conf;
struct lwaftr_bt	*lw_bt;
int			 lw_deterministic;
int			 lw_room_taken;

#define LW_P_NAME(x, s)	s "-bytes", s "-packets",
#define LW_S_NAME(x, s)	s,
static const char *const ctr_name[LW_NCOUNTERS] = {
	LW_PAIRS(LW_P_NAME)
	LW_SINGLES(LW_S_NAME)
};
static uint64_t		*ctr_pub[LW_NCOUNTERS];
static int		 npub;

static const char	*conf_path, *counters_out;
static struct lwaftr_conf *bt_conf;	/* backs lw_bt after a reload */
static volatile sig_atomic_t reload_requested;
static uint64_t		 now_cache;
static int		 bound;

#define REASM4_TIMEOUT	15000000000ULL	/* RFC 791's suggested 15 s */
#define REASM6_TIMEOUT	60000000000ULL	/* RFC 8200 4.5: 60 s */
#define SOLICIT_FIRST	1000000000ULL	/* first solicitation, if idle */
#define ROOM_RETRY_NS	20000		/* outputs short of room: retry */
#define PREFETCH_AHEAD	16		/* input slots asked for in advance */
#define PREFETCH_BODY	1536		/* bytes of a packet fetched early */

uint64_t
lw_now(void)
{
	if (now_cache == 0)
		now_cache = app_now_ns();
	return now_cache;
}

/*
 * Counters that moved get a slot in the stage file (it has room for
 * STAGE_MAX_COUNTERS, fewer than we have) and are copied there.
 */
static void
publish_counters(void)
{
	int i;

	for (i = 0; i < LW_NCOUNTERS; i++) {
		if (lw_ctr[i] == 0)
			continue;
		if (ctr_pub[i] == NULL) {
			if (npub == STAGE_MAX_COUNTERS)
				continue;
			ctr_pub[i] = app_counter(ctr_name[i]);
			npub++;
		}
		*ctr_pub[i] = lw_ctr[i];
	}
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(ctr_name[*(const int *)a], ctr_name[*(const int *)b]);
}

/* --counters-out: the counters that moved, "name value", sorted. */
static void
write_counters(void)
{
	int idx[LW_NCOUNTERS], n = 0, i;
	FILE *f;

	for (i = 0; i < LW_NCOUNTERS; i++)
		if (lw_ctr[i] != 0)
			idx[n++] = i;
	qsort(idx, (size_t)n, sizeof(idx[0]), by_name);
	if ((f = fopen(counters_out, "w")) == NULL) {
		warn("%s", counters_out);
		return;
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%s %llu\n", ctr_name[idx[i]],
		    (unsigned long long)lw_ctr[idx[i]]);
	if (fclose(f) == EOF)
		warn("%s", counters_out);
}

static struct snb_bpf *
compile_filter(const char *expr, const char *what)
{
	char errbuf[256];
	struct bpf_program bp;
	struct snb_bpf *prog;
	pcap_t *pd;

	if ((pd = pcap_open_dead(DLT_EN10MB, 65535)) == NULL)
		errx(1, "pcap_open_dead failed");
	if (pcap_compile(pd, &bp, expr, 1, PCAP_NETMASK_UNKNOWN) == -1)
		errx(2, "%s: bad %s '%s': %s", conf_path, what, expr,
		    pcap_geterr(pd));
	if ((prog = snb_bpf_load(bp.bf_insns, bp.bf_len, errbuf,
	    sizeof(errbuf))) == NULL)
		errx(2, "%s: unsupported %s '%s': %s", conf_path, what, expr,
		    errbuf);
	pcap_freecode(&bp);
	pcap_close(pd);
	return prog;
}

static void
side_init(struct side *s, const struct lwaftr_side *cf)
{
	const char *iface = s->v6 ? "internal-interface" :
	    "external-interface";
	uint32_t min = s->v6 ? SNB_IPV6_MIN_MTU : 68;

	s->cf = cf;
	if (cf->mtu < min || cf->mtu > 65535)
		errx(2, "%s: %s mtu %u is out of range (%u to 65535)",
		    conf_path, iface, cf->mtu, min);
	s->mtu = cf->mtu;
	memcpy(s->mac, cf->mac, 6);
	if (cf->has_nh_mac) {
		memcpy(s->nh_mac, cf->nh_mac, 6);
		s->nh_known = 1;
	} else if (cf->has_nh_ip) {
		s->resolve = 1;
		s->sol_due = app_now_ns() + SOLICIT_FIRST;
	} else
		errx(2, "%s: %s has no next-hop", conf_path, iface);
	if (cf->vlan_tag >= 0) {
		s->vlan = 1;
		s->vlan_tci = htons((uint16_t)(cf->vlan_tag & SNB_VLAN_VID_MASK));
	}
	if (cf->ingress_filter)
		s->ingress = compile_filter(cf->ingress_filter,
		    "ingress-filter");
	if (cf->egress_filter)
		s->egress = compile_filter(cf->egress_filter, "egress-filter");
	s->reasm = reasm_new(s->v6 ? 6 : 4, cf->reasm_max_packets,
	    cf->reasm_max_frags, s->v6 ? REASM6_TIMEOUT : REASM4_TIMEOUT, 0);
	if (s->reasm == NULL)
		errx(2, "%s: %s reassembly limits out of range (or out of "
		    "memory)", conf_path, iface);
	tx_init(s);
}

static void
on_hup(int sig)
{
	(void)sig;
	reload_requested = 1;
}

static void
usage(void)
{
	fprintf(stderr, "usage: snb-lwaftr [--deterministic] "
	    "[--counters-out FILE] CONF\n");
	exit(2);
}

static void
lw_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "deterministic", no_argument, NULL, 'd' },
		{ "counters-out", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 }
	};
	struct sigaction sa;
	char errbuf[1024];
	int ch;

	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			lw_deterministic = 1;
			break;
		case 'c':
			counters_out = optarg;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 1)
		usage();
	conf_path = argv[optind];
	if (lwaftr_conf_load(&lw_conf, conf_path, errbuf,
	    sizeof(errbuf)) == -1)
		errx(2, "%s", errbuf);
	if ((lw_bt = lwaftr_bt_build(lw_conf.sw, lw_conf.nsw, errbuf,
	    sizeof(errbuf))) == NULL)
		errx(2, "%s: %s", conf_path, errbuf);
	side_init(&lw_s4, &lw_conf.ext);
	side_init(&lw_s6, &lw_conf.in);
	frag_ids_init();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_hup;		/* no SA_RESTART: wake the sleep */
	sigaction(SIGHUP, &sa, NULL);
}

/* Re-read CONF; swap in its binding table only if all of it is good. */
static void
reload(void)
{
	struct lwaftr_conf *nc;
	struct lwaftr_bt *nbt, *old;
	char errbuf[1024];

	reload_requested = 0;
	if ((nc = calloc(1, sizeof(*nc))) == NULL) {
		warn("reload");
		return;
	}
	if (lwaftr_conf_load(nc, conf_path, errbuf, sizeof(errbuf)) == -1) {
		warnx("reload failed, keeping the current binding table: %s",
		    errbuf);
		lwaftr_conf_free(nc);
		free(nc);
		return;
	}
	if ((nbt = lwaftr_bt_build(nc->sw, nc->nsw, errbuf,
	    sizeof(errbuf))) == NULL) {
		warnx("reload failed, keeping the current binding table: "
		    "%s: %s", conf_path, errbuf);
		lwaftr_conf_free(nc);
		free(nc);
		return;
	}
	old = lw_bt;
	lw_bt = nbt;
	lwaftr_bt_free(old);
	if (bt_conf != NULL) {
		lwaftr_conf_free(bt_conf);
		free(bt_conf);
	}
	bt_conf = nc;
	warnx("%s: binding table reloaded (%zu softwires; other settings "
	    "take effect on restart)", conf_path, nc->nsw);
}

static struct port *
find_port(const char *name, int dir)
{
	int i;

	for (i = 0; i < app_nports; i++)
		if (strcmp(app_ports[i].name, name) == 0 &&
		    (app_ports[i].flags & dir))
			return &app_ports[i];
	return NULL;
}

static void
bind_ports(void)
{
	lw_s4.in = find_port("v4", PORT_IN);
	lw_s4.out = find_port("v4", PORT_OUT);
	lw_s6.in = find_port("v6", PORT_IN);
	lw_s6.out = find_port("v6", PORT_OUT);
	lw_s4.ro = lw_s4.out && lw_s4.out->nrings ? &lw_s4.out->rings[0] :
	    NULL;
	lw_s6.ro = lw_s6.out && lw_s6.out->nrings ? &lw_s6.out->rings[0] :
	    NULL;
	bound = 1;
}

static void
side_start(struct side *s)
{
	s->nout = 0;
	s->room = s->ro ? ring_room(s->ro, (uint32_t)s->ro->mask + 1) : 0;
}

static void
side_commit(struct side *s)
{
	if (s->ro != NULL && s->nout > 0)
		ring_commit(s->ro, s->nout);
	s->nout = 0;
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

/*
 * Check the VLAN tag (and take it out, in place: the slot is ours until
 * released) and fill pk.  Returns the ethertype, or -1 if dropped here.
 */
static int
rx_frame(struct side *s, uint8_t *data, uint32_t len, struct pkt *pk)
{
	uint16_t type, tci;

	if (len < SNB_ETH_HLEN) {
		cnt(s->v6 ? DROP_ALL_IPV6 : DROP_ALL_IPV4, len);
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
	pk->eth = data;
	pk->l3 = data + SNB_ETH_HLEN;
	pk->len = len - SNB_ETH_HLEN;
	pk->flen = len;
	pk->outer_flen = 0;
	return ntohs(type);
badtag:
	lw_ctr[DROP_VLAN]++;
	return -1;
}

/* Feed a fragment to s's reassembler; 1 if pk now holds a datagram. */
static int
reassemble(struct side *s, struct pkt *pk)
{
	enum reasm_result r;
	uint8_t *out;
	size_t outlen;
	uint64_t ev, ex;
	uint16_t v;

	lw_ctr[s->v6 ? IN_IPV6_FRAG_NEEDS : IN_IPV4_FRAG_NEEDS]++;
	r = reasm_add(s->reasm, pk->l3, pk->len, lw_now(), &out, &outlen);
	ev = reasm_evicted(s->reasm);
	ex = reasm_expired(s->reasm);
	lw_ctr[s->v6 ? DROP_IPV6_FRAG_EVICTED : DROP_IPV4_FRAG_EVICTED] +=
	    ev - s->reasm_evicted;
	lw_ctr[s->v6 ? DROP_IPV6_FRAG_EXPIRED : DROP_IPV4_FRAG_EXPIRED] +=
	    ex - s->reasm_expired;
	s->reasm_evicted = ev;
	s->reasm_expired = ex;
	if (r == REASM_INVALID)
		lw_ctr[s->v6 ? DROP_IPV6_FRAG_INVALID :
		    DROP_IPV4_FRAG_INVALID]++;
	if (r != REASM_DONE)
		return 0;
	lw_ctr[s->v6 ? IN_IPV6_FRAG_REASSEMBLED : IN_IPV4_FRAG_REASSEMBLED]++;
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

static void
arp_input(struct pkt *pk)
{
	struct arp_msg m;
	uint32_t own, nh;
	uint8_t *o;

	if (arp_parse(pk->l3, pk->len, &m) == -1) {
		cnt(DROP_ALL_IPV4, pk->flen);
		return;
	}
	memcpy(&own, lw_s4.cf->ip, 4);
	memcpy(&nh, lw_s4.cf->nh_ip, 4);
	if (m.op == SNB_ARP_REQUEST) {
		cnt(IN_ARP_REQUEST, pk->flen);
		if (m.tpa == own) {
			o = tx_begin(&lw_s4, SNB_ETH_ARP, ARP_PKT_LEN, m.sha,
			    NULL);
			arp_build(o, SNB_ARP_REPLY, lw_s4.mac, own, m.sha,
			    m.spa);
			if (tx_end(&lw_s4, 0))
				cnt(OUT_ARP_REPLY, SNB_ETH_HLEN + ARP_PKT_LEN);
		}
	} else if (m.op == SNB_ARP_REPLY)
		cnt(IN_ARP_REPLY, pk->flen);
	/* RFC 826: what a message says of its sender is news. */
	if (lw_s4.resolve && m.spa == nh)
		tx_learn(&lw_s4, m.sha);
}

static void
nd_input(struct pkt *pk)
{
	static const uint8_t zero[16];
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
	struct ndp_msg m;
	uint8_t mac[6], *o;
	const uint8_t *dst;
	uint32_t flags;

	if (ndp_parse(pk->l3, pk->len, &m) == -1) {
		cnt(DROP_ALL_IPV6, pk->flen);
		return;
	}
	if (m.type == SNB_ICMP6_NEIGHBOR_SOLICIT) {
		cnt(IN_NDP_NS, pk->flen);
		if (memcmp(m.target, lw_s6.cf->ip, 16) != 0)
			return;
		flags = NDP_NA_ROUTER | NDP_NA_OVERRIDE;
		if (memcmp(m.src, zero, 16) == 0) {
			dst = all_nodes;	/* RFC 4861 7.2.4 */
			ndp_multicast_mac(all_nodes, mac);
		} else {
			dst = m.src;
			flags |= NDP_NA_SOLICITED;
			memcpy(mac, m.lladdr ? m.lladdr : pk->eth + 6, 6);
		}
		o = tx_begin(&lw_s6, SNB_ETH_IPV6, NDP_PKT_LEN, mac, NULL);
		ndp_build_na(o, lw_s6.cf->ip, dst, lw_s6.mac, flags);
		if (tx_end(&lw_s6, 0))
			cnt(OUT_NDP_NA, SNB_ETH_HLEN + NDP_PKT_LEN);
		return;
	}
	cnt(IN_NDP_NA, pk->flen);
	if (lw_s6.resolve && m.lladdr != NULL &&
	    memcmp(m.target, lw_s6.cf->nh_ip, 16) == 0)
		tx_learn(&lw_s6, m.lladdr);
}

/* One frame from v4; sw is the burst's lookup when looked_up. */
static void
input4(uint8_t *data, uint32_t len, const struct softwire *sw,
    int looked_up)
{
	struct pkt pk;
	uint16_t v;
	int type;
	size_t hlen;

	if ((type = rx_frame(&lw_s4, data, len, &pk)) == -1)
		return;
	if (type == SNB_ETH_IPV4 && reasm_is_fragment4(pk.l3, pk.len)) {
		if (!reassemble(&lw_s4, &pk))
			return;
		looked_up = 0;
	} else
		lw_ctr[IN_IPV4_FRAG_UNNEEDED]++;
	if (type == SNB_ETH_ARP) {
		arp_input(&pk);
		return;
	}
	if (type != SNB_ETH_IPV4) {
		cnt(DROP_MISPLACED_NOT_IPV4, pk.flen);
		cnt(DROP_ALL_IPV4, pk.flen);
		return;
	}
	hlen = (pk.l3[0] & 0x0f) * 4u;
	if (pk.len >= SNB_IPV4_HLEN)
		memcpy(&v, pk.l3 + 2, 2);
	if (pk.len < SNB_IPV4_HLEN || (pk.l3[0] >> 4) != 4 ||
	    hlen < SNB_IPV4_HLEN || ntohs(v) < hlen || ntohs(v) > pk.len) {
		cnt(IN_IPV4, pk.flen);
		cnt(DROP_ALL_IPV4, pk.flen);
		return;
	}
	pk.len = ntohs(v);
	if (echo4(&pk))
		return;
	if (lw_s4.ingress && snb_bpf_run(lw_s4.ingress, pk.eth, pk.flen,
	    pk.flen) == 0)
		return;
	to_b4(&pk, sw, looked_up, FROM_INET);
}

/* One frame from v6. */
static void
input6(uint8_t *data, uint32_t len, const struct softwire *sw,
    int looked_up)
{
	struct pkt pk;
	uint16_t v;
	int type;

	if ((type = rx_frame(&lw_s6, data, len, &pk)) == -1)
		return;
	if (type == SNB_ETH_IPV6 && reasm_frag6_offset(pk.l3, pk.len)) {
		if (!reassemble(&lw_s6, &pk))
			return;
		looked_up = 0;
	} else
		lw_ctr[IN_IPV6_FRAG_UNNEEDED]++;
	if (type != SNB_ETH_IPV6) {
		cnt(DROP_MISPLACED_NOT_IPV6, pk.flen);
		cnt(DROP_ALL_IPV6, pk.flen);
		return;
	}
	if (pk.len >= SNB_IPV6_HLEN)
		memcpy(&v, pk.l3 + 4, 2);
	if (pk.len < SNB_IPV6_HLEN || (pk.l3[0] >> 4) != 6 ||
	    SNB_IPV6_HLEN + (uint32_t)ntohs(v) > pk.len) {
		cnt(IN_IPV6, pk.flen);
		cnt(DROP_ALL_IPV6, pk.flen);
		return;
	}
	pk.len = SNB_IPV6_HLEN + ntohs(v);
	if (pk.l3[6] == SNB_IPPROTO_ICMPV6 &&
	    pk.len > SNB_IPV6_HLEN + 1 &&
	    (pk.l3[SNB_IPV6_HLEN] == SNB_ICMP6_NEIGHBOR_SOLICIT ||
	    pk.l3[SNB_IPV6_HLEN] == SNB_ICMP6_NEIGHBOR_ADVERT)) {
		nd_input(&pk);
		return;
	}
	if (echo6(&pk))
		return;
	if (lw_s6.ingress && snb_bpf_run(lw_s6.ingress, pk.eth, pk.flen,
	    pk.flen) == 0)
		return;
	from_b4(&pk, sw, looked_up);
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
	uint16_t tot, fo;

	if (len < SNB_IPV4_HLEN || ip[0] < 0x45 || ip[0] > 0x4f)
		return 0;
	memcpy(&tot, ip + 2, 2);
	memcpy(&fo, ip + 6, 2);
	tot = ntohs(tot);
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

/* Burst key of a frame from v4: (destination, port) or 0. */
static inline int
key4(const uint8_t *d, uint32_t len, uint32_t *addr, uint16_t *port)
{
	const uint8_t *ip;
	uint32_t l3len, tot;

	if ((ip = peek_l3(&lw_s4, d, len, SNB_ETH_IPV4, &l3len)) == NULL ||
	    (tot = plain_ipv4(ip, l3len)) == 0 ||
	    memcmp(ip + 16, lw_s4.cf->ip, 4) == 0 ||
	    !b4_port(ip, tot, TOWARD_B4, port))
		return 0;
	memcpy(addr, ip + 16, 4);
	return 1;
}

/* Burst key of a frame from v6: (inner source, port) or 0. */
static inline int
key6(const uint8_t *d, uint32_t len, uint32_t *addr, uint16_t *port)
{
	const uint8_t *ip6;
	uint32_t l3len, tot;
	uint16_t plen;

	if ((ip6 = peek_l3(&lw_s6, d, len, SNB_ETH_IPV6, &l3len)) == NULL ||
	    l3len < SNB_IPV6_HLEN + SNB_IPV4_HLEN ||
	    ip6[6] != SNB_IPPROTO_IPIP || (ip6[0] >> 4) != 6)
		return 0;
	memcpy(&plen, ip6 + 4, 2);
	if (SNB_IPV6_HLEN + (uint32_t)ntohs(plen) > l3len ||
	    (tot = plain_ipv4(ip6 + SNB_IPV6_HLEN, ntohs(plen))) == 0 ||
	    !b4_port(ip6 + SNB_IPV6_HLEN, tot, FROM_B4, port))
		return 0;
	memcpy(addr, ip6 + SNB_IPV6_HLEN + 12, 4);
	return 1;
}

/*
 * Output frames one input frame of len bytes may make, on the side it
 * arrived at (same) and the other one.  A fragment may complete a
 * datagram of any size; anything else makes at most one packet on each
 * side (an ICMP error here, the translated packet there), fragmented.
 */
static void
needs(int v6, const uint8_t *d, uint32_t len, uint32_t *same, uint32_t *other)
{
	struct side *in = v6 ? &lw_s6 : &lw_s4, *out = v6 ? &lw_s4 : &lw_s6;
	uint32_t big = 65535 + SNB_IPV6_HLEN, l3len;
	const uint8_t *ip;

	if (v6) {
		ip = peek_l3(in, d, len, SNB_ETH_IPV6, &l3len);
		if (ip != NULL && reasm_frag6_offset(ip, l3len))
			len = big;
		*other = tx_frames(out, len);
		*same = 1 + tx_frames(in, len);
	} else {
		ip = peek_l3(in, d, len, SNB_ETH_IPV4, &l3len);
		if (ip != NULL && reasm_is_fragment4(ip, l3len))
			len = big;
		*other = tx_frames(out, len + SNB_IPV6_HLEN);
		*same = 1;
	}
}

/* The input slot i places after r's tail, not touched yet. */
static inline const void *
slot_addr(const struct ring *r, uint32_t i)
{
	return r->slots + ((r->tail + i) & r->mask) * (uint64_t)r->slot_size;
}

/* A burst from ring r of side in (v4 or v6). */
static int
burst(struct side *in, struct ring *r)
{
	uint32_t addr[APP_BURST], len[APP_BURST], n, i, nk = 0, same, other;
	uint32_t want_same = 0, want_other = 0;
	uint16_t port[APP_BURST];
	const struct softwire *sw[APP_BURST];
	struct packet *p[APP_BURST];
	int k[APP_BURST], checked;
	struct side *out = in->v6 ? &lw_s4 : &lw_s6;
	uint32_t j;

	if ((n = ring_avail(r, APP_BURST)) > APP_BURST)
		n = APP_BURST;
	/*
	 * The slots were written on another core: ask for all their first
	 * lines (headers up to the inner ports) at once, not one miss after
	 * the other.
	 */
	for (i = 0; i < n && i < PREFETCH_AHEAD; i++) {
		const char *a = slot_addr(r, i);
		__builtin_prefetch(a);
		__builtin_prefetch(a + 64);
	}
	for (i = 0; i < n; i++) {
		if (i + PREFETCH_AHEAD < n) {
			const char *a = slot_addr(r, i + PREFETCH_AHEAD);
			__builtin_prefetch(a);
			__builtin_prefetch(a + 64);
		}
		p[i] = ring_peek(r, i);
		/* Read once: the producer is another process. */
		len[i] = *(volatile uint16_t *)&p[i]->len;
		if (len[i] > r->capacity)
			len[i] = r->capacity;
		/* The rest of the packet, for the copy in the second pass. */
		for (j = 128; j < len[i] + PACKET_HDR && j < PREFETCH_BODY;
		    j += 64)
			__builtin_prefetch((const char *)p[i] + j);
		k[i] = -1;
		if (in->v6 ? key6(p[i]->data, len[i], &addr[nk], &port[nk]) :
		    key4(p[i]->data, len[i], &addr[nk], &port[nk]))
			k[i] = (int)nk++;
		if (k[i] >= 0) {
			/* Plain IPv4 inside: one packet out, perhaps split. */
			same = in->v6 ? 1 + tx_frames(in, len[i]) : 1;
			other = tx_frames(out, len[i] + (in->v6 ? 0 :
			    SNB_IPV6_HLEN));
		} else
			needs(in->v6, p[i]->data, len[i], &same, &other);
		want_same += same;
		want_other += other;
	}
	if (nk > 0)
		lwaftr_bt_lookup_burst(lw_bt, addr, port, (int)nk, sw);
	/* Usually the whole burst fits: then no per-packet checks. */
	checked = (in->ro == NULL || in->room - in->nout >= want_same) &&
	    (out->ro == NULL || out->room - out->nout >= want_other);
	lw_room_taken = 0;
	for (i = 0; i < n; i++) {
		/* Frames released by an answer to our solicitation took room
		 * the burst's sum did not count: check each packet from now. */
		if (!checked || lw_room_taken) {
			needs(in->v6, p[i]->data, len[i], &same, &other);
			if (!room_for(in, same) || !room_for(out, other)) {
				app_wake_at(lw_now() + ROOM_RETRY_NS);
				break;
			}
		}
		if (in->v6)
			input6(p[i]->data, len[i], k[i] >= 0 ? sw[k[i]] : NULL,
			    k[i] >= 0);
		else
			input4(p[i]->data, len[i], k[i] >= 0 ? sw[k[i]] : NULL,
			    k[i] >= 0);
	}
	ring_release(r, i);
	return (int)i;
}

/* Solicitations for unresolved next hops that are due. */
static int
timers(void)
{
	struct side *sides[2] = { &lw_s4, &lw_s6 };
	uint64_t wake = 0;
	int i, sent = 0;

	for (i = 0; i < 2; i++) {
		struct side *s = sides[i];
		if (!s->resolve || s->nh_known)
			continue;
		if (lw_now() >= s->sol_due && room_for(s, 1)) {
			tx_solicit(s, 0);
			sent++;
		}
		if (wake == 0 || s->sol_due < wake)
			wake = s->sol_due;
	}
	if (wake)
		app_wake_at(wake);
	return sent;
}

static int
lw_breathe(void)
{
	int n = 0, j;

	now_cache = 0;
	if (!bound)
		bind_ports();
	if (reload_requested)
		reload();
	side_start(&lw_s4);
	side_start(&lw_s6);
	tx_flush_held(&lw_s4);
	tx_flush_held(&lw_s6);
	if ((lw_s4.resolve && !lw_s4.nh_known) ||
	    (lw_s6.resolve && !lw_s6.nh_known))
		n += timers();
	if (lw_s4.in)
		for (j = 0; j < lw_s4.in->nrings; j++)
			n += burst(&lw_s4, &lw_s4.in->rings[j]);
	if (lw_s6.in)
		for (j = 0; j < lw_s6.in->nrings; j++)
			n += burst(&lw_s6, &lw_s6.in->rings[j]);
	n += (int)(lw_s4.nout + lw_s6.nout);
	side_commit(&lw_s4);
	side_commit(&lw_s6);
	if (n > 0)
		publish_counters();
	return n;
}

static void
lw_stop(int eof)
{
	struct side *sides[2] = { &lw_s4, &lw_s6 };
	int i;

	if (!bound)
		bind_ports();
	/*
	 * End of stream before the first solicitation was due: send it now,
	 * so that a short run (a test) still asks for its next hops.
	 */
	if (eof) {
		now_cache = 0;
		for (i = 0; i < 2; i++) {
			struct side *s = sides[i];
			side_start(s);
			if (s->resolve && !s->nh_known && !s->sol_sent &&
			    room_for(s, 1))
				tx_solicit(s, 0);
			side_commit(s);
		}
	}
	for (i = 0; i < 2; i++) {
		tx_fini(sides[i]);
		reasm_free(sides[i]->reasm);
		snb_bpf_free(sides[i]->ingress);
		snb_bpf_free(sides[i]->egress);
	}
	publish_counters();
	if (counters_out)
		write_counters();
	lwaftr_bt_free(lw_bt);
	if (bt_conf != NULL) {
		lwaftr_conf_free(bt_conf);
		free(bt_conf);
	}
	lwaftr_conf_free(&lw_conf);
}

static const struct port_desc ports[] = {
	{ "v4", PORT_IN },
	{ "v4", PORT_OUT },
	{ "v6", PORT_IN },
	{ "v6", PORT_OUT },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "lwaftr",
	.usage = "[--deterministic] [--counters-out FILE] CONF",
	.summary = "Lightweight 4over6 AFTR (RFC 7596): port v4 faces the "
	    "IPv4 internet, port v6 the B4s.",
	.ports = ports,
	.init = lw_init,
	.breathe = lw_breathe,
	.stop = lw_stop,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
