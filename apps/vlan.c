/*
 * snb-vlan: 802.1Q tags (snb-vlan(1)): tag, untag, mux.
 *
 * The runtime answers --describe before it knows the subcommand, so the
 * ports are declared as "any name" and checked here when they are bound.
 * Only the customer tag (TPID 0x8100) is looked at or made: an 802.1ad
 * service tag (0x88a8) counts as "no tag".  Flow control is exact, as in
 * the bridge: a port is one index of struct fwd in both directions, and
 * the frames are ours to copy (a tag is pushed or popped on the way), so
 * each ring's burst is taken with fwd_take().
 */
#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "proto.h"

#define VID_MIN		1
#define VID_MAX		4094	/* 0 = priority tag, 4095 reserved */
#define MAX_PORTS	60	/* 8 counters + 2 per port fit the stage file's 128 */
#define NO_PORT		0xffff

enum mode { TAG = 1, UNTAG = 2, MUX = 4 };	/* bits: see vlan_init() */

static enum mode mode;
static const char *cmd;		/* "tag", "untag", "mux" */
static uint16_t vid, tci_pcp;	/* tag/untag VID; PCP bits for pushed tags */
static int pass_other;
/*
 * The stage's ports by name, each an input (possibly fan-in) and an
 * output of struct fwd; for mux the VID each stands for (0 for trunk and
 * native).  tx[port] is fwd.out[port].sent.
 */
static const char *names[MAX_PORTS + 1];	/* NULL-ended, for fwd_init */
static int nports;
static struct fwd fwd;
static uint16_t port_vid[MAX_PORTS];
static uint64_t *rx[MAX_PORTS];
/* mux: the port of each VID (NO_PORT if none), and of trunk and native. */
static uint16_t vid_port[4096];
static int trunk = -1, native = -1, out = -1;	/* out: tag, untag */

static uint64_t *c_tagged, *c_untagged, *c_passed, *c_drop_runt,
    *c_drop_untagged, *c_drop_other_vid, *c_drop_unknown_vid,
    *c_drop_no_trunk, *c_to_native;
static uint64_t scratch;	/* per-port counts tag and untag do not keep */

/*
 * A VLAN id from the command line or a port name: decimal 1..4094, no
 * sign, no leading zero (so "10" and "010" cannot be two ports of one
 * VLAN).  Returns 0 if s is not one.
 */
static uint16_t
parse_vid(const char *s)
{
	int v = atoi(s);

	if (*s == '0' || strlen(s) > 4 || s[strspn(s, "0123456789")] != '\0')
		return 0;
	return v >= VID_MIN && v <= VID_MAX ? (uint16_t)v : 0;
}

static void
bind_ports(void)
{
	char c[48];
	int i;

	memset(vid_port, 0xff, sizeof(vid_port));	/* NO_PORT */
	for (i = 0; i < app_nports; i++) {
		struct port *p = &app_ports[i];
		const char *n = p->name;
		if (mode != MUX) {
			if (strcmp(n, (p->flags & PORT_IN) ? "in" : "out"))
				errx(1, "%s: no %s port '%s' (ports: in, out)",
				    cmd, (p->flags & PORT_IN) ? "input" :
				    "output", n);
		} else if (strcmp(n, "trunk") && strcmp(n, "native") &&
		    parse_vid(n) == 0)
			errx(1, "mux: bad port '%s' (trunk, native, or a VLAN "
			    "id %d..%d)", n, VID_MIN, VID_MAX);
		/* Each name once: by its input, or by its output alone. */
		if (!(p->flags & PORT_IN) && app_port_dir(n, PORT_IN) != NULL)
			continue;
		if (nports == MAX_PORTS)
			errx(1, "mux: too many ports (at most %d)", MAX_PORTS);
		names[nports++] = n;
	}
	fwd_init(&fwd, names, names);
	for (i = 0; i < nports; i++) {
		if (strcmp(names[i], "out") == 0)
			out = i;	/* only an output is called so (above) */
		else if (strcmp(names[i], "trunk") == 0)
			trunk = i;
		else if (strcmp(names[i], "native") == 0)
			native = i;
		else if (mode == MUX) {
			port_vid[i] = parse_vid(names[i]);
			vid_port[port_vid[i]] = (uint16_t)i;
		}
		if (mode == MUX) {
			snprintf(c, sizeof(c), "rx[%s]", names[i]);
			rx[i] = app_counter(c);		/* which copies the name */
			snprintf(c, sizeof(c), "tx[%s]", names[i]);
			fwd.out[i].sent = app_counter(c);
		} else	/* packets in/out of the stage say it already. */
			rx[i] = &scratch;
	}
	if (mode != MUX) {
		app_require_port("in", PORT_IN);
		app_require_port("out", PORT_OUT);
	} else
		app_require_port("trunk", 0);
}

