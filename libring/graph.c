/*
 * graph.c: lexer, parser and checker for the graph language (graph.h).
 * The lexer follows the shell where the two overlap, so that a graph
 * written on the command line reads the way a pipeline does.
 */
#include <ctype.h>
#include <err.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "graph.h"

enum tok_type { T_WORD, T_PIPE, T_SEMI, T_NEWLINE, T_PORT, T_REF, T_LABEL,
	T_EOF };

struct token {
	enum tok_type	 type;
	char		*text;		/* words: unquoted text; ports etc: name */
	struct graph_pos pos;
};

struct lexer {
	const char	*s;
	size_t		 i;
	int		 line, col;
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

static int
valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= GRAPH_NAME_MAX || !(isalnum((unsigned char)*s) ||
	    *s == '_'))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return 0;
	return 1;
}

static int
valid_app(const char *s)
{
	if (!islower((unsigned char)*s) || strlen(s) >= 64)
		return 0;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s)
		    && *s != '-' && *s != '_')
			return 0;
	return 1;
}

static int
peekc(struct lexer *lx)
{
	return (unsigned char)lx->s[lx->i];
}

static int
nextc(struct lexer *lx)
{
	int c = (unsigned char)lx->s[lx->i];

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
	if (lx->ntoks == lx->cap) {
		lx->cap = lx->cap ? lx->cap * 2 : 64;
		lx->toks = xrealloc(lx->toks, (size_t)lx->cap,
		    sizeof(*lx->toks));
	}
	lx->toks[lx->ntoks].type = t;
	lx->toks[lx->ntoks].text = text;
	lx->toks[lx->ntoks].pos = pos;
	lx->ntoks++;
}

/* Read one word; quoted says whether any of it was quoted. */
static char *
lex_word(struct lexer *lx, int *quoted)
{
	size_t len = 0, cap = 32;
	char *w = xrealloc(NULL, cap, 1);
	struct graph_pos qpos;
	int c, q;

	*quoted = 0;
	for (;;) {
		c = peekc(lx);
		if (c == '\0' || c == ' ' || c == '\t' || c == '\r' ||
		    c == '\n' || c == '|' || c == ';')
			break;
		if (len + 4 >= cap)
			w = xrealloc(w, cap *= 2, 1);
		if (c == '\'' || c == '"') {
			qpos.line = lx->line;
			qpos.col = lx->col;
			q = nextc(lx);
			*quoted = 1;
			for (;;) {
				c = nextc(lx);
				if (c == '\0') {
					free(w);
					fail(lx->err, lx->errlen, qpos,
					    "unbalanced %c quote", q);
					return NULL;
				}
				if (c == q)
					break;
				if (q == '"' && c == '\\' && strchr("\"\\\n",
				    peekc(lx)) && peekc(lx) != '\0') {
					c = nextc(lx);
					if (c == '\n')
						continue;
				}
				if (len + 4 >= cap)
					w = xrealloc(w, cap *= 2, 1);
				w[len++] = (char)c;
			}
			continue;
		}
		nextc(lx);
		if (c == '\\') {
			c = nextc(lx);
			*quoted = 1;
			if (c == '\n' || c == '\0')
				continue;
		}
		w[len++] = (char)c;
	}
	w[len] = '\0';
	return w;
}

