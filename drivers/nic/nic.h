/*
 * nic.h: between snb-nic's generic part (nic.c: options, breath, link,
 * counters) and its back-ends, which only open a device and move bursts of
 * frames between its queues and ring slots (struct nic_ops).  A PCI
 * back-end ("pci:ADDR") has no kernel interface: nic->ifname holds the
 * canonical PCI address ("0000:00:04.0"), nic->fd stays -1 (the device is
 * polled), --promisc arrives as nic->promisc.
 */
#ifndef SNB_NIC_H
#define SNB_NIC_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"

/* Pointers into the stage's shared counter file (see app_counter()), in
 * the order of the names open_device() gives (nic.c). */
struct nic_counters {
	uint64_t	*rx_packets, *rx_bytes;	/* put into the output ring */
	uint64_t	*tx_packets, *tx_bytes;	/* handed to the kernel */
	uint64_t	*drop_ring_full;	/* received, output ring full */
	uint64_t	*drop_oversize;		/* received, larger than a slot */
	uint64_t	*drop_kernel;		/* dropped by the kernel, per the socket */
	uint64_t	*drop_tx_error;		/* refused by the kernel on send */
	uint64_t	*drop_link_down;	/* to send while the link was down */
	uint64_t	*link_down;		/* times the link went down */
};

/* The device and what the options asked of it. */
struct nic {
	char		 spec[64];	/* as given: "xdp:veth0", for messages */
	char		 ifname[IFNAMSIZ];
	int		 ifindex;	/* 0 until known (a tap we create) */
	int		 rx, tx;	/* out / in ports are wired */
	int		 native_only;	/* xdp: refuse generic (skb) mode */
	int		 queue;		/* --queue or DEVICE/qN, else -1: an
					   XDP queue, a fanout member's name,
					   a virtio queue pair (virtio_mq.c) */
	int		 fanout;	/* --fanout group, -1 if not given */
	int		 fd;		/* what poll() waits on for received frames */
	int		 down;		/* link down: transmit drops, counted */
	int		 promisc;	/* --promisc (PCI back-ends act on it) */
	void		*priv;		/* the back-end's state */
	struct nic_counters c;
};

/* One receive burst. */
struct rx_burst {
	struct ring	*ring;		/* the output ring */
	uint32_t	 room;		/* free slots when the burst began */
	uint32_t	 budget;	/* frames to take from the kernel, at most */
	uint32_t	 n;		/* slots filled (committed by the caller) */
	uint32_t	 seen;		/* frames taken: filled + dropped */
	uint64_t	 ts_ns;		/* timestamp for back-ends without one */
};

struct nic_ops {
	const char	*name;		/* "afpacket": also the prefix */
	const char	*caps;		/* capabilities open() needs, for EPERM */
	size_t		 size;		/* of the state at nic->priv */
	/* Bind the device for the directions the graph wired, in nic->priv
	 * (size zeroed bytes); 0, or an errno value with a message in
	 * errbuf (nic_fail()). */
	int		(*open)(struct nic *, char *errbuf, size_t len);
	/* Take up to a budget of frames, each into the next output slot or,
	 * when there is no room, into a counted drop (nic_rx_slot). */
	void		(*rx)(struct nic *, struct rx_burst *);
	/* Hand up to n packets of in to the device; returns how many it
	 * took: the caller releases that many slots. */
	uint32_t	(*tx)(struct nic *, struct ring *in, uint32_t n);
	void		(*check)(struct nic *);	/* clear a socket error; optional */
	void		(*stats)(struct nic *);	/* the device's drops into ours */
	void		(*drain)(struct nic *);	/* let transmits leave; optional */
	/* Undo open, however far it got: after a failed open too, so that
	 * open itself can just return at the first error. */
	void		(*release)(struct nic *);
	/* PCI back-ends only: 1 if the driver supports this vendor:device
	 * (nic.c asks every driver in its table before any is opened); the
	 * link state from the device (1 up, 0 down). */
	int		(*match)(uint16_t vendor, uint16_t device);
	int		(*link)(struct nic *);
};

extern const struct nic_ops afpacket_ops, xdp_ops, tap_ops;
extern const struct nic_ops e1000_ops, virtio_ops;

/* Format "what: strerror(e)" into errbuf and return e. */
int	nic_fail(char *errbuf, size_t len, int e, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));
/* A send said ENETDOWN or ENXIO: pause until the link is up again. */
void	nic_link_lost(struct nic *);
/* The same in tx, sent of n taken: the rest is dropped; returns n. */
uint32_t nic_tx_lost(struct nic *, uint32_t sent, uint32_t n);
/* Set IFF_UP on ifname; 0 or an errno value. */
int	nic_set_up(const char *ifname);

/*
 * The back-end took a frame of len bytes from the kernel: returns the slot
 * to copy it into (len, flags, wirelen and ts_ns already set), or NULL when
 * the frame is dropped and counted (too big for a slot, or no room: the
 * kernel's queue must keep moving even when the graph is full, DESIGN 3).
 */
static inline struct packet *
nic_rx_slot(struct nic *nic, struct rx_burst *b, uint32_t len, uint64_t ts)
{
	struct packet *p;

	b->seen++;
	if (len > b->ring->capacity) {
		(*nic->c.drop_oversize)++;
		return NULL;
	}
	if (b->n == b->room) {
		(*nic->c.drop_ring_full)++;
		return NULL;
	}
	p = ring_slot(b->ring, b->n++);
	p->len = (uint16_t)len;
	p->flags = 0;
	p->wirelen = 0;
	p->ts_ns = ts;
	(*nic->c.rx_packets)++;
	*nic->c.rx_bytes += len;
	return p;
}

/* A frame of len bytes went to the device. */
static inline void
nic_tx_sent(struct nic *nic, uint32_t len)
{
	(*nic->c.tx_packets)++;
	*nic->c.tx_bytes += len;
}

/*
 * Length of input packet i, read once: the producer is another process and
 * could rewrite it after ring_peek() clamped it.
 */
static inline uint32_t
nic_tx_len(struct ring *in, struct packet *p)
{
	uint32_t len = *(volatile uint16_t *)&p->len;

	return len > in->capacity ? in->capacity : len;
}

#endif
