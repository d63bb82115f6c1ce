/*
 * conf.c: the softwire-config text syntax -> struct lwaftr_conf.
 *
 * The syntax is YANG-data-like: statements are "name value;" (leaves) or
 * "name { ... }" (blocks), with // and C comments, and values that are
 * bare words or "double"/'single' quoted strings.  The parser is driven
 * by one small field table per block, so an unknown field, a leaf given
 * a block or a block given a value is an error at the place it occurs.
 *
 * Positions in messages are 1-based lines and 1-based byte columns (a tab
 * counts as one column), as "FILE:LINE:COL: message".
 *
 * Besides the layout of the shipped files (per-softwire br-address and
 * port-set, addresses under instance/queue), the older layout is accepted:
 * binding-table-level br-address lists with a per-softwire "br" index,
 * psid-map blocks giving the port set of address ranges, and ip/mac/
 * next-hop directly in softwire-config's interface blocks.
 *
 * A million softwires parse in well under a second: the lexer does not
 * copy words, values are converted straight from the text, and the
 * softwire array grows geometrically.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lwaftr.h"

enum { T_EOF, T_WORD, T_STR, T_LBRACE, T_RBRACE, T_SEMI };

struct tok {
	int		 type;
	const char	*p;	/* WORD: in the text; STR: unescaped copy */
	size_t		 len;
	int		 line, col;
};

struct pos {
	int	line, col;	/* line 0: not given */
};

/* Where each side's addresses were set, for duplicates and messages. */
struct sidepos {
	struct pos	ip, mac, vlan, nh;
	struct pos	blk;	/* best place to report a missing address */
	const char	*blkname;
};

/* A psid-map block of the older layout: the port set of an address range. */
struct psidmap {
	uint32_t	lo, hi;		/* host order, inclusive */
	uint8_t		psid_length, reserved;
	struct pos	at;
};

/*
 * A softwire whose br-address or port-set comes from binding-table-level
 * data, which may follow it in the file: resolved when the block ends.
 */
struct fixup {
	size_t		idx;
	uint32_t	br;		/* index into the br-address list */
	int		need_br, need_ps;
	struct pos	at, psid_at, br_at;
};

struct cparser {
	const char		*file;
	const char		*p, *end;
	const char		*bol;		/* start of the current line */
	int			 line;
	char			*err;
	size_t			 errlen;
	int			 failed;
	struct lwaftr_conf	*c;
	size_t			 swcap;
	char			*sbuf;		/* unescaped string token */
	size_t			 sbufcap;
	struct sidepos		 extp, inp;
	int			 ninstance, nqueue;
	uint8_t			(*brs)[16];	/* binding-table br-address list */
	size_t			 nbrs, brscap;
	struct psidmap		*maps;
	size_t			 nmaps, mapscap;
	struct fixup		*fix;
	size_t			 nfix, fixcap;
};

static int
perr(struct cparser *ps, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
perr(struct cparser *ps, int line, int col, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ps->failed)
		return -1;
	ps->failed = 1;
	if (ps->err == NULL || ps->errlen == 0)
		return -1;
	n = snprintf(ps->err, ps->errlen, "%s:%d:%d: ", ps->file, line, col);
	if (n >= 0 && (size_t)n < ps->errlen) {
		va_start(ap, fmt);
		vsnprintf(ps->err + n, ps->errlen - n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

#define PERR(ps, t, ...)	perr((ps), (t)->line, (t)->col, __VA_ARGS__)

/*
 * Room for at least need elements of size sz in p (capacity *cap),
 * doubling: the array itself (moved or not), or NULL with p untouched.
 */
static void *
grow(void *p, size_t *cap, size_t need, size_t sz)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return p;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > (size_t)-1 / 2 / sz)
			return NULL;
		ncap *= 2;
	}
	if ((n = realloc(p, ncap * sz)) == NULL)
		return NULL;
	*cap = ncap;
	return n;
}

/*
 * A token's text for a message: at most 40 bytes, unprintable bytes as
 * '?', so that binary garbage in a file cannot garble the terminal.
 */
static const char *
show(const struct tok *t, char *buf, size_t bufsz)
{
	size_t i, n;

	switch (t->type) {
	case T_EOF:
		return "end of file";
	case T_LBRACE:
		return "'{'";
	case T_RBRACE:
		return "'}'";
	case T_SEMI:
		return "';'";
	}
	n = t->len > 40 ? 40 : t->len;
	if (bufsz < n + 6)
		n = bufsz - 6;
	buf[0] = '\'';
	for (i = 0; i < n; i++) {
		unsigned char ch = t->p[i];
		buf[i + 1] = ch >= 0x20 && ch < 0x7f ? ch : '?';
	}
	if (n < t->len) {
		memcpy(buf + n + 1, "...'", 5);
	} else {
		buf[n + 1] = '\'';
		buf[n + 2] = '\0';
	}
	return buf;
}

/* ---- lexer ---- */

/*
 * Byte classes, one table lookup a byte: the lexer spends its time in
 * whitespace and words (a million-softwire file is 180 MB, mostly
 * indentation).
 */
#define C_SPACE	0x01	/* skipped between tokens */
#define C_END	0x02	/* ends a bare word */
#define C_SLASH	0x04	/* ends a word if a comment starts here */

#define C_WS	(C_SPACE | C_END)

static const unsigned char cclass[256] = {
	[0x00 ... 0x08] = C_END,
	['\t'] = C_WS, ['\n'] = C_WS, ['\v'] = C_WS, ['\f'] = C_WS,
	['\r'] = C_WS,
	[0x0e ... 0x1f] = C_END,
	[' '] = C_WS,
	['"'] = C_END, ['\''] = C_END, [';'] = C_END, ['{'] = C_END,
	['}'] = C_END, [0x7f] = C_END,
	['/'] = C_SLASH,
};

static int
sbuf_put(struct cparser *ps, size_t n, char ch)
{
	char *b;

	if ((b = grow(ps->sbuf, &ps->sbufcap, n + 2, 1)) == NULL)
		return -1;
	ps->sbuf = b;
	ps->sbuf[n] = ch;
	return 0;
}

