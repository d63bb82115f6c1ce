/*
 * cfg.c: configuration text, token by token and block by block (cfg.h).
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"

void
cfg_init(struct cfg *cf, const char *text, size_t len, const char *file,
    char *err, size_t errlen)
{
	memset(cf, 0, sizeof(*cf));
	cf->file = file ? file : "-";
	cf->p = cf->bol = text;
	cf->end = text + len;
	cf->line = 1;
	cf->err = err;
	cf->errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
}

void
cfg_fini(struct cfg *cf)
{
	/* a string may have been a secret (a key in quotes) */
	if (cf->sbuf != NULL)
		explicit_bzero(cf->sbuf, cf->sbufcap);
	free(cf->sbuf);
	cf->sbuf = NULL;
	cf->sbufcap = 0;
}

int
cfg_err(struct cfg *cf, const struct cfg_pos *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (cf->failed)
		return -1;
	cf->failed = 1;
	/* err may be NULL with errlen 0: snprintf() writes nothing then */
	n = snprintf(cf->err, cf->errlen, "%s:%d:%d: ", cf->file, at->line,
	    at->col);
	if (n >= 0 && (size_t)n < cf->errlen) {
		va_start(ap, fmt);
		vsnprintf(cf->err + n, cf->errlen - n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int
cfg_grow(void *arrp, size_t *cap, size_t need, size_t sz)
{
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > (size_t)-1 / 2 / sz)
			return -1;
		ncap *= 2;
	}
	/* arrp is a T **: the pointer is copied, not aliased as void * */
	memcpy(&p, arrp, sizeof(p));
	if ((p = realloc(p, ncap * sz)) == NULL)
		return -1;
	memcpy(arrp, &p, sizeof(p));
	*cap = ncap;
	return 0;
}

const char *
cfg_show(const struct cfg_tok *t, char *buf)
{
	static const char *const fixed[] = { [CFG_EOF] = "end of file",
	    [CFG_LBRACE] = "'{'", [CFG_RBRACE] = "'}'", [CFG_SEMI] = "';'" };
	size_t i, n = t->len > 40 ? 40 : t->len;

	if (t->type != CFG_WORD && t->type != CFG_STR)
		return fixed[t->type];
	buf[0] = '\'';
	for (i = 0; i < n; i++) {
		unsigned char ch = t->p[i];

		buf[i + 1] = ch >= 0x20 && ch < 0x7f ? ch : '?';
	}
	memcpy(buf + n + 1, n < t->len ? "...'" : "'", n < t->len ? 5 : 2);
	return buf;
}

int
cfg_eq(const struct cfg_tok *t, const char *s)
{
	size_t n = strlen(s);

	return t->len == n && memcmp(t->p, s, n) == 0;
}

/*
 * Byte classes, one table lookup a byte: the lexer spends its time in
 * white space and words (a big file is mostly indentation).
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

struct cfg_pos
cfg_here(const struct cfg *cf)
{
	return (struct cfg_pos){ cf->line, (int)(cf->p - cf->bol) + 1 };
}

static void
newline(struct cfg *cf, const char *p)
{
	cf->line++;
	cf->bol = p + 1;
}

static int
lex_string(struct cfg *cf, struct cfg_tok *t)
{
	char q = *cf->p++, ch;
	struct cfg_pos at;
	size_t n = 0;

	for (;; n++) {
		/* room for this byte or the final NUL */
		if (cfg_grow_text(&cf->sbuf, &cf->sbufcap, n + 1) == -1)
			return cfg_err(cf, &t->at, "out of memory");
		if (cf->p >= cf->end)
			return cfg_err(cf, &t->at, "unterminated string");
		if ((ch = *cf->p) == q) {
			cf->p++;
			break;
		}
		at = cfg_here(cf);
		if (ch == '\\' && q == '"') {
			/* the escapes YANG defines, nothing else */
			if (cf->p + 1 >= cf->end)
				return cfg_err(cf, &t->at,
				    "unterminated string");
			switch (cf->p[1]) {
			case 'n': ch = '\n'; break;
			case 't': ch = '\t'; break;
			case '"': ch = '"'; break;
			case '\\': ch = '\\'; break;
			default:
				return cfg_err(cf, &at, "bad escape in string "
				    "(\\n \\t \\\" \\\\)");
			}
			cf->p++;
		} else if (ch == '\0') {
			return cfg_err(cf, &at, "NUL byte in string");
		} else if (ch == '\n') {
			newline(cf, cf->p);
		}
		cf->p++;
		cf->sbuf[n] = ch;
	}
	cf->sbuf[n] = '\0';
	t->type = CFG_STR;
	t->p = cf->sbuf;
	t->len = n;
	return 0;
}

