/*
 * snb-nd: IPv6 neighbour discovery (RFC 4861) for one address on the
 * core side of the tunnel apps, so that each of them stays one idea
 * (snb-nd(1) says what is answered, resolved, passed and dropped):
 *
 *	north (tunnel apps)  <->  nd  <->  south (the core's nic)
 *
 * No queue while the next hop is unresolved: the tunnel's customers
 * retry, as over any link that lost a frame.  The next hop's MAC is the
 * hand-over state: a restart or a swap to another snb-nd of the same
 * words sends on at once, without a gap of drops while it would resolve
 * again.  Flow control is exact, as in snb-vlan (forward.h).
 */
#include <err.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>

#include "forward.h"
#include "ndp.h"
#include "proto.h"

#define NORTH		0
#define SOUTH		1
#define SOLICIT_NS	1000000000ull	/* RFC 4861 RetransTimer */
#define TYPE_OFF	(SNB_ETH_HLEN + SNB_IPV6_HLEN)	/* ICMPv6 type */

static uint8_t addr[16], mac[6], nh[16], nh_mac[6];
static int resolve, resolved;
/* What a successor needs: the MAC learnt for the next hop. */
struct nd_state {
	uint8_t		nh[16];
	uint8_t		mac[6];
	uint8_t		resolved;
};
static struct nd_state *state;
static uint64_t sol_due;
static struct fwd fwd;

static const char *const cnt_names[] = { "to-north", "to-south", "ns-in",
    "na-out", "na-in", "ns-out", "next-hop-learned", "drop-unresolved",
    "drop-not-ours", "drop-runt", "drop-nd-invalid", "drop-nd-other",
    "drop-no-port", NULL };
static struct {		/* cnt_names' counters in order, then a gauge */
	uint64_t *north, *south, *ns_in, *na_out, *na_in, *ns_out, *learned,
	    *unresolved, *not_ours, *runt, *nd_invalid, *nd_other, *no_port,
	    *resolved;
} c;

static void
parse_ip6(const char *opt, char *s, void *out)
{
	if (inet_pton(AF_INET6, s, out) != 1)
		errx(2, "bad %s '%s': not an IPv6 address", opt, s);
	if (((uint8_t *)out)[0] == 0xff)
		errx(2, "bad %s '%s': a multicast address", opt, s);
}

static void
parse_mac(const char *opt, char *s, void *var)
{
	uint8_t *m = var;
	int n = 0;

	if (sscanf(s, "%2hhx:%2hhx:%2hhx:%2hhx:%2hhx:%2hhx%n", &m[0], &m[1],
	    &m[2], &m[3], &m[4], &m[5], &n) != 6 || s[n] != '\0' ||
	    strspn(s, "0123456789abcdefABCDEF:") != strlen(s))
		errx(2, "bad %s '%s': not a MAC address", opt, s);
	if (m[0] & 1)
		errx(2, "bad %s '%s': a group address", opt, s);
}

static void
nd_init(int argc, char **argv)
{
	static int have[4];
	static const struct app_opt opts[] = {
		APP_ARG("address", parse_ip6, addr, &have[0]),
		APP_ARG("mac", parse_mac, mac, &have[1]),
		APP_ARG("next-hop", parse_ip6, nh, &have[2]),
		APP_ARG("next-hop-mac", parse_mac, nh_mac, &have[3]),
		APP_OPT_END
	};

	app_options(argc, argv, opts, APP_OPT_PERMUTE);
	if (!have[0] || !have[1]) {
		warnx("missing --%s", have[0] ? "mac" : "address");
		app_usage();
	}
	if (have[2] == have[3]) {
		warnx("give one of --next-hop and --next-hop-mac");
		app_usage();
	}
	resolve = have[2];
	resolved = !resolve;
	fwd_init(&fwd, (const char *[]){ "north", "south", NULL },
	    (const char *[]){ "north", "south", NULL });
	app_require_port("south", PORT_IN | PORT_OUT);
	app_counters((uint64_t **)&c, cnt_names);
	fwd.out[NORTH].sent = c.north;
	fwd.out[SOUTH].sent = c.south;
	c.resolved = app_gauge("next-hop-resolved");
	*c.resolved = resolved;
}

