/*
 * conf.c: the softwire-config text -> struct lwaftr_conf.  This file is
 * the lwAFTR's schema: libring's reader (cfg.h) has the syntax, the value
 * conversions and the "FILE:LINE:COL: message" errors.
 *
 * Besides the layout of the shipped files (per-softwire br-address and
 * port-set, addresses under instance/queue), the older layout is accepted:
 * binding-table-level br-address lists with a per-softwire "br" index,
 * psid-map blocks giving the port set of address ranges, and ip/mac/
 * next-hop directly in softwire-config's interface blocks.
 *
 * A million softwires parse in well under a second: the reader does not
 * copy words and the softwire array grows geometrically.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "lwaftr.h"

/*
 * One side (external = IPv4, internal = IPv6) while it is read: its
 * values and where they were set.  ip, mac, vlan-tag and next-hop may sit
 * in softwire-config's interface block or in instance/queue's, once.
 */
struct side {
	struct lwaftr_side	 s;
	int			 v6;
	uint32_t		 vlan;
	struct cfg_pos		 ip, mac, vlan_at, nh, nh_ip, nh_mac;
	struct cfg_pos		 blk;	/* best place to report a missing one */
	const char		*blkname;
};

/* A psid-map block of the older layout: the port set of an address range. */
struct psidmap {
	uint32_t	lo, hi;		/* host order, inclusive */
	uint8_t		psid_length, reserved;
	struct cfg_pos	at;
};

/*
 * A softwire whose br-address or port-set comes from binding-table-level
 * data, which may follow it in the file: resolved when the block ends.
 */
struct fixup {
	size_t		idx;
	uint32_t	br;		/* index into the br-address list */
	int		need_br, need_ps;
	struct cfg_pos	at, psid_at, br_at;
};

struct cparser {
	struct cfg		 cf;
	struct lwaftr_conf	*c;
	size_t			 swcap, atcap;
	struct side		 ext, in;
	struct cfg_pos		 top;		/* softwire-config */
	int			 ninstance, nqueue;
	uint32_t		 qid;		/* read, not used */
	uint8_t			(*brs)[16];	/* binding-table br-addresses */
	size_t			 nbrs, brscap;
	struct psidmap		*maps;
	size_t			 nmaps, mapscap;
	struct fixup		*fix;
	size_t			 nfix, fixcap;
};

struct swctx {
	struct softwire	sw;
	uint32_t	psid, brindex, plen, resv, padding;
	struct cfg_pos	psid_at, braddr, br, ps, plen_at, resv_at;
};

struct mapctx {
	uint32_t	addr, end, plen, shift, resv;
	struct cfg_pos	end_at, plen_at, shift_at, resv_at;
};

enum {
	ID_IP = 1, ID_NHIP, ID_MTU, ID_EXTIF, ID_INIF, ID_QEXTIF, ID_QINIF,
	ID_INSTANCE, ID_QUEUE, ID_BT, ID_SOFTWIRE, ID_BRADDR, ID_PSIDMAP,
	ID_BR,
};

static const struct lwaftr_side side_defaults = {
	.allow_incoming_icmp = 1, .generate_icmp_errors = 1,
	.err_rate_packets = 600000, .err_rate_period = 2,
	.reasm_max_frags = 40, .reasm_max_packets = 20000, .hairpinning = 1,
};

#define SD(m)	offsetof(struct side, m)
#define PS(m)	offsetof(struct cparser, m)
#define SW(m)	offsetof(struct swctx, m)
#define MAP(m)	offsetof(struct mapctx, m)

static cfg_leaf_fn side_leaf, sw_leaf, conf_leaf;
static cfg_block_fn conf_block;

/* ---- the schema ---- */

static const struct cfg_field f_nh[] = {
	CFG_F("ip", CFG_LEAF, .id = ID_NHIP, CFG_AT(CFG_POS, SD(nh_ip))),
	CFG_F("mac", CFG_MAC, .off = SD(s.nh_mac), CFG_AT(CFG_POS, SD(nh_mac))),
};
static const struct cfg_schema s_nh = CFG_S(f_nh, .leaf = side_leaf);

