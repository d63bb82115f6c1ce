/*
 * snb-ctl: talk to a running graph through its control socket (ctl in its
 * graph directory, see rundir.h): show it, stop it, restart or swap a
 * stage.  config talks to one stage's own socket (LABEL.ctl beside its
 * stage file) with the app's requests.  clean removes a stale graph and
 * needs no snb-run.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rundir.h"

/* One line per request, as snb-ctl(1)'s SYNOPSIS. */
static const char usage_text[] =
    "usage: snb-ctl GRAPH show\n"
    "       snb-ctl GRAPH stop\n"
    "       snb-ctl GRAPH clear\n"
    "       snb-ctl GRAPH restart LABEL\n"
    "       snb-ctl GRAPH swap LABEL 'APP ARGS ...'\n"
    "       snb-ctl GRAPH config LABEL REQUEST ...\n"
    "       snb-ctl GRAPH clean\n";

static void __attribute__((noreturn))
usage(void)
{
	fputs(usage_text, stderr);
	exit(2);
}

/*
 * Send len bytes: 1 when sent, 0 when the peer left meanwhile.  A short
 * write is a peer that took part and went (or a signal): what follows
 * says which, and errno means something only after -1.
 */
static int
send_all(int fd, const char *p, size_t len)
{
	ssize_t w;

	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			if (errno != EPIPE && errno != ECONNRESET)
				err(1, "send");
			return 0;
		}
		p += w;
		len -= (size_t)w;
	}
	return 1;
}

struct where {
	const char	*run, *graph, *label;	/* label: NULL for the graph */
};

/* path: the file NAME SUFFIX in w's graph directory. */
static char *
in_graph(char *path, const struct where *w, const char *name,
    const char *suffix)
{
	snprintf(path, PATH_MAX, "%s/%s/%s%s", w->run, w->graph, name, suffix);
	return path;
}

/*
 * w's socket is not there (e): which of graph, stage, app is missing.  A
 * killed snb-run leaves its socket: the graph may be stale all the same.
 */
static void
why(int e, const struct where *w)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", w->run, w->graph);
	if (snb_graph_stale(path))
		errx(1, "graph '%s' is stale (its snb-run is gone): remove it "
		    "with snb-ctl %s clean", w->graph, w->graph);
	if (w->label ? stat(in_graph(path, w, "ctl", ""), &st) == -1 :
	    e == ENOENT || e == ECONNREFUSED)
		errx(1, "no graph '%s' running (in %s)", w->graph, w->run);
	if (w->label && e == ENOENT && stat(in_graph(path, w, w->label,
	    ".stage"), &st) == -1)
		errx(1, "no stage '%s' in graph '%s'", w->label, w->graph);
	if (w->label && e == ENOENT)
		errx(1, "stage '%s' of graph '%s' takes no config requests "
		    "(see its app's manual), or has not started yet",
		    w->label, w->graph);
	if (w->label && e == ECONNREFUSED)
		errx(1, "stage '%s' of graph '%s' is not running (it is "
		    "restarting, or failed)", w->label, w->graph);
	errno = e;
}

/*
 * Send words to w's socket (the graph's, or its stage's), print the
 * reply, each line after "prefix: " when there is one; 1 when it is an
 * error.
 */
static int
talk(const struct where *w, char **words, int n, const char *prefix)
{
	struct sockaddr_un sun;
	char buf[8192], path[PATH_MAX];
	FILE *out = stdout;
	ssize_t len, k;
	int fd, i, first = 1, bol = 1;

	in_graph(path, w, w->label ? w->label : "ctl", w->label ? ".ctl" : "");
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		errx(2, "%s: path too long for a socket", path);
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		why(errno, w);
		err(1, "%s", path);
	}
	/*
	 * A peer that answers without reading (too many clients) may close
	 * before we have sent all: its answer is still to be read.
	 */
	for (i = 0; i < n && send_all(fd, words[i], strlen(words[i]) + 1);
	    i++)
		;
	shutdown(fd, SHUT_WR);
	while ((len = read(fd, buf, sizeof(buf))) > 0) {
		if (first && len >= 6 && strncmp(buf, "error:", 6) == 0)
			out = stderr;
		first = 0;
		for (k = 0; k < len; k++) {
			if (bol && prefix != NULL)
				fprintf(out, "%s: ", prefix);
			putc(buf[k], out);
			bol = buf[k] == '\n';
		}
	}
	/* Reset: it left with our request unread, after its answer if any. */
	if (len == -1 && errno != ECONNRESET)
		err(1, "receive");
	if (first)
		errx(1, "%s closed the connection without an answer (it "
		    "ended or stopped meanwhile?)", path);
	return out == stderr;
}