static int
lex_string(struct cparser *ps, struct tok *t)
{
	char q = *ps->p++;
	size_t n = 0;
	char ch;

	for (;;) {
		if (ps->p >= ps->end)
			return PERR(ps, t, "unterminated string");
		ch = *ps->p;
		if (ch == q) {
			ps->p++;
			break;
		}
		if (ch == '\\' && q == '"') {
			/* the escapes YANG defines, nothing else */
			int col = (int)(ps->p - ps->bol) + 1;

			if (ps->p + 1 >= ps->end)
				return PERR(ps, t, "unterminated string");
			switch (ps->p[1]) {
			case 'n': ch = '\n'; break;
			case 't': ch = '\t'; break;
			case '"': ch = '"'; break;
			case '\\': ch = '\\'; break;
			default:
				return perr(ps, ps->line, col,
				    "bad escape in string (\\n \\t \\\" \\\\)");
			}
			ps->p += 2;
		} else {
			if (ch == '\0')
				return perr(ps, ps->line,
				    (int)(ps->p - ps->bol) + 1,
				    "NUL byte in string");
			if (ch == '\n') {
				ps->line++;
				ps->bol = ps->p + 1;
			}
			ps->p++;
		}
		if (sbuf_put(ps, n++, ch) == -1)
			return PERR(ps, t, "out of memory");
	}
	if (sbuf_put(ps, n, '\0') == -1)
		return PERR(ps, t, "out of memory");
	t->type = T_STR;
	t->p = ps->sbuf;
	t->len = n;
	return 0;
}

static int
lex(struct cparser *ps, struct tok *t)
{
	const char *p = ps->p, *end = ps->end;
	unsigned char ch;

	for (;;) {
		while (p < end && (cclass[(unsigned char)*p] & C_SPACE)) {
			if (*p == '\n') {
				ps->line++;
				ps->bol = p + 1;
			}
			p++;
		}
		if (p + 1 < end && p[0] == '/' && p[1] == '/') {
			while (p < end && *p != '\n')
				p++;
			continue;
		}
		if (p + 1 < end && p[0] == '/' && p[1] == '*') {
			int line = ps->line, col = (int)(p - ps->bol) + 1;

			for (p += 2;; p++) {
				if (p + 1 >= end) {
					ps->p = end;
					return perr(ps, line, col,
					    "unterminated comment");
				}
				if (p[0] == '*' && p[1] == '/')
					break;
				if (*p == '\n') {
					ps->line++;
					ps->bol = p + 1;
				}
			}
			p += 2;
			continue;
		}
		break;
	}
	ps->p = p;
	t->line = ps->line;
	t->col = (int)(p - ps->bol) + 1;
	t->p = p;
	t->len = 0;
	if (p >= end) {
		t->type = T_EOF;
		return 0;
	}
	switch ((ch = *p)) {
	case '{':
		t->type = T_LBRACE;
		break;
	case '}':
		t->type = T_RBRACE;
		break;
	case ';':
		t->type = T_SEMI;
		break;
	case '"':
	case '\'':
		return lex_string(ps, t);
	default:
		if (ch < 0x20 || ch == 0x7f)
			return PERR(ps, t, "unexpected byte 0x%02x", ch);
		/* a word ends at a delimiter or at the start of a comment */
		for (; p < end; p++) {
			unsigned char k = cclass[(unsigned char)*p];

			if (k == 0)
				continue;
			if (k & C_END)
				break;
			if (p + 1 < end && (p[1] == '/' || p[1] == '*'))
				break;
		}
		t->type = T_WORD;
		t->len = p - t->p;
		ps->p = p;
		return 0;
	}
	t->len = 1;
	ps->p = p + 1;
	return 0;
}

/* ---- values ---- */

static int
teq(const struct tok *t, const char *s)
{
	size_t n = strlen(s);

	return t->len == n && memcmp(t->p, s, n) == 0;
}

static int
get_u32(struct cparser *ps, const struct tok *n, const struct tok *v,
    uint32_t lo, uint32_t hi, uint32_t *out)
{
	char b[64];
	uint64_t x = 0;
	size_t i;

	if (v->len == 0 || v->len > 10)
		goto bad;
	for (i = 0; i < v->len; i++) {
		if (v->p[i] < '0' || v->p[i] > '9')
			goto bad;
		x = x * 10 + (v->p[i] - '0');
	}
	if (x > UINT32_MAX)
		goto bad;
	if (x < lo || x > hi)
		return PERR(ps, v, "'%.*s' out of range: %llu (%u..%u)",
		    (int)n->len, n->p, (unsigned long long)x, lo, hi);
	*out = (uint32_t)x;
	return 0;
bad:
	return PERR(ps, v, "bad number %s for '%.*s'", show(v, b, sizeof(b)),
	    (int)n->len, n->p);
}

static int
get_bool(struct cparser *ps, const struct tok *n, const struct tok *v,
    int *out)
{
	char b[64];

	if (teq(v, "true"))
		*out = 1;
	else if (teq(v, "false"))
		*out = 0;
	else
		return PERR(ps, v, "bad boolean %s for '%.*s' (true or false)",
		    show(v, b, sizeof(b)), (int)n->len, n->p);
	return 0;
}

/* Dotted quad, exactly four decimal parts without leading zeros. */
static int
ipv4_parse(const char *s, size_t len, uint32_t *out)
{
	uint32_t a = 0, part;
	size_t i = 0;
	int k, digits;

	for (k = 0; k < 4; k++) {
		if (k > 0) {
			if (i >= len || s[i] != '.')
				return -1;
			i++;
		}
		part = 0;
		digits = 0;
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			if (digits > 0 && part == 0)
				return -1;	/* leading zero */
			part = part * 10 + (s[i] - '0');
			if (part > 255)
				return -1;
			digits++;
			i++;
		}
		if (digits == 0)
			return -1;
		a = a << 8 | part;
	}
	if (i != len)
		return -1;
	*out = htonl(a);
	return 0;
}

