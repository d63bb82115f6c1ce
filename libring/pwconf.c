/*
 * pwconf.c: the pseudowire configuration (pwconf.h, snb-pw(5)): cfg.h's
 * schemas, a pseudowire's statement a CFG_NAMED one
 * ("pseudowire NAME { ... }").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "pwconf.h"

#define PO(m)	offsetof(struct pw, m)
#define CO(m)	offsetof(struct pw_conf, m)

static cfg_leaf_fn pw_leaf, top_leaf;
static cfg_block_fn pseudowire;

static const struct cfg_field f_l2tp[] = {
	/* Optional: PW_DEFAULT_SESSION unless given (pseudowire()). */
	CFG_F("local-session", CFG_U32, .off = PO(local_session), .lo = 1,
	    .hi = UINT32_MAX),
	CFG_F("remote-session", CFG_U32, .off = PO(remote_session), .lo = 1,
	    .hi = UINT32_MAX),
	CFG_F("local-cookie", CFG_LEAF, .off = PO(local_cookie),
	    .flags = CFG_REQUIRED),
	CFG_F("remote-cookie", CFG_LEAF, .off = PO(remote_cookie),
	    .flags = CFG_REQUIRED),
};
static const struct cfg_schema s_l2tp = CFG_S(f_l2tp, .leaf = pw_leaf);

static const struct cfg_field f_gre[] = {
	CFG_F("key", CFG_LEAF, .off = PO(key)),
};
static const struct cfg_schema s_gre = CFG_S(f_gre, .leaf = pw_leaf);

/* Every field a sub-schema: the schema needs no block(). */
static const struct cfg_field f_pw[] = {
	CFG_F("remote-address", CFG_IPV6, .off = PO(remote),
	    .flags = CFG_REQUIRED),
	CFG_F("l2tp", CFG_BLOCK, .sub = &s_l2tp, CFG_AT(CFG_POS, PO(l2tp_at))),
	CFG_F("gre", CFG_BLOCK, .sub = &s_gre, CFG_AT(CFG_POS, PO(gre_at))),
};
static const struct cfg_schema s_pw = CFG_S(f_pw);

/* Whether local-address was given is seen after the file. */
static const struct cfg_field f_top[] = {
	CFG_F("local-address", CFG_LEAF),
	CFG_INT("mtu", CO(mtu), 65535, .lo = 1280),
	CFG_INT("hop-limit", CO(hop_limit), 255, .lo = 1),
	CFG_F("pseudowire", CFG_NAMED, .flags = CFG_LIST),
};
static const struct cfg_schema s_top = CFG_S(f_top, .leaf = top_leaf,
    .block = pseudowire);

/*
 * GRE's key, or a 64-bit cookie: 0x and exactly 16 hex digits, put on the
 * wire most significant byte first (0x0011223344556677 is 00 11 22 .. 77,
 * as iproute2's "cookie 0011223344556677").  The keyed IPv6 tunnel's
 * cookie is 64 bits (RFC 8159); a shorter number is refused rather than
 * padded, because iproute2 reads 8 hex digits as a 4-byte cookie, which a
 * padded 8-byte one would never match.
 */
static int
pw_leaf(struct cfg *cf, void *obj, const struct cfg_field *f,
    const struct cfg_tok *n, const struct cfg_tok *v)
{
	struct pw *pw = obj;
	char s[CFG_SHOW];

	if (f->off == PO(key)) {
		pw->has_key = 1;
		return cfg_u32(cf, f->name, v, 0, UINT32_MAX, &pw->key);
	}
	if (cfg_hex(v, (uint8_t *)obj + f->off, 8) == 0)
		return 0;
	return cfg_err(cf, &v->at, "bad %s %s: must be 0x and 16 hex digits "
	    "(a 64-bit cookie)", f->name, cfg_show(v, s));
}

static int
addr_ok(struct cfg *cf, const struct cfg_pos *at, const char *what,
    const uint8_t a[16])
{
	static const uint8_t zero[16], loopback[16] = { [15] = 1 };

	if (a[0] == 0xff)
		return cfg_err(cf, at, "%s: a multicast address", what);
	if (memcmp(a, zero, 16) == 0)
		return cfg_err(cf, at, "%s: the unspecified address", what);
	/* RFC 4291 2.5.3: never on a link. */
	if (memcmp(a, loopback, 16) == 0)
		return cfg_err(cf, at, "%s: the loopback address", what);
	return 0;
}