static const struct cfg_field f_erl[] = {
	CFG_INT("packets", SD(s.err_rate_packets), UINT32_MAX),
	/* the rate limiter divides by it */
	CFG_INT("period", SD(s.err_rate_period), UINT32_MAX, .lo = 1),
};
static const struct cfg_schema s_erl = CFG_S(f_erl);

static const struct cfg_field f_reasm[] = {
	/* the reassembler needs one of each and takes up to 2^24 packets */
	CFG_INT("max-fragments-per-packet", SD(s.reasm_max_frags), UINT32_MAX,
	    .lo = 1),
	CFG_INT("max-packets", SD(s.reasm_max_packets), 1u << 24, .lo = 1),
};
static const struct cfg_schema s_reasm = CFG_S(f_reasm);

/*
 * The interface blocks, one table: instance/queue's take the first 4
 * fields, softwire-config's external-interface the first 11 (the old
 * layout put the addresses there too), internal-interface all 13.
 */
static const struct cfg_field f_side[] = {
	CFG_F("ip", CFG_LEAF, .id = ID_IP, CFG_AT(CFG_ONCE, SD(ip))),
	CFG_F("mac", CFG_MAC, .off = SD(s.mac), CFG_AT(CFG_ONCE, SD(mac))),
	CFG_F("next-hop", CFG_BLOCK, .sub = &s_nh, CFG_AT(CFG_ONCE, SD(nh))),
	CFG_INT("vlan-tag", SD(vlan), 4095, CFG_AT(CFG_ONCE, SD(vlan_at))),
	CFG_F("allow-incoming-icmp", CFG_BOOL,
	    .off = SD(s.allow_incoming_icmp)),
	CFG_F("generate-icmp-errors", CFG_BOOL,
	    .off = SD(s.generate_icmp_errors)),
	CFG_F("mtu", CFG_LEAF, .id = ID_MTU),
	CFG_F("error-rate-limiting", CFG_BLOCK, .sub = &s_erl),
	CFG_F("reassembly", CFG_BLOCK, .sub = &s_reasm),
	/* compiled by the app: it reports a bad one at the value */
	CFG_F("ingress-filter", CFG_STRING, .off = SD(s.ingress_filter),
	    CFG_AT(CFG_VALPOS, SD(s.ingress_at))),
	CFG_F("egress-filter", CFG_STRING, .off = SD(s.egress_filter),
	    CFG_AT(CFG_VALPOS, SD(s.egress_at))),
	CFG_INT("flow-label", SD(s.flow_label), 0xfffff),
	CFG_F("hairpinning", CFG_BOOL, .off = SD(s.hairpinning)),
};
static const struct cfg_schema s_qif = { f_side, 4, .leaf = side_leaf };
static const struct cfg_schema s_extif = { f_side, 11, .leaf = side_leaf };
static const struct cfg_schema s_inif = { f_side, 13, .leaf = side_leaf };

static const struct cfg_field f_queue[] = {
	/* one queue per process: the id names it, nothing more */
	CFG_INT("id", PS(qid), UINT32_MAX),
	CFG_F("external-interface", CFG_BLOCK, .id = ID_QEXTIF),
	CFG_F("internal-interface", CFG_BLOCK, .id = ID_QINIF),
};
static const struct cfg_schema s_queue = CFG_S(f_queue, .block = conf_block);

static const struct cfg_field f_instance[] = {
	/* which NIC; the ports of snb-lwaftr are given by the graph */
	CFG_F("device", CFG_ANY),
	CFG_F("queue", CFG_BLOCK, .id = ID_QUEUE, .flags = CFG_LIST),
};
static const struct cfg_schema s_instance = CFG_S(f_instance,
    .block = conf_block);

static const struct cfg_field f_portset[] = {
	CFG_INT("psid-length", SW(plen), 16, CFG_AT(CFG_POS, SW(plen_at))),
	CFG_INT("reserved-ports-bit-count", SW(resv), 16,
	    CFG_AT(CFG_POS, SW(resv_at))),
};
static const struct cfg_schema s_portset = CFG_S(f_portset);

