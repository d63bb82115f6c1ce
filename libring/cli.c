/*
 * cli.c: the short name, --version and usage lines (see cli.h).
 */
#include <stdlib.h>
#include <string.h>

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
	if (argc > 1 && strcmp(argv[1], "--version") == 0)
		cli_version();
}

void
cli_version(void)
{
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
