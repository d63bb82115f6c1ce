/*
 * graph.c: lexer, parser and checker for the graph language (graph.h).
 * The lexer follows the shell where the two overlap, so that a graph
 * written on the command line reads the way a pipeline does.
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

#include "graph.h"

/* The types up to T_LABEL start a chain's element. */
enum tok_type { T_WORD, T_PORT, T_REF, T_LABEL, T_PIPE, T_SEMI, T_NEWLINE,
	T_EOF };

/* What a token is, for "found ..." (indexed by enum tok_type). */
static const char *const tok_name[] = { "a word", "a port", "a reference",
	"a label", "'|'", "';'", "end of line", "end of input" };

struct token {
	enum tok_type	 type;
	char		*text;		/* words: unquoted text; ports etc: name */
	struct graph_pos pos;
};

struct lexer {
	const char	*s;
	size_t		 i;
	int		 line, col;
	int		 words;		/* graph_words(): words only */
	char		*buf;		/* the word being read */
	struct token	*toks;
	int		 ntoks, cap;
	char		*err;
	size_t		 errlen;
};

static void *
xrealloc(void *p, size_t n, size_t size)
{
	if ((p = reallocarray(p, n ? n : 1, size)) == NULL)
		err(1, NULL);
	return p;
}

static char *
xstrndup(const char *s, size_t n)
{
	char *d;

	if ((d = strndup(s, n)) == NULL)
		err(1, NULL);
	return d;
}

/* Grow an array by doubling, so n appends cost O(n) in all. */
static void *
grow(void *p, int n, int *cap, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	return xrealloc(p, (size_t)*cap, size);
}

