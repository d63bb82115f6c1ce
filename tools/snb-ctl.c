/*
 * snb-ctl: talk to a running graph through its control socket (ctl in its
 * graph directory, see rundir.h): show it, stop it, restart or swap a
 * stage.  clean removes a stale graph and needs no snb-run.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rundir.h"

static const char usage_text[] = "usage: snb-ctl NAME " SNB_CTL_REQUESTS
    " | clean\n";

static void __attribute__((noreturn))
usage(void)
{
	fputs(usage_text, stderr);
	exit(2);
}

/* clean: remove the graph if its snb-run is gone. */
static int
clean(const char *name)
{
	char errbuf[PATH_MAX + 256];

	if (snb_graph_clean(name, errbuf, sizeof(errbuf)) == -1)
		errx(1, "%s", errbuf);
	return 0;
}

int
main(int argc, char **argv)
{
	struct sockaddr_un sun;
	char errbuf[512], buf[8192], dir[PATH_MAX];
	const char *run;
	ssize_t n;
	int fd, i, nargs, e, failed = 0, first = 1;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)) {
		printf("%sControl a running graph, or remove a stale one.  "
		    "See snb-ctl(1).\n", usage_text);
		return 0;
	}
	if (argc < 3)
		usage();
	if ((nargs = strcmp(argv[2], "clean") ? snb_ctl_nargs(argv[2]) : 0) ==
	    -1) {
		warnx("unknown command '%s'", argv[2]);
		usage();
	}
	if (argc != 3 + nargs)
		usage();
	if (snb_graph_name_check(argv[1], errbuf, sizeof(errbuf)) == -1)
		errx(2, "%s", errbuf);
	if (strcmp(argv[2], "clean") == 0)
		return clean(argv[1]);
	if ((run = snb_run_dir(errbuf, sizeof(errbuf))) == NULL)
		errx(1, "run directory: %s", errbuf);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%s/ctl",
	    run, argv[1]) >= sizeof(sun.sun_path))
		errx(2, "graph name too long");
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		e = errno;
		snprintf(dir, sizeof(dir), "%s/%s", run, argv[1]);
		if (snb_graph_stale(dir))
			errx(1, "graph '%s' is stale (its snb-run is gone): "
			    "remove it with snb-ctl %s clean", argv[1],
			    argv[1]);
		if (e == ENOENT || e == ECONNREFUSED)
			errx(1, "no graph '%s' running (in %s)", argv[1], run);
		errno = e;
		err(1, "%s", sun.sun_path);
	}
	for (i = 2; i < argc; i++)
		if (write(fd, argv[i], strlen(argv[i]) + 1) !=
		    (ssize_t)strlen(argv[i]) + 1)
			err(1, "send");
	shutdown(fd, SHUT_WR);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (first && n >= 6 && strncmp(buf, "error:", 6) == 0)
			failed = 1;
		first = 0;
		fwrite(buf, 1, (size_t)n, failed ? stderr : stdout);
	}
	if (n == -1)
		err(1, "receive");
	if (first)
		errx(1, "graph '%s' closed the connection", argv[1]);
	return failed;
}
