/*
 * graph_int.h: what the parts of the graph language share, and nothing
 * else includes.
 *
 *	graph.c		names, the lexer, string maps, graph_words(),
 *			app_info_parse()
 *	graph_parse.c	the parser, copies ("4x( ... )") included
 *	graph_check.c	graph_check(): devices, labels, ports, cycles
 */
#ifndef SNB_GRAPH_INT_H
#define SNB_GRAPH_INT_H

#include <stddef.h>

#include "graph.h"

/* The types up to T_LABEL start a chain's element. */
enum tok_type { T_WORD, T_PORT, T_REF, T_LABEL, T_PIPE, T_SEMI, T_NEWLINE,
	T_EOF };

/* What a token is, for "found ..." (indexed by enum tok_type). */
extern const char *const tok_name[];

struct token {
	enum tok_type	 type;
	char		*text;		/* words: unquoted text; ports etc: name */
	int		 quoted;	/* words: some of it was quoted */
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

/* The lexer set up for text and run: -1 with errbuf set; lex_free() it. */
int	 lex(struct lexer *lx, const char *text, char *errbuf, size_t errlen,
	    int words);
void	 lex_free(struct lexer *lx);

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

int	 gr_strtab_get(struct strtab *t, const char *key);	/* or -1 */
void	 gr_strtab_put(struct strtab *t, const char *key, int val);
void	 gr_strtab_free(struct strtab *t);

void	*gr_xrealloc(void *p, size_t n, size_t size);
char	*gr_strndup(const char *s, size_t n);
/* Grow an array by doubling, so n appends cost O(n) in all. */
void	*gr_grow(void *p, int n, int *cap, size_t size);
/* "LINE:COL: message" into errbuf; returns -1. */
int	 gr_fail(char *errbuf, size_t errlen, struct graph_pos pos,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* An app name's characters. */
int	 app_chars(const char *s);

#endif