static int __attribute__((format(printf, 4, 5)))
fail(char *errbuf, size_t errlen, struct graph_pos pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(errbuf, errlen, "%d:%d: ", pos.line, pos.col);
	if (n < 0 || (size_t)n >= errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(errbuf + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
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

static int
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

/*
 * A string map (string -> int) for what would otherwise compare every
 * stage or link with every other: a script's 20,000-stage chain must not
 * take minutes to check.  Open addressing, at most half full; keys are
 * copies, since the arrays they come from move as they grow.
 */
struct strtab {
	struct strent {
		char	*key;
		int	 val;
	}	*ent;
	size_t	 cap, n;
};

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
static int
strtab_get(struct strtab *t, const char *key)
{
	struct strent *e;

	if (t->n == 0)
		return -1;
	e = strtab_slot(t, key);
	return e->key ? e->val : -1;
}

static void
strtab_put(struct strtab *t, const char *key, int val)
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
		e->key = xstrndup(key, strlen(key));
		t->n++;
	}
	e->val = val;
}

static void
strtab_free(struct strtab *t)
{
	size_t i;

	for (i = 0; i < t->cap; i++)
		free(t->ent[i].key);
	free(t->ent);
	memset(t, 0, sizeof(*t));
}

/* ---- lexer ---- */

static void
lex_init(struct lexer *lx, const char *text, char *errbuf, size_t errlen,
    int words)
{
	memset(lx, 0, sizeof(*lx));
	lx->s = text;
	lx->line = lx->col = 1;
	lx->words = words;
	lx->buf = xrealloc(NULL, strlen(text) + 1, 1);
	lx->err = errbuf;
	lx->errlen = errlen;
}

static void
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
push_tok(struct lexer *lx, enum tok_type t, char *text, struct graph_pos pos)
{
	lx->toks = grow(lx->toks, lx->ntoks, &lx->cap, sizeof(*lx->toks));
	lx->toks[lx->ntoks].type = t;
	lx->toks[lx->ntoks].text = text;
	lx->toks[lx->ntoks++].pos = pos;
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
			fail(lx->err, lx->errlen, qpos, "unbalanced %c quote", q);
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
	return xstrndup(lx->buf, len);
}

/* A port ("[p]") or reference ("@x") name: 0, or -1 with the error. */
static int
name_tok(struct lexer *lx, enum tok_type t, const char *w,
    struct graph_pos pos)
{
	const char *what = t == T_PORT ? "port name '" : "label '@";
	size_t max = t == T_PORT ? PORT_NAME_MAX : GRAPH_NAME_MAX;

	if (!name_ok(w))
		return fail(lx->err, lx->errlen, pos, "bad %s%s'", what, w);
	if (strlen(w) >= max)
		return fail(lx->err, lx->errlen, pos, "%s%s' too long (at most "
		    "%zu characters)", what, w, max - 1);
	return 0;
}

/* The whole text into tokens; graph_words() wants words only. */
static int
lex(struct lexer *lx)
{
	struct graph_pos pos;
	enum tok_type t;
	char *w;
	int c, quoted;
	size_t n;

	for (;;) {
		c = peekc(lx);
		pos.line = lx->line;
		pos.col = lx->col;
		if (c == ' ' || c == '\t' || c == '\r' ||
		    (lx->words && isspace(c)))
			nextc(lx);
		else if (lx->words && (c == '|' || c == ';'))
			return fail(lx->err, lx->errlen, pos, "'%c' in a stage's "
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
			    xstrndup("~", 1) : NULL;
			push_tok(lx, c == '|' ? T_PIPE : c == ';' ? T_SEMI :
			    T_NEWLINE, w, pos);
		} else if (c == '\0') {
			push_tok(lx, T_EOF, NULL, pos);
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
			push_tok(lx, t, w, pos);
		}
	}
}

/* ---- parser ---- */

/* A chain's element while parsing. */
struct elem {
	int		 stage;		/* -1 until a reference is resolved */
	struct token	*ref, *in_port, *out_port;
	struct token	*pipe;		/* the '|' that follows, or NULL */
	struct graph_pos pos;
};

struct parser {
	struct lexer	 lx;
	int		 t;		/* current token */
	struct graph	*g;
	int		 stages_cap, links_cap;
	struct strtab	 labels;	/* label -> stage */
	/* Every chain's elements in turn: a chain ends with no pipe. */
	struct elem	*elems;
	int		 nelems, elems_cap;
	char		*err;
	size_t		 errlen;
};

static struct token *
cur(struct parser *p)
{
	return &p->lx.toks[p->t];
}

/* The current token if it is of type t (and move past it), or NULL. */
static struct token *
take(struct parser *p, enum tok_type t)
{
	return cur(p)->type == t ? &p->lx.toks[p->t++] : NULL;
}

/* The word a token was lexed from (labels and refs lost ':' and '@'). */
static char *
word_text(struct token *t)
{
	char *w;

	if (asprintf(&w, "%s%s%s", t->type == T_REF ? "@" : "", t->text,
	    t->type == T_LABEL ? ":" : "") == -1)
		err(1, NULL);
	return w;
}

static int
parse_node(struct parser *p, struct elem *e)
{
	struct graph *g = p->g;
	struct token *t, *label;
	struct stage *s;
	size_t n;
	int i, cap = 0;

	e->pos = cur(p)->pos;
	e->stage = -1;
	if ((e->ref = take(p, T_REF)) != NULL)
		return 0;
	label = take(p, T_LABEL);
	if ((t = cur(p))->type != T_WORD)
		return fail(p->err, p->errlen, t->pos, "expected an app name, "
		    "found %s", tok_name[t->type]);
	n = strlen(t->text);
	/* The lexer took an over-long "label:" for a word (it may be one). */
	if (label == NULL && n > 1 && t->text[n - 1] == ':') {
		t->text[n - 1] = '\0';
		if (name_ok(t->text))
			return fail(p->err, p->errlen, t->pos, "label '%s' too "
			    "long (at most %d characters)", t->text,
			    GRAPH_NAME_MAX - 1);
		t->text[n - 1] = ':';
	}
	if (!app_chars(t->text))
		return fail(p->err, p->errlen, t->pos, "bad app name '%s'",
		    t->text);
	if (n >= APP_NAME_MAX)
		return fail(p->err, p->errlen, t->pos, "app name '%s' too long "
		    "(at most %d characters)", t->text, APP_NAME_MAX - 1);
	if (label && (i = strtab_get(&p->labels, label->text)) >= 0)
		return fail(p->err, p->errlen, label->pos, "label '%s' already "
		    "defined at %d:%d", label->text, g->stages[i].pos.line,
		    g->stages[i].pos.col);
	g->stages = grow(g->stages, g->nstages, &p->stages_cap,
	    sizeof(*g->stages));
	s = &g->stages[g->nstages];
	memset(s, 0, sizeof(*s));
	s->pos = label ? label->pos : t->pos;
	strlcpy(s->app, t->text, sizeof(s->app));
	if (label) {
		strlcpy(s->label, label->text, sizeof(s->label));
		s->labelled = 1;
		strtab_put(&p->labels, label->text, g->nstages);
	}
	e->stage = g->nstages++;
	/*
	 * Everything up to a port, '|', ';' or newline is the app's: a word
	 * lexed as "x:" or "@x" (fe80::, user@host) is a word.
	 */
	for (p->t++; (t = cur(p))->type <= T_LABEL && t->type != T_PORT;
	    p->t++) {
		s->argv = grow(s->argv, s->argc + 1, &cap, sizeof(char *));
		s->argv[s->argc++] = word_text(t);
	}
	s->argv = grow(s->argv, s->argc, &cap, sizeof(char *));
	s->argv[s->argc] = NULL;
	return 0;
}

static int
parse_chain(struct parser *p)
{
	struct elem *e;
	struct token *t;

	for (;;) {
		p->elems = grow(p->elems, p->nelems, &p->elems_cap,
		    sizeof(*p->elems));
		e = &p->elems[p->nelems++];
		memset(e, 0, sizeof(*e));
		e->in_port = take(p, T_PORT);
		if (parse_node(p, e) == -1)
			return -1;
		e->out_port = take(p, T_PORT);
		if ((e->pipe = take(p, T_PIPE)) == NULL)
			break;
		/* A trailing '|' continues the chain on the next line. */
		while (take(p, T_NEWLINE))
			;
		if (cur(p)->type > T_LABEL)
			return fail(p->err, p->errlen, e->pipe->pos,
			    "missing stage after '|'");
	}
	t = cur(p);
	if (t->type < T_SEMI)
		return fail(p->err, p->errlen, t->pos, "expected '|', ';' or "
		    "end of line, found %s", tok_name[t->type]);
	return 0;
}

/* References resolved, now that every label is known; the links. */
static int
link_chains(struct parser *p)
{
	struct graph *g = p->g;
	struct elem *a, *b;
	struct link *l;
	int j;

	for (j = 0; j < p->nelems; j++) {
		b = &p->elems[j];
		a = j > 0 && b[-1].pipe ? b - 1 : NULL;	/* feeds b */
		if (b->ref && (b->stage = strtab_get(&p->labels,
		    b->ref->text)) == -1)
			return fail(p->err, p->errlen, b->ref->pos, "no stage "
			    "labelled '%s'", b->ref->text);
		if (a == NULL && b->in_port)
			return fail(p->err, p->errlen, b->in_port->pos, "input "
			    "port [%s] on the first stage of a chain",
			    b->in_port->text);
		if (b->pipe == NULL && b->out_port)
			return fail(p->err, p->errlen, b->out_port->pos,
			    "output port [%s] on the last stage of a chain",
			    b->out_port->text);
		if (a == NULL)
			continue;
		g->links = grow(g->links, g->nlinks, &p->links_cap,
		    sizeof(*g->links));
		l = &g->links[g->nlinks++];
		memset(l, 0, sizeof(*l));
		l->from = a->stage;
		l->to = b->stage;
		strlcpy(l->from_port, a->out_port ? a->out_port->text : "out",
		    sizeof(l->from_port));
		strlcpy(l->to_port, b->in_port ? b->in_port->text : "in",
		    sizeof(l->to_port));
		l->from_pos = a->out_port ? a->out_port->pos : a->pos;
		l->to_pos = b->in_port ? b->in_port->pos : b->pos;
		l->pos = a->pipe->pos;
		l->leaky = a->pipe->text != NULL;
	}
	return 0;
}

int
graph_parse(struct graph *g, const char *text, char *errbuf, size_t errlen)
{
	struct parser p;
	int rc = -1;

	memset(g, 0, sizeof(*g));
	memset(&p, 0, sizeof(p));
	lex_init(&p.lx, text, errbuf, errlen, 0);
	p.err = errbuf;
	p.errlen = errlen;
	p.g = g;
	if (lex(&p.lx) == -1)
		goto out;
	for (;;) {
		while (take(&p, T_NEWLINE) || take(&p, T_SEMI))
			;
		if (cur(&p)->type == T_EOF)
			break;
		if (parse_chain(&p) == -1)
			goto out;
	}
	if (link_chains(&p) == 0 && (rc = g->nstages ? 0 : -1) == -1)
		fail(errbuf, errlen, (struct graph_pos){ 1, 1 }, "empty graph");
out:
	free(p.elems);
	strtab_free(&p.labels);
	lex_free(&p.lx);
	return rc;
}

/* ---- checker ---- */

static int
info_port(const struct app_info *in, const char *name, int out)
{
	int i;

	for (i = 0; i < in->nports; i++)
		if (in->ports[i].out == out && (strcmp(in->ports[i].name,
		    name) == 0 || strcmp(in->ports[i].name, "*") == 0))
			return i;
	return -1;
}

static void
port_list(const struct app_info *in, int out, char *buf, size_t len)
{
	int i;

	buf[0] = '\0';
	for (i = 0; i < in->nports; i++) {
		if (in->ports[i].out != out)
			continue;
		if (buf[0])
			strlcat(buf, ", ", len);
		strlcat(buf, strcmp(in->ports[i].name, "*") ? in->ports[i].name
		    : "any name", len);
	}
	if (buf[0] == '\0')
		strlcpy(buf, "none", len);
}

/* Both stages have options (more words than the device) and they differ. */
static int
other_options(const struct stage *s, const struct stage *t)
{
	int a;

	if (s->argc <= 1 || t->argc <= 1)
		return 0;
	for (a = 0; s->argc == t->argc && a < s->argc; a++)
		if (strcmp(s->argv[a], t->argv[a]))
			break;
	return a < s->argc;
}

/*
 * Merge the stages that name the same device into one (DESIGN 4): each
 * later stage into the first, which keeps its place; the rest close up.
 */
static int
merge_devices(struct graph *g, char *errbuf, size_t errlen)
{
	struct strtab devs;
	struct stage *s, *t;
	char *key, **v;
	int *into, i, j, k, n, rc = -1;

	memset(&devs, 0, sizeof(devs));
	/* into[j]: the stage j merges into, or -1; then its new index. */
	into = xrealloc(NULL, (size_t)g->nstages, sizeof(*into));
	for (j = 0; j < g->nstages; j++) {
		t = &g->stages[j];
		into[j] = -1;
		if (t->argc == 0)
			continue;
		/* "APP DEVICE": app names have no spaces. */
		if (asprintf(&key, "%s %s", t->app, t->argv[0]) == -1)
			err(1, NULL);
		if ((i = strtab_get(&devs, key)) == -1 && t->info->device)
			strtab_put(&devs, key, j);
		free(key);
		if (i == -1)
			continue;
		s = &g->stages[i];
		if (other_options(s, t)) {
			fail(errbuf, errlen, t->pos, "%s %s declared again with "
			    "other options (first at %d:%d)", t->app, t->argv[0],
			    s->pos.line, s->pos.col);
			goto out;
		}
		if (s->labelled && t->labelled) {
			fail(errbuf, errlen, t->pos, "%s %s labelled twice "
			    "('%s' and '%s')", t->app, t->argv[0], s->label,
			    t->label);
			goto out;
		}
		if (t->labelled) {
			strlcpy(s->label, t->label, sizeof(s->label));
			s->labelled = 1;
		}
		/* The merged stage keeps the longer words (its options). */
		if (t->argc > s->argc) {
			v = s->argv, k = s->argc;
			s->argv = t->argv, s->argc = t->argc;
			t->argv = v, t->argc = k;
		}
		/* graph_free() may still see it if a later stage fails. */
		graph_words_free(t->argv);
		t->argv = NULL;
		t->argc = 0;
		into[j] = i;
	}
	for (j = n = 0; j < g->nstages; j++) {
		if (into[j] >= 0)
			into[j] = into[into[j]];	/* into[j] < j: done */
		else {
			g->stages[n] = g->stages[j];
			into[j] = n++;
		}
	}
	g->nstages = n;
	for (k = 0; k < g->nlinks; k++) {
		g->links[k].from = into[g->links[k].from];
		g->links[k].to = into[g->links[k].to];
	}
	rc = 0;
out:
	strtab_free(&devs);
	free(into);
	return rc;
}

/*
 * Label each unlabelled stage with its app's name (a device's: APP-DEVICE),
 * or when another stage has that label, the name followed by 2, 3 and so
 * on: the first number free.  Numbers a name tried once stay taken (labels
 * are only ever added), so each name goes on from where it stopped instead
 * of trying 2, 3... again: linear, with the same labels.
 */
static void
auto_labels(struct graph *g)
{
	struct strtab taken, next;
	struct stage *s;
	char want[GRAPH_NAME_MAX], *c;
	int i, n;

	memset(&taken, 0, sizeof(taken));
	memset(&next, 0, sizeof(next));
	for (i = 0; i < g->nstages; i++)
		if (g->stages[i].labelled)
			strtab_put(&taken, g->stages[i].label, i);
	for (i = 0; i < g->nstages; i++) {
		if ((s = &g->stages[i])->labelled)
			continue;
		strlcpy(want, s->app, sizeof(want));
		if (s->info->device && s->argc > 0) {
			strlcat(want, "-", sizeof(want));
			strlcat(want, s->argv[0], sizeof(want));
			for (c = want; *c; c++)
				if (!name_char(*c))
					*c = '_';
		}
		strlcpy(s->label, want, sizeof(s->label));
		if (strtab_get(&taken, s->label) != -1) {
			if ((n = strtab_get(&next, want)) == -1)
				n = 2;
			do
				snprintf(s->label, sizeof(s->label), "%.50s%d",
				    want, n++);
			while (strtab_get(&taken, s->label) != -1);
			strtab_put(&next, want, n);
		}
		strtab_put(&taken, s->label, i);
	}
	strtab_free(&taken);
	strtab_free(&next);
}

/*
 * A graph's links by stage, in link order, as adjacency lists (CSR):
 * stage s's are link[first[s]] .. link[first[s + 1] - 1], with to[] the
 * stage at the far end.  For the port checks (all) every link is listed
 * under both its ends.  For cycles only the links a cycle can run
 * through, under their source: lossless links between stages that are
 * not devices.  A leaky link drops rather than waits; a device's input
 * goes to the wire and its output comes from the wire, and it drops when
 * full (README "Devices"), so `nic x | filter | nic x` is no cycle.
 */
struct adj {
	int	*first, *to, *link;
	int	*deg, *queue, *prev;	/* scratch, one per stage */
};

static void
adj_build(struct adj *a, const struct graph *g, int all)
{
	const struct link *l;
	size_t n = (size_t)g->nstages, m = (size_t)g->nlinks * 2;
	int i, end, pass, s;

	a->first = calloc(n + 1, sizeof(int));
	a->to = xrealloc(NULL, m, sizeof(int));
	a->link = xrealloc(NULL, m, sizeof(int));
	a->deg = xrealloc(NULL, n, sizeof(int));
	a->queue = xrealloc(NULL, n, sizeof(int));
	a->prev = xrealloc(NULL, n, sizeof(int));
	if (a->first == NULL)
		err(1, NULL);
	/* Count each stage's links, then fill (prev: where the next goes). */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < g->nlinks; i++) {
			l = &g->links[i];
			for (end = 0; end < 2; end++) {
				if (end == 0 ? !all && (l->leaky ||
				    g->stages[l->from].info->device ||
				    g->stages[l->to].info->device) :
				    !all || l->to == l->from)
					continue;
				s = end ? l->to : l->from;
				if (pass == 0) {
					a->first[s + 1]++;
					continue;
				}
				a->to[a->prev[s]] = end ? l->from : l->to;
				a->link[a->prev[s]++] = i;
			}
		}
		for (i = 0; pass == 0 && i < (int)n; i++) {
			a->first[i + 1] += a->first[i];
			a->prev[i] = a->first[i];
		}
	}
}