/* One pseudowire's block is read: is it whole, and apart from the rest? */
static int
pw_check(struct cfg *cf, struct pw_conf *c, struct pw *pw)
{
	const struct pw *o;

	if (pw->l2tp_at.line && pw->gre_at.line)
		return cfg_err(cf, &pw->gre_at, "pseudowire '%s': both 'l2tp' "
		    "(at %d:%d) and 'gre'", pw->name, pw->l2tp_at.line,
		    pw->l2tp_at.col);
	if (!pw->l2tp_at.line && !pw->gre_at.line)
		return cfg_err(cf, &pw->at, "pseudowire '%s': missing 'l2tp' "
		    "or 'gre'", pw->name);
	pw->type = pw->l2tp_at.line ? PW_L2TP : PW_GRE;
	if (addr_ok(cf, &pw->at, "remote-address", pw->remote) == -1)
		return -1;
	for (o = c->pw; o < pw; o++) {
		if (strcmp(o->name, pw->name) == 0)
			return cfg_err(cf, &pw->at, "duplicate pseudowire "
			    "'%s' (first at %d:%d)", pw->name, o->at.line,
			    o->at.col);
		if (o->type != pw->type)
			continue;
		/* A frame is the pseudowire's of its session and source
		 * address: pseudowires to different ends may share a
		 * session id (RFC 8159's 0xffffffff for all). */
		if (pw->type == PW_L2TP &&
		    o->local_session == pw->local_session &&
		    memcmp(o->remote, pw->remote, 16) == 0)
			return cfg_err(cf, &pw->l2tp_at, "pseudowire '%s': "
			    "local-session %u and remote-address are also "
			    "those of '%s' (at %d:%d)", pw->name,
			    pw->local_session, o->name, o->at.line, o->at.col);
		if (pw->type == PW_GRE &&
		    memcmp(o->remote, pw->remote, 16) == 0 &&
		    o->has_key == pw->has_key &&
		    (!pw->has_key || o->key == pw->key))
			return cfg_err(cf, &pw->gre_at, "pseudowire '%s': "
			    "the same remote-address and key as '%s' (at "
			    "%d:%d)", pw->name, o->name, o->at.line,
			    o->at.col);
	}
	return 0;
}

/* The schema's block(): n is the pseudowire's name, its '{' next. */
static int
pseudowire(struct cfg *cf, void *obj, const struct cfg_field *f,
    const struct cfg_tok *n)
{
	struct pw_conf *c = obj;
	struct cfg_tok t;
	char b[CFG_SHOW];
	struct pw *pw;

	if (n->len == 0 || n->len >= PW_NAME_MAX)
		return cfg_err(cf, &n->at, "bad pseudowire name %s: 1 to %d "
		    "characters", cfg_show(n, b), PW_NAME_MAX - 1);
	if (c->npw == PW_MAX)
		return cfg_err(cf, &n->at, "too many pseudowires (at most "
		    "%d)", PW_MAX);
	if (cfg_grow(&c->pw, &c->cap, c->npw + 1, sizeof(*c->pw)) == -1)
		return cfg_err(cf, &n->at, "out of memory");
	pw = &c->pw[c->npw];
	memset(pw, 0, sizeof(*pw));
	pw->local_session = pw->remote_session = PW_DEFAULT_SESSION;
	memcpy(pw->name, n->p, n->len);
	pw->at = n->at;
	if (memchr(n->p, '\0', n->len) != NULL || !name_ok(pw->name))
		return cfg_err(cf, &n->at, "bad pseudowire name %s: letters, "
		    "digits and '_.-', not first '.' or '-' (it names a port)",
		    cfg_show(n, b));
	if (strcmp(pw->name, "core") == 0)
		return cfg_err(cf, &n->at, "bad pseudowire name 'core': the "
		    "name of the core port");
	if (cfg_lex(cf, &t) == -1)
		return -1;
	if (t.type != CFG_LBRACE)
		return cfg_err(cf, &t.at, "expected '{' after 'pseudowire "
		    "%s', got %s", pw->name, cfg_show(&t, b));
	if (cfg_block(cf, "pseudowire", &s_pw, n, pw) == -1 ||
	    pw_check(cf, c, pw) == -1)
		return -1;
	c->npw++;
	return 0;
}

/* The top level's one leaf of its own: local-address. */
static int
top_leaf(struct cfg *cf, void *obj, const struct cfg_field *f,
    const struct cfg_tok *n, const struct cfg_tok *v)
{
	struct pw_conf *c = obj;

	if (cfg_addr(cf, f->name, v, AF_INET6, c->local) == -1)
		return -1;
	return addr_ok(cf, &v->at, f->name, c->local);
}

int
pw_conf_parse(struct pw_conf *c, const char *text, size_t len,
    const char *file, char *err, size_t errlen)
{
	static const uint8_t unset[16];
	struct cfg_pos end;
	struct cfg cf;
	int r;

	memset(c, 0, sizeof(*c));
	c->mtu = PW_DEFAULT_MTU;
	c->hop_limit = PW_DEFAULT_HOP_LIMIT;
	cfg_init(&cf, text, len, file, err, errlen);
	r = cfg_block(&cf, NULL, &s_top, NULL, c);
	end = cfg_here(&cf);
	/* "::" is refused: a local-address of zeros was not given. */
	if (r == 0 && memcmp(c->local, unset, 16) == 0)
		r = cfg_err(&cf, &end, "missing 'local-address'");
	if (r == 0 && c->npw == 0)
		r = cfg_err(&cf, &end, "no pseudowire");
	/* The file's order is free: local-address may come last. */
	for (size_t i = 0; r == 0 && i < c->npw; i++)
		if (memcmp(c->pw[i].remote, c->local, 16) == 0)
			r = cfg_err(&cf, &c->pw[i].at, "pseudowire '%s': its "
			    "remote-address is the local-address",
			    c->pw[i].name);
	cfg_fini(&cf);
	if (r == -1)
		pw_conf_free(c);
	return r;
}

void
pw_conf_free(struct pw_conf *c)
{
	free(c->pw);
	memset(c, 0, sizeof(*c));
}

const struct pw *
pw_find(const struct pw_conf *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->npw; i++)
		if (strcmp(c->pw[i].name, name) == 0)
			return &c->pw[i];
	return NULL;
}