static const struct cfg_field f_softwire[] = {
	CFG_F("ipv4", CFG_IPV4, .off = SW(sw.ipv4), .flags = CFG_REQUIRED),
	CFG_INT("psid", SW(psid), 65535,
	    CFG_AT(CFG_REQUIRED | CFG_VALPOS, SW(psid_at))),
	CFG_F("b4-ipv6", CFG_IPV6, .off = SW(sw.b4), .flags = CFG_REQUIRED),
	CFG_F("br-address", CFG_LEAF, .id = ID_BRADDR,
	    CFG_AT(CFG_POS, SW(braddr))),
	CFG_F("port-set", CFG_BLOCK, .sub = &s_portset,
	    CFG_AT(CFG_POS, SW(ps))),
	/* the old layout: an index into binding-table's br-address list */
	CFG_F("br", CFG_LEAF, .id = ID_BR, CFG_AT(CFG_VALPOS, SW(br))),
	/* a key part in the old layout, always 0 in practice */
	CFG_INT("padding", SW(padding), 65535),
};
static const struct cfg_schema s_softwire = CFG_S(f_softwire, .leaf = sw_leaf);

static const struct cfg_field f_psidmap[] = {
	CFG_F("addr", CFG_IPV4, .off = MAP(addr), .flags = CFG_REQUIRED),
	CFG_F("end-addr", CFG_IPV4, .off = MAP(end),
	    CFG_AT(CFG_VALPOS, MAP(end_at))),
	CFG_INT("psid-length", MAP(plen), 16,
	    CFG_AT(CFG_REQUIRED | CFG_VALPOS, MAP(plen_at))),
	CFG_INT("shift", MAP(shift), 16, CFG_AT(CFG_VALPOS, MAP(shift_at))),
	CFG_INT("reserved-ports-bit-count", MAP(resv), 16,
	    CFG_AT(CFG_VALPOS, MAP(resv_at))),
};
static const struct cfg_schema s_psidmap = CFG_S(f_psidmap);

static const struct cfg_field f_bt[] = {
	CFG_F("softwire", CFG_BLOCK, .id = ID_SOFTWIRE, .flags = CFG_LIST),
	CFG_F("br-address", CFG_LEAF, .id = ID_BRADDR, .flags = CFG_LIST),
	CFG_F("psid-map", CFG_BLOCK, .id = ID_PSIDMAP, .flags = CFG_LIST),
};
static const struct cfg_schema s_bt = CFG_S(f_bt, .leaf = conf_leaf,
    .block = conf_block);

static const struct cfg_field f_config[] = {
	CFG_F("external-interface", CFG_BLOCK, .id = ID_EXTIF),
	CFG_F("internal-interface", CFG_BLOCK, .id = ID_INIF),
	CFG_F("instance", CFG_BLOCK, .id = ID_INSTANCE, .flags = CFG_LIST),
	CFG_F("binding-table", CFG_BLOCK, .id = ID_BT),
};
static const struct cfg_schema s_config = CFG_S(f_config,
    .block = conf_block);

static const struct cfg_field f_top[] = {
	CFG_F("softwire-config", CFG_BLOCK, .sub = &s_config,
	    CFG_AT(CFG_POS, PS(top))),
};
static const struct cfg_schema s_top = CFG_S(f_top);

/* ---- interfaces ---- */

static int
side_leaf(struct cfg *cf, void *obj, const struct cfg_field *f,
    const struct cfg_tok *n, const struct cfg_tok *v)
{
	struct side *sd = obj;
	uint8_t *ip = f->id == ID_IP ? sd->s.ip : sd->s.nh_ip;

	if (f->id == ID_MTU)
		/* IPv6 links carry at least 1280 bytes (RFC 8200), IPv4 68 */
		return cfg_u32(cf, f->name, v, sd->v6 ? 1280 : 68, 65535,
		    &sd->s.mtu);
	/* an IPv4 address in the first 4 bytes, the rest left 0 */
	return cfg_addr(cf, f->name, v, sd->v6 ? AF_INET6 : AF_INET, ip);
}

static int
parse_side(struct cparser *ps, const struct cfg_field *f,
    const struct cfg_tok *n)
{
	int queue = f->id == ID_QEXTIF || f->id == ID_QINIF;
	struct side *sd = f->id == ID_INIF || f->id == ID_QINIF ? &ps->in :
	    &ps->ext;

	/* the queue's block is where addresses belong: report there */
	if (queue || sd->blk.line == 0) {
		sd->blk = n->at;
		sd->blkname = f->name;
	}
	return cfg_block(&ps->cf, f->name, queue ? &s_qif : sd->v6 ? &s_inif :
	    &s_extif, n, sd);
}

