/*
 * http.c: snb-top --listen.  A small HTTP/1.x server for a Prometheus
 * server to scrape: GET (or HEAD) /metrics answers the counters of every
 * graph (prom.c), read from shared memory at that moment; / answers a
 * pointer to /metrics; any other path 404, any other method 405, anything
 * that is not a request line 400, headers past 8 KiB 431.  One request per
 * connection (Connection: close), served without blocking (server.h); a
 * client waiting to send its request makes room for a newcomer, so idle
 * connections cannot lock a scraper out.
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

#include "server.h"
#include "top.h"

#define MAX_CLIENTS	64

static void	input(struct srv_client *, int);

static struct server srv = {
	.max = MAX_CLIENTS,
	.req_max = 8192,
	.client_ms = 5000,
	.drain_ms = 1000,
	.input = input,
};
static const char *run, *only;

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

/* The whole reply: status line, headers, and (unless HEAD) the body (text). */
static void
reply(struct srv_client *c, int head, const char *status, const char *extra,
    const char *type, const char *body)
{
	char *s;

	if (asprintf(&s, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: "
	    "%zu\r\nConnection: close\r\n%s\r\n%s", status, type,
	    strlen(body), extra, head ? "" : body) == -1)
		err(1, NULL);
	srv_reply(&srv, c, s);
}

static void
error_reply(struct srv_client *c, int head, const char *status,
    const char *extra)
{
	char body[128];

	snprintf(body, sizeof(body), "%s\n", status);
	reply(c, head, status, extra, "text/plain; charset=utf-8", body);
}

static void
metrics(struct srv_client *c, int head)
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
	    "charset=utf-8", buf);
	free(buf);
}

/* The request line (the headers are read, not used). */
static void
request(struct srv_client *c)
{
	static const char index[] = "snb-top: the counters of snb graphs "
	    "are at /metrics\n";
	char *method, *target, *version, *p, *q;
	int head;

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
		metrics(c, head);
	else if (strcmp(target, "/") == 0)
		reply(c, head, "200 OK", "", "text/plain; charset=utf-8",
		    index);
	else
		error_reply(c, head, "404 Not Found", "");
}

/* Headers end at an empty line (CRLF CRLF, or LF LF from a lax client). */
static void
input(struct srv_client *c, int end)
{
	if (memmem(c->in, c->inlen, "\r\n\r\n", 4) != NULL ||
	    memmem(c->in, c->inlen, "\n\n", 2) != NULL)
		request(c);
	else if (c->inlen == srv.req_max - 1)
		error_reply(c, 0, "431 Request Header Fields Too Large", "");
}

int
http_serve(int lfd, const char *run_dir, const char *graph)
{
	struct pollfd pfd[MAX_CLIENTS + 1];
	uint64_t now, next;
	int n;

	run = run_dir;
	only = graph;
	srv_init(&srv, lfd);
	while (!quit) {
		now = now_ms();
		next = srv_timers(&srv, now);
		n = srv_pollfds(&srv, pfd, MAX_CLIENTS + 1);
		if (poll(pfd, (nfds_t)n, next ? (int)(next - now) : -1) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "poll");
		}
		srv_events(&srv, pfd, n);
	}
	srv_end(&srv);
	close(lfd);
	return 0;
}