/*
 * An NS or NA from us to dst into south's next slot (room checked): its
 * Ethernet header written, the ICMPv6 message for the caller; NULL
 * (counted in drop-oversize) when south's slots are too small for one.
 */
static uint8_t *
south_nd(const uint8_t dst[6])
{
	static const struct packet none;	/* no flags, wirelen or time */
	struct packet *q = fwd_slot(&fwd, SOUTH, &none,
	    SNB_ETH_HLEN + NDP_PKT_LEN);
	uint16_t t = htons(SNB_ETH_IPV6);

	if (q == NULL)
		return NULL;
	memcpy(q->data, dst, 6);
	memcpy(q->data + 6, mac, 6);
	memcpy(q->data + 12, &t, 2);
	return q->data + SNB_ETH_HLEN;
}

static void
solicit(void)
{
	uint8_t group[16], dst[6], *o;

	ndp_solicited_node(nh, group);
	ndp_multicast_mac(group, dst);
	if ((o = south_nd(dst)) != NULL) {
		ndp_build_ns(o, addr, mac, nh);
		(*c.ns_out)++;
	}
	sol_due = app_now_ns() + SOLICIT_NS;
}

static void
learn(const uint8_t *m)
{
	if (resolved && memcmp(nh_mac, m, 6) == 0)
		return;
	(*c.learned)++;
	memcpy(nh_mac, m, 6);
	resolved = 1;
	*c.resolved = 1;
	memcpy(state->nh, nh, 16);
	memcpy(state->mac, m, 6);
	state->resolved = 1;
	app_state_commit();
}

/* A predecessor's next hop, if it resolved the same one. */
static void
nd_start(void)
{
	state = app_state(sizeof(*state));
	if (resolve && app_resumed() && state->resolved &&
	    memcmp(state->nh, nh, 16) == 0) {
		memcpy(nh_mac, state->mac, 6);
		resolved = 1;
	}
	*c.resolved = resolved;
}

/*
 * An NS or NA from south: 1 when it was consumed, 0 when it must wait for
 * room in south (an NA to send).
 */
static int
nd_input(const uint8_t *f, uint32_t len)
{
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
	static const uint8_t unspec[16];
	struct ndp_msg m;
	const uint8_t *dst, *dmac;
	uint8_t gmac[6], *o;
	uint32_t flags;

	if (ndp_parse(f + SNB_ETH_HLEN, len - SNB_ETH_HLEN, &m) != NDP_OK) {
		(*c.nd_invalid)++;
		return 1;
	}
	if (m.type == SNB_ICMP6_NEIGHBOR_SOLICIT) {
		if (memcmp(m.target, addr, 16) != 0) {
			(*c.nd_other)++;
			return 1;
		}
		if (!fwd_room(&fwd, SOUTH))
			return 0;
		(*c.ns_in)++;
		/* From the unspecified address (DAD): to all nodes, S clear
		 * (RFC 4861 7.2.4). */
		flags = NDP_NA_OVERRIDE;
		if (memcmp(m.src, unspec, 16) == 0) {
			dst = all_nodes;
			ndp_multicast_mac(all_nodes, gmac);
			dmac = gmac;
		} else {
			dst = m.src;
			flags |= NDP_NA_SOLICITED;
			dmac = m.lladdr && !m.lladdr_bad ? m.lladdr : f + 6;
			/* A neighbour that asks tells its MAC (7.2.3). */
			if (resolve && m.lladdr && !m.lladdr_bad &&
			    memcmp(m.src, nh, 16) == 0)
				learn(m.lladdr);
		}
		if ((o = south_nd(dmac)) != NULL) {
			ndp_build_na(o, addr, dst, mac, flags);
			(*c.na_out)++;
		}
		return 1;
	}
	if (!resolve || memcmp(m.target, nh, 16) != 0 || m.lladdr_bad) {
		(*c.nd_other)++;
		return 1;
	}
	(*c.na_in)++;
	/*
	 * RFC 4861 7.2.5: only the target link-layer option gives the
	 * address (an NA without one is discarded while the next hop is
	 * unresolved, and has nothing to change after); once resolved,
	 * another address only with the Override flag (without it the
	 * kernel marks the entry STALE and keeps the address).
	 */
	if (m.lladdr != NULL && (!resolved || (m.flags & NDP_NA_OVERRIDE)))
		learn(m.lladdr);
	return 1;
}

