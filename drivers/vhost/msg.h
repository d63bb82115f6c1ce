/*
 * msg.h: the vhost-user control protocol, backend side, for snb-vhost.
 *
 * A frontend (QEMU, DPDK's virtio_user) connects to our UNIX socket and
 * sends requests: a 12-byte header (request, flags, payload size) and a
 * payload, with file descriptors (guest memory, eventfds) as SCM_RIGHTS.
 * This file parses and checks every request, applies it to a struct vu_dev
 * (features, the memory table, the two virtqueues' configuration) and
 * builds the reply; the one I/O here is vu_rx_read() on the socket the
 * caller gives, so the fuzz target (fuzz/vhost_msg_fuzz.c) drives exactly
 * the code the driver runs.
 *
 * Nothing a frontend says is trusted: payload sizes are checked per
 * request, memory regions against their file's size, ring addresses and
 * sizes against the regions, and every descriptor the data path follows is
 * translated through vu_gpa(), which checks the whole buffer lies inside
 * one region.  An error sets dev->err and the caller disconnects.
 */
#ifndef SNB_VHOST_MSG_H
#define SNB_VHOST_MSG_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Payload layouts (vhost-user spec, "Message types"). */
struct vu_state {
	uint32_t	index;
	uint32_t	num;
};

struct vu_addr {
	uint32_t	index;
	uint32_t	flags;
	uint64_t	desc;
	uint64_t	used;
	uint64_t	avail;
	uint64_t	log;
};

struct vu_mem_region {
	uint64_t	gpa;
	uint64_t	size;
	uint64_t	uva;
	uint64_t	offset;
};

struct vu_mem {
	uint32_t	nregions;
	uint32_t	padding;
	struct vu_mem_region regions[];
};

/*
 * Requests we know (frontend to backend): X(name, number, payload bytes
 * needed (more is accepted and ignored), descriptors taken (1) and kept
 * (2: a queue's eventfd; a mapping holds its own reference to the file),
 * payload led by a queue index (a vu_state or vu_addr)).
 */
#define VU_REQUESTS(X)						\
	X(GET_FEATURES, 1, 0, 0, 0)				\
	X(SET_FEATURES, 2, 8, 0, 0)				\
	X(SET_OWNER, 3, 0, 0, 0)				\
	X(RESET_OWNER, 4, 0, 0, 0)				\
	X(SET_MEM_TABLE, 5, sizeof(struct vu_mem), 1, 0)	\
	X(SET_LOG_BASE, 6, 0, 0, 0)				\
	X(SET_LOG_FD, 7, 0, 0, 0)				\
	X(SET_VRING_NUM, 8, sizeof(struct vu_state), 0, 1)	\
	X(SET_VRING_ADDR, 9, sizeof(struct vu_addr), 0, 1)	\
	X(SET_VRING_BASE, 10, sizeof(struct vu_state), 0, 1)	\
	X(GET_VRING_BASE, 11, sizeof(struct vu_state), 0, 1)	\
	X(SET_VRING_KICK, 12, 8, 2, 0)				\
	X(SET_VRING_CALL, 13, 8, 2, 0)				\
	X(SET_VRING_ERR, 14, 8, 1, 0)				\
	X(GET_PROTOCOL_FEATURES, 15, 0, 0, 0)			\
	X(SET_PROTOCOL_FEATURES, 16, 8, 0, 0)			\
	X(GET_QUEUE_NUM, 17, 0, 0, 0)				\
	X(SET_VRING_ENABLE, 18, sizeof(struct vu_state), 0, 1)	\
	X(SEND_RARP, 19, 8, 0, 0)				\
	X(SET_STATUS, 39, 8, 0, 0)				\
	X(GET_STATUS, 40, 0, 0, 0)
#define X(r, n, need, fds, q)	VU_##r = n,
enum { VU_REQUESTS(X) VU_MAX_REQUEST = 40 };
#undef X

#define VU_VERSION		0x1	/* flags bits 0-1 */
#define VU_FLAG_REPLY		0x4
#define VU_FLAG_NEED_REPLY	0x8
#define VU_HDR_SIZE		12
#define VU_MAX_PAYLOAD		4096	/* ours; the largest we use is 264 */
#define VU_MAX_FDS		8
#define VU_MAX_REGIONS		8
#define VU_VRING_NOFD		0x100	/* kick/call/err payload: no fd */