/* The AFTR's own addresses and its next hop are needed on both sides. */
static int
check_side(struct cparser *ps, const struct side *sd, const char *name)
{
	const struct cfg_pos *at = sd->blk.line ? &sd->blk : &ps->top;
	const char *bn = sd->blk.line ? sd->blkname : "softwire-config";
	/* "external-interface: missing 'ip'", "instance: missing ..." */
	const char *what = strcmp(bn, name) == 0 ? "" : name;
	const char *sep = *what ? " " : "", *miss = !sd->ip.line ? "ip" :
	    !sd->mac.line ? "mac" : !sd->nh.line ? "next-hop" : NULL;

	if (miss)
		return cfg_err(&ps->cf, at, "%s: missing %s%s'%s'", bn, what,
		    sep, miss);
	if (!sd->nh_ip.line && !sd->nh_mac.line)
		return cfg_err(&ps->cf, &sd->nh, "next-hop: needs 'ip' or "
		    "'mac'");
	return 0;
}

/* What was read of a side, into the configuration. */
static void
side_done(const struct side *sd, struct lwaftr_side *s)
{
	*s = sd->s;
	s->vlan_tag = sd->vlan_at.line ? (int)sd->vlan : -1;
	s->has_nh_ip = sd->nh_ip.line != 0;
	s->has_nh_mac = sd->nh_mac.line != 0;
}

/* ---- binding table ---- */

/* psid fits psid_length bits (any psid does when the length is 16) */
static int
check_psid(struct cfg *cf, uint32_t psid, uint32_t plen,
    const struct cfg_pos *at)
{
	if (plen >= 16 || psid < (1u << plen))
		return 0;
	return cfg_err(cf, at, "psid %u out of range for psid-length %u "
	    "(0..%u)", psid, plen, (1u << plen) - 1);
}

static int
sw_leaf(struct cfg *cf, void *obj, const struct cfg_field *f,
    const struct cfg_tok *n, const struct cfg_tok *v)
{
	struct swctx *w = obj;

	if ((f->id == ID_BR ? w->braddr : w->br).line)
		return cfg_err(cf, &n->at, "both 'br' and 'br-address' given");
	if (f->id == ID_BR)
		return cfg_u32(cf, f->name, v, 0, UINT32_MAX, &w->brindex);
	return cfg_addr(cf, f->name, v, AF_INET6, w->sw.br);
}

static int
parse_softwire(struct cparser *ps, const struct cfg_tok *n)
{
	struct lwaftr_conf *c = ps->c;
	struct swctx w;

	memset(&w, 0, sizeof(w));
	if (cfg_block(&ps->cf, "softwire", &s_softwire, n, &w) == -1)
		return -1;
	w.sw.psid = (uint16_t)w.psid;
	if (w.ps.line) {
		if (!w.plen_at.line)
			return cfg_err(&ps->cf, &w.ps, "port-set: missing "
			    "'psid-length'");
		if (w.plen + w.resv > 16)
			return cfg_err(&ps->cf, cfg_after(&w.plen_at,
			    &w.resv_at) ? &w.plen_at : &w.resv_at,
			    "psid-length %u + reserved-ports-bit-count %u is "
			    "more than 16", w.plen, w.resv);
		if (check_psid(&ps->cf, w.psid, w.plen, &w.psid_at) == -1)
			return -1;
		w.sw.psid_length = (uint8_t)w.plen;
		w.sw.reserved_bits = (uint8_t)w.resv;
	}
	if (cfg_grow(&c->sw, &ps->swcap, c->nsw + 1, sizeof(*c->sw)) == -1 ||
	    cfg_grow(&c->sw_at, &ps->atcap, c->nsw + 1, sizeof(*c->sw_at)) ==
	    -1 ||
	    ((!w.ps.line || !w.braddr.line) && cfg_grow(&ps->fix, &ps->fixcap,
	    ps->nfix + 1, sizeof(*ps->fix)) == -1))
		return cfg_err(&ps->cf, &n->at, "out of memory");
	if (!w.ps.line || !w.braddr.line)
		/* resolved from binding-table-level data at its end */
		ps->fix[ps->nfix++] = (struct fixup){ c->nsw, w.brindex,
		    !w.braddr.line, !w.ps.line, n->at, w.psid_at,
		    w.br.line ? w.br : n->at };
	c->sw_at[c->nsw] = n->at;
	c->sw[c->nsw++] = w.sw;
	return 0;
}

