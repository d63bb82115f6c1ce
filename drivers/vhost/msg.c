/*
 * msg.c: vhost-user requests, received, checked and applied (see msg.h).
 *
 * The rules we follow from the vhost-user specification: a queue is
 * "started" by SET_VRING_KICK and stopped by GET_VRING_BASE; when
 * VHOST_USER_F_PROTOCOL_FEATURES was negotiated it starts disabled and
 * SET_VRING_ENABLE turns it on, otherwise it is enabled as it starts.  With
 * REPLY_ACK negotiated, a request carrying NEED_REPLY gets a u64 status
 * unless it has a reply of its own.
 */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memguard.h"
#include "msg.h"
#include "unixsock.h"

/* Each request as VU_REQUESTS (msg.h) describes it. */
static const struct req {
	const char	*name;
	uint32_t	 need;
	int		 fds;
	int		 queue;
} reqs[VU_MAX_REQUEST + 1] = {
#define X(r, n, need, fds, q)	[n] = { #r, need, fds, q },
	VU_REQUESTS(X)
#undef X
};

static const struct req *
req(uint32_t request)
{
	static const struct req unknown = { "unknown request", 0, 0, 0 };

	if (request <= VU_MAX_REQUEST && reqs[request].name != NULL)
		return &reqs[request];
	return &unknown;
}

const char *
vu_request_name(uint32_t request)
{
	return req(request)->name;
}