static int
lex(struct lexer *lx)
{
	struct graph_pos pos;
	char *w;
	int c, quoted;
	size_t n;

	for (;;) {
		c = peekc(lx);
		pos.line = lx->line;
		pos.col = lx->col;
		if (c == ' ' || c == '\t' || c == '\r') {
			nextc(lx);
		} else if (c == '\\' && lx->s[lx->i + 1] == '\n') {
			nextc(lx);
			nextc(lx);
		} else if (c == '#') {
			while (peekc(lx) != '\n' && peekc(lx) != '\0')
				nextc(lx);
		} else if (c == '\n') {
			nextc(lx);
			push_tok(lx, T_NEWLINE, NULL, pos);
		} else if (c == ';') {
			nextc(lx);
			push_tok(lx, T_SEMI, NULL, pos);
		} else if (c == '|') {
			nextc(lx);
			/* "|~": a leaky link (text non-NULL marks it). */
			if (peekc(lx) == '~') {
				nextc(lx);
				w = xrealloc(NULL, 2, 1);
				memcpy(w, "~", 2);
				push_tok(lx, T_PIPE, w, pos);
			} else
				push_tok(lx, T_PIPE, NULL, pos);
		} else if (c == '\0') {
			push_tok(lx, T_EOF, NULL, pos);
			return 0;
		} else {
			if ((w = lex_word(lx, &quoted)) == NULL)
				return -1;
			n = strlen(w);
			if (!quoted && n > 2 && w[0] == '[' && w[n - 1] == ']') {
				w[n - 1] = '\0';
				memmove(w, w + 1, n - 1);
				if (!valid_name(w)) {
					fail(lx->err, lx->errlen, pos,
					    "bad port name '%s'", w);
					free(w);
					return -1;
				}
				push_tok(lx, T_PORT, w, pos);
			} else if (!quoted && w[0] == '@') {
				memmove(w, w + 1, n);
				if (!valid_name(w)) {
					fail(lx->err, lx->errlen, pos,
					    "bad label '@%s'", w);
					free(w);
					return -1;
				}
				push_tok(lx, T_REF, w, pos);
			} else if (!quoted && n > 1 && w[n - 1] == ':') {
				w[n - 1] = '\0';
				push_tok(lx, valid_name(w) ? T_LABEL : T_WORD,
				    w, pos);
				if (!valid_name(w))
					w[n - 1] = ':';
			} else
				push_tok(lx, T_WORD, w, pos);
		}
	}
}

/* ---- parser ---- */

struct parser {
	struct lexer	 lx;
	int		 t;		/* current token */
	struct graph	*g;
	/* Chains refer to stages by label before all are declared. */
	struct pending {
		int		 elem_stage;	/* -1: a reference */
		char		*ref;
		struct graph_pos pos;
	}		*refs;
	char		*err;
	size_t		 errlen;
};

static struct token *
cur(struct parser *p)
{
	return &p->lx.toks[p->t];
}

static const char *
tok_name(struct token *t)
{
	switch (t->type) {
	case T_WORD:	return "a word";
	case T_PIPE:	return "'|'";
	case T_SEMI:	return "';'";
	case T_NEWLINE:	return "end of line";
	case T_PORT:	return "a port";
	case T_REF:	return "a reference";
	case T_LABEL:	return "a label";
	case T_EOF:	return "end of input";
	}
	return "?";
}

static int
find_label(struct graph *g, const char *label)
{
	int i;

	for (i = 0; i < g->nstages; i++)
		if (strcmp(g->stages[i].label, label) == 0)
			return i;
	return -1;
}

/* A chain element while parsing: stage index or an unresolved @ref. */
struct elem {
	int		 stage;		/* -1 until resolved */
	struct token	*ref;
	struct token	*in_port, *out_port;
	struct graph_pos pos;
	int		 leaky_out;	/* "|~" follows */
};

/* The word a token was lexed from (labels and refs lost ':' and '@'). */
static char *
word_text(struct token *t)
{
	size_t n = strlen(t->text);
	char *w = xrealloc(NULL, n + 2, 1);

	if (t->type == T_REF) {
		w[0] = '@';
		memcpy(w + 1, t->text, n + 1);
	} else {
		memcpy(w, t->text, n + 1);
		if (t->type == T_LABEL)
			memcpy(w + n, ":", 2);
	}
	return w;
}