/* Virtio feature bits (virtio 1.x spec, 5.1.3 and 6). */
#define VIRTIO_NET_F_MRG_RXBUF		15
#define VIRTIO_F_ANY_LAYOUT		27
#define VIRTIO_F_RING_INDIRECT_DESC	28
#define VHOST_USER_F_PROTOCOL_FEATURES	30
#define VIRTIO_F_VERSION_1		32
#define VU_PROTO_F_MQ			0
#define VU_PROTO_F_REPLY_ACK		3
#define VU_PROTO_F_STATUS		16
#define VIRTIO_STATUS_DRIVER_OK		4

/*
 * What we offer.  No checksum or segmentation offloads (every frame
 * crosses complete and checksummed: the graph works on the CPU), no
 * EVENT_IDX (we suppress notifications with the ring flags instead), no
 * control queue, no multiqueue: one rx and one tx virtqueue.
 */
#define VU_FEATURES	((1ULL << VIRTIO_NET_F_MRG_RXBUF) | \
			 (1ULL << VIRTIO_F_ANY_LAYOUT) | \
			 (1ULL << VIRTIO_F_RING_INDIRECT_DESC) | \
			 (1ULL << VHOST_USER_F_PROTOCOL_FEATURES) | \
			 (1ULL << VIRTIO_F_VERSION_1))
#define VU_PROTOCOL_FEATURES	((1ULL << VU_PROTO_F_MQ) | \
				 (1ULL << VU_PROTO_F_REPLY_ACK) | \
				 (1ULL << VU_PROTO_F_STATUS))

/* Split virtqueue layout (virtio 1.x, 2.7), little-endian in memory. */
#define VRING_DESC_F_NEXT	1
#define VRING_DESC_F_WRITE	2
#define VRING_DESC_F_INDIRECT	4
#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_USED_F_NO_NOTIFY	1
#define VU_MAX_QUEUE_SIZE	32768

struct vring_desc {
	uint64_t	addr;		/* guest-physical */
	uint32_t	len;
	uint16_t	flags;
	uint16_t	next;
};

struct vring_avail {
	uint16_t	flags;
	uint16_t	idx;		/* where the driver puts the next entry */
	uint16_t	ring[];
};

struct vring_used_elem {
	uint32_t	id;		/* head of the chain handed back */
	uint32_t	len;		/* bytes written into it */
};

struct vring_used {
	uint16_t	flags;
	uint16_t	idx;
	struct vring_used_elem ring[];
};

/*
 * One request as it arrived, or a reply: header fields and payload.  On the
 * wire the payload follows the 12-byte header directly; here it is 8-byte
 * aligned at offset 16, so a message is read and sent in two parts.
 */
struct vu_msg {
	uint32_t	request;
	uint32_t	flags;
	uint32_t	size;		/* payload bytes */
	union {
		uint64_t	u64;
		uint8_t		bytes[VU_MAX_PAYLOAD];
	} p;
};

/* A region of the frontend's memory, mapped here. */
struct vu_region {
	uint64_t	gpa;		/* guest-physical start */
	uint64_t	size;
	uint64_t	uva;		/* the frontend's virtual address */
	uint8_t		*host;		/* our address of gpa */
	void		*map;		/* the mmap, from fd offset 0 */
	size_t		 maplen;
};

/*
 * A virtqueue: configuration from the frontend, then the rings' host
 * addresses once it can run.  Queue 0 is receive (we write frames to the
 * frontend), queue 1 transmit (the frontend's frames to us).
 */
struct vu_vring {
	uint32_t	 num;		/* 0 until SET_VRING_NUM */
	struct vu_addr	 addr;		/* SET_VRING_ADDR's (the frontend's) */
	int		 addr_set;
	uint16_t	 last_avail;	/* next avail entry we look at */
	uint16_t	 used_idx;	/* our copy of used->idx */
	int		 kick, call;	/* eventfds, -1 if none */
	int		 started;	/* kick seen, not stopped since */
	int		 enabled;	/* SET_VRING_ENABLE, see vu_vring_live */
	uint16_t	 used_flags;	/* last value we wrote */
	/* Host addresses, valid while vu_vring_live(); NULL otherwise. */
	struct vring_desc	*desc;
	struct vring_avail	*avail;
	struct vring_used	*used;
};

#define VU_NQUEUES	2

