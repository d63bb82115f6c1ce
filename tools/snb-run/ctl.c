/*
 * ctl.c: the control socket (snb-ctl).  One request per connection:
 * NUL-separated words, then EOF; one reply, then close.  Clients are
 * served from the supervisor's loop without blocking it: a request is
 * collected as it trickles in (within CLIENT_MS), a swap or restart runs
 * as a state machine (op.c) and answers when it ends, and the reply is
 * written as the client reads it (within CLIENT_MS).
 */
#define _GNU_SOURCE
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rundir.h"
#include "stats.h"
#include "run.h"

#define MAX_CLIENTS	16
#define CLIENT_MS	5000	/* to send a request, or to read a reply */
#define REQ_MAX		16384

enum { C_FREE, C_READ, C_WAIT, C_WRITE };

struct client {
	int		 state;
	int		 fd;
	int		 id;		/* for op.c: slots are reused */
	uint64_t	 deadline;	/* ms; 0 while an op runs */
	size_t		 inlen, outlen, outoff;
	char		*out;
	char		 in[REQ_MAX];
};

static struct client	clients[MAX_CLIENTS];
static int		listen_fd = -1, next_id = 1;

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
	listen_fd = fd;
	return fd;
}

static void
client_close(struct client *c)
{
	close(c->fd);
	free(c->out);
	c->out = NULL;
	c->state = C_FREE;
}

static struct client *
client_by_id(int id)
{
	int i;

	for (i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].state != C_FREE && clients[i].id == id)
			return &clients[i];
	return NULL;
}

/* The one reply to request id (gone if the client hung up meanwhile). */
void
ctl_reply(int id, const char *fmt, ...)
{
	struct client *c = client_by_id(id);
	va_list ap;
	char *s;
	int n;

	if (c == NULL || c->state == C_WRITE)
		return;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n == -1)
		err(1, NULL);
	c->out = s;
	c->outlen = (size_t)n;
	c->outoff = 0;
	c->state = C_WRITE;
	c->deadline = now_ms() + CLIENT_MS;
}

static void
show(int id)
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
	ctl_reply(id, "%s", buf);
	free(buf);
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

/* A whole request has arrived: do it, or start doing it. */
static void
request(struct client *c)
{
	char *w[4] = { NULL, NULL, NULL, NULL }, *p;
	int n = 0, i, k, *copies = NULL;

	c->in[c->inlen] = '\0';
	for (p = c->in; p < c->in + c->inlen && n < 4; p += strlen(p) + 1)
		w[n++] = p;
	c->state = C_WAIT;
	c->deadline = 0;
	if (n == 0)
		ctl_reply(c->id, "error: empty request\n");
	else if ((k = snb_ctl_nargs(w[0])) == -1 || n != k + 1)
		ctl_reply(c->id, "error: unknown request '%s' (%s)\n", w[0],
		    SNB_CTL_REQUESTS);
	else if (strcmp(w[0], "show") == 0)
		show(c->id);
	else if (strcmp(w[0], "clear") == 0)
		clear(c->id);
	else if (strcmp(w[0], "stop") == 0) {
		ctl_reply(c->id, "ok: stopping %s\n",
		    strrchr(graph_dir, '/') + 1);
		stop_requested = 1;
	} else if ((i = find_stage(w[1])) == -1 &&
	    (k = roll_copies(w[1], &copies)) == 0)
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
	free(copies);
}

static void
accept_clients(void)
{
	struct client *c;
	int fd, i;

	while ((fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC |
	    SOCK_NONBLOCK)) != -1) {
		for (i = 0; i < MAX_CLIENTS && clients[i].state != C_FREE; i++)
			;
		if (i == MAX_CLIENTS) {
			/* A new socket's buffer takes the line: no wait. */
			dprintf(fd, "error: %d control clients at once; try "
			    "again\n", MAX_CLIENTS);
			close(fd);
			continue;
		}
		c = &clients[i];
		c->state = C_READ;
		c->fd = fd;
		c->id = next_id++;
		c->inlen = 0;
		c->deadline = now_ms() + CLIENT_MS;
	}
}

static void
client_io(struct client *c, short revents)
{
	ssize_t n;

	if (c->state == C_READ && (revents & (POLLIN | POLLHUP | POLLERR))) {
		n = read(c->fd, c->in + c->inlen, REQ_MAX - 1 - c->inlen);
		if (n > 0)
			c->inlen += (size_t)n;
		if (n == 0 || c->inlen == REQ_MAX - 1)
			request(c);
		else if (n == -1 && errno != EAGAIN && errno != EINTR)
			client_close(c);
	}
	if (c->state == C_WRITE) {
		n = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);
		if (n > 0)
			c->outoff += (size_t)n;
		if (c->outoff == c->outlen ||
		    (n == -1 && errno != EAGAIN && errno != EINTR))
			client_close(c);
	}
}

int
ctl_pollfds(struct pollfd *pfd, int max)
{
	int i, n = 0;

	for (i = 0; i < MAX_CLIENTS && n < max; i++) {
		if (clients[i].state == C_READ || clients[i].state == C_WRITE) {
			pfd[n].fd = clients[i].fd;
			pfd[n].events = clients[i].state == C_READ ? POLLIN :
			    POLLOUT;
			n++;
		}
	}
	return n;
}

/* pfd: the listening socket first, then ctl_pollfds()'s. */
void
ctl_events(const struct pollfd *pfd, int n)
{
	int i, k;

	if (pfd[0].revents & POLLIN)
		accept_clients();
	for (i = 1; i < n; i++)
		for (k = 0; k < MAX_CLIENTS; k++)
			if (pfd[i].revents && (clients[k].state == C_READ ||
			    clients[k].state == C_WRITE) &&
			    clients[k].fd == pfd[i].fd)
				client_io(&clients[k], pfd[i].revents);
}

/*
 * snb-run is leaving: one try to hand each pending reply over (a reply
 * fits in the socket's buffer), without waiting for anyone.
 */
void
ctl_flush(void)
{
	int i;

	for (i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].state == C_WRITE) {
			client_io(&clients[i], POLLOUT);
			if (clients[i].state != C_FREE)
				client_close(&clients[i]);
		}
}

/* Clients too slow to ask or to read are dropped. */
uint64_t
ctl_timers(uint64_t now)
{
	uint64_t next = 0;
	int i;

	for (i = 0; i < MAX_CLIENTS; i++) {
		struct client *c = &clients[i];
		if (c->state == C_FREE || c->deadline == 0)
			continue;
		if (c->deadline <= now) {
			if (c->state == C_READ)
				warnx("control client sent no whole request "
				    "in %d ms: dropped", CLIENT_MS);
			client_close(c);
		} else if (next == 0 || c->deadline < next)
			next = c->deadline;
	}
	return next;
}
