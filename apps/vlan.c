/*
 * snb-vlan: 802.1Q tags.
 *
 *	vlan tag VID [--pcp N]		in -> out, push a tag
 *	vlan untag VID [--pass]		in -> out, pop a tag of VID
 *	vlan mux [--pcp N]		trunk <-> one port per VID, and native
 *
 * The runtime answers --describe before it knows the subcommand, so the
 * ports are declared as "any name" and checked here when they are bound:
 * tag and untag take in and out, mux takes trunk, native and VIDs.
 *
 * Only the customer tag (TPID 0x8100) is looked at or made: an 802.1ad
 * service tag (0x88a8) counts as "no tag", so it passes through a mux
 * trunk to native, and tag pushes an 0x8100 tag in front of it.
 *
 * Flow control is exact, as in the bridge: a frame is taken from its
 * input only when the port it goes to has room.
 */
#include <err.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "proto.h"

#define VID_MIN		1
#define VID_MAX		4094	/* 0 = priority tag, 4095 reserved */
#define MAX_PORTS	60	/* 8 counters + 2 per port fit the stage file's 128 */
#define NO_PORT		0xffff

enum mode { TAG, UNTAG, MUX };

/*
 * A port of the stage as we use it: an input (possibly fan-in), an
 * output, and for mux the VID it stands for (0 for trunk and native).
 * room/used: free slots in out this breath, and how many we filled.
 */
struct vport {
	const char	*name;
	struct port	*in;
	struct ring	*out;
	uint16_t	 vid;
	uint32_t	 room, used;
	uint64_t	*rx, *tx;
};

static enum mode mode;
static uint16_t vid, tci_pcp;	/* tag/untag VID; PCP bits for pushed tags */
static int pass_other, bound;
static const char *counters_out;
static struct vport vports[MAX_PORTS];
static int nvports, first_port;
/* mux: the port of each VID (NO_PORT if none), and of trunk and native. */
static uint16_t vid_port[4096];
static int trunk = -1, native = -1;

static uint64_t *c_tagged, *c_untagged, *c_passed, *c_drop_runt,
    *c_drop_oversize, *c_drop_untagged, *c_drop_other_vid,
    *c_drop_unknown_vid, *c_drop_no_trunk, *c_to_native;

static char ctr_names[MAX_PORTS * 2][48];
static uint64_t scratch;	/* per-port counts tag and untag do not keep */

#define USAGE	"tag VID [--pcp N] | untag VID [--pass] | mux [--pcp N]" \
		" [--counters-out FILE]"

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: snb-vlan " USAGE "\n");
	exit(2);
}

/*
 * A VLAN id from the command line or a port name: decimal 1..4094, no
 * sign, no leading zero (so "10" and "010" cannot be two ports of one
 * VLAN).  Returns 0 if s is not one.
 */
static uint16_t
parse_vid(const char *s)
{
	long v = 0;
	const char *c;

	if (*s == '\0' || *s == '0' || strlen(s) > 4)
		return 0;
	for (c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return 0;
		v = v * 10 + (*c - '0');
	}
	return v >= VID_MIN && v <= VID_MAX ? (uint16_t)v : 0;
}

static void	bind_ports(void);