static int
get_ipv4(struct cparser *ps, const struct tok *n, const struct tok *v,
    uint32_t *out)
{
	char b[64];

	if (ipv4_parse(v->p, v->len, out) == -1)
		return PERR(ps, v, "bad IPv4 address %s for '%.*s'",
		    show(v, b, sizeof(b)), (int)n->len, n->p);
	return 0;
}

static int
get_ipv6(struct cparser *ps, const struct tok *n, const struct tok *v,
    uint8_t out[16])
{
	char s[INET6_ADDRSTRLEN + 1], b[64];

	/* inet_pton wants a C string; addresses are short */
	if (v->len == 0 || v->len >= sizeof(s) ||
	    memchr(v->p, '\0', v->len) != NULL)
		goto bad;
	memcpy(s, v->p, v->len);
	s[v->len] = '\0';
	if (inet_pton(AF_INET6, s, out) == 1)
		return 0;
bad:
	return PERR(ps, v, "bad IPv6 address %s for '%.*s'",
	    show(v, b, sizeof(b)), (int)n->len, n->p);
}

static int
hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Six groups of one or two hex digits separated by ':'. */
static int
get_mac(struct cparser *ps, const struct tok *n, const struct tok *v,
    uint8_t out[6])
{
	char b[64];
	size_t i = 0;
	int k, d, h;

	for (k = 0; k < 6; k++) {
		if (k > 0) {
			if (i >= v->len || v->p[i] != ':')
				goto bad;
			i++;
		}
		for (d = 0, out[k] = 0; d < 2 && i < v->len &&
		    (h = hexval((unsigned char)v->p[i])) >= 0; d++, i++)
			out[k] = out[k] << 4 | h;
		if (d == 0)
			goto bad;
	}
	if (i == v->len)
		return 0;
bad:
	return PERR(ps, v, "bad MAC address %s for '%.*s'",
	    show(v, b, sizeof(b)), (int)n->len, n->p);
}

static int
get_str(struct cparser *ps, const struct tok *v, char **out)
{
	char *s;

	if (memchr(v->p, '\0', v->len) != NULL)
		return PERR(ps, v, "NUL byte in value");
	if ((s = malloc(v->len + 1)) == NULL)
		return PERR(ps, v, "out of memory");
	memcpy(s, v->p, v->len);
	s[v->len] = '\0';
	free(*out);
	*out = s;
	return 0;
}

/* ---- blocks ---- */

enum { F_LEAF, F_BLOCK };

struct field {
	const char	*name;
	size_t		 len;	/* strlen(name), for a cheap compare */
	int		 id;
	unsigned char	 kind;
	unsigned char	 list;	/* may repeat */
};

#define FIELD(n, id, kind, list)	{ n, sizeof(n) - 1, id, kind, list }
#define MAXFIELDS	16

typedef int	leaf_fn(struct cparser *, void *, int, const struct tok *,
		    const struct tok *);
typedef int	block_fn(struct cparser *, void *, int, const struct tok *);

/*
 * The body of a block whose '{' has been read, up to its '}'.  Leaves go
 * to lf (value token, then ';' is checked), sub-blocks to bf (which
 * parses their body).
 */
static int
parse_block(struct cparser *ps, const char *bname, const struct tok *open,
    const struct field *f, int nf, void *ctx, leaf_fn *lf, block_fn *bf)
{
	struct pos seen[MAXFIELDS];
	struct tok t, v;
	char b[64];
	int i;

	memset(seen, 0, sizeof(seen));
	for (;;) {
		if (lex(ps, &t) == -1)
			return -1;
		if (t.type == T_RBRACE)
			return 0;
		if (t.type == T_EOF)
			return PERR(ps, open, "unterminated block '%s'", bname);
		if (t.type != T_WORD)
			return PERR(ps, &t, "expected a field name in %s, got %s",
			    bname, show(&t, b, sizeof(b)));
		for (i = 0; i < nf; i++)
			if (t.len == f[i].len && memcmp(t.p, f[i].name,
			    t.len) == 0)
				break;
		if (i == nf)
			return PERR(ps, &t, "unknown field %s in %s",
			    show(&t, b, sizeof(b)), bname);
		if (!f[i].list && seen[i].line)
			return PERR(ps, &t,
			    "duplicate field '%s' in %s (first at %d:%d)",
			    f[i].name, bname, seen[i].line, seen[i].col);
		seen[i].line = t.line;
		seen[i].col = t.col;
		if (lex(ps, &v) == -1)
			return -1;
		if (f[i].kind == F_BLOCK) {
			if (v.type != T_LBRACE)
				return PERR(ps, &v, "expected '{' after '%s', "
				    "got %s", f[i].name, show(&v, b, sizeof(b)));
			if (bf(ps, ctx, f[i].id, &t) == -1)
				return -1;
			continue;
		}
		if (v.type != T_WORD && v.type != T_STR)
			return PERR(ps, &v, "expected a value for '%s', got %s",
			    f[i].name, show(&v, b, sizeof(b)));
		if (lf(ps, ctx, f[i].id, &t, &v) == -1)
			return -1;
		if (lex(ps, &v) == -1)
			return -1;
		if (v.type != T_SEMI)
			return PERR(ps, &v, "expected ';' after the value of "
			    "'%s', got %s", f[i].name, show(&v, b, sizeof(b)));
	}
}

#define NF(a)	((int)(sizeof(a) / sizeof((a)[0])))

enum {
	ID_ALLOW_ICMP, ID_GEN_ICMP, ID_MTU, ID_ERL, ID_REASM, ID_INGRESS,
	ID_EGRESS, ID_VLAN, ID_FLOW, ID_HAIRPIN, ID_IP, ID_MAC, ID_NH,
	ID_PACKETS, ID_PERIOD, ID_MAXFRAGS, ID_MAXPKTS,
	ID_EXTIF, ID_INIF, ID_INSTANCE, ID_BT, ID_DEVICE, ID_QUEUE, ID_QID,
	ID_SOFTWIRE, ID_BRADDR, ID_PSIDMAP, ID_IPV4, ID_PSID, ID_B4, ID_BR,
	ID_PADDING, ID_PORTSET, ID_PSIDLEN, ID_RESERVED, ID_ADDR, ID_ENDADDR,
	ID_SHIFT,
};