struct vu_dev {
	uint64_t	 features;	/* acknowledged by SET_FEATURES */
	uint64_t	 proto;		/* acknowledged protocol features */
	uint8_t		 status;	/* virtio device status (SET_STATUS) */
	uint32_t	 hdr_len;	/* virtio-net header: 10 or 12 */
	int		 nregions;
	struct vu_region regions[VU_MAX_REGIONS];
	struct vu_vring	 vq[VU_NQUEUES];
	/* The epoll set (-1: none) queue watch_q's kick fd is in while it
	 * lives: msg.c adds it when it takes the fd and removes it before it
	 * closes it, so no registration outlives its fd.  Kept across
	 * vu_reset. */
	int		 watch_ep, watch_q;
	/* Set by the SIGBUS guard (libring/memguard.h, every region is
	 * guarded while mapped): a region's file lost pages under us and
	 * the region is now anonymous memory. */
	volatile sig_atomic_t mem_lost;
	char		 err[160];	/* why the last request failed */
};

/* A fresh device (no fds, no mappings); closes nothing. */
void	vu_init(struct vu_dev *);
/* Drop everything the frontend gave us: unmap memory, close fds. */
void	vu_reset(struct vu_dev *);

/*
 * Check a header just read; 0, or -1 with d->err set (bad version, a
 * reply flag on a request, a payload larger than we accept).
 */
int	vu_check_header(struct vu_dev *d, const struct vu_msg *m);

/*
 * Apply one request with the nfds descriptors that came with it.  The
 * descriptors are ours from here on: kept or closed, on error too.
 * Returns 0 with *reply (and *reply_len bytes to send, 0 for none) filled,
 * or -1 with d->err set: the caller drops the connection.
 */
int	vu_handle(struct vu_dev *d, const struct vu_msg *m, int *fds, int nfds,
	    struct vu_msg *reply, size_t *reply_len);

/* A queue the data path may use: configured, started and enabled. */
static inline int
vu_vring_live(const struct vu_vring *vq)
{
	return vq->desc != NULL && vq->started && vq->enabled;
}

/*
 * Queue i may carry frames: live and, when the frontend tells us the
 * device status (protocol feature STATUS), the driver said DRIVER_OK.
 * Without that signal a driver still setting up (DPDK re-initialises its
 * rings while it starts a port) could lose what we put in early.
 */
static inline int
vu_queue_ready(const struct vu_dev *d, int i)
{
	return vu_vring_live(&d->vq[i]) &&
	    (!(d->proto & (1ULL << VU_PROTO_F_STATUS)) ||
	    (d->status & VIRTIO_STATUS_DRIVER_OK));
}

/*
 * Our address for len bytes at a in one of the n regions reg, or NULL when
 * they do not lie inside one: a is guest-physical (uva 0, the data path's
 * only way into guest memory) or the frontend's virtual address (uva 1,
 * rings).
 */
static inline void *
vu_region_addr(const struct vu_region *reg, int n, uint64_t a, uint64_t len,
    int uva)
{
	int i;

	for (i = 0; i < n; i++) {
		const struct vu_region *r = &reg[i];
		uint64_t start = uva ? r->uva : r->gpa;

		if (a >= start && a - start <= r->size &&
		    len <= r->size - (a - start))
			return r->host + (a - start);
	}
	return NULL;
}
#define vu_gpa(d, gpa, len)	\
	vu_region_addr((d)->regions, (d)->nregions, gpa, len, 0)

const char *vu_request_name(uint32_t request);

/*
 * Receiving requests without ever waiting for them (vu_rx_read).
 * The control socket is read from the breathe loop, so a read must not
 * block: a frontend that sends a request a byte at a time would stall the
 * data path for as long as it likes.  The socket is non-blocking and what
 * has arrived of a request (bytes and descriptors) waits here, per
 * connection, until the rest comes.  A read never goes past the end of
 * the current request, so the descriptors it brings belong to it.
 */
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

/* Close the descriptors rx->nfds counts and empty the buffer. */
void	vu_rx_clear(struct vu_rx *);
/*
 * Read from the non-blocking socket fd what it has of the current request,
 * up to its end.  After VU_RX_DONE the caller takes rx->fds (rx->nfds of
 * them, then 0) and calls vu_rx_clear before the next read.
 */
int	vu_rx_read(struct vu_rx *rx, int fd, struct vu_dev *d);

#endif
