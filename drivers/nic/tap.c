/*
 * tap.c: the tap back-end: tap:NAME creates the tap device NAME, or
 * attaches to it when it exists (whose it then is: nic.c's tap_owner), and
 * brings it up.  No IFF_VNET_HDR: the host then computes checksums and
 * segments before handing frames over, so what we read is what a wire
 * would carry.
 */
#include <sys/ioctl.h>
#include <sys/uio.h>

#include <linux/if_tun.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

#include "nic.h"

#define MAX_FRAME	65536	/* anything larger than a slot is dropped */

struct tap {
	unsigned char	 scratch[MAX_FRAME];	/* frames we drop land here */
};

static int
tap_open(struct nic *nic, char *errbuf, size_t len)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
	int e;

	nic->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (nic->fd == -1)
		return nic_fail(errbuf, len, errno, "/dev/net/tun");
	strlcpy(ifr.ifr_name, nic->ifname, sizeof(ifr.ifr_name));
	if (ioctl(nic->fd, TUNSETIFF, &ifr) == -1) {
		e = errno;
		/* EINVAL: the name is taken by a device that is no tap (or
		 * a tun); EBUSY: another process has the tap open. */
		return nic_fail(errbuf, len, e, "TUNSETIFF%s", e == EINVAL ?
		    " (not a tap device?)" : e == EBUSY ? " (in use?)" : "");
	}
	if ((e = nic_set_up(nic->ifname)) != 0)
		return nic_fail(errbuf, len, e, "bringing %s up", nic->ifname);
	nic->ifindex = (int)if_nametoindex(nic->ifname);
	return 0;
}

static void
tap_rx(struct nic *nic, struct rx_burst *b)
{
	struct tap *t = nic->priv;
	struct iovec iov[2];
	ssize_t n;
	int iovcnt;

	while (b->seen < b->budget) {
		/* Read straight into the next slot when there is room; the
		 * scratch buffer behind it catches an oversize frame, so its
		 * length is known and it is dropped whole. */
		iovcnt = 0;
		if (b->n < b->room) {
			iov[iovcnt].iov_base = ring_slot(b->ring, b->n)->data;
			iov[iovcnt++].iov_len = b->ring->capacity;
		}
		iov[iovcnt].iov_base = t->scratch;
		iov[iovcnt++].iov_len = sizeof(t->scratch);
		if ((n = readv(nic->fd, iov, iovcnt)) == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EBADFD || errno == ENODEV)
				errx(1, "%s: tap removed", nic->ifname);
			return;		/* EAGAIN: nothing more to read */
		}
		/* nic_rx_slot() hands back the slot we read into, or counts
		 * the drop; nothing more to copy. */
		(void)nic_rx_slot(nic, b, (uint32_t)n, b->ts_ns);
	}
}

static uint32_t
tap_tx(struct nic *nic, struct ring *in, uint32_t n)
{
	struct packet *p;
	uint32_t i, len;

	for (i = 0; i < n; i++) {
		p = ring_peek(in, i);
		len = nic_tx_len(in, p);
		if (write(nic->fd, p->data, len) == (ssize_t)len) {
			nic_tx_sent(nic, len);
			continue;
		}
		if (errno == EINTR || errno == EAGAIN)
			break;
		if (errno == EIO || errno == ENETDOWN || errno == ENXIO)
			return nic_tx_lost(nic, i, n);
		(*nic->c.drop_tx_error)++;
	}
	return i;
}

/* The descriptor is open (or -1): tap_open made it first. */
static void
tap_release(struct nic *nic)
{
	close(nic->fd);
}

const struct nic_ops tap_ops = {
	.name = "tap",
	.caps = "CAP_NET_ADMIN",
	.size = sizeof(struct tap),
	.open = tap_open,
	.rx = tap_rx,
	.tx = tap_tx,
	.release = tap_release,
};