/* Past white space and comments, to the next token or the end. */
static int
skip(struct cfg *cf)
{
	const char *p = cf->p, *end = cf->end;
	struct cfg_pos at;

	for (;;) {
		for (; p < end && (cclass[(unsigned char)*p] & C_SPACE); p++)
			if (*p == '\n')
				newline(cf, p);
		if (p + 1 >= end || p[0] != '/' || (p[1] != '/' && p[1] != '*'))
			break;
		if (p[1] == '/') {
			while (p < end && *p != '\n')
				p++;
			continue;
		}
		cf->p = p;
		at = cfg_here(cf);
		for (p += 2; p + 1 < end && (p[0] != '*' || p[1] != '/'); p++)
			if (*p == '\n')
				newline(cf, p);
		if (p + 1 >= end) {
			cf->p = end;
			return cfg_err(cf, &at, "unterminated comment");
		}
		p += 2;
	}
	cf->p = p;
	return 0;
}

int
cfg_lex(struct cfg *cf, struct cfg_tok *t)
{
	static const unsigned char punct[256] = { ['{'] = CFG_LBRACE,
	    ['}'] = CFG_RBRACE, [';'] = CFG_SEMI };
	const char *p, *end = cf->end;
	unsigned char ch, k;

	if (skip(cf) == -1)
		return -1;
	p = cf->p;
	t->at = cfg_here(cf);
	t->p = p;
	t->len = 0;
	if (p >= end) {
		t->type = CFG_EOF;
		return 0;
	}
	ch = *p;
	if ((t->type = punct[ch]) != 0) {
		t->len = 1;
		cf->p = p + 1;
		return 0;
	}
	if (ch == '"' || ch == '\'')
		return lex_string(cf, t);
	if (ch < 0x20 || ch == 0x7f)
		return cfg_err(cf, &t->at, "unexpected byte 0x%02x", ch);
	/* a word ends at a delimiter or at the start of a comment */
	for (; p < end; p++) {
		if ((k = cclass[(unsigned char)*p]) == 0)
			continue;
		if (k & C_END)
			break;
		if (p + 1 < end && (p[1] == '/' || p[1] == '*'))
			break;
	}
	t->type = CFG_WORD;
	t->len = p - t->p;
	cf->p = p;
	return 0;
}

/* "bad IPv4 address '1.2.3' for 'ip'" */
static int
bad(struct cfg *cf, const char *what, const struct cfg_tok *v,
    const char *name, const char *hint)
{
	char b[CFG_SHOW];

	return cfg_err(cf, &v->at, "bad %s %s for '%s'%s", what,
	    cfg_show(v, b), name, hint);
}

int
cfg_u32(struct cfg *cf, const char *name, const struct cfg_tok *v,
    uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t x = 0;
	size_t i;

	for (i = 0; i < v->len && v->len <= 10; i++) {
		if (v->p[i] < '0' || v->p[i] > '9')
			break;
		x = x * 10 + (v->p[i] - '0');
	}
	if (v->len == 0 || i < v->len || x > UINT32_MAX)
		return bad(cf, "number", v, name, "");
	if (x < lo || x > hi)
		return cfg_err(cf, &v->at, "'%s' out of range: %llu (%u..%u)",
		    name, (unsigned long long)x, lo, hi);
	*out = (uint32_t)x;
	return 0;
}

