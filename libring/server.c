/*
 * server.c: one request and one reply per connection, without blocking
 * (server.h).
 */
#define _GNU_SOURCE
#include <sys/socket.h>

#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server.h"

uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
srv_init(struct server *s, int lfd)
{
	char *in;
	int i;

	if ((s->c = calloc((size_t)s->max, sizeof(*s->c))) == NULL ||
	    (in = reallocarray(NULL, (size_t)s->max, s->req_max)) == NULL)
		err(1, NULL);
	for (i = 0; i < s->max; i++)
		s->c[i].in = in + (size_t)i * s->req_max;
	s->lfd = lfd;
	s->next_id = 1;
}

static void
client_close(struct srv_client *c)
{
	close(c->fd);
	free(c->out);
	c->out = NULL;
	c->state = SRV_FREE;
}

struct srv_client *
srv_by_id(struct server *s, int id)
{
	int i;

	for (i = 0; i < s->max; i++)
		if (s->c[i].state != SRV_FREE && s->c[i].id == id)
			return &s->c[i];
	return NULL;
}

void
srv_reply(struct server *s, struct srv_client *c, char *out)
{
	c->out = out;
	c->outlen = strlen(out);
	c->outoff = 0;
	c->state = SRV_WRITE;
	c->deadline = now_ms() + (uint64_t)s->client_ms;
}

static void
client_io(struct server *s, struct srv_client *c)
{
	ssize_t n;
	int end;

	if (c->state == SRV_READ) {
		n = read(c->fd, c->in + c->inlen, s->req_max - 1 - c->inlen);
		if (n == -1 && errno != EAGAIN && errno != EINTR)
			client_close(c);
		if (n == -1)
			return;
		c->inlen += (size_t)n;
		c->in[c->inlen] = '\0';
		end = n == 0 || c->inlen == s->req_max - 1;
		s->input(c, end);
		if (c->state == SRV_READ && end)
			client_close(c);
	}
	if (c->state == SRV_WRITE) {
		n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
		    MSG_NOSIGNAL);
		if (n > 0)
			c->outoff += (size_t)n;
		if (n == -1 && errno != EAGAIN && errno != EINTR)
			client_close(c);
		else if (c->outoff == c->outlen) {
			shutdown(c->fd, SHUT_WR);
			c->state = SRV_DRAIN;
			c->deadline = now_ms() + (uint64_t)s->drain_ms;
		}
	}
	if (c->state == SRV_DRAIN) {
		n = read(c->fd, c->in, s->req_max);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			client_close(c);
	}
}

/* A free slot; or, unless s->busy, one taken from another client. */
static struct srv_client *
free_slot(struct server *s)
{
	struct srv_client *c, *old = NULL;

	for (c = s->c; c < s->c + s->max; c++) {
		if (c->state == SRV_FREE)
			return c;
		if (c->state == SRV_DRAIN || (c->state == SRV_READ &&
		    (old == NULL || (old->state == SRV_READ &&
		    c->deadline < old->deadline))))
			old = c;
	}
	if (old == NULL || s->busy != NULL)
		return NULL;
	client_close(old);
	return old;
}

static void
accept_clients(struct server *s)
{
	struct srv_client *c;
	int fd;

	while ((fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) != -1) {
		if ((c = free_slot(s)) == NULL) {
			/* A new socket's buffer takes the line: no wait. */
			if (s->busy != NULL)
				send(fd, s->busy, strlen(s->busy),
				    MSG_NOSIGNAL);
			close(fd);
			continue;
		}
		c->state = SRV_READ;
		c->fd = fd;
		c->id = s->next_id++;
		c->inlen = 0;
		c->deadline = now_ms() + (uint64_t)s->client_ms;
	}
}

int
srv_pollfds(struct server *s, struct pollfd *pfd, int max)
{
	int i, n = 1;

	pfd[0].fd = s->lfd;
	pfd[0].events = POLLIN;
	for (i = 0; i < s->max && n < max; i++)
		if (s->c[i].state >= SRV_READ) {
			pfd[n].fd = s->c[i].fd;
			pfd[n++].events = s->c[i].state == SRV_WRITE ?
			    POLLOUT : POLLIN;
		}
	return n;
}

void
srv_events(struct server *s, const struct pollfd *pfd, int n)
{
	int i, k;

	for (i = 1; i < n; i++)
		for (k = 0; k < s->max && pfd[i].revents; k++)
			if (s->c[k].state >= SRV_READ &&
			    s->c[k].fd == pfd[i].fd) {
				client_io(s, &s->c[k]);
				break;
			}
	/* After: a slot taken from a client would change its fd. */
	if (pfd[0].revents & POLLIN)
		accept_clients(s);
}

uint64_t
srv_timers(struct server *s, uint64_t now)
{
	struct srv_client *c;
	uint64_t next = 0;

	for (c = s->c; c < s->c + s->max; c++) {
		if (c->state < SRV_READ)
			continue;
		if (c->deadline <= now) {
			if (c->state == SRV_READ && s->name != NULL)
				warnx("%s sent no whole request in %d ms: "
				    "dropped", s->name, s->client_ms);
			client_close(c);
		} else if (next == 0 || c->deadline < next)
			next = c->deadline;
	}
	return next;
}

void
srv_end(struct server *s)
{
	struct srv_client *c;

	for (c = s->c; c < s->c + s->max; c++) {
		if (c->state == SRV_WRITE)
			client_io(s, c);
		if (c->state != SRV_FREE)
			client_close(c);
	}
}
