/*
 * cli.c: the short name, --version and usage lines (see cli.h).
 */
#include <err.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#include "cli.h"

#ifndef SNB_VERSION
#define SNB_VERSION	"unknown"	/* built outside the Makefile (fuzz) */
#endif
const char snb_version[] = SNB_VERSION;

void
cli_begin(int argc, char **argv)
{
	const char *slash;

	if (argc > 0 && argv[0] != NULL) {
		slash = strrchr(argv[0], '/');
		argv[0] = slash ? (char *)slash + 1 : argv[0];
		setprogname(argv[0]);
	}
	/*
	 * One write(2) a line: stderr is unbuffered, so glibc's warnx(3)
	 * writes "snb-TOOL: ", the message and the newline apart, and the
	 * lines of a graph's stages and snb-run, which share one stderr,
	 * could tear into each other.
	 */
	setvbuf(stderr, NULL, _IOLBF, BUFSIZ);
	if (argc > 1 && strcmp(argv[1], "--version") == 0)
		cli_version();
}

void
cli_version(void)
{
	cli_output();	/* a full disk is told, a closed pipe is not */
	printf("%s %s\n", getprogname(), snb_version);
	exit(0);
}

void
cli_usage_lines(FILE *f, const char *prog, const char *usage)
{
	const char *nl, *lead = "usage: ";
	size_t len;

	do {
		nl = strchr(usage, '\n');
		len = nl ? (size_t)(nl - usage) : strlen(usage);
		fprintf(f, "%s%s%s%.*s\n", lead, prog, len ? " " : "",
		    (int)len, usage);
		lead = "       ";
		usage = nl ? nl + 1 : usage + len;
	} while (nl);
}

/*
 * Has the reader of our standard output gone?  poll(2) says POLLERR for a
 * pipe without readers; errno would not: a failed flush may be long past.
 */
static int
reader_gone(void)
{
	struct pollfd pfd = { .fd = STDOUT_FILENO, .events = POLLOUT };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLERR);
}

/* Flush standard output: 0, 1 when its reader has gone, -1 on error. */
static int
flush_stdout(void)
{
	if (fflush(stdout) != EOF && !ferror(stdout))
		return 0;
	return reader_gone() ? 1 : -1;
}

static int flushed;	/* cli_flush() ended the tool: nothing more to say */

/*
 * At exit, with the tool's status: a reader that has gone leaves it as it
 * is (0 for a tool that succeeded, its own for one that failed), and the
 * exit handlers registered before ours still run (snb-top's restores the
 * terminal); stdio's last flush then fails quietly (SIGPIPE is ignored).
 * Another write error fails a tool that succeeded.
 */
static void
flush_at_exit(int status, void *arg)
{
	if (!flushed && flush_stdout() == -1) {
		warn("stdout");
		_exit(status ? status : 1);
	}
}

void
cli_output(void)
{
	signal(SIGPIPE, SIG_IGN);
	on_exit(flush_at_exit, NULL);
}

/* exit(), not _exit(): the handlers after ours run too. */
void
cli_flush(void)
{
	int r = flush_stdout();

	if (r == 0)
		return;
	flushed = 1;
	if (r == -1)
		warn("stdout");
	exit(r == -1);
}