static const struct field f_config[] = {
	FIELD("external-interface", ID_EXTIF, F_BLOCK, 0),
	FIELD("internal-interface", ID_INIF, F_BLOCK, 0),
	FIELD("instance", ID_INSTANCE, F_BLOCK, 1),
	FIELD("binding-table", ID_BT, F_BLOCK, 0),
};

/* softwire-config's interface blocks; the last three are the old layout */
static const struct field f_extif[] = {
	FIELD("allow-incoming-icmp", ID_ALLOW_ICMP, F_LEAF, 0),
	FIELD("generate-icmp-errors", ID_GEN_ICMP, F_LEAF, 0),
	FIELD("mtu", ID_MTU, F_LEAF, 0),
	FIELD("error-rate-limiting", ID_ERL, F_BLOCK, 0),
	FIELD("reassembly", ID_REASM, F_BLOCK, 0),
	FIELD("ingress-filter", ID_INGRESS, F_LEAF, 0),
	FIELD("egress-filter", ID_EGRESS, F_LEAF, 0),
	FIELD("vlan-tag", ID_VLAN, F_LEAF, 0),
	FIELD("ip", ID_IP, F_LEAF, 0),
	FIELD("mac", ID_MAC, F_LEAF, 0),
	FIELD("next-hop", ID_NH, F_BLOCK, 0),
};

static const struct field f_inif[] = {
	FIELD("allow-incoming-icmp", ID_ALLOW_ICMP, F_LEAF, 0),
	FIELD("generate-icmp-errors", ID_GEN_ICMP, F_LEAF, 0),
	FIELD("mtu", ID_MTU, F_LEAF, 0),
	FIELD("error-rate-limiting", ID_ERL, F_BLOCK, 0),
	FIELD("reassembly", ID_REASM, F_BLOCK, 0),
	FIELD("ingress-filter", ID_INGRESS, F_LEAF, 0),
	FIELD("egress-filter", ID_EGRESS, F_LEAF, 0),
	FIELD("vlan-tag", ID_VLAN, F_LEAF, 0),
	FIELD("flow-label", ID_FLOW, F_LEAF, 0),
	FIELD("hairpinning", ID_HAIRPIN, F_LEAF, 0),
	FIELD("ip", ID_IP, F_LEAF, 0),
	FIELD("mac", ID_MAC, F_LEAF, 0),
	FIELD("next-hop", ID_NH, F_BLOCK, 0),
};

/* instance { queue { external-interface | internal-interface } } */
static const struct field f_qif[] = {
	FIELD("ip", ID_IP, F_LEAF, 0),
	FIELD("mac", ID_MAC, F_LEAF, 0),
	FIELD("next-hop", ID_NH, F_BLOCK, 0),
	FIELD("vlan-tag", ID_VLAN, F_LEAF, 0),
};

static const struct field f_nh[] = {
	FIELD("ip", ID_IP, F_LEAF, 0),
	FIELD("mac", ID_MAC, F_LEAF, 0),
};

static const struct field f_erl[] = {
	FIELD("packets", ID_PACKETS, F_LEAF, 0),
	FIELD("period", ID_PERIOD, F_LEAF, 0),
};

static const struct field f_reasm[] = {
	FIELD("max-fragments-per-packet", ID_MAXFRAGS, F_LEAF, 0),
	FIELD("max-packets", ID_MAXPKTS, F_LEAF, 0),
};

static const struct field f_instance[] = {
	FIELD("device", ID_DEVICE, F_LEAF, 0),
	FIELD("queue", ID_QUEUE, F_BLOCK, 1),
};

static const struct field f_queue[] = {
	FIELD("id", ID_QID, F_LEAF, 0),
	FIELD("external-interface", ID_EXTIF, F_BLOCK, 0),
	FIELD("internal-interface", ID_INIF, F_BLOCK, 0),
};

static const struct field f_bt[] = {
	FIELD("softwire", ID_SOFTWIRE, F_BLOCK, 1),
	FIELD("br-address", ID_BRADDR, F_LEAF, 1),
	FIELD("psid-map", ID_PSIDMAP, F_BLOCK, 1),
};

static const struct field f_softwire[] = {
	FIELD("ipv4", ID_IPV4, F_LEAF, 0),
	FIELD("psid", ID_PSID, F_LEAF, 0),
	FIELD("b4-ipv6", ID_B4, F_LEAF, 0),
	FIELD("br-address", ID_BRADDR, F_LEAF, 0),
	FIELD("port-set", ID_PORTSET, F_BLOCK, 0),
	FIELD("br", ID_BR, F_LEAF, 0),
	FIELD("padding", ID_PADDING, F_LEAF, 0),
};

static const struct field f_portset[] = {
	FIELD("psid-length", ID_PSIDLEN, F_LEAF, 0),
	FIELD("reserved-ports-bit-count", ID_RESERVED, F_LEAF, 0),
};

static const struct field f_psidmap[] = {
	FIELD("addr", ID_ADDR, F_LEAF, 0),
	FIELD("end-addr", ID_ENDADDR, F_LEAF, 0),
	FIELD("psid-length", ID_PSIDLEN, F_LEAF, 0),
	FIELD("shift", ID_SHIFT, F_LEAF, 0),
	FIELD("reserved-ports-bit-count", ID_RESERVED, F_LEAF, 0),
};

/* Which side an interface block describes, and where it sits. */
struct sidectx {
	struct lwaftr_side	*s;
	struct sidepos		*sp;
	int			 v6;
	const char		*name;	/* for messages */
};

static int
setpos(struct cparser *ps, struct pos *p, const struct tok *n,
    const char *bname)
{
	if (p->line)
		return PERR(ps, n, "duplicate field '%.*s' in %s (first at "
		    "%d:%d)", (int)n->len, n->p, bname, p->line, p->col);
	p->line = n->line;
	p->col = n->col;
	return 0;
}

static int
get_addr(struct cparser *ps, struct sidectx *sc, const struct tok *n,
    const struct tok *v, uint8_t out[16])
{
	uint32_t a;

	if (sc->v6)
		return get_ipv6(ps, n, v, out);
	if (get_ipv4(ps, n, v, &a) == -1)
		return -1;
	memset(out, 0, 16);
	memcpy(out, &a, 4);
	return 0;
}

