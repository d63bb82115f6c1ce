/*
 * vhost.h: between snb-vhost's app part (vhost.c: socket, options,
 * breath, counters) and its data path (virtq.c: split virtqueues).
 */
#ifndef SNB_VHOST_H
#define SNB_VHOST_H

#include <stdint.h>

#include "app.h"
#include "msg.h"

/* Pointers into the stage's counter file (app_counter()), in the order
 * of cnt_names (vhost.c); snb-vhost(1) says what each counts. */
struct vh_counters {
	uint64_t	*rx_packets, *rx_bytes;	/* from the frontend to 'out' */
	uint64_t	*tx_packets, *tx_bytes;	/* from 'in' to the frontend */
	uint64_t	*drop_no_frontend, *drop_oversize, *drop_short_buffer;
	uint64_t	*drop_unwired, *connects, *disconnects, *bad_messages;
	uint64_t	*ring_errors, *kicks, *calls, *calls_full;
	uint64_t	*memory_faults;
};

/*
 * Move up to n packets of ring r into the frontend's receive queue.
 * Returns how many slots were used up (delivered or dropped and counted):
 * fewer than n when the frontend has no more buffers.  -1 when the queue
 * holds something malformed (d->err says what).
 */
int	vq_to_frontend(struct vu_dev *d, struct ring *r, uint32_t n,
	    struct vh_counters *c);
/*
 * Take up to room frames from the frontend's transmit queue into ring out
 * (NULL: unwired, the frames are dropped and counted).  Returns frames
 * taken, or -1 as above.
 */
int	vq_from_frontend(struct vu_dev *d, struct ring *out, uint32_t room,
	    struct vh_counters *c);
/* Entries the driver made available that we have not looked at. */
int	vq_pending(const struct vu_vring *vq);
/*
 * Ask the driver to kick us (on = 1: we are about to sleep) or not to
 * bother (0: we are polling).  Returns vq_pending() after the change, so a
 * buffer added just before notifications went on is not missed.
 */
int	vq_want_kicks(struct vu_vring *vq, int on);

#endif
