/*
 * snb-run: start a graph of snb apps joined by rings, supervise it, and
 * take it down again leaving nothing behind.
 *
 *	parse -> ask every app --describe -> check -> create the graph's
 *	directory and rings -> start stages -> supervise -> remove files
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>
#define LIBBSD_OPENBSD_VIS	/* vis(3) as OpenBSD has it */
#include <bsd/vis.h>

#include "cfg.h"
#include "cli.h"
#include "rundir.h"
#include "run.h"

/* As snb-run(1)'s SYNOPSIS; an indented line continues a form. */
#define OPTS \
	"[-cv] [-n name] [--restart=policy] [--max-restarts count]\n" \
	"               [--slots count] [--capacity bytes] [--stats]"
#define USAGE \
	"usage: snb-run " OPTS " graph ...\n" \
	"       snb-run " OPTS " -f file\n" \
	"       snb-run -l\n" \
	"       snb-run --clean\n"

struct graph	 g;
struct proc	*procs;
char		 graph_dir[PATH_MAX];
int		 restart_on_failure, max_restarts = 10, verbose;
uint32_t	 ring_slots = RING_DEFAULT_SLOTS;
uint32_t	 ring_capacity = RING_DEFAULT_CAPACITY;
int		 stop_requested;
char		 graph_where[PATH_MAX];	/* "FILE:" or "" for errors */
static char	 name[GRAPH_NAME_MAX];	/* -n, or made up */
static const char *file;		/* -f */
static int	 check_only, clean, print_stats, list;
char		*text;		/* the graph's source (global for LSan) */

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "%s", USAGE);
	exit(2);
}

static void
print_plan(void)
{
	int i, j;

	for (i = 0; i < g.nstages; i++) {
		printf("stage %s: snb-%s", g.stages[i].label, g.stages[i].app);
		for (j = 0; j < g.stages[i].argc; j++)
			printf(" '%s'", g.stages[i].argv[j]);
		printf("\n");
	}
	for (i = 0; i < g.nlinks; i++)
		printf("link %s.%s -> %s.%s\n", g.stages[g.links[i].from].label,
		    g.links[i].from_port, g.stages[g.links[i].to].label,
		    g.links[i].to_port);
}

static uint32_t
parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max)
{
	const char *errstr;
	uint32_t v = (uint32_t)strtonum(s, min, max, &errstr);

	if (errstr != NULL)
		errx(2, "bad %s '%s' (%u..%u)", opt, s, min, max);
	return v;
}

/* The graph's text: -f FILE ("-" standard input), or the words, spaced. */
static void
read_graph(const char *file, int argc, char **argv)
{
	char errbuf[PATH_MAX + 128], shown[4 * sizeof(graph_where) + 1];
	size_t len;
	FILE *f;
	int i;

	if (file) {
		/* missing: a failure, as in every app */
		if ((text = strcmp(file, "-") ? cfg_read(file, &len, errbuf,
		    sizeof(errbuf)) : cfg_read_fd(0, "standard input", &len,
		    errbuf, sizeof(errbuf))) == NULL)
			errx(1, "%s", errbuf);
		/* A NUL in it is a binary file's. */
		if (memchr(text, '\0', len) != NULL)
			errx(2, "%s: binary file", file);
		/* Shown as gr_fail() shows the graph's words. */
		strvis(shown, file, VIS_CSTYLE | VIS_TAB | VIS_NL | VIS_OCTAL);
		snprintf(graph_where, sizeof(graph_where), "%s:", shown);
	} else {
		if ((f = open_memstream(&text, &len)) == NULL)
			err(1, NULL);
		for (i = 0; i < argc; i++)
			fprintf(f, "%s%s", i ? " " : "", argv[i]);
		if (fclose(f) == EOF)
			err(1, NULL);
	}
	if (graph_parse(&g, text, errbuf, sizeof(errbuf)) == -1)
		errx(2, "%s%s", graph_where, errbuf);
}