/*
 * One ring's frames, up to the first that must wait for room: north's to
 * the next hop; south's answered, learnt from or passed north.  Inlined
 * with a constant from (take()): one loop, compiled for each side.
 */
static inline __attribute__((always_inline)) uint32_t
from_side(int from, struct ring *r, uint32_t n)
{
	struct packet *q;
	uint32_t i, len;

	for (i = 0; i < n; i++) {
		struct packet *p = ring_peek(r, i);
		const uint8_t *f = p->data;

		len = packet_len(r, p);
		if (len < SNB_ETH_HLEN)
			(*c.runt)++;
		else if (from == NORTH && !resolved)
			(*c.unresolved)++;
		else if (from == NORTH) {
			if (!fwd_room(&fwd, SOUTH))
				break;
			if ((q = fwd_slot(&fwd, SOUTH, p, len)) == NULL)
				continue;
			memcpy(q->data, nh_mac, 6);
			memcpy(q->data + 6, mac, 6);
			memcpy(q->data + 12, f + 12, len - 12);
		} else if (!(f[0] & 1) && memcmp(f, mac, 6) != 0)
			(*c.not_ours)++;
		/* Even an NS or NA that fails the first checks (hop limit
		 * 255, the checksum) is no ordinary packet: not passed. */
		else if (f[12] == 0x86 && f[13] == 0xdd && len > TYPE_OFF &&
		    f[SNB_ETH_HLEN + 6] == SNB_IPPROTO_ICMPV6 &&
		    (f[TYPE_OFF] == SNB_ICMP6_NEIGHBOR_SOLICIT ||
		    f[TYPE_OFF] == SNB_ICMP6_NEIGHBOR_ADVERT)) {
			if (!nd_input(f, len))
				break;
		} else if (fwd.out[NORTH].ring == NULL)
			(*c.no_port)++;
		else if (!fwd_room(&fwd, NORTH))
			break;
		else
			fwd_put(&fwd, NORTH, p, len);
	}
	return i;
}

static uint32_t
take(void *ctx, int from, struct ring *r, uint32_t n)
{
	return from == SOUTH ? from_side(SOUTH, r, n) : from_side(NORTH, r, n);
}

static int
nd_breathe(void)
{
	int sent = 0;

	if (resolve && !resolved) {
		if (app_now_ns() >= sol_due && fwd_room(&fwd, SOUTH)) {
			solicit();
			sent = 1;
		}
		app_wake_at(sol_due);
	}
	return fwd_take(&fwd, take, NULL) + sent;
}

static const struct app_desc desc = {
	.name = "nd",
	.usage = "--address IP6 --mac MAC --next-hop IP6 "
	    "[--counters-out FILE]\n"
	    "--address IP6 --mac MAC --next-hop-mac MAC "
	    "[--counters-out FILE]",
	.counters_out = 1,
	.summary = "IPv6 neighbour discovery for one address toward the "
	    "core: answer solicitations, resolve the next hop, set the "
	    "Ethernet addresses of frames going south.",
	.ports = (const struct port_desc[]){ { "north", PORT_IN },
	    { "north", PORT_OUT }, { "south", PORT_IN }, { "south", PORT_OUT },
	    { NULL, 0 } },
	.init = nd_init,
	.start = nd_start,
	.breathe = nd_breathe,
};

APP_MAIN(desc)
