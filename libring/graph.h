/*
 * graph.h: the graph language of snb-run (DESIGN 4).
 *
 *	graph  := { stmt (NEWLINE | ';') }
 *	stmt   := chain | empty
 *	chain  := part { '|' part }
 *	part   := elem | N 'x(' chain ')' | N 'x' elem	(copies)
 *	elem   := [ '[' PORT ']' ] node [ '[' PORT ']' ]
 *	node   := '@' LABEL | [ LABEL ':' ] APP { WORD }
 *
 * graph_parse() turns text into stages and links and checks everything
 * that needs no knowledge of the apps; graph_check() then checks ports
 * against what each app says of itself (--describe) and refuses cycles of
 * lossless links.  Copies are written out in full by the parser
 * (graph_parse.c).  Every error carries the line and column of the token
 * at fault.  Both are linear (or n log n) in the size of the graph:
 * scripts generate graphs of tens of thousands of stages.
 */
#ifndef SNB_GRAPH_H
#define SNB_GRAPH_H

#include <stddef.h>

/*
 * Sizes of names, the NUL included.  A longer name is refused where it is
 * written rather than cut short: two names that differ only past the limit
 * would collide.  The runtime's port names (app.h) have the same size.
 */
#define GRAPH_NAME_MAX	64	/* labels */
#define APP_NAME_MAX	64
#define PORT_NAME_MAX	32

/*
 * The one alphabet of names (labels, ports, graphs): letters, digits and
 * "_.-", not starting with '.' or '-', so that a name is a file name that
 * is never hidden and never taken for an option.  name_ok() checks the
 * characters of a whole name (the caller checks its length); name_char()
 * one character, for names made from other text.
 */
int	name_char(int c);
int	name_ok(const char *s);
/* The alphabet, as error messages name it. */
#define NAME_CHARS	"letters, digits, '_', '.', '-', not starting with " \
			"'.' or '-'"

struct graph_pos {
	int	line, col;
};

/* What an app says of itself, from `snb-APP --describe`. */
struct app_info {
	char	  app[APP_NAME_MAX];
	int	  device;
	int	  nports;
	struct {
		char	name[PORT_NAME_MAX];
		int	out;		/* 0 = input, 1 = output */
		int	required;
	} ports[32];
};

struct stage {
	char		 label[GRAPH_NAME_MAX];
	char		 app[APP_NAME_MAX];
	char		**argv;		/* the app's words (not its name) */
	int		 argc;
	int		 labelled;	/* the user named it */
	int		 copy;		/* K in copy K of "Nx", else 0 */
	struct graph_pos pos;		/* where it was declared */
	const struct app_info *info;	/* set by the caller before check */
};

struct link {
	int		 from, to;	/* stage indexes */
	char		 from_port[PORT_NAME_MAX], to_port[PORT_NAME_MAX];
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
/*
 * Check ports and wiring against each stage's info (all must be set):
 * merges a device's stages into one, labels unlabelled stages, checks
 * ports, and refuses a cycle whose links are all lossless (DESIGN 6).
 */
int	graph_check(struct graph *g, char *errbuf, size_t errlen);
/*
 * Where an app_info does not fit a stage's links: a link at the stage
 * naming a port the app lacks (link >= 0; out: at the link's source end),
 * or a port the app requires that no link names (link -1, port).
 */
struct misfit {
	int	link, out, port;
};
/*
 * The port check of graph_check() for one stage: do info's ports fit the
 * links at stage i?  links[0..n) are their indexes, or NULL for all of
 * g's links (n = g->nlinks; those not at stage i are passed over).  snb-run
 * checks a swap's replacement with it.  0, or -1 with *m set.
 */
int	graph_stage_fit(const struct graph *g, int i,
	    const struct app_info *info, const int *links, int n,
	    struct misfit *m);
void	graph_free(struct graph *g);

/*
 * Split text into words as the graph language does (quotes, escapes),
 * for snb-ctl's 'APP ARGS'.  Returns a NULL-terminated malloc'd vector,
 * or NULL with errbuf set.
 */
char	**graph_words(const char *text, int *argc, char *errbuf, size_t errlen);
void	  graph_words_free(char **v);
/*
 * Word w of a stage in copy k: "{}" as k, "{0}" as k - 1 (snb-run(1),
 * Copies).  w is malloc'd, and freed if a new word is returned.
 */
char	 *graph_copy_word(char *w, int k);
/*
 * "{}" or "{0}" if word w holds one (a copy's number, which outside
 * copies would be taken literally: refused), else NULL.
 */
const char *graph_copy_mark(const char *w);

/* Parse `--describe` output into info; -1 with errbuf on nonsense. */
int	app_info_parse(struct app_info *info, const char *text, char *errbuf,
	    size_t errlen);

#endif
