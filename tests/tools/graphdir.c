/*
 * graphdir: a graph directory without a graph, for tests/rundir.bats.
 *
 *	graphdir NAME [RING...]
 *
 * Makes graph NAME with snb_graph_create(), creates each RING (default
 * geometry) in its rings/, prints the graph directory and "ready", and
 * waits.  SIGTERM or SIGINT: snb_graph_remove() and exit 0, as snb-run
 * does at its end; SIGKILL leaves a stale graph, as a killed snb-run does.
 */
#include <err.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>

#include "ring.h"
#include "rundir.h"

int
main(int argc, char **argv)
{
	char dir[PATH_MAX], path[PATH_MAX], errbuf[PATH_MAX + 256];
	sigset_t set;
	int fd, i, sig;

	if (argc < 2) {
		fprintf(stderr, "usage: graphdir NAME [RING...]\n");
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((fd = snb_graph_create(argv[1], dir, sizeof(dir), errbuf,
	    sizeof(errbuf))) == -1)
		errx(1, "%s", errbuf);
	for (i = 2; i < argc; i++) {
		snprintf(path, sizeof(path), "%s/rings/%s", dir, argv[i]);
		if (ring_create(path, RING_DEFAULT_SLOTS, RING_DEFAULT_CAPACITY,
		    0) == -1) {
			warn("%s", path);
			if (snb_graph_remove(dir, errbuf, sizeof(errbuf)) == -1)
				warnx("%s", errbuf);
			return 1;
		}
	}
	printf("%s\nready\n", dir);
	fflush(stdout);
	sigwait(&set, &sig);
	if (snb_graph_remove(dir, errbuf, sizeof(errbuf)) == -1)
		errx(1, "%s", errbuf);
	return 0;
}
