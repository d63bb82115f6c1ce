/*
 * graph.c: the graph language's words (graph.h, graph_int.h): names, the
 * lexer, string maps, graph_words() and app_info_parse().  The lexer
 * follows the shell where the two overlap, so that a graph written on the
 * command line reads the way a pipeline does.
 */
#define _GNU_SOURCE		/* asprintf */
#include <ctype.h>
#include <err.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>
#define LIBBSD_OPENBSD_VIS	/* vis(3) as OpenBSD has it */
#include <bsd/vis.h>

#include "graph.h"
#include "graph_int.h"

const char *const tok_name[] = { "a word", "a port", "a reference",
	"a label", "'|'", "';'", "end of line", "end of input" };

void *
gr_xrealloc(void *p, size_t n, size_t size)
{
	if ((p = reallocarray(p, n ? n : 1, size)) == NULL)
		err(1, NULL);
	return p;
}

char *
gr_strndup(const char *s, size_t n)
{
	char *d;

	if ((d = strndup(s, n)) == NULL)
		err(1, NULL);
	return d;
}

void *
gr_grow(void *p, int n, int *cap, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	return gr_xrealloc(p, (size_t)*cap, size);
}

int
gr_fail(char *errbuf, size_t errlen, struct graph_pos pos, const char *fmt, ...)
{
	char msg[1024], shown[4 * sizeof(msg) + 1];
	va_list ap;
	int n;

	n = snprintf(errbuf, errlen, "%d:%d: ", pos.line, pos.col);
	if (n < 0 || (size_t)n >= errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The graph's words may hold any byte: one that would act on the
	 * terminal or split the line is shown escaped (vis(3), as tcpdump
	 * and OpenBSD's tools do). */
	strvis(shown, msg, VIS_CSTYLE | VIS_TAB | VIS_NL | VIS_OCTAL);
	strlcpy(errbuf + n, shown, errlen - (size_t)n);
	return -1;
}

int
name_char(int c)
{
	return isalnum((unsigned char)c) || (c != '\0' && strchr("_.-", c));
}

int
name_ok(const char *s)
{
	if (*s == '.' || *s == '-' || *s == '\0')
		return 0;
	for (; *s; s++)
		if (!name_char(*s))
			return 0;
	return 1;
}

int
app_chars(const char *s)
{
	if (!islower((unsigned char)*s))
		return 0;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s)
		    && *s != '-' && *s != '_')
			return 0;
	return 1;
}