static void
pcp_opt(const char *opt, char *arg, void *var)
{
	if (mode == UNTAG)
		errx(2, "untag: --pcp is for tag and mux");
	if (arg[0] < '0' || arg[0] > '7' || arg[1] != '\0')
		errx(2, "%s: bad --pcp '%s': must be 0..7", cmd, arg);
	tci_pcp = (uint16_t)((arg[0] - '0') << SNB_VLAN_PCP_SHIFT);
}

static void
vlan_init(int argc, char **argv)
{
	static const struct app_opt opts[] = {
		APP_ARG("pcp", pcp_opt, NULL, NULL),
		APP_FLAG("pass", &pass_other),
		APP_OPT_END
	};
	static const struct {
		const char	*name;
		uint64_t	**c;
		int		 modes;
	} ctrs[] = {
		{ "drop-runt", &c_drop_runt, TAG | UNTAG | MUX },
		{ "drop-oversize", &fwd.drop_oversize, TAG | UNTAG | MUX },
		{ "tagged", &c_tagged, TAG | MUX },
		{ "untagged", &c_untagged, UNTAG | MUX },
		{ "passed", &c_passed, UNTAG },
		{ "native", &c_to_native, MUX },
		{ "drop-untagged", &c_drop_untagged, UNTAG | MUX },
		{ "drop-other-vid", &c_drop_other_vid, UNTAG },
		{ "drop-unknown-vid", &c_drop_unknown_vid, MUX },
		{ "drop-no-trunk", &c_drop_no_trunk, MUX },
	};
	static const char *const cmds[] = { "tag", "untag", "mux" };
	size_t i;

	if (argc < 2)
		app_usage();
	for (i = 0; i < 3 && strcmp(argv[1], cmds[i]) != 0; i++)
		;
	if (i == 3) {
		warnx("unknown subcommand '%s' (tag, untag, mux)", argv[1]);
		app_usage();
	}
	mode = 1 << i;
	cmd = cmds[i];
	argc--;
	argv++;
	/* Permuted: "tag 10 --pcp 3" and "tag --pcp 3 10". */
	optind = 1;
	app_options(argc, argv, opts, APP_OPT_PERMUTE | APP_OPT_WORDS);
	if (pass_other && mode != UNTAG)
		errx(2, "%s: --pass is for untag", cmd);
	if (mode == MUX) {
		if (optind != argc)
			errx(2, "mux: unexpected argument '%s' (VLANs are "
			    "named by the ports: [10], [20], ...)",
			    argv[optind]);
	} else {
		if (optind == argc)
			errx(2, "%s: missing VLAN id (1..%d)", cmd, VID_MAX);
		if (optind + 1 != argc)
			errx(2, "%s: unexpected argument '%s'", cmd,
			    argv[optind + 1]);
		if ((vid = parse_vid(argv[optind])) == 0)
			errx(2, "%s: bad VLAN id '%s': must be %d..%d", cmd,
			    argv[optind], VID_MIN, VID_MAX);
	}
	/* The counters of the modes that keep them, in this order. */
	for (i = 0; i < sizeof(ctrs) / sizeof(ctrs[0]); i++)
		if (ctrs[i].modes & mode)
			*ctrs[i].c = app_counter(ctrs[i].name);
	/* Ports are bound already: a replacement refuses in standby. */
	bind_ports();
}

/*
 * Frame p of len bytes into output k's next slot, with a tag (tvid)
 * pushed (delta = SNB_VLAN_HLEN), the present one popped (-SNB_VLAN_HLEN)
 * or as it is (0); wirelen (of a truncated record) follows the edit.
 * Called with a constant delta (see put_any()), so that the copies of
 * the addresses and the tag are fixed-size moves, not memcpy() calls.
 */
static inline __attribute__((always_inline)) int
put(int k, const struct packet *p, uint32_t len, int delta, uint16_t tvid)
{
	uint16_t w[2] = { htons(SNB_ETH_VLAN), htons(tci_pcp | tvid) };
	int push = delta > 0 ? delta : 0, pop = delta < 0 ? -delta : 0;
	struct packet *q;

	if ((q = fwd_slot(&fwd, k, p, len + (uint32_t)delta)) == NULL)
		return 0;
	if (p->wirelen != 0)
		q->wirelen = (uint32_t)((int)p->wirelen + delta);
	/* The addresses, the pushed tag, then the rest after a popped one. */
	memcpy(q->data, p->data, 2 * SNB_ETH_ALEN);
	memcpy(q->data + 2 * SNB_ETH_ALEN, w, (size_t)push);
	memcpy(q->data + 2 * SNB_ETH_ALEN + push, p->data + 2 * SNB_ETH_ALEN +
	    pop, len - 2 * SNB_ETH_ALEN - (uint32_t)pop);
	return 1;
}

