/*
 * virtio_ring.h: our side of a split virtqueue (virtio 1.x, 2.7) for the
 * user-space virtio-net driver, apart from the PCI transport (virtio.c):
 * the memory layout, posting receive buffers, taking back what the device
 * used, transmitting.  Nothing here touches a register except the queue's
 * notification address, a pointer the transport sets; so the ring code
 * can be driven by a model of the device (tests/unit/test_nic_rings.c,
 * fuzz/virtio_ring_fuzz.c).
 *
 * Descriptor i of a queue always points at buffer i, BUF_SIZE bytes of DMA
 * memory holding the 12-byte virtio_net_hdr and then the frame; only
 * descriptor ids travel through the avail and used rings.  A burst is
 * published with one store of avail->idx and at most one notification,
 * skipped while the device says VIRTQ_USED_F_NO_NOTIFY (it is already
 * looking at the queue).
 *
 * What the device writes (used->idx, each used entry's id and length) is
 * not trusted: every field is loaded once, an id is used only when it
 * names a descriptor the device holds (busy), a length only when it fits
 * the buffer; anything else is counted in *used_errors and ignored.  So a
 * device that returns an id twice, or one it never had, cannot make us
 * post a buffer twice (handing it one buffer for two frames, overrunning
 * the avail ring), free a transmit buffer twice, or read outside a buffer.
 */
#ifndef SNB_VIRTIO_RING_H
#define SNB_VIRTIO_RING_H

#include <stdint.h>

#include "nic.h"

#define NET_HDR		12	/* struct virtio_net_hdr, num_buffers included */
#define BUF_SIZE	2048	/* a header and a frame per descriptor */
#define MAX_FRAME	(BUF_SIZE - NET_HDR)

#define DESC_F_WRITE	2	/* the device writes this buffer */
#define AVAIL_F_NO_INTERRUPT 1
#define USED_F_NO_NOTIFY 1

/*
 * DMA memory: one region per queue, laid out for MAX_QSIZE entries (smaller
 * queues leave some unused): descriptors (16 bytes each, 16-aligned) at 0,
 * the avail ring (6 + 2 * size bytes) at 4096, the used ring (6 + 8 * size
 * bytes, 4-aligned) at 5120, buffers from 8192.
 */
#define MAX_QSIZE	256
#define AVAIL_OFF	4096
#define USED_OFF	5120
#define BUFS_OFF	8192
#define QREGION		(BUFS_OFF + MAX_QSIZE * BUF_SIZE)

/* A split virtqueue as the spec lays it out in memory (2.7). */
struct vq_desc {
	uint64_t	addr;		/* physical address of the buffer */
	uint32_t	len;
	uint16_t	flags;		/* DESC_F_WRITE for receive buffers */
	uint16_t	next;		/* unused: we never chain */
};

struct vq_avail {			/* written by us */
	uint16_t	flags;		/* AVAIL_F_NO_INTERRUPT */
	uint16_t	idx;		/* free-running: entries published */
	uint16_t	ring[];		/* descriptor ids */
};

struct vq_used_elem {
	uint32_t	id;		/* descriptor the device is done with */
	uint32_t	len;		/* bytes it wrote into the buffer */
};

struct vq_used {			/* written by the device */
	uint16_t	flags;		/* USED_F_NO_NOTIFY: no kick needed */
	uint16_t	idx;		/* free-running: entries returned */
	struct vq_used_elem ring[];
};

/*
 * Our side of a queue.  The receive queue keeps every descriptor posted
 * except while we copy its frame out.  The transmit queue keeps idle
 * descriptors on a stack (free).  Both mark those the device holds (busy).
 */
struct vq {
	uint16_t		 index;		/* the queue's number */
	uint16_t		 size, mask;
	uint16_t		 avail_idx;	/* next avail entry we fill */
	uint16_t		 used_idx;	/* next used entry we read */
	struct vq_desc		*desc;
	struct vq_avail		*avail;
	struct vq_used		*used;
	unsigned char		*buf;		/* buffer i: buf + i * BUF_SIZE */
	volatile uint16_t	*notify;	/* the queue index written here
						   kicks the device */
	uint64_t		*used_errors;	/* used entries refused */
	uint16_t		 nfree;		/* tx: idle descriptors */
	uint16_t		 free[MAX_QSIZE];
	uint8_t			 busy[MAX_QSIZE];
};

/*
 * Lay queue index out in QREGION bytes at mem (physical address phys) for
 * size entries (a power of two, at most MAX_QSIZE): zeroed, descriptors
 * pointing at their buffers, the device asked not to interrupt.
 */
void	vq_init(struct vq *, uint16_t index, uint16_t size, unsigned char *mem,
	    uint64_t phys, volatile uint16_t *notify, uint64_t *used_errors);
/*
 * Take over queue index, laid out at mem by another process that may be
 * gone (virtio_mq.c): nothing in mem is changed.  Receive (rx): every
 * buffer is posted but those whose used entries are not yet reposted, so
 * we go on from avail->idx - size: a predecessor's half-done burst is
 * read again.  Transmit: 0 once the device has sent all it was given
 * (every buffer idle again), -1 if it still holds some.
 */
int	vq_attach(struct vq *, uint16_t index, uint16_t size,
	    unsigned char *mem, volatile uint16_t *notify,
	    uint64_t *used_errors, int rx);
/* Receive: every buffer to the device (call vq_publish after). */
void	vq_rx_post_all(struct vq *);
/* Publish the avail entries filled since the last call; kick if needed. */
void	vq_publish(struct vq *);
/* Receive: frames the device used, up to b's budget, into b's ring. */
void	vq_rx(struct vq *, struct nic *, struct rx_burst *);
/* Transmit: take back what the device has sent. */
void	vq_tx_reclaim(struct vq *);
/* Transmit up to n packets of in; returns how many were taken. */
uint32_t vq_tx(struct vq *, struct nic *, struct ring *in, uint32_t n);

#endif
