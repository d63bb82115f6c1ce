/*
 * test_cfg: libring's configuration reader (libring/cfg.h) on its own,
 * with a small made-up schema: tokens and their positions, the errors of
 * the syntax and of cfg_block() with exact "FILE:LINE:COL: message" text,
 * the value converters' edge cases, reading a file.  The lwAFTR's schema
 * on top is test_lwaftr_conf's.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "cfg.h"
#include "tap.h"

static char err[256];

/* The tokens of text as "TYPE@LINE:COL" words, or the error. */
static const char *
tokens(const char *text, size_t len)
{
	static char out[1024];
	struct cfg cf;
	struct cfg_tok t;
	size_t n = 0;

	cfg_init(&cf, text, len, "t", err, sizeof(err));
	out[0] = '\0';
	do {
		if (cfg_lex(&cf, &t) == -1) {
			cfg_fini(&cf);
			return err;
		}
		n += snprintf(out + n, sizeof(out) - n, "%s%c%.*s@%d:%d",
		    n ? " " : "", "EWS{};"[t.type], (int)t.len, t.p,
		    t.at.line, t.at.col);
	} while (t.type != CFG_EOF);
	cfg_fini(&cf);
	return out;
}

static void
test_tokens(void)
{
	static const struct { const char *in, *want; } c[] = {
	    { "", "E@1:1" },
	    { "a b;{}", "Wa@1:1 Wb@1:3 ;;@1:4 {{@1:5 }}@1:6 E@1:7" },
	    { "  x\n\ty", "Wx@1:3 Wy@2:2 E@2:3" },
	    { "a//c\nb", "Wa@1:1 Wb@2:1 E@2:2" },
	    { "a/*\n*/b", "Wa@1:1 Wb@2:3 E@2:4" },
	    { "a/b c*d", "Wa/b@1:1 Wc*d@1:5 E@1:8" },
	    { "\"a\\n\\t\\\"\\\\\" 'x\\y'",
		"Sa\n\t\"\\@1:1 Sx\\y@1:13 E@1:18" },
	    { "\"a\nb\" c", "Sa\nb@1:1 Wc@2:4 E@2:5" },
	    { "/* no end", "t:1:1: unterminated comment" },
	    { "x /* no end", "t:1:3: unterminated comment" },
	    { "\n  \"abc", "t:2:3: unterminated string" },
	    { "'a\\", "t:1:1: unterminated string" },
	    { "\"a\\", "t:1:1: unterminated string" },
	    { " \"a\\qb\"", "t:1:4: bad escape in string (\\n \\t \\\" \\\\)" },
	    { "a \001", "t:1:3: unexpected byte 0x01" },
	    { "a \177", "t:1:3: unexpected byte 0x7f" },
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *got = tokens(c[i].in, strlen(c[i].in));

		ok(strcmp(got, c[i].want) == 0, "tokens %zu: %s", i, got);
	}
	ok(strcmp(tokens("\"a\0b\"", 5), "t:1:3: NUL byte in string") == 0,
	    "NUL in a string: %s", err);
	ok(strcmp(tokens("a\0", 2), "t:1:2: unexpected byte 0x00") == 0,
	    "NUL between tokens: %s", err);
}

/* ---- values ---- */

static struct cfg cf;

static struct cfg_tok *
word(const char *s)
{
	static struct cfg_tok t;

	cfg_init(&cf, s, strlen(s), "v", err, sizeof(err));
	t.type = CFG_WORD;
	t.p = s;
	t.len = strlen(s);
	t.at.line = 2;
	t.at.col = 7;
	return &t;
}