static int
fail(struct vu_dev *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->err, sizeof(d->err), fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * The one place a kick fd comes and goes.  A frontend keeps its own copy
 * of the fd it sent us, so closing ours would not take the file out of an
 * epoll set: its registration would stay, its events naming an fd we no
 * longer read, and the stage would spin on them.  Hence epoll first.
 */
static int
set_kick(struct vu_dev *d, int q, int fd)
{
	struct vu_vring *vq = &d->vq[q];
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	int watched = d->watch_ep >= 0 && q == d->watch_q;

	if (watched)
		epoll_set(d->watch_ep, EPOLL_CTL_DEL, vq->kick);
	closefd(&vq->kick);
	vq->kick = fd;
	if (fd < 0 || !watched)
		return 0;
	if (epoll_ctl(d->watch_ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
		closefd(&vq->kick);
		return fail(d, "queue %d: kick fd: epoll_ctl: %s", q,
		    strerror(errno));
	}
	return 0;
}

static void
vring_clear(struct vu_dev *d, int q)
{
	struct vu_vring *vq = &d->vq[q];

	set_kick(d, q, -1);
	closefd(&vq->call);
	memset(vq, 0, sizeof(*vq));
	vq->kick = vq->call = -1;
}

void
vu_init(struct vu_dev *d)
{
	int i;

	memset(d, 0, sizeof(*d));
	d->hdr_len = 10;
	d->watch_ep = -1;
	for (i = 0; i < VU_NQUEUES; i++)
		d->vq[i].kick = d->vq[i].call = -1;
}

static void
unmap_regions(struct vu_region *reg, int n)
{
	int i;

	for (i = 0; i < n; i++)
		memguard_unmap(reg[i].map, reg[i].maplen);
}

void
vu_reset(struct vu_dev *d)
{
	int i, ep = d->watch_ep, q = d->watch_q;

	unmap_regions(d->regions, d->nregions);
	for (i = 0; i < VU_NQUEUES; i++)
		vring_clear(d, i);
	vu_init(d);
	d->watch_ep = ep;
	d->watch_q = q;
}

/*
 * The rings of queue i, whose configuration vq holds (d's own or a copy
 * being checked against a new table), in the n regions reg: all NULL while
 * the queue lacks its size or addresses, or when they lie outside the
 * regions (the frontend's error, -1 with d->err set: the queue cannot run).
 */
static int
find_rings(struct vu_dev *d, const struct vu_region *reg, int n, int i,
    struct vu_vring *vq)
{
	uint64_t num = vq->num;

	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = NULL;
	vq->used_flags = 0xffff;	/* unknown: the next vq_want_kicks writes */
	if (!vq->addr_set || num == 0 || n == 0)
		return 0;
	/* Alignment from virtio 1.x 2.7: descriptors 16, avail 2, used 4. */
	if ((vq->addr.desc & 15) || (vq->addr.avail & 1) || (vq->addr.used & 3))
		return fail(d, "queue %d: misaligned ring address", i);
	vq->desc = vu_region_addr(reg, n, vq->addr.desc, 16 * num, 1);
	vq->avail = vu_region_addr(reg, n, vq->addr.avail, 6 + 2 * num, 1);
	vq->used = vu_region_addr(reg, n, vq->addr.used, 6 + 8 * num, 1);
	if (vq->desc == NULL || vq->avail == NULL || vq->used == NULL ||
	    ((uintptr_t)vq->desc & 15) || ((uintptr_t)vq->avail & 1) ||
	    ((uintptr_t)vq->used & 3)) {
		/* (A region at an odd file offset can misalign them here.) */
		vq->desc = NULL;
		vq->avail = NULL;
		vq->used = NULL;
		return fail(d, "queue %d: ring outside guest memory or "
		    "misaligned", i);
	}
	return 0;
}

static int
set_mem_table(struct vu_dev *d, const struct vu_msg *m, int *fds, int nfds)
{
	const struct vu_mem *mem = (const void *)m->p.bytes;
	struct vu_region nr[VU_MAX_REGIONS];
	struct vu_vring nq[VU_NQUEUES];
	char why[96];
	uint32_t i, n;
	int j;

	n = mem->nregions;	/* vu_handle checked the size of *mem */
	if (n == 0 || n > VU_MAX_REGIONS)
		return fail(d, "SET_MEM_TABLE: %u regions (1..%d)", n,
		    VU_MAX_REGIONS);
	if (m->size < sizeof(*mem) + n * sizeof(mem->regions[0]))
		return fail(d, "SET_MEM_TABLE: %u regions in %u bytes", n,
		    m->size);
	if ((uint32_t)nfds != n)
		return fail(d, "SET_MEM_TABLE: %u regions, %d descriptors", n,
		    nfds);
	memset(nr, 0, sizeof(nr));
	for (i = 0; i < n; i++) {
		const struct vu_mem_region *r = &mem->regions[i];
		uint64_t end;

		snprintf(why, sizeof(why), "size or address out of range");
		if (r->size == 0 || r->size > (1ULL << 48) ||
		    r->offset > (1ULL << 48) ||
		    __builtin_add_overflow(r->gpa, r->size, &end) ||
		    __builtin_add_overflow(r->uva, r->size, &end))
			break;
		/*
		 * Mapping past the end of the file would fault (SIGBUS) on
		 * first touch: the file must hold the whole region, and is
		 * sealed against shrinking where it can be; guarded before
		 * the old table goes, so that a region that cannot be is
		 * refused as one that does not fit (see memguard.h).
		 */
		nr[i].maplen = (size_t)(r->offset + r->size);
		if ((nr[i].map = memguard_map(fds[i], nr[i].maplen, 0,
		    &d->mem_lost, why, sizeof(why))) == NULL)
			break;
		nr[i].gpa = r->gpa;
		nr[i].size = r->size;
		nr[i].uva = r->uva;
		nr[i].host = (uint8_t *)nr[i].map + r->offset;
	}
	if (i < n) {
		unmap_regions(nr, (int)i);
		return fail(d, "SET_MEM_TABLE: region %u (size %#llx, offset "
		    "%#llx): %s", i, (unsigned long long)mem->regions[i].size,
		    (unsigned long long)mem->regions[i].offset, why);
	}
	/*
	 * QEMU sends a new table when guest memory changes.  Both queues'
	 * rings are found in the new table before anything is replaced: a
	 * queue that does not fit refuses the table, and the old one stays
	 * in use with every ring pointer still inside it.  No queue ever
	 * points into memory that is no longer mapped.
	 */
	memcpy(nq, d->vq, sizeof(nq));
	for (j = 0; j < VU_NQUEUES; j++)
		if (find_rings(d, nr, (int)n, j, &nq[j]) == -1) {
			unmap_regions(nr, (int)n);
			return -1;
		}
	unmap_regions(d->regions, d->nregions);
	memcpy(d->regions, nr, sizeof(nr));
	memcpy(d->vq, nq, sizeof(nq));
	d->nregions = (int)n;
	return 0;
}

/* The queue index of a vring request, checked. */
static int
vring_index(struct vu_dev *d, const struct vu_msg *m, uint32_t index)
{
	if (index >= VU_NQUEUES)
		return fail(d, "%s: queue %u (we have %d)",
		    vu_request_name(m->request), index, VU_NQUEUES);
	return (int)index;
}

/* SET_VRING_KICK / CALL / ERR: a u64 with the index and a no-fd bit. */
static int
set_vring_fd(struct vu_dev *d, const struct vu_msg *m, int *fds, int nfds)
{
	uint64_t v = m->p.u64;
	int i, fd, want = (v & VU_VRING_NOFD) ? 0 : 1;

	if (v & ~(uint64_t)(VU_VRING_NOFD | 0xff))
		return fail(d, "%s: bad payload %#llx",
		    vu_request_name(m->request), (unsigned long long)v);
	if (nfds != want)
		return fail(d, "%s: %d descriptors, expected %d",
		    vu_request_name(m->request), nfds, want);
	if ((i = vring_index(d, m, (uint32_t)(v & 0xff))) < 0)
		return -1;
	/* Anything else could make epoll fail or a write block. */
	if (want && !fd_is_eventfd(fds[0]))
		return fail(d, "%s: queue %d: the descriptor is not an eventfd",
		    vu_request_name(m->request), i);
	if (m->request == VU_SET_VRING_KICK) {
		fd = want ? fds[0] : -1;
		fds[0] = -1;	/* set_kick owns it now, even when it fails */
		if (set_kick(d, i, fd) == -1)
			return -1;
		/* No fd: the queue is polled, which is what we do anyway. */
		d->vq[i].started = 1;
		if (!(d->features & (1ULL << VHOST_USER_F_PROTOCOL_FEATURES)))
			d->vq[i].enabled = 1;
		return 0;
	}
	/* ERR's fd is checked, then closed: we report no errors on it. */
	if (m->request == VU_SET_VRING_CALL) {
		closefd(&d->vq[i].call);
		d->vq[i].call = want ? fds[0] : -1;
	}
	return 0;
}

int
vu_check_header(struct vu_dev *d, const struct vu_msg *m)
{
	if ((m->flags & 3) != VU_VERSION)
		return fail(d, "version %u (we speak 1)", m->flags & 3);
	if (m->flags & VU_FLAG_REPLY)
		return fail(d, "%s: a request with the reply flag",
		    vu_request_name(m->request));
	if (m->size > VU_MAX_PAYLOAD)
		return fail(d, "%s: payload of %u bytes (at most %d)",
		    vu_request_name(m->request), m->size, VU_MAX_PAYLOAD);
	return 0;
}

static int
reply_u64(struct vu_msg *reply, size_t *len, uint64_t v)
{
	reply->p.u64 = v;
	reply->size = 8;
	*len = VU_HDR_SIZE + 8;
	return 0;
}

static int
apply(struct vu_dev *d, const struct vu_msg *m, int *fds, int nfds,
    struct vu_msg *reply, size_t *rlen)
{
	struct vu_state st;
	uint64_t v = m->p.u64;
	int i = 0;

	if (nfds && !req(m->request)->fds)
		return fail(d, "%s: %d unexpected descriptors",
		    vu_request_name(m->request), nfds);
	memcpy(&st, m->p.bytes, sizeof(st));
	/* The index leads both vu_state and vu_addr. */
	if (req(m->request)->queue && (i = vring_index(d, m, st.index)) < 0)
		return -1;
	switch (m->request) {
	case VU_GET_FEATURES:
		return reply_u64(reply, rlen, VU_FEATURES);
	case VU_SET_FEATURES:
		if (v & ~VU_FEATURES)
			return fail(d, "SET_FEATURES %#llx: not offered",
			    (unsigned long long)v);
		d->features = v;
		/* Virtio 1.x 5.1.6: the header is 12 bytes with VERSION_1 or
		 * MRG_RXBUF (num_buffers), 10 bytes for a legacy device. */
		d->hdr_len = (v & ((1ULL << VIRTIO_F_VERSION_1) |
		    (1ULL << VIRTIO_NET_F_MRG_RXBUF))) ? 12 : 10;
		return 0;
	case VU_GET_PROTOCOL_FEATURES:
		return reply_u64(reply, rlen, VU_PROTOCOL_FEATURES);
	case VU_SET_PROTOCOL_FEATURES:
		if (v & ~VU_PROTOCOL_FEATURES)
			return fail(d, "SET_PROTOCOL_FEATURES %#llx: not "
			    "offered", (unsigned long long)v);
		d->proto = v;
		return 0;
	case VU_GET_QUEUE_NUM:
		return reply_u64(reply, rlen, 1);
	case VU_RESET_OWNER:
		/* Deprecated; QEMU sends it on stop.  Forget the queues. */
		for (i = 0; i < VU_NQUEUES; i++)
			vring_clear(d, i);
		return 0;
	case VU_SET_MEM_TABLE:
		return set_mem_table(d, m, fds, nfds);
	case VU_SET_VRING_NUM:
		/* Split rings: a power of two (virtio 1.x 2.7). */
		if (st.num == 0 || st.num > VU_MAX_QUEUE_SIZE ||
		    (st.num & (st.num - 1)))
			return fail(d, "SET_VRING_NUM: size %u", st.num);
		d->vq[i].num = st.num;
		return find_rings(d, d->regions, d->nregions, i, &d->vq[i]);
	case VU_SET_VRING_ADDR:
		memcpy(&d->vq[i].addr, m->p.bytes, sizeof(d->vq[i].addr));
		d->vq[i].addr_set = 1;
		return find_rings(d, d->regions, d->nregions, i, &d->vq[i]);
	case VU_SET_VRING_BASE:
		if (st.num > 0xffff)
			return fail(d, "SET_VRING_BASE: %u", st.num);
		d->vq[i].last_avail = d->vq[i].used_idx = (uint16_t)st.num;
		return 0;
	case VU_GET_VRING_BASE:
		/* Stops the queue; its fds are no longer to be used. */
		d->vq[i].started = 0;
		set_kick(d, i, -1);
		st.num = d->vq[i].last_avail;
		memcpy(&v, &st, sizeof(v));	/* a vu_state is 8 bytes */
		return reply_u64(reply, rlen, v);
	case VU_SET_VRING_KICK:
	case VU_SET_VRING_CALL:
	case VU_SET_VRING_ERR:
		return set_vring_fd(d, m, fds, nfds);
	case VU_SET_VRING_ENABLE:
		if (st.num > 1)
			return fail(d, "SET_VRING_ENABLE: %u", st.num);
		d->vq[i].enabled = (int)st.num;
		return 0;
	case VU_SET_OWNER:	/* the one connection is the owner */
	case VU_SEND_RARP:	/* we keep no MAC table to announce */
		return 0;
	case VU_SET_STATUS:
		if (v > 0xff)
			return fail(d, "SET_STATUS %#llx", (unsigned long long)v);
		d->status = (uint8_t)v;
		return 0;
	case VU_GET_STATUS:
		return reply_u64(reply, rlen, d->status);
	default:
		return fail(d, "unsupported request %u", m->request);
	}
}

int
vu_handle(struct vu_dev *d, const struct vu_msg *m, int *fds, int nfds,
    struct vu_msg *reply, size_t *reply_len)
{
	int j, r;

	memset(reply, 0, VU_HDR_SIZE + 8);
	reply->request = m->request;
	reply->flags = VU_VERSION | VU_FLAG_REPLY;
	*reply_len = 0;
	if (m->size < req(m->request)->need)
		r = fail(d, "%s: payload of %u bytes, needs %u",
		    vu_request_name(m->request), m->size,
		    req(m->request)->need);
	else
		r = apply(d, m, fds, nfds, reply, reply_len);
	/* Only a queue's eventfd is kept: close the rest. */
	for (j = 0; j < nfds; j++)
		if (fds[j] >= 0 && (r == -1 || req(m->request)->fds != 2))
			close(fds[j]);
	if (r == -1)
		return -1;
	if (*reply_len == 0 && (d->proto & (1ULL << VU_PROTO_F_REPLY_ACK)) &&
	    (m->flags & VU_FLAG_NEED_REPLY))
		reply_u64(reply, reply_len, 0);
	return 0;
}

/* --- receiving (see msg.h) --- */

void
vu_rx_clear(struct vu_rx *rx)
{
	while (rx->nfds > 0)
		close(rx->fds[--rx->nfds]);
	rx->got = 0;
	rx->trunc = 0;
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