struct app_kind	*kinds;

/* The app stage s runs (run.h). */
static struct app_kind *
kind_of(const struct stage *s)
{
	char errbuf[1024], near[APP_NAME_MAX], desc[DESCRIBE_MAX];
	struct app_kind *k;

	for (k = kinds; k != NULL; k = k->next)
		if (strcmp(k->name, s->app) == 0)
			return k;
	if ((k = calloc(1, sizeof(*k))) == NULL)
		err(1, NULL);
	strlcpy(k->name, s->app, sizeof(k->name));
	if (find_app(s->app, k->path, sizeof(k->path), near,
	    sizeof(near)) == -1) {
		if (near[0])
			errx(2, "%s%d:%d: unknown app '%s': did you mean %s? "
			    "(snb-run --list)", graph_where, s->pos.line,
			    s->pos.col, s->app, near);
		errx(2, "%s%d:%d: unknown app '%s' (no snb-%s next to snb-run, "
		    "in SNB_PATH or PATH; snb-run --list)", graph_where,
		    s->pos.line, s->pos.col, s->app, s->app);
	}
	if (describe_text(k->path, desc, sizeof(desc), errbuf,
	    sizeof(errbuf)) == -1 || app_info_parse(&k->info, desc, errbuf,
	    sizeof(errbuf)) == -1)
		errx(2, "%s%d:%d: %s: %s", graph_where, s->pos.line, s->pos.col,
		    s->app, errbuf);
	k->next = kinds;
	kinds = k;
	return k;
}

/* Ask each app what it is, then check the wiring. */
static void
check_graph(void)
{
	char errbuf[1024];
	int i;

	if ((procs = calloc((size_t)g.nstages, sizeof(*procs))) == NULL)
		err(1, NULL);
	for (i = 0; i < g.nstages; i++)
		g.stages[i].info = &kind_of(&g.stages[i])->info;
	if (graph_check(&g, errbuf, sizeof(errbuf)) == -1)
		errx(2, "%s%s", graph_where, errbuf);
	/* Stages may have merged (devices): nstages may be smaller now. */
	for (i = 0; i < g.nstages; i++)
		procs[i].kind = kind_of(&g.stages[i]);
}

/* -n NAME, or one made of the file's name (or "graph") and our pid. */
static void
graph_name(char *name, size_t len, const char *file)
{
	const char *base;
	int i;

	if (name[0])
		return;
	base = file ? strrchr(file, '/') : NULL;
	base = base ? base + 1 : file;
	if (base && strcmp(base, "-"))
		snprintf(name, len, "%.40s-%ld", base, (long)getpid());
	else
		snprintf(name, len, "graph-%ld", (long)getpid());
	for (i = 0; name[i]; i++)
		if (!name_char(name[i]))
			name[i] = '_';
	if (!name_ok(name))	/* a leading '.' or '-' */
		name[0] = '_';
}

/*
 * The signals the graph's life hangs on, handled as they should be whatever
 * we inherited: a shell without job control starts a background command
 * with SIGINT ignored, and an ignored signal is lost (the graph would run
 * on); SIGCHLD ignored would have the kernel reap our stages unseen.  Until
 * block_signals(), before anything is created, a signal ends snb-run by
 * its default action: the status a shell shows is 128 + N as after.
 */
static void
default_signals(void)
{
	const sigset_t *set = block_signals();
	struct sigaction sa;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (i = 1; i < NSIG; i++)
		if (sigismember(set, i) == 1)
			sigaction(i, &sa, NULL);
	sigprocmask(SIG_UNBLOCK, set, NULL);
}