static int
parse_node(struct parser *p, struct elem *e)
{
	struct graph *g = p->g;
	struct token *t = cur(p), *label = NULL;
	struct stage *s;

	e->pos = t->pos;
	if (t->type == T_REF) {
		e->ref = t;
		e->stage = -1;
		p->t++;
		return 0;
	}
	if (t->type == T_LABEL) {
		label = t;
		p->t++;
		t = cur(p);
	}
	if (t->type != T_WORD)
		return fail(p->err, p->errlen, t->pos, "expected an app name, "
		    "found %s", tok_name(t));
	if (!valid_app(t->text))
		return fail(p->err, p->errlen, t->pos, "bad app name '%s'",
		    t->text);
	if (label && find_label(g, label->text) >= 0)
		return fail(p->err, p->errlen, label->pos, "label '%s' already "
		    "defined at %d:%d", label->text,
		    g->stages[find_label(g, label->text)].pos.line,
		    g->stages[find_label(g, label->text)].pos.col);
	g->stages = xrealloc(g->stages, (size_t)g->nstages + 1,
	    sizeof(*g->stages));
	s = &g->stages[g->nstages];
	memset(s, 0, sizeof(*s));
	s->pos = label ? label->pos : t->pos;
	strlcpy(s->app, t->text, sizeof(s->app));
	if (label) {
		strlcpy(s->label, label->text, sizeof(s->label));
		s->labelled = 1;
	}
	s->argv = xrealloc(NULL, 1, sizeof(char *));
	e->stage = g->nstages++;
	/* Everything up to a port, '|', ';' or newline is the app's. */
	for (p->t++; ; p->t++) {
		t = cur(p);
		if (t->type != T_WORD && t->type != T_LABEL &&
		    t->type != T_REF)
			break;
		/* A word lexed as "x:" or "@x" (fe80::, user@host) is a word. */
		s->argv = xrealloc(s->argv, (size_t)s->argc + 2,
		    sizeof(char *));
		s->argv[s->argc++] = word_text(t);
	}
	s->argv[s->argc] = NULL;
	return 0;
}

static int
parse_chain(struct parser *p, struct elem **elems, int *nelems)
{
	struct elem *e;
	struct token *t;

	*nelems = 0;
	for (;;) {
		*elems = xrealloc(*elems, (size_t)*nelems + 1, sizeof(**elems));
		e = &(*elems)[(*nelems)++];
		memset(e, 0, sizeof(*e));
		t = cur(p);
		if (t->type == T_PORT) {
			e->in_port = t;
			p->t++;
		}
		if (parse_node(p, e) == -1)
			return -1;
		if (cur(p)->type == T_PORT) {
			e->out_port = cur(p);
			p->t++;
		}
		t = cur(p);
		if (t->type != T_PIPE)
			break;
		e->leaky_out = t->text != NULL;
		/* A trailing '|' continues the chain on the next line. */
		for (p->t++; cur(p)->type == T_NEWLINE; p->t++)
			;
		if (cur(p)->type != T_WORD && cur(p)->type != T_LABEL &&
		    cur(p)->type != T_REF && cur(p)->type != T_PORT)
			return fail(p->err, p->errlen, t->pos,
			    "missing stage after '|'");
	}
	t = cur(p);
	if (t->type != T_NEWLINE && t->type != T_SEMI && t->type != T_EOF)
		return fail(p->err, p->errlen, t->pos, "expected '|', ';' or "
		    "end of line, found %s", tok_name(t));
	return 0;
}

struct chain {
	struct elem	*elems;
	int		 nelems;
};

