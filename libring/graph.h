/*
 * graph.h: the graph language of snb-run (DESIGN 4).
 *
 *	graph  := { stmt (NEWLINE | ';') }
 *	stmt   := chain | empty
 *	chain  := elem { '|' elem }
 *	elem   := [ '[' PORT ']' ] node [ '[' PORT ']' ]
 *	node   := '@' LABEL | [ LABEL ':' ] APP { WORD }
 *
 * graph_parse() turns text into stages and links and checks everything
 * that needs no knowledge of the apps; graph_check() then checks ports
 * against what each app says of itself (--describe).  Every error carries
 * the line and column of the token at fault.
 */
#ifndef SNB_GRAPH_H
#define SNB_GRAPH_H

#include <stddef.h>

#define GRAPH_NAME_MAX	64

struct graph_pos {
	int	line, col;
};

/* What an app says of itself, from `snb-APP --describe`. */
struct app_info {
	char	  app[64];
	int	  device;
	int	  nports;
	struct {
		char	name[32];
		int	out;		/* 0 = input, 1 = output */
		int	required;
	} ports[32];
};

struct stage {
	char		 label[GRAPH_NAME_MAX];
	char		 app[64];
	char		**argv;		/* the app's words (not its name) */
	int		 argc;
	int		 labelled;	/* the user named it */
	struct graph_pos pos;		/* where it was declared */
	const struct app_info *info;	/* set by the caller before check */
};

struct link {
	int		 from, to;	/* stage indexes */
	char		 from_port[32], to_port[32];
	struct graph_pos pos;		/* the '|' that made it */
	struct graph_pos from_pos, to_pos; /* the port names (or nodes) */
	int		 leaky;		/* "|~": drop when full (DESIGN 3) */
};

struct graph {
	struct stage	*stages;
	int		 nstages;
	struct link	*links;
	int		 nlinks;
};

/*
 * Parse text.  On error returns -1 and writes "LINE:COL: message" into
 * errbuf.  The graph's memory is released by graph_free() in both cases.
 */
int	graph_parse(struct graph *g, const char *text, char *errbuf,
	    size_t errlen);
/* Check ports and wiring against each stage's info (all must be set). */
int	graph_check(struct graph *g, char *errbuf, size_t errlen);
void	graph_free(struct graph *g);

/*
 * Split text into words as the graph language does (quotes, escapes),
 * for snb-ctl's 'APP ARGS'.  Returns a NULL-terminated malloc'd vector,
 * or NULL with errbuf set.
 */
char	**graph_words(const char *text, int *argc, char *errbuf, size_t errlen);
void	  graph_words_free(char **v);

/* Parse `--describe` output into info; -1 with errbuf on nonsense. */
int	app_info_parse(struct app_info *info, const char *text, char *errbuf,
	    size_t errlen);

#endif