static void
test_values(void)
{
	static const struct { const char *in; uint32_t lo, hi, want; } u[] = {
	    { "0", 0, 10, 0 }, { "4294967295", 0, UINT32_MAX, UINT32_MAX },
	    { "007", 0, 10, 7 }, { "10", 10, 10, 10 },
	};
	static const char *badnum[] = { "", "-1", "+1", "1x", " 1",
	    "4294967296", "00000000001", "99999999999", "0x10" };
	static const char *v4ok[] = { "0.0.0.0", "255.255.255.255",
	    "10.0.1.2" };
	static const char *v4bad[] = { "1.2.3", "1.2.3.4.", "1.2.3.256",
	    "01.2.3.4", "1..3.4", "1.2.3.4 ", ".1.2.3", "::1", "1.2.3.-4" };
	uint8_t a6[16];
	uint32_t x, a4;
	size_t i;

	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		ok(cfg_u32(&cf, "n", word(u[i].in), u[i].lo, u[i].hi, &x) ==
		    0 && x == u[i].want, "u32 '%s'", u[i].in);
	for (i = 0; i < sizeof(badnum) / sizeof(badnum[0]); i++) {
		char want[128];

		snprintf(want, sizeof(want), "v:2:7: bad number '%s' for 'n'",
		    badnum[i]);
		ok(cfg_u32(&cf, "n", word(badnum[i]), 0, UINT32_MAX, &x) ==
		    -1 && strcmp(err, want) == 0, "%s", err);
	}
	ok(cfg_u32(&cf, "n", word("11"), 1, 10, &x) == -1 && strcmp(err,
	    "v:2:7: 'n' out of range: 11 (1..10)") == 0, "%s", err);
	ok(cfg_u32(&cf, "n", word("0"), 1, 10, &x) == -1 && strcmp(err,
	    "v:2:7: 'n' out of range: 0 (1..10)") == 0, "%s", err);

	for (i = 0; i < sizeof(v4ok) / sizeof(v4ok[0]); i++)
		ok(cfg_addr(&cf, "a", word(v4ok[i]), AF_INET, &a4) == 0,
		    "IPv4 %s", v4ok[i]);
	ok(cfg_addr(&cf, "a", word("10.0.1.2"), AF_INET, &a4) == 0 &&
	    memcmp(&a4, "\012\000\001\002", 4) == 0, "IPv4 in network order");
	for (i = 0; i < sizeof(v4bad) / sizeof(v4bad[0]); i++)
		ok(cfg_addr(&cf, "a", word(v4bad[i]), AF_INET, &a4) == -1 &&
		    strncmp(err, "v:2:7: bad IPv4 address '", 25) == 0,
		    "%s", err);

	ok(cfg_addr(&cf, "a", word("2001:db8::1"), AF_INET6, a6) == 0 &&
	    a6[0] == 0x20 && a6[15] == 1, "IPv6");
	ok(cfg_addr(&cf, "a", word("::ffff:1.2.3.4"), AF_INET6, a6) == 0 &&
	    a6[15] == 4, "IPv6 with an IPv4 tail");
	ok(cfg_addr(&cf, "a", word("1:2:3:4:5:6:7:8:9"), AF_INET6, a6) == -1 &&
	    strcmp(err, "v:2:7: bad IPv6 address '1:2:3:4:5:6:7:8:9' for "
	    "'a'") == 0, "%s", err);
	ok(cfg_addr(&cf, "a", word("1111:2222:3333:4444:5555:6666:7777:8888:"
	    "9999:aaaa:bbbb"), AF_INET6, a6) == -1 && strcmp(err, "v:2:7: bad "
	    "IPv6 address '1111:2222:3333:4444:5555:6666:7777:8888:...' for "
	    "'a'") == 0,
	    "longer than any address, cut in the message: %s", err);

	ok(strcmp(cfg_show(word("a\001b"), (char[CFG_SHOW]){ 0 }), "'a?b'") ==
	    0, "unprintable bytes shown as '?'");
}

/* ---- blocks ---- */

struct obj {
	uint32_t	n, list;
	int		flag;
	char		*name;
	uint8_t		a4[4], a6[16], mac[6];
	struct cfg_pos	n_at, v_at, once, sub;
	int		leaves, blocks;
};

#define O(m)	offsetof(struct obj, m)

static int
leaf_cb(struct cfg *c, void *o, const struct cfg_field *f,
    const struct cfg_tok *n, const struct cfg_tok *v)
{
	((struct obj *)o)->leaves++;
	return cfg_eq(v, "bad") ? cfg_err(c, &v->at, "bad %s", f->name) : 0;
}

static int
block_cb(struct cfg *c, void *o, const struct cfg_field *f,
    const struct cfg_tok *n);

static const struct cfg_field f_sub[] = {
	CFG_INT("n", O(n), 100, CFG_AT(CFG_POS, O(n_at))),
	CFG_F("once", CFG_BOOL, .off = O(flag), CFG_AT(CFG_ONCE, O(once))),
};
static const struct cfg_schema s_sub = CFG_S(f_sub);