static int
nh_leaf(struct cparser *ps, void *ctx, int id, const struct tok *n,
    const struct tok *v)
{
	struct sidectx *sc = ctx;

	if (id == ID_IP) {
		if (get_addr(ps, sc, n, v, sc->s->nh_ip) == -1)
			return -1;
		sc->s->has_nh_ip = 1;
		return 0;
	}
	if (get_mac(ps, n, v, sc->s->nh_mac) == -1)
		return -1;
	sc->s->has_nh_mac = 1;
	return 0;
}

static int
side_leaf(struct cparser *ps, void *ctx, int id, const struct tok *n,
    const struct tok *v)
{
	struct sidectx *sc = ctx;
	struct lwaftr_side *s = sc->s;
	uint32_t x;

	switch (id) {
	case ID_ALLOW_ICMP:
		return get_bool(ps, n, v, &s->allow_incoming_icmp);
	case ID_GEN_ICMP:
		return get_bool(ps, n, v, &s->generate_icmp_errors);
	case ID_HAIRPIN:
		return get_bool(ps, n, v, &s->hairpinning);
	case ID_MTU:
		/* IPv6 links carry at least 1280 bytes (RFC 8200), IPv4 68 */
		return get_u32(ps, n, v, sc->v6 ? 1280 : 68, 65535, &s->mtu);
	case ID_FLOW:
		return get_u32(ps, n, v, 0, 0xfffff, &s->flow_label);
	case ID_VLAN:
		if (setpos(ps, &sc->sp->vlan, n, sc->name) == -1 ||
		    get_u32(ps, n, v, 0, 4095, &x) == -1)
			return -1;
		s->vlan_tag = (int)x;
		return 0;
	case ID_INGRESS:
		return get_str(ps, v, &s->ingress_filter);
	case ID_EGRESS:
		return get_str(ps, v, &s->egress_filter);
	case ID_IP:
		if (setpos(ps, &sc->sp->ip, n, sc->name) == -1)
			return -1;
		return get_addr(ps, sc, n, v, s->ip);
	case ID_MAC:
		if (setpos(ps, &sc->sp->mac, n, sc->name) == -1)
			return -1;
		return get_mac(ps, n, v, s->mac);
	case ID_PACKETS:
		return get_u32(ps, n, v, 0, UINT32_MAX, &s->err_rate_packets);
	case ID_PERIOD:
		/* the rate limiter divides by it */
		return get_u32(ps, n, v, 1, UINT32_MAX, &s->err_rate_period);
	case ID_MAXFRAGS:
		return get_u32(ps, n, v, 0, UINT32_MAX, &s->reasm_max_frags);
	case ID_MAXPKTS:
		return get_u32(ps, n, v, 0, UINT32_MAX, &s->reasm_max_packets);
	}
	return PERR(ps, n, "internal error: field %d", id);
}

static int
side_block(struct cparser *ps, void *ctx, int id, const struct tok *n)
{
	struct sidectx *sc = ctx;

	switch (id) {
	case ID_ERL:
		return parse_block(ps, "error-rate-limiting", n, f_erl,
		    NF(f_erl), sc, side_leaf, NULL);
	case ID_REASM:
		return parse_block(ps, "reassembly", n, f_reasm, NF(f_reasm),
		    sc, side_leaf, NULL);
	case ID_NH:
		if (setpos(ps, &sc->sp->nh, n, sc->name) == -1)
			return -1;
		return parse_block(ps, "next-hop", n, f_nh, NF(f_nh), sc,
		    nh_leaf, NULL);
	}
	return PERR(ps, n, "internal error: block %d", id);
}

static int
parse_side(struct cparser *ps, int id, const struct tok *n, int queue)
{
	struct sidectx sc;
	struct sidepos *sp;

	sc.v6 = id == ID_INIF;
	sc.s = sc.v6 ? &ps->c->in : &ps->c->ext;
	sc.sp = sp = sc.v6 ? &ps->inp : &ps->extp;
	sc.name = sc.v6 ? "internal-interface" : "external-interface";
	/* the queue's block is where addresses belong: report there */
	if (queue || sp->blk.line == 0) {
		sp->blk.line = n->line;
		sp->blk.col = n->col;
		sp->blkname = sc.name;
	}
	if (queue)
		return parse_block(ps, sc.name, n, f_qif, NF(f_qif), &sc,
		    side_leaf, side_block);
	if (sc.v6)
		return parse_block(ps, sc.name, n, f_inif, NF(f_inif), &sc,
		    side_leaf, side_block);
	return parse_block(ps, sc.name, n, f_extif, NF(f_extif), &sc,
	    side_leaf, side_block);
}

static int
queue_leaf(struct cparser *ps, void *ctx, int id, const struct tok *n,
    const struct tok *v)
{
	uint32_t x;

	/* one queue per process: the id names it, nothing more */
	return get_u32(ps, n, v, 0, UINT32_MAX, &x);
}

static int
queue_block(struct cparser *ps, void *ctx, int id, const struct tok *n)
{
	return parse_side(ps, id, n, 1);
}

static int
instance_leaf(struct cparser *ps, void *ctx, int id, const struct tok *n,
    const struct tok *v)
{
	/* device: which NIC; the ports of snb-lwaftr are given by the graph */
	return 0;
}

static int
instance_block(struct cparser *ps, void *ctx, int id, const struct tok *n)
{
	if (++ps->nqueue > 1)
		return PERR(ps, n, "only one queue is supported");
	return parse_block(ps, "queue", n, f_queue, NF(f_queue), NULL,
	    queue_leaf, queue_block);
}

/* ---- binding table ---- */

struct swctx {
	struct softwire	sw;
	struct pos	at, ipv4, psid, b4, braddr, br, ps, plen, resv;
	uint32_t	brindex;
	uint32_t	plen_v, resv_v;
};