static void
adj_free(struct adj *a)
{
	free(a->first);
	free(a->to);
	free(a->link);
	free(a->deg);
	free(a->queue);
	free(a->prev);
}

/*
 * Do the links before link `limit` form a cycle?  Kahn's algorithm: take
 * away stages that nothing enters until none is left (no cycle) or every
 * one left is entered (a cycle).  Iterative, O(stages + links).
 */
static int
has_cycle(struct adj *a, int n, int limit)
{
	int i, e, head = 0, tail = 0;

	memset(a->deg, 0, (size_t)n * sizeof(int));
	for (i = 0; i < n; i++)
		for (e = a->first[i]; e < a->first[i + 1] &&
		    a->link[e] < limit; e++)
			a->deg[a->to[e]]++;
	for (i = 0; i < n; i++)
		if (a->deg[i] == 0)
			a->queue[tail++] = i;
	while (head < tail) {
		i = a->queue[head++];
		for (e = a->first[i]; e < a->first[i + 1] &&
		    a->link[e] < limit; e++)
			if (--a->deg[a->to[e]] == 0)
				a->queue[tail++] = a->to[e];
	}
	return tail < n;
}

/* Append "LABEL" or " -> LABEL" to buf. */
static void
cycle_name(char *buf, size_t len, const char *label)
{
	if (buf[0])
		strlcat(buf, " -> ", len);
	strlcat(buf, label, len);
}

