/*
 * snb-ctl: talk to a running graph through its control socket
 * ($SNB_RUN_DIR/NAME/ctl): show it, stop it, restart or swap a stage.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring.h"

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: snb-ctl NAME show | stop | restart LABEL | "
	    "swap LABEL 'APP ARGS'\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct sockaddr_un sun;
	char errbuf[512], buf[8192];
	const char *run;
	ssize_t n;
	int fd, i, nargs, failed = 0, first = 1;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)) {
		printf("usage: snb-ctl NAME show | stop | restart LABEL | "
		    "swap LABEL 'APP ARGS'\nControl a running graph.  "
		    "See snb-ctl(1).\n");
		return 0;
	}
	if (argc < 3)
		usage();
	nargs = strcmp(argv[2], "swap") == 0 ? 2 :
	    strcmp(argv[2], "restart") == 0 ? 1 :
	    strcmp(argv[2], "show") == 0 || strcmp(argv[2], "stop") == 0 ? 0 :
	    -1;
	if (nargs == -1) {
		warnx("unknown command '%s'", argv[2]);
		usage();
	}
	if (argc != 3 + nargs)
		usage();
	if (strchr(argv[1], '/') || argv[1][0] == '.')
		errx(2, "bad graph name '%s'", argv[1]);
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
		if (errno == ENOENT || errno == ECONNREFUSED)
			errx(1, "no graph '%s' running (in %s)", argv[1], run);
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