static int
parse_psidmap(struct cparser *ps, const struct cfg_tok *n)
{
	struct cfg *cf = &ps->cf;
	struct mapctx m;

	memset(&m, 0, sizeof(m));
	if (cfg_block(cf, "psid-map", &s_psidmap, n, &m) == -1)
		return -1;
	if (!m.end_at.line)
		m.end = m.addr;
	else if (ntohl(m.end) < ntohl(m.addr))
		return cfg_err(cf, &m.end_at, "psid-map: 'end-addr' is below "
		    "'addr'");
	/* RFC 7597: a + k + m = 16; shift is m */
	if (m.shift_at.line && !m.resv_at.line) {
		if (m.plen + m.shift > 16)
			return cfg_err(cf, &m.shift_at, "psid-length %u + "
			    "shift %u is more than 16", m.plen, m.shift);
		m.resv = 16 - m.plen - m.shift;
	} else if (m.plen + m.resv > 16) {
		return cfg_err(cf, m.resv_at.line ? &m.resv_at : &m.plen_at,
		    "psid-length %u + reserved-ports-bit-count %u is more "
		    "than 16", m.plen, m.resv);
	} else if (m.shift_at.line && m.plen + m.resv + m.shift != 16) {
		return cfg_err(cf, &m.shift_at, "psid-length %u + "
		    "reserved-ports-bit-count %u + shift %u is not 16",
		    m.plen, m.resv, m.shift);
	}
	if (cfg_grow(&ps->maps, &ps->mapscap, ps->nmaps + 1,
	    sizeof(*ps->maps)) == -1)
		return cfg_err(cf, &n->at, "out of memory");
	ps->maps[ps->nmaps++] = (struct psidmap){ ntohl(m.addr), ntohl(m.end),
	    (uint8_t)m.plen, (uint8_t)m.resv, n->at };
	return 0;
}