/*
 * Refuse a cycle of lossless links (DESIGN 6): its rings can all fill and
 * deadlock, and its stages never see end of stream, so packets circle
 * forever.  The error points at the '|' that closes the first cycle in
 * reading order: the links before it form none, found by bisection over
 * the number of links (O((stages + links) log links)), so a path back
 * from that link's target to its source through earlier links exists, and
 * the shortest one (breadth first) is the cycle shown.
 */
static int
check_cycles(struct graph *g, char *errbuf, size_t errlen)
{
	struct adj a;
	struct link *l;
	char names[640];
	int n = g->nstages, lo = 0, hi = g->nlinks, mid, i, e, head, tail;
	int len, *path;

	adj_build(&a, g, 0);
	if (g->nlinks == 0 || !has_cycle(&a, n, g->nlinks)) {
		adj_free(&a);
		return 0;
	}
	/* Links [0, lo) form no cycle, links [0, hi) do. */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		*(has_cycle(&a, n, mid) ? &hi : &lo) = mid;
	}
	l = &g->links[lo];
	for (i = 0; i < n; i++)
		a.prev[i] = -1;
	a.prev[l->to] = l->to;
	a.queue[0] = l->to;
	for (head = 0, tail = 1; head < tail && a.prev[l->from] == -1; ) {
		i = a.queue[head++];
		for (e = a.first[i]; e < a.first[i + 1] && a.link[e] < lo; e++)
			if (a.prev[a.to[e]] == -1) {
				a.prev[a.to[e]] = i;
				a.queue[tail++] = a.to[e];
			}
	}
	/* The path to -> ... -> from, collected backwards. */
	path = a.deg;
	for (len = 0, i = l->from; ; i = a.prev[i]) {
		path[len++] = i;
		if (i == l->to)
			break;
	}
	names[0] = '\0';
	for (i = len - 1; i >= 0; i--) {
		/* A long cycle is shown by its ends. */
		if (len > 8 && i == len - 4) {
			i = 3;
			cycle_name(names, sizeof(names), "...");
		}
		cycle_name(names, sizeof(names), g->stages[path[i]].label);
	}
	cycle_name(names, sizeof(names), g->stages[l->to].label);
	if (len > 8) {
		i = (int)strlen(names);
		snprintf(names + i, sizeof(names) - (size_t)i, " (%d stages)",
		    len);
	}
	adj_free(&a);
	return fail(errbuf, errlen, l->pos, "cycle of lossless links %s: make "
	    "one of its links leaky ('|~')", names);
}