static int
portset_leaf(struct cparser *ps, void *ctx, int id, const struct tok *n,
    const struct tok *v)
{
	struct swctx *w = ctx;
	struct pos *p = id == ID_PSIDLEN ? &w->plen : &w->resv;

	p->line = n->line;
	p->col = n->col;
	if (id == ID_PSIDLEN)
		return get_u32(ps, n, v, 0, 16, &w->plen_v);
	return get_u32(ps, n, v, 0, 16, &w->resv_v);
}

static int
softwire_leaf(struct cparser *ps, void *ctx, int id, const struct tok *n,
    const struct tok *v)
{
	struct swctx *w = ctx;
	uint32_t x;

	switch (id) {
	case ID_IPV4:
		w->ipv4.line = n->line;
		return get_ipv4(ps, n, v, &w->sw.ipv4);
	case ID_PSID:
		w->psid.line = v->line;
		w->psid.col = v->col;
		if (get_u32(ps, n, v, 0, 65535, &x) == -1)
			return -1;
		w->sw.psid = (uint16_t)x;
		return 0;
	case ID_B4:
		w->b4.line = n->line;
		return get_ipv6(ps, n, v, w->sw.b4);
	case ID_BRADDR:
		if (w->br.line)
			return PERR(ps, n, "both 'br' and 'br-address' given");
		w->braddr.line = n->line;
		return get_ipv6(ps, n, v, w->sw.br);
	case ID_BR:
		if (w->braddr.line)
			return PERR(ps, n, "both 'br' and 'br-address' given");
		w->br.line = v->line;
		w->br.col = v->col;
		return get_u32(ps, n, v, 0, UINT32_MAX, &w->brindex);
	case ID_PADDING:
		/* a key part in the old layout, always 0 in practice */
		return get_u32(ps, n, v, 0, 65535, &x);
	}
	return PERR(ps, n, "internal error: field %d", id);
}

static int
softwire_block(struct cparser *ps, void *ctx, int id, const struct tok *n)
{
	struct swctx *w = ctx;

	w->ps.line = n->line;
	w->ps.col = n->col;
	return parse_block(ps, "port-set", n, f_portset, NF(f_portset), w,
	    portset_leaf, NULL);
}

/* psid fits psid_length bits (any psid does when the length is 16) */
static int
psid_ok(uint32_t psid, uint32_t plen)
{
	return plen >= 16 || psid < (1u << plen);
}

static int
parse_softwire(struct cparser *ps, const struct tok *n)
{
	struct lwaftr_conf *c = ps->c;
	struct softwire *sw;
	struct swctx w;
	struct fixup *f;

	memset(&w, 0, sizeof(w));
	w.at.line = n->line;
	w.at.col = n->col;
	if (parse_block(ps, "softwire", n, f_softwire, NF(f_softwire), &w,
	    softwire_leaf, softwire_block) == -1)
		return -1;
	if (!w.ipv4.line)
		return PERR(ps, n, "softwire: missing 'ipv4'");
	if (!w.psid.line)
		return PERR(ps, n, "softwire: missing 'psid'");
	if (!w.b4.line)
		return PERR(ps, n, "softwire: missing 'b4-ipv6'");
	if (w.ps.line) {
		if (!w.plen.line)
			return perr(ps, w.ps.line, w.ps.col,
			    "port-set: missing 'psid-length'");
		if (w.plen_v + w.resv_v > 16) {
			struct pos *p = w.plen.line > w.resv.line ||
			    (w.plen.line == w.resv.line &&
			    w.plen.col > w.resv.col) ? &w.plen : &w.resv;

			return perr(ps, p->line, p->col, "psid-length %u + "
			    "reserved-ports-bit-count %u is more than 16",
			    w.plen_v, w.resv_v);
		}
		if (!psid_ok(w.sw.psid, w.plen_v))
			return perr(ps, w.psid.line, w.psid.col,
			    "psid %u out of range for psid-length %u "
			    "(0..%u)", w.sw.psid, w.plen_v,
			    (1u << w.plen_v) - 1);
		w.sw.psid_length = (uint8_t)w.plen_v;
		w.sw.reserved_bits = (uint8_t)w.resv_v;
	}
	if ((sw = grow(c->sw, &ps->swcap, c->nsw + 1, sizeof(*sw))) == NULL)
		return PERR(ps, n, "out of memory");
	c->sw = sw;
	c->sw[c->nsw] = w.sw;
	if (!w.ps.line || !w.braddr.line) {
		/* resolved from binding-table-level data at its end */
		if ((f = grow(ps->fix, &ps->fixcap, ps->nfix + 1,
		    sizeof(*f))) == NULL)
			return PERR(ps, n, "out of memory");
		ps->fix = f;
		f = &ps->fix[ps->nfix++];
		f->idx = c->nsw;
		f->br = w.brindex;
		f->need_br = !w.braddr.line;
		f->need_ps = !w.ps.line;
		f->at = w.at;
		f->psid_at = w.psid;
		f->br_at = w.br.line ? w.br : w.at;
	}
	c->nsw++;
	return 0;
}

struct mapctx {
	struct pos	addr, end, plen, shift, resv;
	uint32_t	addr_v, end_v, plen_v, shift_v, resv_v;
};

static int
psidmap_leaf(struct cparser *ps, void *ctx, int id, const struct tok *n,
    const struct tok *v)
{
	struct mapctx *m = ctx;

	switch (id) {
	case ID_ADDR:
		m->addr.line = n->line;
		return get_ipv4(ps, n, v, &m->addr_v);
	case ID_ENDADDR:
		m->end.line = v->line;
		m->end.col = v->col;
		return get_ipv4(ps, n, v, &m->end_v);
	case ID_PSIDLEN:
		m->plen.line = v->line;
		m->plen.col = v->col;
		return get_u32(ps, n, v, 0, 16, &m->plen_v);
	case ID_SHIFT:
		m->shift.line = v->line;
		m->shift.col = v->col;
		return get_u32(ps, n, v, 0, 16, &m->shift_v);
	case ID_RESERVED:
		m->resv.line = v->line;
		m->resv.col = v->col;
		return get_u32(ps, n, v, 0, 16, &m->resv_v);
	}
	return PERR(ps, n, "internal error: field %d", id);
}