static inline int
put_any(int k, const struct packet *p, uint32_t len, int delta, uint16_t tvid)
{
	if (delta > 0)
		return put(k, p, len, SNB_VLAN_HLEN, tvid);
	if (delta < 0)
		return put(k, p, len, -SNB_VLAN_HLEN, tvid);
	return put(k, p, len, 0, tvid);
}

/*
 * Where a frame from port src goes (a port), or -1 when it is dropped
 * (counted here).  *delta: 0 as is, SNB_VLAN_HLEN push a tag of *tvid,
 * -SNB_VLAN_HLEN pop the tag.
 */
static inline int
route(int src, const uint8_t *f, uint32_t len, int *delta, uint16_t *tvid)
{
	const struct vlan_hdr *v;
	int dst;

	*delta = 0;
	if (len < SNB_ETH_HLEN) {
		(*c_drop_runt)++;
		return -1;
	}
	/* The 0x8100 tag, or NULL. */
	v = len >= SNB_ETH_HLEN + SNB_VLAN_HLEN && ((const struct eth_hdr *)
	    f)->type == htons(SNB_ETH_VLAN) ? (const void *)(f + SNB_ETH_HLEN) :
	    NULL;
	switch (mode) {
	case TAG:
		*delta = SNB_VLAN_HLEN;
		*tvid = vid;
		return out;
	case UNTAG:
		if (v != NULL && vlan_vid(v) == vid) {
			*delta = -SNB_VLAN_HLEN;
			return out;
		}
		if (pass_other)
			return out;
		(*(v ? c_drop_other_vid : c_drop_untagged))++;
		return -1;
	case MUX:
		if (src != trunk) {
			if (fwd.out[trunk].ring == NULL) {
				(*c_drop_no_trunk)++;
				return -1;
			}
			*delta = src == native ? 0 : SNB_VLAN_HLEN;
			*tvid = port_vid[src];	/* 0 for native: unused */
			return trunk;
		}
		/* A priority tag (VID 0) marks a native frame too. */
		if (v == NULL || vlan_vid(v) == 0) {
			if (native < 0 || fwd.out[native].ring == NULL) {
				(*c_drop_untagged)++;
				return -1;
			}
			*delta = v ? -SNB_VLAN_HLEN : 0;
			return native;
		}
		dst = vid_port[vlan_vid(v)];
		if (dst == NO_PORT || fwd.out[dst].ring == NULL) {
			(*c_drop_unknown_vid)++;
			return -1;
		}
		*delta = -SNB_VLAN_HLEN;
		return dst;
	}
	return -1;
}

static uint32_t
from_ring(void *ctx, int src, struct ring *r, uint32_t n)
{
	uint32_t i, len;
	uint16_t tvid = 0;
	int dst, delta;

	for (i = 0; i < n; i++) {
		struct packet *p = ring_peek(r, i);

		len = packet_len(r, p);
		/* route() counts only drops, which need no room: safe to
		 * run again on a frame left for the next breath. */
		dst = route(src, p->data, len, &delta, &tvid);
		if (dst >= 0 && !fwd_room(&fwd, dst))
			break;
		(*rx[src])++;
		if (dst < 0 || !put_any(dst, p, len, delta, tvid))
			continue;
		if (delta != 0)
			(*(delta > 0 ? c_tagged : c_untagged))++;
		else if (mode == UNTAG)
			(*c_passed)++;
		if (mode == MUX && dst == native)
			(*c_to_native)++;
	}
	return i;
}

static int
vlan_breathe(void)
{
	return fwd_take(&fwd, from_ring, NULL);
}

static const struct app_desc desc = {
	.name = "vlan",
	.usage = "tag VID [--pcp N] [--counters-out FILE]\n"
	    "untag VID [--pass] [--counters-out FILE]\n"
	    "mux [--pcp N] [--counters-out FILE]",
	.counters_out = 1,
	.summary = "802.1Q tags: push (tag), pop (untag), or split a trunk "
	    "into one port per VLAN (mux).",
	.ports = (const struct port_desc[]){ { "*", PORT_IN },
	    { "*", PORT_OUT }, { NULL, 0 } },
	.init = vlan_init,
	.breathe = vlan_breathe,
};

APP_MAIN(desc)