int
graph_stage_fit(const struct graph *g, int i, const struct app_info *info,
    const int *links, int n, struct misfit *m)
{
	const struct link *l;
	const char *name;
	uint32_t conn = 0;	/* bit p: port p has a link */
	int k, out, p;

	for (k = 0; k < n; k++) {
		l = &g->links[links ? links[k] : k];
		for (out = 1; out >= 0; out--) {
			name = out ? l->from_port : l->to_port;
			if ((out ? l->from : l->to) != i)
				continue;
			if (info_port(info, name, out) == -1) {
				m->link = links ? links[k] : k;
				m->out = out;
				m->port = -1;
				return -1;
			}
			for (p = 0; p < info->nports && p < 32; p++)
				if (info->ports[p].out == out &&
				    !strcmp(info->ports[p].name, name))
					conn |= 1u << p;
		}
	}
	for (p = 0; p < info->nports && p < 32; p++)
		if (info->ports[p].required && !(conn & 1u << p)) {
			m->link = -1;
			m->out = info->ports[p].out;
			m->port = p;
			return -1;
		}
	return 0;
}

/* graph_check()'s words for a misfit of stage i. */
static int
misfit_error(struct graph *g, int i, const struct misfit *m, char *errbuf,
    size_t errlen)
{
	const struct stage *s = &g->stages[i];
	const struct link *l = m->link < 0 ? NULL : &g->links[m->link];
	const char *dir = m->out ? "output" : "input";
	char list[256];

	if (m->link == -1)
		return fail(errbuf, errlen, s->pos, "%s port '%s' of %s is not "
		    "connected", dir, s->info->ports[m->port].name, s->label);
	port_list(s->info, m->out, list, sizeof(list));
	return fail(errbuf, errlen, m->out ? l->from_pos : l->to_pos, "no %s "
	    "port '%s' on %s (%ss: %s)", dir, m->out ? l->from_port :
	    l->to_port, s->app, dir, list);
}