static const struct cfg_field f_main[] = {
	CFG_INT("n", O(n), 100, .lo = 1, CFG_AT(CFG_VALPOS, O(v_at))),
	CFG_INT("list", O(list), UINT32_MAX, .flags = CFG_LIST),
	CFG_F("once", CFG_BOOL, .off = O(flag), CFG_AT(CFG_ONCE, O(once))),
	CFG_F("name", CFG_STRING, .off = O(name)),
	CFG_F("v4", CFG_IPV4, .off = O(a4)),
	CFG_F("v6", CFG_IPV6, .off = O(a6)),
	CFG_F("mac", CFG_MAC, .off = O(mac), .flags = CFG_REQUIRED),
	CFG_F("any", CFG_ANY),
	CFG_F("cb", CFG_LEAF, .flags = CFG_LIST),
	CFG_F("sub", CFG_BLOCK, .sub = &s_sub, CFG_AT(CFG_POS, O(sub))),
	CFG_F("cbblock", CFG_BLOCK, .flags = CFG_LIST),
};
static const struct cfg_schema s_main = CFG_S(f_main, .leaf = leaf_cb,
    .block = block_cb);

static int
block_cb(struct cfg *c, void *o, const struct cfg_field *f,
    const struct cfg_tok *n)
{
	((struct obj *)o)->blocks++;
	return cfg_block(c, f->name, &s_sub, n, o);
}

static const struct cfg_field f_top[] = {
	CFG_F("main", CFG_BLOCK, .sub = &s_main),
};
static const struct cfg_schema s_top = CFG_S(f_top);
static const struct cfg_schema s_top2 = { f_main, 2, NULL, NULL };

static const struct cfg_field f_vals[] = {
	CFG_F("b", CFG_BOOL, .off = O(flag)),
	CFG_F("m", CFG_MAC, .off = O(mac)),
	CFG_F("s", CFG_STRING, .off = O(name), .flags = CFG_LIST),
};
static const struct cfg_schema s_vals = CFG_S(f_vals);
static char lastname[16];	/* o->name before parse() freed it */

static int
parse(const char *text, const struct cfg_schema *s, struct obj *o)
{
	struct cfg c;
	int rc;

	memset(o, 0, sizeof(*o));
	cfg_init(&c, text, strlen(text), "b.conf", err, sizeof(err));
	rc = cfg_block(&c, NULL, s, NULL, o);
	cfg_fini(&c);
	snprintf(lastname, sizeof(lastname), "%s", o->name ? o->name : "");
	free(o->name);
	return rc;
}

/* The typed leaves cfg_block() converts itself. */
static void
test_typed(void)
{
	static const char *macbad[] = { "1:2:3:4:5", "1:2:3:4:5:6:",
	    "1:2:3:4:5:",
	    "123:2:3:4:5:6", "g:2:3:4:5:6", "1-2-3-4-5-6", ":1:2:3:4:5" };
	struct obj o;
	char text[64];
	size_t i;

	ok(parse("b true;", &s_vals, &o) == 0 && o.flag == 1 &&
	    parse("b false;", &s_vals, &o) == 0 && o.flag == 0, "booleans");
	ok(parse("b True;", &s_vals, &o) == -1 && strcmp(err,
	    "b.conf:1:3: bad boolean 'True' for 'b' (true or false)") == 0,
	    "%s", err);
	ok(parse("m 0:1a:B:cc:dD:ff;", &s_vals, &o) == 0 &&
	    memcmp(o.mac, "\000\032\013\314\335\377", 6) == 0,
	    "MAC, one or two digits, either case");
	for (i = 0; i < sizeof(macbad) / sizeof(macbad[0]); i++) {
		snprintf(text, sizeof(text), "m %s;", macbad[i]);
		ok(parse(text, &s_vals, &o) == -1 && strncmp(err,
		    "b.conf:1:3: bad MAC address '", 29) == 0, "%s", err);
	}
	ok(parse("s abc; s de;", &s_vals, &o) == 0 &&
	    strcmp(lastname, "de") == 0, "strings, replaced");
}