int
graph_parse(struct graph *g, const char *text, char *errbuf, size_t errlen)
{
	struct parser p;
	struct chain *chains = NULL;
	int nchains = 0, i, j, rc = -1;

	memset(g, 0, sizeof(*g));
	memset(&p, 0, sizeof(p));
	p.lx.s = text;
	p.lx.line = p.lx.col = 1;
	p.lx.err = p.err = errbuf;
	p.lx.errlen = p.errlen = errlen;
	p.g = g;
	if (lex(&p.lx) == -1)
		goto out;
	for (;;) {
		while (cur(&p)->type == T_NEWLINE || cur(&p)->type == T_SEMI)
			p.t++;
		if (cur(&p)->type == T_EOF)
			break;
		chains = xrealloc(chains, (size_t)nchains + 1, sizeof(*chains));
		memset(&chains[nchains], 0, sizeof(*chains));
		nchains++;
		if (parse_chain(&p, &chains[nchains - 1].elems,
		    &chains[nchains - 1].nelems) == -1)
			goto out;
	}
	/* Resolve references now that every labelled stage is known. */
	for (i = 0; i < nchains; i++) {
		struct chain *c = &chains[i];
		for (j = 0; j < c->nelems; j++) {
			struct elem *e = &c->elems[j];
			if (e->ref && (e->stage = find_label(g, e->ref->text))
			    == -1) {
				fail(errbuf, errlen, e->ref->pos, "no stage "
				    "labelled '%s'", e->ref->text);
				goto out;
			}
			if (j == 0 && e->in_port) {
				fail(errbuf, errlen, e->in_port->pos, "input "
				    "port [%s] on the first stage of a chain",
				    e->in_port->text);
				goto out;
			}
			if (j == c->nelems - 1 && e->out_port) {
				fail(errbuf, errlen, e->out_port->pos, "output "
				    "port [%s] on the last stage of a chain",
				    e->out_port->text);
				goto out;
			}
		}
		for (j = 0; j + 1 < c->nelems; j++) {
			struct elem *a = &c->elems[j], *b = &c->elems[j + 1];
			struct link *l;
			g->links = xrealloc(g->links, (size_t)g->nlinks + 1,
			    sizeof(*g->links));
			l = &g->links[g->nlinks++];
			memset(l, 0, sizeof(*l));
			l->from = a->stage;
			l->to = b->stage;
			strlcpy(l->from_port, a->out_port ? a->out_port->text :
			    "out", sizeof(l->from_port));
			strlcpy(l->to_port, b->in_port ? b->in_port->text :
			    "in", sizeof(l->to_port));
			l->from_pos = a->out_port ? a->out_port->pos : a->pos;
			l->to_pos = b->in_port ? b->in_port->pos : b->pos;
			l->pos = l->to_pos;
			l->leaky = a->leaky_out;
		}
	}
	if (g->nstages == 0) {
		struct graph_pos pos = { 1, 1 };
		fail(errbuf, errlen, pos, "empty graph");
		goto out;
	}
	rc = 0;
out:
	for (i = 0; i < nchains; i++)
		free(chains[i].elems);
	free(chains);
	for (i = 0; i < p.lx.ntoks; i++)
		free(p.lx.toks[i].text);
	free(p.lx.toks);
	return rc;
}

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

/* Merge the stages that name the same device into one (DESIGN 4). */
static int
merge_devices(struct graph *g, char *errbuf, size_t errlen)
{
	int i, j, k, a;

	for (i = 0; i < g->nstages; i++) {
		struct stage *s = &g->stages[i];
		if (!s->info->device || s->argc == 0)
			continue;
		for (j = i + 1; j < g->nstages; j++) {
			struct stage *t = &g->stages[j];
			if (strcmp(s->app, t->app) || t->argc == 0 ||
			    strcmp(s->argv[0], t->argv[0]))
				continue;
			if (t->argc > 1 && s->argc > 1) {
				int same = s->argc == t->argc;
				for (a = 0; same && a < s->argc; a++)
					same = !strcmp(s->argv[a], t->argv[a]);
				if (!same)
					return fail(errbuf, errlen, t->pos,
					    "%s %s declared again with other "
					    "options (first at %d:%d)", t->app,
					    t->argv[0], s->pos.line,
					    s->pos.col);
			}
			if (s->labelled && t->labelled)
				return fail(errbuf, errlen, t->pos, "%s %s "
				    "labelled twice ('%s' and '%s')", t->app,
				    t->argv[0], s->label, t->label);
			if (t->labelled) {
				strlcpy(s->label, t->label, sizeof(s->label));
				s->labelled = 1;
			}
			if (t->argc > s->argc) {
				char **v = s->argv;
				int c = s->argc;
				s->argv = t->argv;
				s->argc = t->argc;
				t->argv = v;
				t->argc = c;
			}
			for (k = 0; k < t->argc; k++)
				free(t->argv[k]);
			free(t->argv);
			for (k = 0; k < g->nlinks; k++) {
				if (g->links[k].from == j)
					g->links[k].from = i;
				else if (g->links[k].from > j)
					g->links[k].from--;
				if (g->links[k].to == j)
					g->links[k].to = i;
				else if (g->links[k].to > j)
					g->links[k].to--;
			}
			memmove(&g->stages[j], &g->stages[j + 1],
			    (size_t)(g->nstages - j - 1) * sizeof(*g->stages));
			g->nstages--;
			j--;
		}
	}
	return 0;
}