static int
map_cmp(const void *a, const void *b)
{
	const struct psidmap *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* bsearch: the psid-map covering host-order address *a (none overlap). */
static int
map_has(const void *a, const void *m)
{
	uint32_t v = *(const uint32_t *)a;
	const struct psidmap *p = m;

	return v < p->lo ? -1 : v > p->hi;
}

/* Softwires that took their BR or port set from binding-table data. */
static int
resolve_fixups(struct cparser *ps)
{
	const struct psidmap *m, *x, *y;
	struct cfg *cf = &ps->cf;
	struct softwire *sw;
	struct fixup *f;
	uint32_t a;
	size_t i;

	if (ps->nmaps > 1)
		qsort(ps->maps, ps->nmaps, sizeof(*ps->maps), map_cmp);
	for (i = 1; i < ps->nmaps; i++) {
		if (ps->maps[i].lo > ps->maps[i - 1].hi)
			continue;
		/* the one further down the file is the one at fault */
		x = &ps->maps[i - 1];
		y = &ps->maps[i];
		m = cfg_after(&x->at, &y->at) ? y : x;
		return cfg_err(cf, m == x ? &y->at : &x->at, "psid-map "
		    "overlaps the one at %d:%d", m->at.line, m->at.col);
	}
	for (i = 0; i < ps->nfix; i++) {
		f = &ps->fix[i];
		sw = &ps->c->sw[f->idx];
		if (f->need_br && ps->nbrs == 0)
			return cfg_err(cf, &f->at, "softwire: missing "
			    "'br-address'");
		if (f->need_br && f->br >= ps->nbrs)
			return cfg_err(cf, &f->br_at, "'br' %u is not an index "
			    "of the %zu binding-table br-address entries",
			    f->br, ps->nbrs);
		if (f->need_br)
			memcpy(sw->br, ps->brs[f->br], 16);
		if (!f->need_ps)
			continue;
		a = ntohl(sw->ipv4);
		if ((m = ps->nmaps ? bsearch(&a, ps->maps, ps->nmaps,
		    sizeof(*ps->maps), map_has) : NULL) == NULL)
			return cfg_err(cf, &f->at, ps->nmaps ? "softwire: no "
			    "'port-set' and no psid-map for its ipv4" :
			    "softwire: missing 'port-set'");
		sw->psid_length = m->psid_length;
		sw->reserved_bits = m->reserved;
		if (check_psid(cf, sw->psid, sw->psid_length, &f->psid_at) ==
		    -1)
			return -1;
	}
	return 0;
}

/* ---- softwire-config, instance, queue, binding-table ---- */

static int
conf_leaf(struct cfg *cf, void *obj, const struct cfg_field *f,
    const struct cfg_tok *n, const struct cfg_tok *v)
{
	/* br-address at binding-table level: the old layout's BR list */
	struct cparser *ps = obj;

	if (cfg_grow(&ps->brs, &ps->brscap, ps->nbrs + 1, sizeof(*ps->brs)) ==
	    -1)
		return cfg_err(cf, &n->at, "out of memory");
	if (cfg_addr(cf, f->name, v, AF_INET6, ps->brs[ps->nbrs]) == -1)
		return -1;
	ps->nbrs++;
	return 0;
}

static int
conf_block(struct cfg *cf, void *obj, const struct cfg_field *f,
    const struct cfg_tok *n)
{
	struct cparser *ps = obj;

	switch (f->id) {
	case ID_EXTIF:
	case ID_INIF:
	case ID_QEXTIF:
	case ID_QINIF:
		return parse_side(ps, f, n);
	case ID_INSTANCE:
		if (++ps->ninstance > 1)
			return cfg_err(cf, &n->at, "only one instance is "
			    "supported");
		ps->ext.blk = ps->in.blk = n->at;
		ps->ext.blkname = ps->in.blkname = "instance";
		return cfg_block(cf, f->name, &s_instance, n, ps);
	case ID_QUEUE:
		if (++ps->nqueue > 1)
			return cfg_err(cf, &n->at, "only one queue is "
			    "supported");
		return cfg_block(cf, f->name, &s_queue, n, ps);
	case ID_BT:
		if (cfg_block(cf, f->name, &s_bt, n, ps) == -1)
			return -1;
		return resolve_fixups(ps);
	case ID_SOFTWIRE:
		return parse_softwire(ps, n);
	case ID_PSIDMAP:
		return parse_psidmap(ps, n);
	}
	return cfg_err(cf, &n->at, "internal error: block %d", f->id);
}

static int
parse_text(void *obj, const char *text, size_t len, const char *file,
    char *err, size_t errlen)
{
	struct lwaftr_conf *c = obj;
	struct cparser ps;
	struct cfg_pos eof;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	memset(&ps, 0, sizeof(ps));
	cfg_init(&ps.cf, text, len, file, err, errlen);
	ps.c = c;
	ps.ext.s = ps.in.s = side_defaults;
	ps.ext.s.mtu = 1460;
	ps.in.s.mtu = 1500;
	ps.in.v6 = 1;
	if (cfg_block(&ps.cf, NULL, &s_top, NULL, &ps) == -1)
		goto out;
	eof = cfg_here(&ps.cf);
	if (!ps.top.line)
		cfg_err(&ps.cf, &eof, "no softwire-config block");
	else if (check_side(&ps, &ps.ext, "external-interface") == 0 &&
	    check_side(&ps, &ps.in, "internal-interface") == 0)
		rc = 0;
out:
	side_done(&ps.ext, &c->ext);
	side_done(&ps.in, &c->in);
	cfg_fini(&ps.cf);
	free(ps.brs);
	free(ps.maps);
	free(ps.fix);
	if (rc == -1)
		lwaftr_conf_free(c);
	return rc;
}

int
lwaftr_conf_parse(struct lwaftr_conf *c, const char *text, const char *file,
    char *err, size_t errlen)
{
	return parse_text(c, text, strlen(text), file, err, errlen);
}

int
lwaftr_conf_load(struct lwaftr_conf *c, const char *path, char *err,
    size_t errlen)
{
	memset(c, 0, sizeof(*c));
	return cfg_load(path, parse_text, c, err, errlen);
}

void
lwaftr_conf_free(struct lwaftr_conf *c)
{
	free(c->ext.ingress_filter);
	free(c->ext.egress_filter);
	free(c->in.ingress_filter);
	free(c->in.egress_filter);
	free(c->sw);
	free(c->sw_at);
	memset(c, 0, sizeof(*c));
}