/* inet_pton() of the token: it wants a C string; addresses are short */
int
cfg_addr(struct cfg *cf, const char *name, const struct cfg_tok *v, int af,
    void *out)
{
	char s[INET6_ADDRSTRLEN + 1];

	if (v->len == 0 || v->len >= sizeof(s) ||
	    memchr(v->p, '\0', v->len) != NULL)
		goto bad;
	memcpy(s, v->p, v->len);
	s[v->len] = '\0';
	if (inet_pton(af, s, out) == 1)
		return 0;
bad:
	return bad(cf, af == AF_INET ? "IPv4 address" : "IPv6 address", v,
	    name, "");
}

int
cfg_hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch |= 0x20;	/* 'A'-'F' and only they become 'a'-'f' */
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

int
cfg_hex(const struct cfg_tok *v, uint8_t *out, size_t n)
{
	size_t i;
	int d;

	if (v->len != 2 + 2 * n || v->p[0] != '0' || (v->p[1] != 'x' &&
	    v->p[1] != 'X'))
		return -1;
	for (i = 0; i < 2 * n; i++) {
		if ((d = cfg_hexval(v->p[2 + i])) == -1)
			return -1;
		out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | d : d << 4);
	}
	return 0;
}

/* A typed leaf into obj, or the schema's callback. */
static int
leaf(struct cfg *cf, const struct cfg_schema *s, const struct cfg_field *f,
    const struct cfg_tok *n, const struct cfg_tok *v, void *obj)
{
	/* offsetof() of a member of the kind's type: aligned */
	void *at = (char *)obj + f->off;
	uint8_t *mac = at;
	size_t i = 0;
	int k, d, h;
	char *str;

	switch (f->kind) {
	case CFG_LEAF:
		return s->leaf(cf, obj, f, n, v);
	case CFG_ANY:
		return 0;
	case CFG_U32:
		return cfg_u32(cf, f->name, v, f->lo, f->hi, at);
	case CFG_BOOL:
		if (!cfg_eq(v, "true") && !cfg_eq(v, "false"))
			return bad(cf, "boolean", v, f->name,
			    " (true or false)");
		*(int *)at = cfg_eq(v, "true");
		return 0;
	case CFG_STRING:
		if (memchr(v->p, '\0', v->len) != NULL)
			return cfg_err(cf, &v->at, "NUL byte in value");
		if ((str = strndup(v->p, v->len)) == NULL)
			return cfg_err(cf, &v->at, "out of memory");
		free(*(char **)at);
		*(char **)at = str;
		return 0;
	case CFG_IPV4:
		return cfg_addr(cf, f->name, v, AF_INET, at);
	case CFG_IPV6:
		return cfg_addr(cf, f->name, v, AF_INET6, at);
	case CFG_MAC:
		for (k = 0; k < 6; k++) {
			if (k > 0 && (i >= v->len || v->p[i++] != ':'))
				break;
			for (d = 0, mac[k] = 0; d < 2 && i < v->len &&
			    (h = cfg_hexval(v->p[i])) >= 0; d++, i++)
				mac[k] = mac[k] << 4 | h;
			if (d == 0)
				break;
		}
		if (k < 6 || i < v->len)
			return bad(cf, "MAC address", v, f->name, "");
		return 0;
	}
	return cfg_err(cf, &n->at, "internal error: kind %d", f->kind);
}

/*
 * Where a field was seen: the name's position, and for CFG_ONCE a
 * duplicate if another block already set it (the same message as a
 * duplicate inside one block).
 */
static int
mark(struct cfg *cf, const struct cfg_field *f, const struct cfg_tok *n,
    const struct cfg_tok *v, void *obj, const char *in, const char *bn)
{
	struct cfg_pos *p;

	if (!(f->flags & (CFG_POS | CFG_VALPOS | CFG_ONCE)))
		return 0;
	p = (struct cfg_pos *)(void *)((char *)obj + f->at);
	if ((f->flags & CFG_ONCE) && p->line)
		return cfg_err(cf, &n->at, "duplicate field '%s'%s%s (first "
		    "at %d:%d)", f->name, in, bn, p->line, p->col);
	*p = f->flags & (CFG_POS | CFG_ONCE) ? n->at : v->at;
	return 0;
}

