/*
 * recv.h: receiving vhost-user requests without ever waiting for them.
 *
 * The control socket is read from the breathe loop, so a read must not
 * block: a frontend that sends a request a byte at a time would stall the
 * data path for as long as it likes.  The socket is non-blocking and what
 * has arrived of a request (bytes and descriptors) waits here, per
 * connection, until the rest comes.  A read never goes past the end of
 * the current request, so the descriptors it brings belong to it.
 */
#ifndef SNB_VHOST_RECV_H
#define SNB_VHOST_RECV_H

#include <stddef.h>

#include "msg.h"

struct vu_rx {
	struct vu_msg	 m;		/* header, then payload, as they come */
	size_t		 got;		/* bytes of header + payload so far */
	int		 fds[VU_MAX_FDS];
	int		 nfds;
	int		 trunc;		/* more descriptors than fit: refused */
};

enum {
	VU_RX_ERROR = -1,	/* malformed: d->err says why, disconnect */
	VU_RX_MORE = 0,		/* nothing more to read now */
	VU_RX_DONE = 1,		/* rx->m and rx->fds hold a whole request */
	VU_RX_CLOSED = 2	/* the frontend hung up */
};

/* An empty buffer (closes nothing). */
void	vu_rx_init(struct vu_rx *);
/* Close the descriptors of a partial request and empty the buffer. */
void	vu_rx_clear(struct vu_rx *);
/*
 * Read from the non-blocking socket fd what it has of the current request,
 * up to its end.  After VU_RX_DONE the caller owns rx->fds (rx->nfds of
 * them) and calls vu_rx_init before the next read.
 */
int	vu_rx_read(struct vu_rx *rx, int fd, struct vu_dev *d);

#endif