static void
test_blocks(void)
{
	static const struct { const char *in, *want; } e[] = {
	    { "main {\n  nx 1;\n}", "b.conf:2:3: unknown field 'nx' in main" },
	    { "main { mac 1:2:3:4:5:6; n 1; n 2; }",
		"b.conf:1:30: duplicate field 'n' in main (first at 1:25)" },
	    { "main { n 0; }", "b.conf:1:10: 'n' out of range: 0 (1..100)" },
	    { "main { n; }", "b.conf:1:9: expected a value for 'n', got ';'" },
	    { "main { n 1 }", "b.conf:1:12: expected ';' after the value of "
		"'n', got '}'" },
	    { "main { sub 1; }", "b.conf:1:12: expected '{' after 'sub', got "
		"'1'" },
	    { "main { ; }", "b.conf:1:8: expected a field name in main, got "
		"';'" },
	    { "main {\n n 1;\n", "b.conf:1:1: unterminated block 'main'" },
	    { "main { n 1; }", "b.conf:1:1: main: missing 'mac'" },
	    { "}", "b.conf:1:1: expected 'main', got '}'" },
	    { "x { }", "b.conf:1:1: unknown field 'x' at top level" },
	    { "main { mac 1:2:3:4:5:6; }\nmain { }",
		"b.conf:2:1: duplicate field 'main' (first at 1:1)" },
	    { "main { once true; sub { once false; } }",
		"b.conf:1:25: duplicate field 'once' in sub (first at 1:8)" },
	    { "main { cb bad; }", "b.conf:1:11: bad cb" },
	    { "main { cbblock { n 1000; } }",
		"b.conf:1:20: 'n' out of range: 1000 (0..100)" },
	    { "main { mac 1:2:3:4:5:6; v4 1.2.3.4; v6 ::; v4 1.2.3.5; }",
		"b.conf:1:44: duplicate field 'v4' in main (first at 1:25)" },
	    { "n 1; list 2 }", "b.conf:1:13: expected ';' after the value "
		"of 'list', got '}'" },
	};
	struct obj o;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		rc = parse(e[i].in, i == 16 ? &s_top2 : &s_top, &o);
		ok(rc == -1 && strcmp(err, e[i].want) == 0, "%s", err);
	}
	rc = parse("main { // all of it\n"
	    "  n 7; list 1; list 2; once true; name \"x y\"; v4 1.2.3.4;\n"
	    "  v6 ::1; mac a:b:c:d:e:f; any 'whatever'; cb x; cb y;\n"
	    "  sub { n 9; } cbblock { } cbblock { n 3; }\n"
	    "}\n", &s_top, &o);
	ok(rc == 0 && err[0] == '\0', "a valid block: %s", err);
	ok(o.n == 3 && o.list == 2 && o.flag == 1 && o.a4[3] == 4 &&
	    o.a6[15] == 1 && o.mac[5] == 0xf, "typed leaves stored");
	ok(o.v_at.line == 2 && o.v_at.col == 5 && o.once.line == 2 &&
	    o.once.col == 24 && o.sub.line == 4 && o.sub.col == 3 &&
	    o.n_at.line == 4 && o.n_at.col == 38, "positions recorded");
	ok(o.leaves == 2 && o.blocks == 2, "callbacks: %d leaves, %d blocks",
	    o.leaves, o.blocks);
	ok(parse("n 1; list 2; list 3;", &s_top2, &o) == 0 && o.list == 3,
	    "a top level of leaves");
	ok(parse("", &s_top2, &o) == 0, "an empty file");
}

static void
test_errors(void)
{
	struct cfg c;
	struct cfg_pos at = { 3, 4 };
	char small[8];

	cfg_init(&c, "", 0, NULL, err, sizeof(err));
	ok(cfg_err(&c, &at, "first %d", 1) == -1 && cfg_err(&c, &at,
	    "second") == -1 && strcmp(err, "-:3:4: first 1") == 0,
	    "the first error is kept, no file is '-': %s", err);
	cfg_init(&c, "", 0, "file", small, sizeof(small));
	cfg_err(&c, &at, "long message");
	ok(strcmp(small, "file:3:") == 0, "cut to the buffer: %s", small);
	cfg_init(&c, "", 0, "file", NULL, 0);
	ok(cfg_err(&c, &at, "x") == -1, "no buffer");
}

/* cfg_load's parser: the length into *obj, checks the text, returns 7. */
static int
load_parse(void *obj, const char *text, size_t len, const char *file,
    char *e, size_t elen)
{
	*(size_t *)obj = len;
	return memcmp(text, "a\0b", 4) == 0 && strncmp(file, "/tmp/", 5) == 0 ?
	    7 : -1;
}