static void
vlan_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pcp", required_argument, NULL, 'p' },
		{ "pass", no_argument, NULL, 'P' },
		{ "counters-out", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd;
	int ch, pcp = 0;

	if (argc < 2)
		usage();
	cmd = argv[1];
	if (strcmp(cmd, "tag") == 0)
		mode = TAG;
	else if (strcmp(cmd, "untag") == 0)
		mode = UNTAG;
	else if (strcmp(cmd, "mux") == 0)
		mode = MUX;
	else
		errx(2, "unknown subcommand '%s' (tag, untag, mux)", cmd);
	argc--;
	argv++;
	/* getopt_long permutes: "tag 10 --pcp 3" and "tag --pcp 3 10". */
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			if (mode == UNTAG)
				errx(2, "untag: --pcp is for tag and mux");
			if (optarg[0] < '0' || optarg[0] > '7' ||
			    optarg[1] != '\0')
				errx(2, "%s: bad --pcp '%s': must be 0..7", cmd,
				    optarg);
			pcp = optarg[0] - '0';
			break;
		case 'P':
			if (mode != UNTAG)
				errx(2, "%s: --pass is for untag", cmd);
			pass_other = 1;
			break;
		case 'c':
			counters_out = optarg;
			break;
		default:
			usage();
		}
	}
	tci_pcp = (uint16_t)(pcp << SNB_VLAN_PCP_SHIFT);
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
	c_drop_runt = app_counter("drop-runt");
	c_drop_oversize = app_counter("drop-oversize");
	switch (mode) {
	case TAG:
		c_tagged = app_counter("tagged");
		break;
	case UNTAG:
		c_untagged = app_counter("untagged");
		c_passed = app_counter("passed");
		c_drop_untagged = app_counter("drop-untagged");
		c_drop_other_vid = app_counter("drop-other-vid");
		break;
	case MUX:
		c_tagged = app_counter("tagged");
		c_untagged = app_counter("untagged");
		c_to_native = app_counter("native");
		c_drop_untagged = app_counter("drop-untagged");
		c_drop_unknown_vid = app_counter("drop-unknown-vid");
		c_drop_no_trunk = app_counter("drop-no-trunk");
		break;
	}
	/* Ports are bound already: a replacement refuses in standby. */
	bind_ports();
}

static int
vport_get(const char *name)
{
	int i;

	for (i = 0; i < nvports; i++)
		if (strcmp(vports[i].name, name) == 0)
			return i;
	if (nvports == MAX_PORTS)
		errx(1, "mux: too many ports (at most %d)", MAX_PORTS);
	vports[nvports].name = name;
	return nvports++;
}

static void
bind_ports(void)
{
	int i, k;

	for (i = 0; i < 4096; i++)
		vid_port[i] = NO_PORT;
	for (i = 0; i < app_nports; i++) {
		struct port *p = &app_ports[i];
		const char *n = p->name;
		if (mode != MUX) {
			if (strcmp(n, (p->flags & PORT_IN) ? "in" : "out"))
				errx(1, "%s: no %s port '%s' (ports: in, out)",
				    mode == TAG ? "tag" : "untag",
				    (p->flags & PORT_IN) ? "input" : "output",
				    n);
		} else if (strcmp(n, "trunk") && strcmp(n, "native") &&
		    parse_vid(n) == 0)
			errx(1, "mux: bad port '%s' (trunk, native, or a VLAN "
			    "id %d..%d)", n, VID_MIN, VID_MAX);
		k = vport_get(n);
		if (p->flags & PORT_IN)
			vports[k].in = p;
		else
			vports[k].out = &p->rings[0];
	}
	for (i = 0; i < nvports; i++) {
		struct vport *v = &vports[i];
		if (strcmp(v->name, "trunk") == 0)
			trunk = i;
		else if (strcmp(v->name, "native") == 0)
			native = i;
		else if (mode == MUX) {
			v->vid = parse_vid(v->name);
			vid_port[v->vid] = (uint16_t)i;
		}
		if (mode != MUX) {
			/* packets in/out of the stage say it already. */
			v->rx = v->tx = &scratch;
			continue;
		}
		snprintf(ctr_names[2 * i], 48, "rx[%s]", v->name);
		snprintf(ctr_names[2 * i + 1], 48, "tx[%s]", v->name);
		v->rx = app_counter(ctr_names[2 * i]);
		v->tx = app_counter(ctr_names[2 * i + 1]);
	}
	if (mode != MUX) {
		if (app_port_dir("in", PORT_IN) == NULL)
			errx(1, "input port 'in' is not connected");
		if (app_port_dir("out", PORT_OUT) == NULL)
			errx(1, "output port 'out' is not connected");
	} else if (trunk < 0)
		errx(1, "mux: port 'trunk' is not connected");
	bound = 1;
}