/* A schema's field names for a message: "'a', 'b' or 'c'", or "a, b, c". */
static const char *
field_list(const struct cfg_schema *s, int quoted, char *buf, size_t len)
{
	const char *q = quoted ? "'" : "";
	size_t n = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < s->nf && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s%s%s", i == 0 ?
		    "" : quoted && i + 1 == s->nf ? " or " : ", ", q,
		    s->f[i].name, q);
	return buf;
}

int
cfg_block(struct cfg *cf, const char *name, const struct cfg_schema *s,
    const struct cfg_tok *open, void *obj)
{
	/* messages: "... in NAME" in a block, "... at top level" outside */
	const char *in = name ? " in " : "", *bn = name ? name : "";
	struct cfg_pos seen[CFG_MAXFIELDS] = { { 0 } };
	const struct cfg_field *f;
	struct cfg_tok t, v;
	char b[CFG_SHOW], fl[256];
	int i;

	if (s->nf > CFG_MAXFIELDS) {
		t.at = cfg_here(cf);
		return cfg_err(cf, &t.at, "internal error: %d fields", s->nf);
	}
	for (;;) {
		if (cfg_lex(cf, &t) == -1)
			return -1;
		if (t.type == (name ? CFG_RBRACE : CFG_EOF))
			break;
		if (t.type == CFG_EOF)
			return cfg_err(cf, &open->at, "unterminated block "
			    "'%s'", name);
		if (t.type != CFG_WORD && name == NULL)
			return cfg_err(cf, &t.at, "expected %s, got %s",
			    field_list(s, 1, fl, sizeof(fl)), cfg_show(&t, b));
		if (t.type != CFG_WORD)
			return cfg_err(cf, &t.at, "expected a field name%s%s, "
			    "got %s", in, bn, cfg_show(&t, b));
		for (i = 0; i < s->nf; i++)
			if (t.len == s->f[i].len && memcmp(t.p, s->f[i].name,
			    t.len) == 0)
				break;
		/* The top level's fields, when there is a choice. */
		if (i == s->nf && name == NULL && s->nf > 1)
			return cfg_err(cf, &t.at, "unknown field %s at top "
			    "level (%s)", cfg_show(&t, b),
			    field_list(s, 0, fl, sizeof(fl)));
		if (i == s->nf)
			return cfg_err(cf, &t.at, "unknown field %s %s%s",
			    cfg_show(&t, b), name ? "in " : "at top level",
			    bn);
		f = &s->f[i];
		if (!(f->flags & CFG_LIST) && seen[i].line)
			return cfg_err(cf, &t.at, "duplicate field '%s'%s%s "
			    "(first at %d:%d)", f->name, in, bn, seen[i].line,
			    seen[i].col);
		seen[i] = t.at;
		if (cfg_lex(cf, &v) == -1)
			return -1;
		if (f->kind == CFG_BLOCK ? v.type != CFG_LBRACE :
		    v.type != CFG_WORD && v.type != CFG_STR)
			return cfg_err(cf, &v.at, f->kind == CFG_BLOCK ?
			    "expected '{' after '%s', got %s" :
			    f->kind == CFG_NAMED ? "expected a name after '%s', "
			    "got %s" : "expected a value for '%s', got %s",
			    f->name, cfg_show(&v, b));
		if (mark(cf, f, &t, &v, obj, in, bn) == -1)
			return -1;
		if (f->kind == CFG_BLOCK || f->kind == CFG_NAMED) {
			/* a named block's callback gets the name */
			if ((f->kind == CFG_NAMED ? s->block(cf, obj, f, &v) :
			    f->sub ? cfg_block(cf, f->name, f->sub, &t, obj) :
			    s->block(cf, obj, f, &t)) == -1)
				return -1;
			continue;
		}
		if (leaf(cf, s, f, &t, &v, obj) == -1 || cfg_lex(cf, &v) == -1)
			return -1;
		if (v.type != CFG_SEMI)
			return cfg_err(cf, &v.at, "expected ';' after the "
			    "value of '%s', got %s", f->name, cfg_show(&v, b));
	}
	for (i = 0; i < s->nf; i++)
		if ((s->f[i].flags & CFG_REQUIRED) && !seen[i].line)
			return cfg_err(cf, open ? &open->at : &t.at,
			    "%s: missing '%s'", name ? name : "file",
			    s->f[i].name);
	return 0;
}