static void
test_misc(void)
{
	char path[] = "/tmp/test_cfg.XXXXXX", *buf;
	size_t len, cap = 0;
	int *a = NULL, fd;

	ok(cfg_grow(&a, &cap, 1, sizeof(*a)) == 0 && cap == 16 &&
	    cfg_grow(&a, &cap, 17, sizeof(*a)) == 0 && cap == 32 &&
	    cfg_grow(&a, &cap, 3, sizeof(*a)) == 0 && cap == 32, "grow");
	a[31] = 1;
	ok(cfg_grow(&a, &cap, (size_t)-1 / 2, sizeof(*a)) == -1 && cap == 32 &&
	    a[31] == 1, "grow beyond memory: refused, the array kept");
	free(a);

	ok(cfg_read("/nonexistent/x", &len, err, sizeof(err)) == NULL &&
	    strcmp(err, "/nonexistent/x: No such file or directory") == 0,
	    "%s", err);
	ok(cfg_read("/", &len, err, sizeof(err)) == NULL &&
	    strcmp(err, "/: Is a directory") == 0, "%s", err);
	if ((fd = mkstemp(path)) == -1 || write(fd, "a\0b", 3) != 3) {
		ok(0, "mkstemp");
		return;
	}
	close(fd);
	buf = cfg_read(path, &len, err, sizeof(err));
	ok(buf && len == 3 && memcmp(buf, "a\0b", 4) == 0,
	    "a file read whole, NUL bytes kept, NUL-terminated");
	free(buf);
	ok(cfg_load(path, load_parse, &len, err, sizeof(err)) == 7 &&
	    len == 3, "cfg_load: the text and its length to parse, its result");
	unlink(path);
	len = 0;
	ok(cfg_load(path, load_parse, &len, err, sizeof(err)) == -1 &&
	    len == 0 && strstr(err, "No such file") != NULL,
	    "cfg_load of a missing file: -1 without a parse: %s", err);
}

/*
 * The paths that grow a block (its old copy wiped, which no test sees):
 * a pipe, whose size is not known, read whole; a string longer than the
 * first block of the lexer's buffer.
 */
static void
test_growth(void)
{
	static char big[200003], str[300], want[300];
	char path[32], *buf;
	struct cfg cf;
	struct cfg_tok t;
	size_t i, len = 0;
	int p[2];
	pid_t pid;

	for (i = 0; i < sizeof(big) - 1; i++)
		big[i] = (char)('a' + i % 26);
	if (pipe(p) == -1 || (pid = fork()) == -1) {
		ok(0, "pipe, fork");
		return;
	}
	if (pid == 0) {
		close(p[0]);
		_exit(write(p[1], big, sizeof(big) - 1) == sizeof(big) - 1 ?
		    0 : 1);
	}
	close(p[1]);
	snprintf(path, sizeof(path), "/dev/fd/%d", p[0]);
	buf = cfg_read(path, &len, err, sizeof(err));
	close(p[0]);
	waitpid(pid, NULL, 0);
	ok(buf != NULL && len == sizeof(big) - 1 && memcmp(buf, big,
	    sizeof(big)) == 0, "a pipe of %zu bytes read whole: %zu", len,
	    sizeof(big) - 1);
	free(buf);
	memset(want, 'k', 250);
	snprintf(str, sizeof(str), "\"%.250s\\n\"", want);
	want[250] = '\n';
	cfg_init(&cf, str, strlen(str), "t", err, sizeof(err));
	ok(cfg_lex(&cf, &t) == 0 && t.type == CFG_STR && t.len == 251 &&
	    memcmp(t.p, want, 251) == 0, "a string of 251 bytes, unescaped "
	    "whole");
	cfg_fini(&cf);
}

/*
 * cfg_read_fd: an open descriptor read to its end (snb-run -f -), a
 * socket too, which cannot be opened again by a path (/dev/stdin:
 * ENXIO); it stays open.  A bad one is named as the caller names it.
 */
static void
test_fd(void)
{
	char *buf;
	size_t len = 0;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1 ||
	    write(sv[0], "a -> b\n", 7) != 7 || shutdown(sv[0], SHUT_WR)) {
		ok(0, "socketpair");
		return;
	}
	buf = cfg_read_fd(sv[1], "standard input", &len, err, sizeof(err));
	ok(buf != NULL && len == 7 && strcmp(buf, "a -> b\n") == 0 &&
	    fcntl(sv[1], F_GETFD) != -1, "a socket read whole, left open: "
	    "%s", buf ? "" : err);
	free(buf);
	close(sv[0]);
	close(sv[1]);
	ok(cfg_read_fd(sv[1], "standard input", &len, err, sizeof(err)) ==
	    NULL && strcmp(err, "standard input: Bad file descriptor") == 0,
	    "%s", err);
}

int
main(void)
{
	test_tokens();
	test_values();
	test_blocks();
	test_typed();
	test_errors();
	test_misc();
	test_growth();
	test_fd();
	return tap_done();
}