/* The 0x8100 tag of a frame of len bytes, or NULL. */
static inline const struct vlan_hdr *
ctag(const uint8_t *f, uint32_t len)
{
	const struct eth_hdr *e = (const void *)f;

	if (len < SNB_ETH_HLEN + SNB_VLAN_HLEN ||
	    e->type != htons(SNB_ETH_VLAN))
		return NULL;
	return (const void *)(f + SNB_ETH_HLEN);
}

/* Metadata of p into q; wirelen (of a truncated record) follows the edit. */
static inline void
copy_meta(struct packet *q, const struct packet *p, int delta)
{
	q->flags = p->flags;
	q->wirelen = p->wirelen ? (uint32_t)((int)p->wirelen + delta) : 0;
	q->ts_ns = p->ts_ns;
}

/* Frame f of len bytes into o's next slot, with a tag pushed. */
static inline int
put_tagged(struct vport *o, const struct packet *p, uint32_t len,
    uint16_t tvid)
{
	struct packet *q;
	uint16_t w[2] = { htons(SNB_ETH_VLAN), htons(tci_pcp | tvid) };

	if (len + SNB_VLAN_HLEN > o->out->capacity) {
		(*c_drop_oversize)++;
		return 0;
	}
	q = ring_slot(o->out, o->used++);
	copy_meta(q, p, SNB_VLAN_HLEN);
	q->len = (uint16_t)(len + SNB_VLAN_HLEN);
	memcpy(q->data, p->data, 2 * SNB_ETH_ALEN);
	memcpy(q->data + 2 * SNB_ETH_ALEN, w, sizeof(w));
	memcpy(q->data + 2 * SNB_ETH_ALEN + 4, p->data + 2 * SNB_ETH_ALEN,
	    len - 2 * SNB_ETH_ALEN);
	(*o->tx)++;
	return 1;
}

/* The same with the (present) tag popped. */
static inline int
put_untagged(struct vport *o, const struct packet *p, uint32_t len)
{
	struct packet *q;

	if (len - SNB_VLAN_HLEN > o->out->capacity) {
		(*c_drop_oversize)++;
		return 0;
	}
	q = ring_slot(o->out, o->used++);
	copy_meta(q, p, -SNB_VLAN_HLEN);
	q->len = (uint16_t)(len - SNB_VLAN_HLEN);
	memcpy(q->data, p->data, 2 * SNB_ETH_ALEN);
	memcpy(q->data + 2 * SNB_ETH_ALEN, p->data + SNB_ETH_HLEN +
	    SNB_VLAN_HLEN - 2, len - SNB_ETH_HLEN - SNB_VLAN_HLEN + 2);
	(*o->tx)++;
	return 1;
}

static inline int
put_same(struct vport *o, const struct packet *p, uint32_t len)
{
	if (!ring_put_packet(o->out, o->used, p, len)) {
		(*c_drop_oversize)++;
		return 0;
	}
	o->used++;
	(*o->tx)++;
	return 1;
}

/* The output for tag/untag: the vport of "out" (bound: checked). */
static inline struct vport *
out_port(void)
{
	return vports[0].out ? &vports[0] : &vports[1];
}

/*
 * Where a frame from port src goes (an index into vports[]), or -1 when
 * it is dropped (counted here).  *how: 0 as is, 1 push src's tag
 * (tvid), 2 pop the tag.
 */
