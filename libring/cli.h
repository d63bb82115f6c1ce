/*
 * cli.h: the command-line conventions every snb program shares.
 *
 *	messages	"snb-TOOL: message" (err(3), warnx(3)): the short
 *			name, never the path the binary was run by
 *	exit status	0 done, 1 a failure at run time (a file that
 *			cannot be opened, a device that is not there), 2 a
 *			usage error (a bad option, a bad word, a file whose
 *			contents are wrong)
 *	--version	"snb-TOOL VERSION", VERSION from the Makefile
 *	--help		the usage lines (as the man page's SYNOPSIS), one
 *			line of summary, "See snb-TOOL(1)."
 *	usage error	"snb-TOOL: what is wrong", then the usage lines
 */
#ifndef SNB_CLI_H
#define SNB_CLI_H

#include <stdio.h>

extern const char snb_version[];

/*
 * First thing in main(): argv[0] becomes the short name (getopt(3)'s
 * messages use it), and a first word "--version" is answered here.
 */
void	cli_begin(int argc, char **argv);
/* Print "snb-TOOL VERSION" and exit 0. */
void	cli_version(void) __attribute__((noreturn));
/*
 * The usage lines of prog, from usage: one form per '\n'-separated line,
 * each after "usage: PROG " (then as many spaces).  To f.
 */
void	cli_usage_lines(FILE *f, const char *prog, const char *usage);

/*
 * A tool whose output may go to a pipe calls cli_output() first: SIGPIPE
 * is ignored and standard output is flushed at exit.  When the reader of
 * the pipe has gone (head(1) has what it wanted), the tool ends quietly
 * with the status it would have had (0, as a graph does whose
 * snb-pcap-write lost its reader, or a failing tool's own), every exit
 * handler run; another write error fails a tool that succeeded (status 1).
 * cli_flush(): flush now (after each page of a tool that writes many),
 * and when the reader has gone, exit(0) (1 on another error).
 */
void	cli_output(void);
void	cli_flush(void);

#endif