static struct strent *
strtab_slot(struct strtab *t, const char *key)
{
	uint64_t h = 14695981039346656037ULL;	/* FNV-1a */
	const char *c;
	size_t i, mask = t->cap - 1;

	for (c = key; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	for (i = (size_t)(h ^ (h >> 32)) & mask; t->ent[i].key != NULL;
	    i = (i + 1) & mask)
		if (strcmp(t->ent[i].key, key) == 0)
			break;
	return &t->ent[i];
}

/* The value for key, or -1. */
int
gr_strtab_get(struct strtab *t, const char *key)
{
	struct strent *e;

	if (t->n == 0)
		return -1;
	e = strtab_slot(t, key);
	return e->key ? e->val : -1;
}

void
gr_strtab_put(struct strtab *t, const char *key, int val)
{
	struct strtab old = *t;
	struct strent *e;
	size_t i;

	if ((t->n + 1) * 2 > t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		if ((t->ent = calloc(t->cap, sizeof(*t->ent))) == NULL)
			err(1, NULL);
		for (i = 0; i < old.cap; i++)
			if (old.ent[i].key)
				*strtab_slot(t, old.ent[i].key) = old.ent[i];
		free(old.ent);
	}
	if ((e = strtab_slot(t, key))->key == NULL) {
		e->key = gr_strndup(key, strlen(key));
		t->n++;
	}
	e->val = val;
}

void
gr_strtab_free(struct strtab *t)
{
	size_t i;

	for (i = 0; i < t->cap; i++)
		free(t->ent[i].key);
	free(t->ent);
	memset(t, 0, sizeof(*t));
}

/* ---- lexer ---- */

void
lex_free(struct lexer *lx)
{
	int i;

	for (i = 0; i < lx->ntoks; i++)
		free(lx->toks[i].text);
	free(lx->toks);
	free(lx->buf);
}

static int
peekc(struct lexer *lx)
{
	return (unsigned char)lx->s[lx->i];
}

static int
nextc(struct lexer *lx)
{
	int c = peekc(lx);

	if (c == '\0')
		return c;
	lx->i++;
	if (c == '\n') {
		lx->line++;
		lx->col = 1;
	} else
		lx->col++;
	return c;
}

static void
push_tok(struct lexer *lx, enum tok_type t, char *text, int quoted,
    struct graph_pos pos)
{
	lx->toks = gr_grow(lx->toks, lx->ntoks, &lx->cap, sizeof(*lx->toks));
	lx->toks[lx->ntoks++] = (struct token){ t, text, quoted, pos };
}

/*
 * Read one word (never longer than the text left, so lx->buf holds it);
 * quoted says whether any of it was quoted or escaped.
 */
static char *
lex_word(struct lexer *lx, int *quoted)
{
	struct graph_pos pos, qpos = { 0, 0 };
	size_t len = 0;
	int c, q = 0;

	for (*quoted = 0;;) {
		pos.line = lx->line;
		pos.col = lx->col;
		if ((c = peekc(lx)) == '\0' && q) {
			gr_fail(lx->err, lx->errlen, qpos, "unbalanced %c quote", q);
			return NULL;
		}
		if (!q && (c == '\0' || strchr(" \t\r\n|;", c)))
			break;
		nextc(lx);
		if (c == q)
			q = 0;
		else if (!q && (c == '\'' || c == '"')) {
			q = c;
			qpos = pos;
			*quoted = 1;
		} else if (c == '\\' && (!q || (q == '"' && peekc(lx) != '\0' &&
		    strchr("\"\\\n", peekc(lx))))) {
			*quoted = 1;
			if ((c = nextc(lx)) != '\n' && c != '\0')
				lx->buf[len++] = (char)c;
		} else
			lx->buf[len++] = (char)c;
	}
	return gr_strndup(lx->buf, len);
}

/* A port ("[p]") or reference ("@x") name: 0, or -1 with the error. */
static int
name_tok(struct lexer *lx, enum tok_type t, const char *w,
    struct graph_pos pos)
{
	const char *what = t == T_PORT ? "port name '" : "label '@";
	size_t max = t == T_PORT ? PORT_NAME_MAX : GRAPH_NAME_MAX;

	if (!name_ok(w))
		return gr_fail(lx->err, lx->errlen, pos, "bad %s%s' (%s)", what,
		    w, NAME_CHARS);
	if (strlen(w) >= max)
		return gr_fail(lx->err, lx->errlen, pos, "%s%s' too long (at most "
		    "%zu characters)", what, w, max - 1);
	return 0;
}

/* The whole text into tokens; graph_words() wants words only. */
int
lex(struct lexer *lx, const char *text, char *errbuf, size_t errlen,
    int words)
{
	struct graph_pos pos;
	enum tok_type t;
	char *w;
	int c, quoted;
	size_t n;

	*lx = (struct lexer){ .s = text, .line = 1, .col = 1, .words = words,
	    .buf = gr_xrealloc(NULL, strlen(text) + 1, 1), .err = errbuf,
	    .errlen = errlen };
	for (;;) {
		c = peekc(lx);
		pos.line = lx->line;
		pos.col = lx->col;
		if (c == ' ' || c == '\t' || c == '\r' ||
		    (lx->words && isspace(c)))
			nextc(lx);
		else if (lx->words && (c == '|' || c == ';'))
			return gr_fail(lx->err, lx->errlen, pos, "'%c' in a stage's "
			    "words", c);
		else if (c == '\\' && lx->s[lx->i + 1] == '\n' && !lx->words) {
			nextc(lx);
			nextc(lx);
		} else if (c == '#' && !lx->words) {
			while (peekc(lx) != '\n' && peekc(lx) != '\0')
				nextc(lx);
		} else if (c == '\n' || c == ';' || c == '|') {
			nextc(lx);
			/* "|~": a leaky link (text non-NULL marks it). */
			w = c == '|' && peekc(lx) == '~' && nextc(lx) ?
			    gr_strndup("~", 1) : NULL;
			push_tok(lx, c == '|' ? T_PIPE : c == ';' ? T_SEMI :
			    T_NEWLINE, w, 0, pos);
		} else if (c == '\0') {
			push_tok(lx, T_EOF, NULL, 0, pos);
			return 0;
		} else {
			if ((w = lex_word(lx, &quoted)) == NULL)
				return -1;
			n = strlen(w);
			t = T_WORD;
			if (lx->words || quoted)
				;
			else if (n > 2 && w[0] == '[' && w[n - 1] == ']') {
				w[n - 1] = '\0';
				memmove(w, w + 1, n - 1);
				t = T_PORT;
			} else if (w[0] == '@') {
				memmove(w, w + 1, n);
				t = T_REF;
			} else if (n > 1 && w[n - 1] == ':' &&
			    n - 1 < GRAPH_NAME_MAX) {
				/* "x:" is a label if x is a name, else a word. */
				w[n - 1] = '\0';
				if (name_ok(w))
					t = T_LABEL;
				else
					w[n - 1] = ':';
			}
			if ((t == T_PORT || t == T_REF) &&
			    name_tok(lx, t, w, pos) == -1) {
				free(w);
				return -1;
			}
			push_tok(lx, t, w, quoted, pos);
		}
	}
}

void
graph_free(struct graph *g)
{
	int i;

	for (i = 0; i < g->nstages; i++)
		graph_words_free(g->stages[i].argv);
	free(g->stages);
	free(g->links);
	memset(g, 0, sizeof(*g));
}

char **
graph_words(const char *text, int *argc, char *errbuf, size_t errlen)
{
	struct lexer lx;
	char **v = NULL;
	int i;

	if (lex(&lx, text, errbuf, errlen, 1) == 0) {
		/* The words, then the end's NULL text. */
		v = gr_xrealloc(NULL, (size_t)lx.ntoks, sizeof(*v));
		for (i = 0; i < lx.ntoks; i++)
			v[i] = lx.toks[i].text;
		*argc = lx.ntoks - 1;
		lx.ntoks = 0;
	}
	lex_free(&lx);
	return v;
}

void
graph_words_free(char **v)
{
	char **p;

	for (p = v; p && *p; p++)
		free(*p);
	free(v);
}

/*
 * Parse `--describe` output.  Words are taken whole: a name longer than
 * its field is refused, not cut (two ports cut to the same name would
 * collide).
 */
int
app_info_parse(struct app_info *info, const char *text, char *errbuf,
    size_t errlen)
{
	static const char space[] = " \t\v\f\r";
	char w[3][APP_NAME_MAX];
	const char *s = text;
	size_t n;
	int nw, first = 1;

	memset(info, 0, sizeof(*info));
	for (; *s; s += *s == '\n') {
		/* "summary": one line of prose for snb-run --list. */
		if (strncmp(s + strspn(s, space), "summary ", 8) == 0) {
			s += strcspn(s, "\n");
			continue;
		}
		/* The first three words of the line; the rest is ignored. */
		memset(w, 0, sizeof(w));
		for (nw = 0; *(s += strspn(s, space)) && *s != '\n'; s += n) {
			n = strcspn(s, " \t\v\f\r\n");
			if (nw < 3 && n >= sizeof(w[0])) {
				snprintf(errbuf, errlen, "--describe: word "
				    "'%.20s...' longer than %zu characters", s,
				    sizeof(w[0]) - 1);
				return -1;
			}
			if (nw < 3)
				memcpy(w[nw++], s, n);
		}
		if (nw == 0)
			continue;
		if (first) {
			if (strcmp(w[0], "snb-describe") || strcmp(w[1], "1"))
				goto bad;
			first = 0;
		} else if (strcmp(w[0], "app") == 0)
			strlcpy(info->app, w[1], sizeof(info->app));
		else if (strcmp(w[0], "device") == 0)
			info->device = 1;
		else if (strcmp(w[0], "in") == 0 || strcmp(w[0], "out") == 0) {
			if (info->nports == 32 || w[1][0] == '\0')
				goto bad;
			if (strlen(w[1]) >= PORT_NAME_MAX) {
				snprintf(errbuf, errlen, "--describe: port name "
				    "'%s' too long (at most %d characters)",
				    w[1], PORT_NAME_MAX - 1);
				return -1;
			}
			strlcpy(info->ports[info->nports].name, w[1],
			    sizeof(info->ports[0].name));
			info->ports[info->nports].out = w[0][0] == 'o';
			info->ports[info->nports++].required =
			    strcmp(w[2], "required") == 0;
		}
	}
	if (!first && info->app[0])
		return 0;
bad:
	snprintf(errbuf, errlen, "does not describe itself (--describe)");
	return -1;
}