static inline int
route(int src, const uint8_t *f, uint32_t len, int *how, uint16_t *tvid)
{
	const struct vlan_hdr *v;
	int dst;

	*how = 0;
	if (len < SNB_ETH_HLEN) {
		(*c_drop_runt)++;
		return -1;
	}
	v = ctag(f, len);
	switch (mode) {
	case TAG:
		*how = 1;
		*tvid = vid;
		return (int)(out_port() - vports);
	case UNTAG:
		if (v != NULL && vlan_vid(v) == vid) {
			*how = 2;
			return (int)(out_port() - vports);
		}
		if (pass_other)
			return (int)(out_port() - vports);
		(*(v ? c_drop_other_vid : c_drop_untagged))++;
		return -1;
	case MUX:
		if (src != trunk) {
			if (vports[trunk].out == NULL) {
				(*c_drop_no_trunk)++;
				return -1;
			}
			if (src == native)
				return trunk;
			*how = 1;
			*tvid = vports[src].vid;
			return trunk;
		}
		/* A priority tag (VID 0) marks a native frame too. */
		if (v == NULL || vlan_vid(v) == 0) {
			if (native < 0 || vports[native].out == NULL) {
				(*c_drop_untagged)++;
				return -1;
			}
			*how = v ? 2 : 0;
			return native;
		}
		dst = vid_port[vlan_vid(v)];
		if (dst == NO_PORT || vports[dst].out == NULL) {
			(*c_drop_unknown_vid)++;
			return -1;
		}
		*how = 2;
		return dst;
	}
	return -1;
}

static int
from_ring(int src, struct ring *r)
{
	uint32_t n, i, len;
	uint16_t tvid = 0;
	int dst, how, ok;

	if ((n = ring_avail(r, APP_BURST)) > APP_BURST)
		n = APP_BURST;
	for (i = 0; i < n; i++) {
		struct packet *p = ring_peek(r, i);
		struct vport *o;

		len = packet_len(r, p);
		/* route() counts only drops, which need no room: safe to
		 * run again on a frame left for the next breath. */
		if ((dst = route(src, p->data, len, &how, &tvid)) < 0) {
			(*vports[src].rx)++;
			continue;
		}
		o = &vports[dst];
		if (o->used == o->room)
			break;
		(*vports[src].rx)++;
		if (how == 1) {
			if ((ok = put_tagged(o, p, len, tvid)))
				(*c_tagged)++;
		} else if (how == 2) {
			if ((ok = put_untagged(o, p, len)))
				(*c_untagged)++;
		} else {
			ok = put_same(o, p, len);
			if (ok && mode == UNTAG)
				(*c_passed)++;
		}
		if (ok && mode == MUX && dst == native)
			(*c_to_native)++;
	}
	ring_release(r, i);
	return (int)i;
}

static int
vlan_breathe(void)
{
	int i, j, k, total = 0;

	if (!bound)
		bind_ports();
	for (i = 0; i < nvports; i++) {
		struct vport *v = &vports[i];
		v->used = 0;
		v->room = v->out ? ring_room(v->out, (uint32_t)v->out->mask +
		    1) : 0;
	}
	for (j = 0; j < nvports; j++) {
		i = (first_port + j) % nvports;
		if (vports[i].in == NULL)
			continue;
		for (k = 0; k < vports[i].in->nrings; k++)
			total += from_ring(i, &vports[i].in->rings[k]);
	}
	first_port = (first_port + 1) % nvports;
	/* Inputs released above, outputs published now (see tee.c). */
	for (i = 0; i < nvports; i++)
		if (vports[i].used)
			ring_commit(vports[i].out, vports[i].used);
	return total;
}

static void
vlan_stop(int eof)
{
	if (counters_out != NULL)
		(void)app_write_counters(counters_out);
}

static const struct port_desc ports[] = {
	{ "*", PORT_IN },
	{ "*", PORT_OUT },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "vlan",
	.usage = USAGE,
	.summary = "802.1Q tags: push (tag), pop (untag), or split a trunk "
	    "into one port per VLAN (mux).",
	.ports = ports,
	.init = vlan_init,
	.breathe = vlan_breathe,
	.stop = vlan_stop,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
