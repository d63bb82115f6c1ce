/*
 * cfg.h: the text of snb's configuration files, read by token and by
 * block; an app puts its schema on top (apps/lwaftr/conf.c).
 *
 *	file   := { stmt }
 *	block  := '{' { stmt } '}'
 *	stmt   := NAME ( value ';' | block | value block )
 *	value  := WORD | STRING
 *	WORD   := bytes up to white space, ; { } " ' or a comment
 *	STRING := "..." with \n \t \" \\ | '...' taken as is
 *
 * with // and C comments anywhere between tokens.  It is the YANG-data-
 * like syntax of the lwAFTR's softwire-config files; a schema is a table
 * of fields per kind of block (struct cfg_schema).  cfg_block() reads a
 * block and refuses an unknown field, a repeated one that is not a list,
 * a leaf given a block and a block given a value; it converts typed
 * leaves itself (integers in a range, booleans, IPv4, IPv6 and MAC
 * addresses, strings) into the block's object and hands the other fields
 * to the schema's callbacks.
 *
 * Errors: every function that can fail returns 0 or -1.  The first error
 * is kept as "FILE:LINE:COL: message" in the caller's buffer, with
 * 1-based lines and 1-based byte columns (a tab is one column); later
 * ones are dropped, so that a failure deep in a callback is what the user
 * reads, not a consequence of it.
 *
 * Words are not copied: a token points into the text, which must outlive
 * the parse.  A quoted string is unescaped into a buffer the next string
 * reuses.  A file of a million entries (180 MB) reads in well under a
 * second.
 */
#ifndef SNB_CFG_H
#define SNB_CFG_H

#include <sys/socket.h>	/* AF_INET, AF_INET6 for cfg_addr() */

#include <stddef.h>
#include <stdint.h>

struct cfg_pos {
	int	line, col;	/* line 0: not seen */
};

/* 1 when a stands after b in the text (of two, the one to blame). */
static inline int
cfg_after(const struct cfg_pos *a, const struct cfg_pos *b)
{
	return a->line > b->line || (a->line == b->line && a->col > b->col);
}

enum { CFG_EOF, CFG_WORD, CFG_STR, CFG_LBRACE, CFG_RBRACE, CFG_SEMI };

struct cfg_tok {
	int		 type;
	const char	*p;	/* WORD: in the text; STR: unescaped copy */
	size_t		 len;
	struct cfg_pos	 at;
};

/* A reader: one text, one error buffer. */
struct cfg {
	const char	*file;		/* for messages */
	const char	*p, *end;
	const char	*bol;		/* start of the current line */
	int		 line;
	char		*err;
	size_t		 errlen;
	int		 failed;
	char		*sbuf;		/* the last string, unescaped */
	size_t		 sbufcap;
};

/* file NULL is "-"; err may be NULL.  cfg_fini() frees what lex kept. */
void	cfg_init(struct cfg *cf, const char *text, size_t len,
	    const char *file, char *err, size_t errlen);
void	cfg_fini(struct cfg *cf);

