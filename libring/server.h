/*
 * server.h: one request and one reply per connection on a listening
 * stream socket, served from the caller's poll() loop without blocking it
 * (snb-run's control socket, snb-top --listen).  A request is collected as
 * it trickles in and the reply written as the client reads it, each within
 * client_ms.  Then we shut our side and read until the client closes
 * (drain_ms at most): closing with unread data would reset the
 * connection, and the client could lose the reply.
 */
#ifndef SNB_SERVER_H
#define SNB_SERVER_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

/* From SRV_READ on, a client is polled; SRV_WAIT waits for the caller. */
enum { SRV_FREE, SRV_WAIT, SRV_READ, SRV_WRITE, SRV_DRAIN };

struct srv_client {
	int		 state, fd;
	int		 id;		/* slots are reused, ids are not */
	uint64_t	 deadline;	/* CLOCK_MONOTONIC ms */
	size_t		 inlen, outlen, outoff;
	char		*in;		/* req_max bytes, NUL after inlen */
	char		*out;
};

struct server {
	int		 max;		/* clients at once */
	size_t		 req_max;
	int		 client_ms, drain_ms;
	/*
	 * Said to a newcomer when every slot is taken.  NULL: a client
	 * draining, else the one longest silent, makes room for it.
	 */
	const char	*busy;
	const char	*name;		/* to warn of a slow client, or NULL */
	/*
	 * More of c's request has come; end: no more can (EOF, or in is
	 * full).  Answer with srv_reply(), or set SRV_WAIT and answer later;
	 * a client left reading at the end is closed.
	 */
	void		(*input)(struct srv_client *c, int end);
	int		 lfd, next_id;
	struct srv_client *c;
};

uint64_t now_ms(void);		/* CLOCK_MONOTONIC */
void	srv_init(struct server *s, int lfd);
/* The listening socket, then each client polled. */
int	srv_pollfds(struct server *s, struct pollfd *pfd, int max);
void	srv_events(struct server *s, const struct pollfd *pfd, int n);
/* Drop clients past their deadline; the next deadline, 0 when none. */
uint64_t srv_timers(struct server *s, uint64_t now);
struct srv_client *srv_by_id(struct server *s, int id);
/* out: malloc'd text (no NUL in it), freed here. */
void	srv_reply(struct server *s, struct srv_client *c, char *out);
/* Leaving: one try to send each pending reply, then every client closed. */
void	srv_end(struct server *s);

#endif
