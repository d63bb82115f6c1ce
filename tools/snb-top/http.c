/*
 * http.c: snb-top --listen.  A small HTTP/1.x server for a Prometheus
 * server to scrape: GET (or HEAD) /metrics answers the counters of every
 * graph (prom.c), read from shared memory at that moment; / answers a
 * pointer to /metrics; any other path 404, any other method 405, anything
 * that is not a request line 400, headers past REQ_MAX 431.  One request
 * per connection (Connection: close).  After the reply we shut our side
 * and read what the client still sends until it closes (for DRAIN_MS at
 * most): closing with unread data would reset the connection, and the
 * client could lose the reply (a 431 before its headers ended).
 *
 * Nothing blocks: every socket is non-blocking and one poll() serves them
 * all.  A client has CLIENT_MS to send its request and as long to take
 * the reply, else it is dropped; when MAX_CLIENTS are connected, the one
 * that has waited longest to send its request is dropped for a newcomer,
 * so idle connections cannot lock a scraper out.
 */
#define _GNU_SOURCE
#include <sys/socket.h>

#include <netdb.h>
#include <netinet/in.h>

#include <err.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>

#include "top.h"

#define MAX_CLIENTS	64
#define CLIENT_MS	5000
#define REQ_MAX		8192
#define DRAIN_MS	1000

enum { C_FREE, C_READ, C_WRITE, C_DRAIN };

struct client {
	int	 state, fd;
	double	 deadline;	/* now_s() */
	size_t	 inlen, outlen, outoff;
	char	*out;
	char	 in[REQ_MAX];
};

static struct client	*clients;

int
http_listen(const char *addr, char *errbuf, size_t errlen)
{
	struct addrinfo hints, *res;
	char host[256], *port;
	const char *errstr;
	int fd, e, one = 1, zero = 0;

	if (strlcpy(host, addr, sizeof(host)) >= sizeof(host) ||
	    (port = strrchr(host, ':')) == NULL || port[1] == '\0') {
		snprintf(errbuf, errlen, "--listen '%s': not ADDRESS:PORT "
		    "(e.g. 127.0.0.1:9469, [::1]:9469, :9469 for every "
		    "address)", addr);
		return -2;
	}
	*port++ = '\0';
	/* getaddrinfo() takes 99999 for 34463: a scraper would miss us. */
	strtonum(port, 1, 65535, &errstr);
	if (*port < '0' || *port > '9' || errstr != NULL) {
		snprintf(errbuf, errlen, "--listen '%s': bad port '%s' "
		    "(1..65535)", addr, port);
		return -2;
	}
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if (host[0] == '\0')
		hints.ai_family = AF_INET6;	/* "::", and IPv4 too below */
	if ((e = getaddrinfo(host[0] ? host : NULL, port, &hints, &res)) != 0) {
		snprintf(errbuf, errlen, "--listen '%s': %s", addr,
		    gai_strerror(e));
		return -1;
	}
	fd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof(one)) == -1 || (res->ai_family == AF_INET6 && !host[0] &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
	    sizeof(zero)) == -1) || bind(fd, res->ai_addr, res->ai_addrlen) ==
	    -1 || listen(fd, 64) == -1) {
		snprintf(errbuf, errlen, "--listen '%s': %s", addr,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
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

/* The whole reply: status line, headers, and (unless HEAD) the body. */
static void
reply(struct client *c, int head, const char *status, const char *extra,
    const char *type, const char *body, size_t len)
{
	int n;

	/* A body is text: no NUL in it. */
	n = asprintf(&c->out, "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n%s\r\n%.*s", status,
	    type, len, extra, head ? 0 : (int)len, body);
	if (n == -1)
		err(1, NULL);
	c->outlen = (size_t)n;
	c->outoff = 0;
	c->state = C_WRITE;
	c->deadline = now_s() + CLIENT_MS / 1e3;
}

static void
error_reply(struct client *c, int head, const char *status,
    const char *extra)
{
	char body[128];

	snprintf(body, sizeof(body), "%s\n", status);
	reply(c, head, status, extra, "text/plain; charset=utf-8", body,
	    strlen(body));
}

static void
metrics(struct client *c, int head, const char *run, const char *only)
{
	char errbuf[512], *buf = NULL;
	struct graph_view *g;
	size_t len = 0;
	FILE *f;
	int n;

	if ((n = graphs_load(run, only, &g, errbuf, sizeof(errbuf))) == -1) {
		warnx("%s", errbuf);
		error_reply(c, head, "503 Service Unavailable", "");
		return;
	}
	if ((f = open_memstream(&buf, &len)) == NULL)
		err(1, NULL);
	prom_write(f, g, n);
	if (fclose(f) == EOF)
		err(1, NULL);
	graphs_free(g, n);
	reply(c, head, "200 OK", "", "text/plain; version=0.0.4; "
	    "charset=utf-8", buf, len);
	free(buf);
}

/* The request line (the headers are read, not used). */
static void
request(struct client *c, const char *run, const char *only)
{
	static const char index[] = "snb-top: the counters of snb graphs "
	    "are at /metrics\n";
	char *method, *target, *version, *p, *q;
	int head;

	c->in[c->inlen] = '\0';
	p = c->in;
	method = strsep(&p, " ");
	target = strsep(&p, " ");
	version = strsep(&p, "\r\n");
	if (p == NULL || target == NULL || version == NULL || !*method ||
	    target[0] != '/' || strncmp(version, "HTTP/1.", 7) != 0 ||
	    strlen(version) != 8) {
		error_reply(c, 0, "400 Bad Request", "");
		return;
	}
	head = strcmp(method, "HEAD") == 0;
	if (!head && strcmp(method, "GET") != 0) {
		error_reply(c, 0, "405 Method Not Allowed",
		    "Allow: GET, HEAD\r\n");
		return;
	}
	if ((q = strchr(target, '?')) != NULL)
		*q = '\0';
	if (strcmp(target, "/metrics") == 0)
		metrics(c, head, run, only);
	else if (strcmp(target, "/") == 0)
		reply(c, head, "200 OK", "", "text/plain; charset=utf-8",
		    index, sizeof(index) - 1);
	else
		error_reply(c, head, "404 Not Found", "");
}

/* Headers end at an empty line (CRLF CRLF, or LF LF from a lax client). */
static int
headers_done(const struct client *c)
{
	return memmem(c->in, c->inlen, "\r\n\r\n", 4) != NULL ||
	    memmem(c->in, c->inlen, "\n\n", 2) != NULL;
}

static void
client_io(struct client *c, short revents, const char *run, const char *only)
{
	ssize_t n;

	if (c->state == C_READ) {
		n = read(c->fd, c->in + c->inlen, REQ_MAX - 1 - c->inlen);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
			client_close(c);	/* gone before asking */
			return;
		}
		if (n > 0)
			c->inlen += (size_t)n;
		if (headers_done(c))
			request(c, run, only);
		else if (c->inlen == REQ_MAX - 1)
			error_reply(c, 0, "431 Request Header Fields Too Large",
			    "");
	}
	if (c->state == C_WRITE && (revents & (POLLOUT | POLLERR | POLLHUP) ||
	    c->outoff == 0)) {
		n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
		    MSG_NOSIGNAL);
		if (n > 0)
			c->outoff += (size_t)n;
		if (n == -1 && errno != EAGAIN && errno != EINTR)
			client_close(c);
		else if (c->outoff == c->outlen) {
			shutdown(c->fd, SHUT_WR);
			c->state = C_DRAIN;
			c->deadline = now_s() + DRAIN_MS / 1e3;
		}
		return;
	}
	if (c->state == C_DRAIN) {
		n = read(c->fd, c->in, sizeof(c->in));
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			client_close(c);
	}
}

