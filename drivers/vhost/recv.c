/*
 * recv.c: vhost-user requests read a piece at a time (see recv.h).
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "recv.h"
#include "unixsock.h"

void
vu_rx_init(struct vu_rx *rx)
{
	rx->got = 0;
	rx->nfds = 0;
	rx->trunc = 0;
}

void
vu_rx_clear(struct vu_rx *rx)
{
	int i;

	for (i = 0; i < rx->nfds; i++)
		close(rx->fds[i]);
	vu_rx_init(rx);
}

static int
error(struct vu_rx *rx, struct vu_dev *d, const char *what, int e)
{
	snprintf(d->err, sizeof(d->err), "%s%s%s", what, e ? ": " : "",
	    e ? strerror(e) : "");
	vu_rx_clear(rx);
	return VU_RX_ERROR;
}

int
vu_rx_read(struct vu_rx *rx, int fd, struct vu_dev *d)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(VU_MAX_FDS * sizeof(int))];
	} cm;
	struct msghdr mh;
	struct iovec iov;
	size_t want;
	ssize_t r;

	for (;;) {
		/* The header, then as much payload as it announces: the
		 * payload sits 16 bytes into struct vu_msg, not 12. */
		if (rx->got < VU_HDR_SIZE) {
			iov.iov_base = (char *)&rx->m + rx->got;
			iov.iov_len = VU_HDR_SIZE - rx->got;
		} else {
			want = VU_HDR_SIZE + rx->m.size;
			if (rx->got == want && rx->trunc)
				return error(rx, d, "more than 8 descriptors "
				    "with a request", 0);
			if (rx->got == want)
				return VU_RX_DONE;
			iov.iov_base = rx->m.p.bytes + (rx->got - VU_HDR_SIZE);
			iov.iov_len = want - rx->got;
		}
		mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1,
		    .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
		r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (r == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
		    errno == EINTR))
			return VU_RX_MORE;
		if ((r == -1 && errno == ECONNRESET) ||
		    (r == 0 && rx->got == 0)) {
			vu_rx_clear(rx);
			return VU_RX_CLOSED;
		}
		if (r == -1)
			return error(rx, d, "recvmsg", errno);
		if (r == 0)
			return error(rx, d, "message cut short", 0);
		/* Those that do not fit are closed, the request refused. */
		if (unix_take_fds(&mh, rx->fds, &rx->nfds, VU_MAX_FDS))
			rx->trunc = 1;
		rx->got += (size_t)r;
		/* The announced size is checked before any payload is
		 * read into a buffer of VU_MAX_PAYLOAD bytes. */
		if (rx->got == VU_HDR_SIZE &&
		    vu_check_header(d, &rx->m) == -1) {
			vu_rx_clear(rx);
			return VU_RX_ERROR;
		}
	}
}