/*
 * config of a label that only its copies have (LABEL.1 ... in the graph):
 * each copy in turn, so that copies of one app stay alike (a softwire
 * added to every snb-lwaftr copy, whichever gets its traffic).  The first
 * copy that refuses stops it there, as a rolling swap does.
 */
static int
config_copies(const struct where *w, char **words, int n)
{
	struct where wk = *w;
	struct stat st;
	char label[256], path[PATH_MAX];
	int k;

	for (k = 1;; k++) {
		snprintf(label, sizeof(label), "%s.%d", w->label, k);
		if (stat(in_graph(path, w, label, ".stage"), &st) == -1)
			return 0;
		wk.label = label;
		if (talk(&wk, words, n, label)) {
			fflush(stdout);
			fprintf(stderr, "snb-ctl: stopped at %s: %d of its copies "
			    "before it done\n", label, k - 1);
			return 1;
		}
	}
}

int
main(int argc, char **argv)
{
	struct where w = { .graph = argv[1] };
	struct stat st;
	char errbuf[PATH_MAX + 256], path[PATH_MAX];
	int nargs;

	cli_begin(argc, argv);
	cli_output();
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)) {
		printf("%sControl a running graph, or remove a stale one.  "
		    "A LABEL with copies\n(LABEL.1 ... in the graph) is "
		    "restarted, swapped or configured one copy after the\n"
		    "other; '{}' in a swap's words is the copy's number.  "
		    "See snb-ctl(1).\n",
		    usage_text);
		return 0;
	}
	/* No options but these: a word that looks like one is a mistake. */
	if (argc > 1 && argv[1][0] == '-') {
		warnx("unknown option '%s'", argv[1]);
		usage();
	}
	if (argc == 2)
		warnx("no command after '%s'", argv[1]);
	if (argc < 3)
		usage();
	if (strcmp(argv[2], "config") == 0)
		nargs = argc < 5 ? -2 : argc - 3;
	else if ((nargs = strcmp(argv[2], "clean") ?
	    snb_ctl_nargs(argv[2]) : 0) == -1) {
		warnx("unknown command '%s'", argv[2]);
		usage();
	}
	if (nargs == -2)
		warnx("config: a LABEL and a REQUEST are needed");
	else if (argc != 3 + nargs)
		warnx("%s takes %d word%s after it, not %d", argv[2], nargs,
		    nargs == 1 ? "" : "s", argc - 3);
	if (argc != 3 + nargs)
		usage();
	if (snb_graph_name_check(argv[1], errbuf, sizeof(errbuf)) == -1)
		errx(2, "%s", errbuf);
	atexit(snb_run_dir_release);	/* if we made it: empty */
	if (strcmp(argv[2], "clean") == 0) {
		/* Only if its snb-run is gone. */
		if (snb_graph_clean(argv[1], errbuf, sizeof(errbuf)) == -1)
			errx(1, "%s", errbuf);
		return 0;
	}
	if ((w.run = snb_run_dir(errbuf, sizeof(errbuf))) == NULL)
		errx(1, "run directory: %s", errbuf);
	if (strcmp(argv[2], "config") == 0) {
		w.label = argv[3];
		/* labels share the graph names' alphabet: no '/' */
		if (snb_graph_name_check(argv[3], errbuf, sizeof(errbuf)) ==
		    -1)
			errx(2, "bad label '%s'", argv[3]);
		if (stat(in_graph(path, &w, argv[3], ".stage"), &st) == -1 &&
		    stat(in_graph(path, &w, argv[3], ".1.stage"), &st) == 0)
			return config_copies(&w, argv + 4, argc - 4);
		return talk(&w, argv + 4, argc - 4, NULL);
	}
	return talk(&w, argv + 2, argc - 2, NULL);
}
