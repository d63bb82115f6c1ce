/*
 * graph_parse.c: graph_parse() (graph.h): tokens into stages and links.
 * Copies ("Nx( chain )", snb-run(1) Copies) are expanded here, their
 * tokens parsed once for each copy, so everything after the parser sees a
 * graph written out in full.
 */
#define _GNU_SOURCE		/* asprintf */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "graph.h"
#include "graph_int.h"

#define COPIES_MAX	1024

/* A chain's element while parsing. */
struct elem {
	int		 stage;		/* -1 until a reference is resolved */
	struct token	*ref, *in_port, *out_port;
	struct token	*pipe;		/* the '|' that follows, or NULL */
	struct graph_pos pos;
	int		 copy;		/* K in copy K, 0 outside copies */
	int		 fed;		/* a link enters it */
};

/* A link to be, between elements; copy K: from an output named K. */
struct pair {
	int	from, to, copy;
};

struct parser {
	struct lexer	 lx;
	int		 t;		/* current token */
	struct graph	*g;
	int		 stages_cap, links_cap;
	struct strtab	 labels;	/* label -> stage */
	struct elem	*elems;
	int		 nelems, elems_cap;
	struct pair	*pairs;
	int		 npairs, pairs_cap;
	/* The elements whose '|' feeds what comes next. */
	int		*feed;
	int		 nfeed, feed_cap;
	int		 copy;		/* K while parsing copy K, else 0 */
	int		 paren;		/* in "Nx( ... )": ')' ends words */
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

/* An unquoted word that is exactly w. */
static int
bare(const struct token *t, const char *w)
{
	return t->type == T_WORD && !t->quoted && strcmp(t->text, w) == 0;
}

/*
 * Does t open copies ("Nx" or "Nx(")?  No app name starts with a digit,
 * so where an element starts such a word was never anything else.
 * 1 with *n and *paren set, 0 if not, -1 with the error.
 */
static int
copies_open(struct parser *p, const struct token *t, int *n, int *paren)
{
	const char *c;
	long v;

	if (t->type != T_WORD || t->quoted || t->text[0] < '0' ||
	    t->text[0] > '9')
		return 0;
	for (c = t->text; *c >= '0' && *c <= '9'; c++)
		;
	if (*c == 'x' && c[1] == '(' && c[2] != '\0')
		return gr_fail(p->err, p->errlen, t->pos, "'%s': copies are "
		    "written '%.*s( chain )', a space after the '('",
		    t->text, (int)(c + 1 - t->text), t->text);
	if (*c != 'x' || (c[1] != '\0' && strcmp(c + 1, "(") != 0))
		return 0;
	v = strtol(t->text, NULL, 10);
	if (c - t->text > 5 || v < 1 || v > COPIES_MAX)
		return gr_fail(p->err, p->errlen, t->pos, "%.*s copies: from 1 "
		    "to %d", (int)(c - t->text), t->text, COPIES_MAX);
	*n = (int)v;
	*paren = c[1] == '(';
	return 1;
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

/* graph.h; also for snb-ctl's swap of a copy. */
char *
graph_copy_word(char *w, int k)
{
	char *out, *o, *c;

	if (strchr(w, '{') == NULL)
		return w;
	/* A number of up to 4 digits replaces at least 2 characters. */
	out = gr_xrealloc(NULL, strlen(w) * 3 + 1, 1);
	for (o = out, c = w; *c; ) {
		if (strncmp(c, "{}", 2) == 0) {
			o += sprintf(o, "%d", k);
			c += 2;
		} else if (strncmp(c, "{0}", 3) == 0) {
			o += sprintf(o, "%d", k - 1);
			c += 3;
		} else
			*o++ = *c++;
	}
	*o = '\0';
	free(w);
	return out;
}

const char *
graph_copy_mark(const char *w)
{
	return strstr(w, "{}") ? "{}" : strstr(w, "{0}") ? "{0}" : NULL;
}

static int
parse_node(struct parser *p, struct elem *e)
{
	struct graph *g = p->g;
	struct token *t, *label;
	struct stage *s;
	char name[GRAPH_NAME_MAX + 16];
	size_t n;
	int i, cap = 0, rc = 0;

	e->pos = cur(p)->pos;
	e->stage = -1;
	e->copy = p->copy;
	if ((e->ref = take(p, T_REF)) != NULL)
		return 0;
	label = take(p, T_LABEL);
	if ((t = cur(p))->type != T_WORD || (p->paren && bare(t, ")")))
		return gr_fail(p->err, p->errlen, t->pos, "expected an app "
		    "name, found %s", t->type == T_WORD ? "')'" :
		    tok_name[t->type]);
	n = strlen(t->text);
	/* The lexer took an over-long "label:" for a word (it may be one). */
	if (label == NULL && n > 1 && t->text[n - 1] == ':') {
		t->text[n - 1] = '\0';
		if (name_ok(t->text))
			return gr_fail(p->err, p->errlen, t->pos, "label '%s' too "
			    "long (at most %d characters)", t->text,
			    GRAPH_NAME_MAX - 1);
		/* No app name has a ':': this was meant for a label. */
		if (strchr(t->text, ':') == NULL)
			return gr_fail(p->err, p->errlen, t->pos, "bad label "
			    "'%s' (%s)", t->text, NAME_CHARS);
		t->text[n - 1] = ':';
	}
	if (!app_chars(t->text))
		return gr_fail(p->err, p->errlen, t->pos, "bad app name '%s' "
		    "(lower-case letters, digits, '-', '_', a letter first)",
		    t->text);
	if (n >= APP_NAME_MAX)
		return gr_fail(p->err, p->errlen, t->pos, "app name '%s' too "
		    "long (at most %d characters)", t->text, APP_NAME_MAX - 1);
	if (label) {
		/* Copy K of stage x is x.K. */
		snprintf(name, sizeof(name), p->copy ? "%s.%d" : "%s",
		    label->text, p->copy);
		if (strlen(name) >= GRAPH_NAME_MAX)
			return gr_fail(p->err, p->errlen, label->pos, "label "
			    "'%s' too long (at most %d characters)", name,
			    GRAPH_NAME_MAX - 1);
		if ((i = gr_strtab_get(&p->labels, name)) >= 0)
			return gr_fail(p->err, p->errlen, label->pos, "label "
			    "'%s' already defined at %d:%d", name,
			    g->stages[i].pos.line, g->stages[i].pos.col);
	}
	g->stages = gr_grow(g->stages, g->nstages, &p->stages_cap,
	    sizeof(*g->stages));
	s = &g->stages[g->nstages];
	*s = (struct stage){ .pos = label ? label->pos : t->pos,
	    .copy = p->copy, .labelled = label != NULL };
	strlcpy(s->app, t->text, sizeof(s->app));
	if (label) {
		strlcpy(s->label, name, sizeof(s->label));
		gr_strtab_put(&p->labels, name, g->nstages);
	}
	e->stage = g->nstages++;
	/*
	 * Everything up to a port, '|', ';' or newline (or the ')' that
	 * closes copies) is the app's: a word lexed as "x:" or "@x" (fe80::,
	 * user@host) is a word.
	 */
	for (p->t++; (t = cur(p))->type <= T_LABEL && t->type != T_PORT &&
	    !(p->paren && bare(t, ")")); p->t++) {
		if (!p->copy && graph_copy_mark(t->text) != NULL) {
			rc = gr_fail(p->err, p->errlen, t->pos, "'%s' outside "
			    "copies: it stands for a copy's number only in "
			    "'Nx( ... )'", graph_copy_mark(t->text));
			break;
		}
		s->argv = gr_grow(s->argv, s->argc, &cap, sizeof(char *));
		s->argv[s->argc++] = graph_copy_word(word_text(t), p->copy);
	}
	s->argv = gr_grow(s->argv, s->argc, &cap, sizeof(char *));
	s->argv[s->argc] = NULL;
	return rc;
}

/* A new element, its ports and node; its index, or -1. */
static int
parse_elem(struct parser *p)
{
	struct elem *e;
	int j;

	p->elems = gr_grow(p->elems, p->nelems, &p->elems_cap,
	    sizeof(*p->elems));
	j = p->nelems++;
	e = &p->elems[j];
	*e = (struct elem){ .in_port = take(p, T_PORT) };
	if (e->in_port && copies_open(p, cur(p), &(int){ 0 },
	    &(int){ 0 }) != 0)
		return gr_fail(p->err, p->errlen, e->in_port->pos, "input port "
		    "[%s] before copies: write it inside, on the copy's first "
		    "stage", e->in_port->text);
	if (parse_node(p, e) == -1)
		return -1;
	p->elems[j].out_port = take(p, T_PORT);
	return j;
}

static void
pair(struct parser *p, int from, int to, int copy)
{
	p->pairs = gr_grow(p->pairs, p->npairs, &p->pairs_cap,
	    sizeof(*p->pairs));
	p->pairs[p->npairs++] = (struct pair){ from, to, copy };
	p->elems[to].fed = 1;
}

/* What feeds the next element: nothing, or n elements. */
static void
set_feed(struct parser *p, const int *elems, int n)
{
	int i;

	if (n > p->feed_cap) {
		p->feed = gr_xrealloc(p->feed, (size_t)n, sizeof(*p->feed));
		p->feed_cap = n;
	}
	for (i = 0; i < n; i++)
		p->feed[i] = elems[i];
	p->nfeed = n;
}

/* After '|': more of the chain must follow, on this line or the next. */
static int
after_pipe(struct parser *p, const struct token *pipe)
{
	/* A trailing '|' continues the chain on the next line. */
	while (take(p, T_NEWLINE))
		;
	if (cur(p)->type > T_LABEL || (p->paren && bare(cur(p), ")")))
		return gr_fail(p->err, p->errlen, pipe->pos, "missing stage "
		    "after '|'");
	return 0;
}

/*
 * Copies ("Nx( chain )" or "Nx element"), at the current token: the
 * tokens are parsed N times, once for each copy.  The '|' after them, or
 * NULL, into *pipe.
 */
static int
parse_copies(struct parser *p, int n, int paren, struct token **pipe)
{
	struct token *open = cur(p), *t, *bar;
	int tails[n], start, k, j, prev, m, glued, from = -1;

	if (p->nfeed > 1)
		return gr_fail(p->err, p->errlen, open->pos, "copies right "
		    "after copies: put both in one 'Nx( ... )'");
	if (p->nfeed == 1 && p->elems[p->feed[0]].out_port)
		return gr_fail(p->err, p->errlen,
		    p->elems[p->feed[0]].out_port->pos, "output port [%s] "
		    "before copies: each copy is fed by an output of its own, "
		    "named by its number", p->elems[p->feed[0]].out_port->text);
	if (p->nfeed == 1)
		from = p->feed[0];
	p->t++;
	if (!paren && bare(cur(p), "(")) {
		paren = 1;
		p->t++;
	}
	start = p->t;
	for (k = 1; k <= n; k++) {
		p->t = start;
		p->copy = k;
		p->paren = paren;
		while (paren && take(p, T_NEWLINE))
			;
		for (prev = -1;; prev = j) {
			if ((m = copies_open(p, cur(p), &(int){ 0 },
			    &(int){ 0 })) != 0) {
				if (m == 1)
					gr_fail(p->err, p->errlen, cur(p)->pos,
					    "copies inside copies");
				return -1;
			}
			if ((j = parse_elem(p)) == -1)
				return -1;
			if (prev >= 0)
				pair(p, prev, j, 0);
			else if (from >= 0)
				pair(p, from, j, k);
			if (!paren)
				break;
			if ((bar = take(p, T_PIPE)) != NULL) {
				p->elems[j].pipe = bar;
				if (after_pipe(p, bar) == -1)
					return -1;
				continue;
			}
			while (take(p, T_NEWLINE))
				;
			if (bare(t = cur(p), ")")) {
				p->t++;
				break;
			}
			/* "x)": a ')' was taken for part of a word. */
			for (glued = 0, m = start; m < p->t && !glued; m++)
				glued = p->lx.toks[m].type == T_WORD &&
				    !p->lx.toks[m].quoted &&
				    strchr(p->lx.toks[m].text, ')') != NULL;
			return gr_fail(p->err, p->errlen, t->pos, "expected '|' "
			    "or the ')' that closes the copies opened at %d:%d, "
			    "found %s%s", open->pos.line, open->pos.col,
			    tok_name[t->type], glued ? " (a ')' that closes "
			    "stands alone, with spaces around it)" : "");
		}
		tails[k - 1] = j;
	}
	p->copy = 0;
	p->paren = 0;
	if ((t = cur(p))->type == T_PORT)
		return gr_fail(p->err, p->errlen, t->pos, "output port [%s] "
		    "after copies: write it inside, on the copy's last stage",
		    t->text);
	/* The '|' after the copies leaves each copy's last stage. */
	*pipe = take(p, T_PIPE);
	for (k = 0; k < n; k++)
		p->elems[tails[k]].pipe = *pipe;
	set_feed(p, tails, *pipe ? n : 0);
	return 0;
}

static int
parse_chain(struct parser *p)
{
	struct token *t, *pipe = NULL;
	int j, n, paren, m;

	p->nfeed = 0;
	for (;;) {
		if ((m = copies_open(p, cur(p), &n, &paren)) == -1)
			return -1;
		if (m == 1) {
			if (parse_copies(p, n, paren, &pipe) == -1)
				return -1;
		} else {
			if ((j = parse_elem(p)) == -1)
				return -1;
			for (n = 0; n < p->nfeed; n++)
				pair(p, p->feed[n], j, 0);
			pipe = p->elems[j].pipe = take(p, T_PIPE);
			set_feed(p, &j, pipe ? 1 : 0);
		}
		if (pipe == NULL)
			break;
		if (after_pipe(p, pipe) == -1)
			return -1;
	}
	t = cur(p);
	if (t->type < T_SEMI)
		return gr_fail(p->err, p->errlen, t->pos, "expected '|', ';' or "
		    "end of line, found %s", bare(t, ")") ? "')' outside copies" :
		    tok_name[t->type]);
	return 0;
}

/* Element e's reference resolved: in copy K, x.K before x. */
static int
resolve(struct parser *p, struct elem *e)
{
	char name[GRAPH_NAME_MAX + 16];

	if (e->copy) {
		snprintf(name, sizeof(name), "%s.%d", e->ref->text, e->copy);
		if ((e->stage = gr_strtab_get(&p->labels, name)) >= 0)
			return 0;
	}
	if ((e->stage = gr_strtab_get(&p->labels, e->ref->text)) >= 0)
		return 0;
	if (e->copy)
		return gr_fail(p->err, p->errlen, e->ref->pos, "no stage "
		    "labelled '%s' or '%s'", name, e->ref->text);
	snprintf(name, sizeof(name), "%s.1", e->ref->text);
	if (gr_strtab_get(&p->labels, name) >= 0)
		return gr_fail(p->err, p->errlen, e->ref->pos, "no stage "
		    "labelled '%s', only its copies %s.1 ...: refer to one "
		    "(@%s.1), or to each from copies ('Nx( @%s ... )')",
		    e->ref->text, e->ref->text, e->ref->text, e->ref->text);
	return gr_fail(p->err, p->errlen, e->ref->pos, "no stage labelled "
	    "'%s'", e->ref->text);
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
		if (b->ref && resolve(p, b) == -1)
			return -1;
		if (!b->fed && b->in_port)
			return gr_fail(p->err, p->errlen, b->in_port->pos,
			    "input port [%s] on the first stage of a chain",
			    b->in_port->text);
		if (b->pipe == NULL && b->out_port)
			return gr_fail(p->err, p->errlen, b->out_port->pos,
			    "output port [%s] on the last stage of a chain",
			    b->out_port->text);
	}
	for (j = 0; j < p->npairs; j++) {
		a = &p->elems[p->pairs[j].from];
		b = &p->elems[p->pairs[j].to];
		g->links = gr_grow(g->links, g->nlinks, &p->links_cap,
		    sizeof(*g->links));
		l = &g->links[g->nlinks++];
		*l = (struct link){ .from = a->stage, .to = b->stage,
		    .pos = a->pipe->pos, .leaky = a->pipe->text != NULL,
		    .from_pos = a->out_port ? a->out_port->pos : a->pos,
		    .to_pos = b->in_port ? b->in_port->pos : b->pos };
		if (p->pairs[j].copy)
			snprintf(l->from_port, sizeof(l->from_port), "%d",
			    p->pairs[j].copy);
		else
			strlcpy(l->from_port, a->out_port ? a->out_port->text :
			    "out", sizeof(l->from_port));
		strlcpy(l->to_port, b->in_port ? b->in_port->text : "in",
		    sizeof(l->to_port));
	}
	return 0;
}

int
graph_parse(struct graph *g, const char *text, char *errbuf, size_t errlen)
{
	struct parser p = { .g = g, .err = errbuf, .errlen = errlen };
	int rc = -1;

	memset(g, 0, sizeof(*g));
	if (lex(&p.lx, text, errbuf, errlen, 0) == -1)
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
		gr_fail(errbuf, errlen, (struct graph_pos){ 1, 1 },
		    "empty graph");
out:
	free(p.elems);
	free(p.pairs);
	free(p.feed);
	gr_strtab_free(&p.labels);
	lex_free(&p.lx);
	return rc;
}
