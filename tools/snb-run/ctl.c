/*
 * ctl.c: the control socket (snb-ctl).  One request per connection:
 * NUL-separated words, then EOF; one reply, then close.  Clients are
 * served from the supervisor's loop without blocking it (server.h); a
 * swap or restart runs as a state machine (op.c) and answers when it ends.
 */
#define _GNU_SOURCE
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <err.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rundir.h"
#include "stats.h"
#include "run.h"

static void	input(struct srv_client *, int);

struct server ctl_srv = {
	.max = 16,
	.req_max = 16384,
	.client_ms = 5000,	/* to send a request, or to read a reply */
	.drain_ms = 1000,
	.busy = "error: 16 control clients at once; try again\n",
	.name = "control client",
	.input = input,
};

int
ctl_listen(void)
{
	struct sockaddr_un sun;
	mode_t old;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/ctl",
	    graph_dir) >= sizeof(sun.sun_path))
		errx(1, "%s/ctl: path too long for a socket", graph_dir);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1)
		err(1, "socket");
	old = umask(0177);	/* the socket is 0600 from birth */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		warn("%s", sun.sun_path);
		umask(old);
		die_cleanup(1);
	}
	umask(old);
	if (listen(fd, 8) == -1)
		err(1, "listen");
	srv_init(&ctl_srv, fd);
	return fd;
}

/* The one reply to request id (gone if the client hung up meanwhile). */
void
ctl_reply(int id, const char *fmt, ...)
{
	struct srv_client *c = srv_by_id(&ctl_srv, id);
	va_list ap;
	char *s;

	if (c == NULL || c->state != SRV_WAIT)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		err(1, NULL);
	va_end(ap);
	srv_reply(&ctl_srv, c, s);
}

static void
show(struct srv_client *c)
{
	char *buf = NULL, where[PATH_MAX + 64];
	size_t len = 0;
	FILE *f;
	int i, j;

	if ((f = open_memstream(&buf, &len)) == NULL)
		err(1, NULL);
	fprintf(f, "graph %s pid %ld dir %s\n", strrchr(graph_dir, '/') + 1,
	    (long)getpid(), graph_dir);
	fprintf(f, "rings %s\n", snb_rings_where(graph_dir, where,
	    sizeof(where)));
	for (i = 0; i < g.nstages; i++) {
		fprintf(f, "stage %s pid %ld restarts %d app %s",
		    g.stages[i].label, (long)procs[i].pid, procs[i].restarts,
		    g.stages[i].app);
		for (j = 0; j < g.stages[i].argc; j++)
			fprintf(f, " '%s'", g.stages[i].argv[j]);
		fprintf(f, "%s\n", procs[i].done ? " (finished)" :
		    procs[i].pid == 0 ? " (not running)" : "");
	}
	rings_show(f);
	if (fclose(f) == EOF)
		err(1, NULL);
	srv_reply(&ctl_srv, c, buf);
}

/* Counters since now, for snb-top (a baseline: see baseline.c). */
static void
clear(int id)
{
	char errbuf[PATH_MAX + 128];
	int n;

	if ((n = graph_clear(graph_dir, errbuf, sizeof(errbuf))) == -1)
		ctl_reply(id, "error: %s\n", errbuf);
	else
		ctl_reply(id, "ok: cleared the counters of %s (%d stages)\n",
		    strrchr(graph_dir, '/') + 1, n);
}

static int
find_stage(const char *label)
{
	int i;

	for (i = 0; i < g.nstages; i++)
		if (strcmp(g.stages[i].label, label) == 0)
			return i;
	return -1;
}

/* A label the graph has not: say which it has (the first few). */
static void
no_stage(int id, const char *label)
{
	char list[640];
	size_t off = 0;
	int i;

	list[0] = '\0';
	for (i = 0; i < g.nstages && i < 12 && off < sizeof(list) - 96; i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
		    i ? ", " : "", g.stages[i].label);
	if (i < g.nstages)
		snprintf(list + off, sizeof(list) - off, ", ... (%d in all)",
		    g.nstages);
	ctl_reply(id, "error: no stage '%s' (stages: %s)\n", label, list);
}

/* At the request's end: do it, or start doing it. */
static void
input(struct srv_client *c, int end)
{
	char *w[4] = { NULL, NULL, NULL, NULL }, *p;
	int n = 0, i, k;

	if (!end)
		return;
	for (p = c->in; p < c->in + c->inlen && n < 4; p += strlen(p) + 1)
		w[n++] = p;
	c->state = SRV_WAIT;
	if (n == 0)
		ctl_reply(c->id, "error: empty request\n");
	else if ((k = snb_ctl_nargs(w[0])) == -1 || n != k + 1)
		ctl_reply(c->id, "error: unknown request '%s' (%s)\n", w[0],
		    SNB_CTL_REQUESTS);
	else if (strcmp(w[0], "show") == 0)
		show(c);
	else if (strcmp(w[0], "clear") == 0)
		clear(c->id);
	else if (strcmp(w[0], "stop") == 0) {
		ctl_reply(c->id, "ok: stopping %s\n",
		    strrchr(graph_dir, '/') + 1);
		stop_requested = 1;
	} else if ((i = find_stage(w[1])) == -1 && roll_copy(w[1], 0) == -1)
		no_stage(c->id, w[1]);
	else if (graph_stopping())	/* its stages are leaving */
		ctl_reply(c->id, "error: the graph is stopping\n");
	else if (op_busy() || roll_busy())
		ctl_reply(c->id, "error: busy with another swap or restart; "
		    "try again\n");
	else if (i == -1)	/* LABEL.1 ... LABEL.N: one after the other */
		roll_start(strcmp(w[0], "restart") == 0, w[1], w[2], c->id);
	else if (strcmp(w[0], "swap") == 0)
		op_swap(i, w[2], c->id);
	else
		op_restart(i, c->id);
}