static int
parse_psidmap(struct cparser *ps, const struct tok *n)
{
	struct mapctx m;
	struct psidmap *pm;

	memset(&m, 0, sizeof(m));
	if (parse_block(ps, "psid-map", n, f_psidmap, NF(f_psidmap), &m,
	    psidmap_leaf, NULL) == -1)
		return -1;
	if (!m.addr.line)
		return PERR(ps, n, "psid-map: missing 'addr'");
	if (!m.plen.line)
		return PERR(ps, n, "psid-map: missing 'psid-length'");
	if (!m.end.line)
		m.end_v = m.addr_v;
	else if (ntohl(m.end_v) < ntohl(m.addr_v))
		return perr(ps, m.end.line, m.end.col,
		    "psid-map: 'end-addr' is below 'addr'");
	/* RFC 7597: a + k + m = 16; shift is m */
	if (m.shift.line && !m.resv.line) {
		if (m.plen_v + m.shift_v > 16)
			return perr(ps, m.shift.line, m.shift.col,
			    "psid-length %u + shift %u is more than 16",
			    m.plen_v, m.shift_v);
		m.resv_v = 16 - m.plen_v - m.shift_v;
	} else if (m.plen_v + m.resv_v > 16) {
		return perr(ps, m.resv.line ? m.resv.line : m.plen.line,
		    m.resv.line ? m.resv.col : m.plen.col,
		    "psid-length %u + reserved-ports-bit-count %u is more "
		    "than 16", m.plen_v, m.resv_v);
	} else if (m.shift.line && m.plen_v + m.resv_v + m.shift_v != 16) {
		return perr(ps, m.shift.line, m.shift.col,
		    "psid-length %u + reserved-ports-bit-count %u + shift %u "
		    "is not 16", m.plen_v, m.resv_v, m.shift_v);
	}
	if ((pm = grow(ps->maps, &ps->mapscap, ps->nmaps + 1,
	    sizeof(*pm))) == NULL)
		return PERR(ps, n, "out of memory");
	ps->maps = pm;
	pm = &ps->maps[ps->nmaps++];
	pm->lo = ntohl(m.addr_v);
	pm->hi = ntohl(m.end_v);
	pm->psid_length = (uint8_t)m.plen_v;
	pm->reserved = (uint8_t)m.resv_v;
	pm->at.line = n->line;
	pm->at.col = n->col;
	return 0;
}

static int
bt_leaf(struct cparser *ps, void *ctx, int id, const struct tok *n,
    const struct tok *v)
{
	/* br-address at binding-table level: the old layout's BR list */
	uint8_t (*b)[16];

	if ((b = grow(ps->brs, &ps->brscap, ps->nbrs + 1, sizeof(*b))) ==
	    NULL)
		return PERR(ps, n, "out of memory");
	ps->brs = b;
	if (get_ipv6(ps, n, v, ps->brs[ps->nbrs]) == -1)
		return -1;
	ps->nbrs++;
	return 0;
}

static int
bt_block(struct cparser *ps, void *ctx, int id, const struct tok *n)
{
	if (id == ID_SOFTWIRE)
		return parse_softwire(ps, n);
	return parse_psidmap(ps, n);
}