/* Does a stage other than self carry this label (or claim it later)? */
static int
label_taken(struct graph *g, const char *label, int self)
{
	int i;

	for (i = 0; i < g->nstages; i++)
		if (i != self && strcmp(g->stages[i].label, label) == 0)
			return 1;
	return 0;
}

static void
auto_labels(struct graph *g)
{
	char want[GRAPH_NAME_MAX], *c;
	int i, n;

	for (i = 0; i < g->nstages; i++) {
		struct stage *s = &g->stages[i];
		if (s->labelled)
			continue;
		if (s->info->device && s->argc > 0) {
			strlcpy(want, s->app, sizeof(want));
			strlcat(want, "-", sizeof(want));
			strlcat(want, s->argv[0], sizeof(want));
			for (c = want; *c; c++)
				if (!isalnum((unsigned char)*c) &&
				    !strchr("_.-", *c))
					*c = '_';
		} else
			strlcpy(want, s->app, sizeof(want));
		strlcpy(s->label, want, sizeof(s->label));
		for (n = 2; label_taken(g, s->label, i); n++)
			snprintf(s->label, sizeof(s->label), "%.50s%d", want, n);
	}
}

int
graph_check(struct graph *g, char *errbuf, size_t errlen)
{
	char list[256];
	int i, j, p;

	if (merge_devices(g, errbuf, errlen) == -1)
		return -1;
	/* Give unlabelled stages names nobody else uses. */
	for (i = 0; i < g->nstages; i++)
		if (!g->stages[i].labelled)
			g->stages[i].label[0] = '\0';
	auto_labels(g);
	for (i = 0; i < g->nlinks; i++) {
		struct link *l = &g->links[i];
		struct stage *a = &g->stages[l->from], *b = &g->stages[l->to];
		if (info_port(a->info, l->from_port, 1) == -1) {
			port_list(a->info, 1, list, sizeof(list));
			return fail(errbuf, errlen, l->from_pos, "no output "
			    "port '%s' on %s (outputs: %s)", l->from_port,
			    a->app, list);
		}
		if (info_port(b->info, l->to_port, 0) == -1) {
			port_list(b->info, 0, list, sizeof(list));
			return fail(errbuf, errlen, l->to_pos, "no input port "
			    "'%s' on %s (inputs: %s)", l->to_port, b->app,
			    list);
		}
		for (j = 0; j < i; j++)
			if (g->links[j].from == l->from &&
			    strcmp(g->links[j].from_port, l->from_port) == 0)
				return fail(errbuf, errlen, l->from_pos,
				    "output '%s' of %s already feeds %s (at "
				    "%d:%d); one output feeds one input: use "
				    "tee to copy it or lb to spread it",
				    l->from_port,
				    a->label, g->stages[g->links[j].to].label,
				    g->links[j].from_pos.line,
				    g->links[j].from_pos.col);
	}
	for (i = 0; i < g->nstages; i++) {
		const struct app_info *in = g->stages[i].info;
		for (p = 0; p < in->nports; p++) {
			if (!in->ports[p].required)
				continue;
			for (j = 0; j < g->nlinks; j++) {
				struct link *l = &g->links[j];
				if (in->ports[p].out ? (l->from == i &&
				    !strcmp(l->from_port, in->ports[p].name)) :
				    (l->to == i && !strcmp(l->to_port,
				    in->ports[p].name)))
					break;
			}
			if (j == g->nlinks)
				return fail(errbuf, errlen, g->stages[i].pos,
				    "%s port '%s' of %s is not connected",
				    in->ports[p].out ? "output" : "input",
				    in->ports[p].name, g->stages[i].label);
		}
	}
	return 0;
}