/* Record an error at at (the first one only); returns -1. */
int	cfg_err(struct cfg *cf, const struct cfg_pos *at, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/* The next token; EOF again and again at the end. */
int	cfg_lex(struct cfg *cf, struct cfg_tok *t);
/* Where the next token would start: end of file after the last one. */
struct cfg_pos cfg_here(const struct cfg *cf);
/*
 * A token for a message: "'{'", "end of file", or a word in quotes cut
 * to 40 bytes with unprintable bytes as '?', so that binary garbage in a
 * file cannot garble the terminal.  buf: CFG_SHOW bytes.
 */
#define CFG_SHOW	64
const char *cfg_show(const struct cfg_tok *t, char *buf);
int	cfg_eq(const struct cfg_tok *t, const char *s);

/*
 * Values.  name is the field's, for messages ("bad IPv4 address '1.2.3'
 * for 'ip'").  Integers are decimal without sign or leading '+'; an IPv4
 * address is exactly four parts without leading zeros (010 is not 8 nor
 * 10: refused); IPv6 is what inet_pton() takes; a MAC address is six
 * groups of one or two hex digits separated by ':'.  Addresses are
 * stored in network order.  The same for a schema's typed leaves.
 */
int	cfg_u32(struct cfg *cf, const char *name, const struct cfg_tok *v,
	    uint32_t lo, uint32_t hi, uint32_t *out);
int	cfg_addr(struct cfg *cf, const char *name, const struct cfg_tok *v,
	    int af, void *out);	/* AF_INET or AF_INET6 */
/* A hex digit's value, or -1. */
int	cfg_hexval(int ch);
/* "0x" and exactly 2 * n hex digits into n bytes, in order; 0 or -1. */
int	cfg_hex(const struct cfg_tok *v, uint8_t *out, size_t n);

/* ---- schemas ---- */

enum cfg_kind {
	CFG_BLOCK,	/* sub ? cfg_block(sub, same obj) : schema's block() */
	CFG_NAMED,	/* NAME WORD '{' ...: schema's block() gets the WORD
			   and reads the block from its '{' */
	CFG_LEAF,	/* the schema's leaf() */
	CFG_ANY,	/* any value, ignored (kept for older files) */
	CFG_U32,	/* uint32_t in lo..hi */
	CFG_BOOL,	/* int: true 1, false 0 */
	CFG_STRING,	/* char *, malloc'ed; a repeat frees the last */
	CFG_IPV4,	/* 4 bytes */
	CFG_IPV6,	/* 16 bytes */
	CFG_MAC,	/* 6 bytes */
};

/* flags */
#define CFG_LIST	0x01	/* may repeat */
#define CFG_REQUIRED	0x02	/* "BLOCK: missing 'NAME'" at the block */
#define CFG_POS		0x04	/* name's position into obj + at */
#define CFG_VALPOS	0x08	/* value's position into obj + at */
#define CFG_ONCE	0x10	/* CFG_POS, and a duplicate if already set */

struct cfg_schema;

struct cfg_field {
	const char		*name;
	size_t			 len;	/* strlen(name): a cheap compare */
	unsigned char		 kind;
	unsigned char		 flags;
	int			 id;	/* for the callbacks */
	size_t			 off;	/* typed leaves: the value in obj */
	size_t			 at;	/* CFG_POS, VALPOS, ONCE: a cfg_pos */
	uint32_t		 lo, hi;	/* CFG_U32 */
	const struct cfg_schema	*sub;
};

/* Table entries: CFG_F("name", CFG_BOOL, .off = offsetof(T, x)), ... */
#define CFG_F(n, k, ...)	{ .name = (n), .len = sizeof(n) - 1, \
				  .kind = (k), __VA_ARGS__ }
#define CFG_INT(n, o, h, ...)	CFG_F(n, CFG_U32, .off = (o), .hi = (h), \
				  __VA_ARGS__)
#define CFG_AT(fl, o)		.flags = (fl), .at = (o)

typedef int	cfg_leaf_fn(struct cfg *, void *obj, const struct cfg_field *,
		    const struct cfg_tok *name, const struct cfg_tok *value);
typedef int	cfg_block_fn(struct cfg *, void *obj, const struct cfg_field *,
		    const struct cfg_tok *name);

#define CFG_MAXFIELDS	16

struct cfg_schema {
	const struct cfg_field	*f;
	int			 nf;	/* at most CFG_MAXFIELDS */
	cfg_leaf_fn		*leaf;
	cfg_block_fn		*block;	/* reads the body: cfg_block() */
};

#define CFG_NF(a)	((int)(sizeof(a) / sizeof((a)[0])))
/* A schema of all of array a's fields: CFG_S(f_x, .leaf = x_leaf) */
#define CFG_S(a, ...)	{ .f = (a), .nf = CFG_NF(a), __VA_ARGS__ }

/*
 * The body of block name whose '{' (after the name token open) has been
 * read, up to its '}'.  name NULL is the top level: it ends at end of
 * file, and a token that is no field name there is told the fields
 * ("expected 'softwire-config', got '}'").
 */
int	cfg_block(struct cfg *cf, const char *name, const struct cfg_schema *s,
	    const struct cfg_tok *open, void *obj);

/*
 * Room for need elements of sz bytes in the array *arrp (any T **) of
 * capacity *cap, doubling from 16; -1 (out of memory) leaves it as it was.
 */
int	cfg_grow(void *arrp, size_t *cap, size_t need, size_t sz);
/* The same for text, which may hold a key: the old buffer is wiped. */
int	cfg_grow_text(char **buf, size_t *cap, size_t need);

/*
 * A whole file, NUL-terminated (a NUL inside is the parser's business),
 * its length in *len; NULL with "PATH: strerror" in err.
 */
char	*cfg_read(const char *path, size_t *len, char *err, size_t errlen);
/* The same from an open fd (standard input: a pipe, a file, a socket),
   read to its end and left open; errors name name. */
char	*cfg_read_fd(int fd, const char *name, size_t *len, char *err,
	    size_t errlen);

/*
 * A file's parse: cfg_read() it and hand the text to parse(obj, text, len,
 * path, err, errlen), which returns 0 or -1; the text is wiped and freed
 * after.
 */
typedef int	cfg_parse_fn(void *obj, const char *text, size_t len,
		    const char *file, char *err, size_t errlen);
int	cfg_load(const char *path, cfg_parse_fn *parse, void *obj, char *err,
	    size_t errlen);

#endif