/* A free slot, else one taken from a client done or the longest silent. */
static struct client *
free_slot(void)
{
	struct client *old = NULL;
	int i;

	for (i = 0; i < MAX_CLIENTS; i++) {
		if (clients[i].state == C_FREE)
			return &clients[i];
		if (clients[i].state == C_DRAIN || (clients[i].state == C_READ &&
		    (old == NULL || (old->state == C_READ &&
		    clients[i].deadline < old->deadline))))
			old = &clients[i];
	}
	if (old != NULL)
		client_close(old);
	return old;
}

static void
accept_clients(int lfd)
{
	struct client *c;
	int fd;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) != -1) {
		if ((c = free_slot()) == NULL) {
			close(fd);	/* every slot is sending a reply */
			continue;
		}
		c->state = C_READ;
		c->fd = fd;
		c->inlen = 0;
		c->deadline = now_s() + CLIENT_MS / 1e3;
	}
}

int
http_serve(int lfd, const char *run, const char *only)
{
	struct pollfd pfd[MAX_CLIENTS + 1];
	int idx[MAX_CLIENTS + 1], i, n, timeout;
	double now, next;

	if ((clients = calloc(MAX_CLIENTS, sizeof(*clients))) == NULL)
		err(1, NULL);
	while (!quit) {
		pfd[0].fd = lfd;
		pfd[0].events = POLLIN;
		n = 1;
		now = now_s();
		next = now + 60;
		for (i = 0; i < MAX_CLIENTS; i++) {
			struct client *c = &clients[i];
			if (c->state == C_FREE)
				continue;
			if (c->deadline <= now) {
				client_close(c);	/* too slow */
				continue;
			}
			if (c->deadline < next)
				next = c->deadline;
			pfd[n].fd = c->fd;
			pfd[n].events = c->state == C_WRITE ? POLLOUT : POLLIN;
			idx[n++] = i;
		}
		timeout = (int)((next - now) * 1000) + 1;
		if (poll(pfd, (nfds_t)n, timeout) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "poll");
		}
		for (i = 1; i < n; i++)
			if (pfd[i].revents)
				client_io(&clients[idx[i]], pfd[i].revents, run,
				    only);
		if (pfd[0].revents & POLLIN)
			accept_clients(lfd);
	}
	for (i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].state != C_FREE)
			client_close(&clients[i]);
	free(clients);
	close(lfd);
	return 0;
}