/* The command line's options; returns how many words they took. */
static int
options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "check", no_argument, NULL, 'c' },
		{ "clean", no_argument, NULL, 'K' },
		{ "list", no_argument, NULL, 'l' },
		{ "file", required_argument, NULL, 'f' },
		{ "name", required_argument, NULL, 'n' },
		{ "restart", required_argument, NULL, 'r' },
		{ "max-restarts", required_argument, NULL, 'R' },
		{ "slots", required_argument, NULL, 's' },
		{ "capacity", required_argument, NULL, 'C' },
		{ "stats", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	/* The options that only set a flag. */
	static int *const flag[128] = { ['c'] = &check_only, ['K'] = &clean,
	    ['S'] = &print_stats, ['v'] = &verbose, ['l'] = &list };
	char errbuf[1024];
	int ch;

	while ((ch = getopt_long(argc, argv, "+cf:ln:vh", opts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			file = optarg;
			break;
		case 'n':
			if (snb_graph_name_check(optarg, errbuf,
			    sizeof(errbuf)) == -1)
				errx(2, "%s", errbuf);
			strlcpy(name, optarg, sizeof(name));
			break;
		case 'r':
			if (strcmp(optarg, "no") && strcmp(optarg, "on-failure"))
				errx(2, "bad --restart '%s' (no, on-failure)",
				    optarg);
			restart_on_failure = strcmp(optarg, "no") != 0;
			break;
		case 'R':
			max_restarts = (int)parse_u32("--max-restarts", optarg,
			    0, 1000000);
			break;
		case 's':
			ring_slots = parse_u32("--slots", optarg, 2, 1u << 24);
			if (ring_slots & (ring_slots - 1))
				errx(2, "bad --slots '%s' (a power of two)",
				    optarg);
			break;
		case 'C':
			ring_capacity = parse_u32("--capacity", optarg, 64,
			    RING_MAX_CAPACITY);
			break;
		case 'h':
			printf("%sRun a graph of snb apps.  See snb-run(1), "
			    "snb(7).\n", USAGE);
			exit(0);
		default:
			if (ch <= 0 || ch >= 128 || flag[ch] == NULL)
				usage();
			*flag[ch] = 1;
		}
	}
	return optind;
}

int
main(int argc, char **argv)
{
	char errbuf[1024];
	struct app_kind *k;
	int i, rc, lock;

	cli_begin(argc, argv);
	/* Errors show the graph's letters in the user's encoding (vis(3)
	 * escapes what the locale cannot print, control characters always). */
	setlocale(LC_CTYPE, "");
	cli_output();
	default_signals();
	i = options(argc, argv);
	argc -= i;
	argv += i;
	if (list) {
		if (file || argc || clean || check_only) {
			warnx("-l takes nothing else");
			usage();
		}
		return list_apps();
	}
	if (clean) {
		if (file || argc) {
			warnx("--clean takes no graph");
			usage();
		}
		rc = snb_graph_clean(NULL, errbuf, sizeof(errbuf));
		/* Emptied of stale graphs: as their snb-runs would have. */
		snb_run_dir_release();
		if (rc == -1)
			errx(1, "%s", errbuf);
		return 0;
	}
	/* A bare snb-run is asking how: the usage alone, as before. */
	if (file != NULL && argc != 0)
		warnx("a graph on the command line and -f %s: one or the other",
		    file);
	if ((file == NULL) == (argc == 0))
		usage();
	read_graph(file, argc, argv);
	check_graph();
	if (check_only) {
		if ((rc = check_stages(graph_where)) == 0)
			print_plan();
		return rc;
	}
	graph_name(name, sizeof(name), file);
	/* Signals arrive through signalfd; block them before any child. */
	block_signals();
	signal(SIGPIPE, SIG_IGN);
	if ((lock = snb_graph_create(name, graph_dir, sizeof(graph_dir),
	    errbuf, sizeof(errbuf))) == -1) {
		snb_run_dir_release();
		errx(1, "%s", errbuf);
	}
	create_rings();
	rc = supervise();
	if (print_stats)
		stage_totals();
	cleanup();
	close(lock);
	graph_free(&g);
	free(procs);
	while ((k = kinds) != NULL) {
		kinds = k->next;
		free(k);
	}
	free(text);
	return rc;
}