/* One output feeds one input: refuse a second link from a port. */
static int
check_feeds(struct graph *g, char *errbuf, size_t errlen)
{
	struct strtab outs;
	struct link *l, *f;
	char *key;
	int i, j, rc = 0;

	memset(&outs, 0, sizeof(outs));
	for (i = 0; i < g->nlinks && rc == 0; i++) {
		l = &g->links[i];
		if (asprintf(&key, "%d %s", l->from, l->from_port) == -1)
			err(1, NULL);
		if ((j = strtab_get(&outs, key)) == -1)
			strtab_put(&outs, key, i);
		free(key);
		if (j == -1)
			continue;
		f = &g->links[j];
		rc = fail(errbuf, errlen, l->from_pos, "output '%s' of %s "
		    "already feeds %s (at %d:%d); one output feeds one input: "
		    "use tee to copy it or lb to spread it", l->from_port,
		    g->stages[l->from].label, g->stages[f->to].label,
		    f->from_pos.line, f->from_pos.col);
	}
	strtab_free(&outs);
	return rc;
}

int
graph_check(struct graph *g, char *errbuf, size_t errlen)
{
	struct misfit m;
	struct adj a;
	int i, rc = 0;

	if (merge_devices(g, errbuf, errlen) == -1)
		return -1;
	auto_labels(g);
	adj_build(&a, g, 1);
	for (i = 0; i < g->nstages && rc == 0; i++)
		if (graph_stage_fit(g, i, g->stages[i].info, a.link +
		    a.first[i], a.first[i + 1] - a.first[i], &m) == -1)
			rc = misfit_error(g, i, &m, errbuf, errlen);
	adj_free(&a);
	if (rc == 0 && (rc = check_feeds(g, errbuf, errlen)) == 0)
		rc = check_cycles(g, errbuf, errlen);
	return rc;
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

	lex_init(&lx, text, errbuf, errlen, 1);
	if (lex(&lx) == 0) {
		/* The words, then the end's NULL text. */
		v = xrealloc(NULL, (size_t)lx.ntoks, sizeof(*v));
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
	while (*s) {
		/* "summary": one line of prose for snb-run --list. */
		if (strncmp(s + strspn(s, space), "summary ", 8) == 0) {
			s += strcspn(s, "\n");
			s += *s == '\n';
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
		s += *s == '\n';
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