void
graph_free(struct graph *g)
{
	int i, j;

	for (i = 0; i < g->nstages; i++) {
		for (j = 0; j < g->stages[i].argc; j++)
			free(g->stages[i].argv[j]);
		free(g->stages[i].argv);
	}
	free(g->stages);
	free(g->links);
	memset(g, 0, sizeof(*g));
}

char **
graph_words(const char *text, int *argc, char *errbuf, size_t errlen)
{
	struct lexer lx;
	char **v = NULL, *w;
	int n = 0, quoted;

	memset(&lx, 0, sizeof(lx));
	lx.s = text;
	lx.line = lx.col = 1;
	lx.err = errbuf;
	lx.errlen = errlen;
	for (;;) {
		while (isspace((unsigned char)peekc(&lx)))
			nextc(&lx);
		if (peekc(&lx) == '\0')
			break;
		if (peekc(&lx) == '|' || peekc(&lx) == ';') {
			struct graph_pos pos = { lx.line, lx.col };
			fail(errbuf, errlen, pos, "'%c' in a stage's words",
			    peekc(&lx));
			graph_words_free(v);
			return NULL;
		}
		if ((w = lex_word(&lx, &quoted)) == NULL) {
			graph_words_free(v);
			return NULL;
		}
		v = xrealloc(v, (size_t)n + 2, sizeof(char *));
		v[n++] = w;
		v[n] = NULL;
	}
	if (v == NULL) {
		v = xrealloc(NULL, 1, sizeof(char *));
		v[0] = NULL;
	}
	*argc = n;
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

int
app_info_parse(struct app_info *info, const char *text, char *errbuf,
    size_t errlen)
{
	char line[256], a[64], b[64], c[64];
	const char *s = text, *nl;
	int n, first = 1;

	memset(info, 0, sizeof(*info));
	while (*s) {
		nl = strchr(s, '\n');
		n = (int)(nl ? nl - s : (long)strlen(s));
		memcpy(line, s, (size_t)(n < 255 ? n : 255));
		line[n < 255 ? n : 255] = '\0';
		s += n + (nl != NULL);
		a[0] = b[0] = c[0] = '\0';
		if (sscanf(line, "%63s %63s %63s", a, b, c) < 1)
			continue;
		if (first) {
			if (strcmp(a, "snb-describe") || strcmp(b, "1"))
				goto bad;
			first = 0;
		} else if (strcmp(a, "app") == 0)
			strlcpy(info->app, b, sizeof(info->app));
		else if (strcmp(a, "device") == 0)
			info->device = 1;
		else if (strcmp(a, "in") == 0 || strcmp(a, "out") == 0) {
			if (info->nports == 32 || b[0] == '\0')
				goto bad;
			strlcpy(info->ports[info->nports].name, b,
			    sizeof(info->ports[0].name));
			info->ports[info->nports].out = a[0] == 'o';
			info->ports[info->nports].required =
			    strcmp(c, "required") == 0;
			info->nports++;
		}
	}
	if (!first && info->app[0])
		return 0;
bad:
	snprintf(errbuf, errlen, "does not describe itself (--describe)");
	return -1;
}