static int
map_cmp(const void *a, const void *b)
{
	const struct psidmap *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Softwires that took their BR or port set from binding-table data. */
static int
resolve_fixups(struct cparser *ps)
{
	struct softwire *sw;
	struct fixup *f;
	size_t i, lo, hi, mid;
	uint32_t a;

	if (ps->nmaps > 1) {
		qsort(ps->maps, ps->nmaps, sizeof(*ps->maps), map_cmp);
		for (i = 1; i < ps->nmaps; i++)
			if (ps->maps[i].lo <= ps->maps[i - 1].hi) {
				struct psidmap *x = &ps->maps[i - 1];
				struct psidmap *y = &ps->maps[i];

				if (x->at.line > y->at.line ||
				    (x->at.line == y->at.line &&
				    x->at.col > y->at.col)) {
					y = x;
					x = &ps->maps[i];
				}
				return perr(ps, y->at.line, y->at.col,
				    "psid-map overlaps the one at %d:%d",
				    x->at.line, x->at.col);
			}
	}
	for (i = 0; i < ps->nfix; i++) {
		f = &ps->fix[i];
		sw = &ps->c->sw[f->idx];
		if (f->need_br) {
			if (ps->nbrs == 0)
				return perr(ps, f->at.line, f->at.col,
				    "softwire: missing 'br-address'");
			if (f->br >= ps->nbrs)
				return perr(ps, f->br_at.line, f->br_at.col,
				    "'br' %u is not an index of the %zu "
				    "binding-table br-address entries", f->br,
				    ps->nbrs);
			memcpy(sw->br, ps->brs[f->br], 16);
		}
		if (!f->need_ps)
			continue;
		a = ntohl(sw->ipv4);
		lo = 0;
		hi = ps->nmaps;
		while (lo < hi) {	/* first map with hi >= a */
			mid = lo + (hi - lo) / 2;
			if (ps->maps[mid].hi < a)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == ps->nmaps || ps->maps[lo].lo > a)
			return perr(ps, f->at.line, f->at.col, ps->nmaps ?
			    "softwire: no 'port-set' and no psid-map for "
			    "its ipv4" : "softwire: missing 'port-set'");
		sw->psid_length = ps->maps[lo].psid_length;
		sw->reserved_bits = ps->maps[lo].reserved;
		if (!psid_ok(sw->psid, sw->psid_length))
			return perr(ps, f->psid_at.line, f->psid_at.col,
			    "psid %u out of range for psid-length %u "
			    "(0..%u)", sw->psid, sw->psid_length,
			    (1u << sw->psid_length) - 1);
	}
	return 0;
}

static int
config_block(struct cparser *ps, void *ctx, int id, const struct tok *n)
{
	switch (id) {
	case ID_EXTIF:
	case ID_INIF:
		return parse_side(ps, id, n, 0);
	case ID_INSTANCE:
		if (++ps->ninstance > 1)
			return PERR(ps, n, "only one instance is supported");
		ps->extp.blk.line = ps->inp.blk.line = n->line;
		ps->extp.blk.col = ps->inp.blk.col = n->col;
		ps->extp.blkname = ps->inp.blkname = "instance";
		return parse_block(ps, "instance", n, f_instance,
		    NF(f_instance), NULL, instance_leaf, instance_block);
	case ID_BT:
		if (parse_block(ps, "binding-table", n, f_bt, NF(f_bt), NULL,
		    bt_leaf, bt_block) == -1)
			return -1;
		return resolve_fixups(ps);
	}
	return PERR(ps, n, "internal error: block %d", id);
}

static int
config_leaf(struct cparser *ps, void *ctx, int id, const struct tok *n,
    const struct tok *v)
{
	return PERR(ps, n, "internal error: field %d", id);
}

/* The AFTR's own addresses and its next hop are needed on both sides. */
static int
check_side(struct cparser *ps, const struct lwaftr_side *s,
    const struct sidepos *sp, const char *name, const struct pos *top)
{
	const struct pos *at = sp->blk.line ? &sp->blk : top;
	const char *bn = sp->blk.line ? sp->blkname : "softwire-config";
	/* "external-interface: missing 'ip'", "instance: missing ..." */
	const char *what = strcmp(bn, name) == 0 ? "" : name;
	const char *sep = *what ? " " : "";

	if (!sp->ip.line)
		return perr(ps, at->line, at->col, "%s: missing %s%s'ip'", bn,
		    what, sep);
	if (!sp->mac.line)
		return perr(ps, at->line, at->col, "%s: missing %s%s'mac'", bn,
		    what, sep);
	if (!sp->nh.line)
		return perr(ps, at->line, at->col, "%s: missing %s%s'next-hop'",
		    bn, what, sep);
	if (!s->has_nh_ip && !s->has_nh_mac)
		return perr(ps, sp->nh.line, sp->nh.col,
		    "next-hop: needs 'ip' or 'mac'");
	return 0;
}

static void
side_defaults(struct lwaftr_side *s, int v6)
{
	memset(s, 0, sizeof(*s));
	s->allow_incoming_icmp = 1;
	s->generate_icmp_errors = 1;
	s->mtu = v6 ? 1500 : 1460;
	s->err_rate_packets = 600000;
	s->err_rate_period = 2;
	s->reasm_max_frags = 40;
	s->reasm_max_packets = 20000;
	s->vlan_tag = -1;
	s->flow_label = 0;
	s->hairpinning = 1;
}

static int
parse_text(struct lwaftr_conf *c, const char *text, size_t len,
    const char *file, char *err, size_t errlen)
{
	struct cparser ps;
	struct tok t, v;
	struct pos top = { 0, 0 };
	char b[64];
	int rc = -1;

	memset(c, 0, sizeof(*c));
	side_defaults(&c->ext, 0);
	side_defaults(&c->in, 1);
	memset(&ps, 0, sizeof(ps));
	ps.file = file ? file : "-";
	ps.p = ps.bol = text;
	ps.end = text + len;
	ps.line = 1;
	ps.err = err;
	ps.errlen = errlen;
	ps.c = c;
	if (err && errlen)
		err[0] = '\0';

	for (;;) {
		if (lex(&ps, &t) == -1)
			goto out;
		if (t.type == T_EOF)
			break;
		if (t.type != T_WORD) {
			PERR(&ps, &t, "expected 'softwire-config', got %s",
			    show(&t, b, sizeof(b)));
			goto out;
		}
		if (!teq(&t, "softwire-config")) {
			PERR(&ps, &t, "unknown field %s at top level",
			    show(&t, b, sizeof(b)));
			goto out;
		}
		if (top.line) {
			PERR(&ps, &t, "duplicate field 'softwire-config' "
			    "(first at %d:%d)", top.line, top.col);
			goto out;
		}
		top.line = t.line;
		top.col = t.col;
		if (lex(&ps, &v) == -1)
			goto out;
		if (v.type != T_LBRACE) {
			PERR(&ps, &v, "expected '{' after 'softwire-config', "
			    "got %s", show(&v, b, sizeof(b)));
			goto out;
		}
		if (parse_block(&ps, "softwire-config", &t, f_config,
		    NF(f_config), NULL, config_leaf, config_block) == -1)
			goto out;
	}
	if (!top.line) {
		perr(&ps, t.line, t.col, "no softwire-config block");
		goto out;
	}
	if (check_side(&ps, &c->ext, &ps.extp, "external-interface",
	    &top) == -1 ||
	    check_side(&ps, &c->in, &ps.inp, "internal-interface",
	    &top) == -1)
		goto out;
	rc = 0;
out:
	free(ps.sbuf);
	free(ps.brs);
	free(ps.maps);
	free(ps.fix);
	if (rc == -1) {
		lwaftr_conf_free(c);
	} else if (c->nsw > 0 && ps.swcap > c->nsw) {
		/* give back the doubling slack of a big table */
		struct softwire *s = realloc(c->sw, c->nsw * sizeof(*s));

		if (s != NULL)
			c->sw = s;
	}
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
	struct stat st;
	char *buf = NULL, *nb;
	size_t len = 0, cap;
	ssize_t r;
	int fd, rc;

	memset(c, 0, sizeof(*c));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		goto fail;
	/* size from fstat when it is a regular file; grow for pipes */
	cap = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 ?
	    (size_t)st.st_size + 1 : 65536;
	if ((buf = malloc(cap)) == NULL)
		goto fail;
	for (;;) {
		if (len + 1 >= cap) {
			if (cap > (size_t)-1 / 2 ||
			    (nb = realloc(buf, cap * 2)) == NULL) {
				errno = ENOMEM;
				goto fail;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (r == 0)
			break;
		len += r;
	}
	close(fd);
	buf[len] = '\0';
	rc = parse_text(c, buf, len, path, err, errlen);
	free(buf);
	return rc;
fail:
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	if (fd != -1)
		close(fd);
	free(buf);
	return -1;
}

void
lwaftr_conf_free(struct lwaftr_conf *c)
{
	free(c->ext.ingress_filter);
	free(c->ext.egress_filter);
	free(c->in.ingress_filter);
	free(c->in.egress_filter);
	free(c->sw);
	memset(c, 0, sizeof(*c));
}
