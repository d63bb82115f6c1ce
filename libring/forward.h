/*
 * forward.h: the loop every app that moves packets shares, written once.
 *
 * A forwarder binds a struct fwd to its input and output ports in init()
 * and calls fwd_breathe() from its breathe():
 *
 *	inputs (every ring of the		outputs (one ring each)
 *	ports named, fan-in)
 *	  ring 0 ─┐                        ┌─► out[0]
 *	  ring 1 ─┼─► burst ─► route() ─ k ─┼─► out[1]
 *	  ring 2 ─┘                        └─► ... or FWD_ALL, FWD_DROP
 *
 * Each breath visits the input rings in turn, starting one ring further
 * than the breath before (fairness: one busy input cannot starve the
 * others when the outputs have room for only part of what waits).  From
 * each ring it takes a burst of at most APP_BURST packets that every
 * output has room for (any packet may go to any output) and asks the
 * app, once per packet, where it goes:
 *
 *	k = route(ctx, from, p, len)	from: which input port (0..nin_ports-1)
 *		k >= 0		to output k
 *		FWD_ALL		a copy to every output
 *		FWD_DROP	nowhere (the app counted why)
 *
 * The rules every forwarder keeps live here, and nowhere else:
 *  - A packet's length is read once (packet_len) and that length is what
 *    route() sees and what is copied: the producer is another process.
 *  - A packet longer than an output's slots is counted in drop-oversize.
 *  - Lossless: a packet is taken only when every output has room for it;
 *    the rest wait, in order, for the next breath.  So route() is asked
 *    once per packet and may count and keep state as it likes.  (One
 *    full output holds back the others.  An app for which that is wrong,
 *    like lb, whose full output must not stop the flows to the others,
 *    routes its bursts itself under fwd_take() with fwd_room(), which
 *    stops only at a packet whose own output is full.)
 *  - Inputs are released before outputs are committed, ring by ring: a
 *    stage killed in between loses the burst it held, and never sends a
 *    packet twice after its restart.
 *
 * An app that consumes a burst whole (a device's transmit, a file writer)
 * calls fwd_take() instead: the same fan-in, and take() returns how many
 * packets of the burst it consumed; those are released, and what take()
 * put in the outputs is committed after every release.
 *
 * All of it is inline: route() and take() are the app's static functions,
 * and the compiler folds them into the loop (no indirect call per packet).
 */
#ifndef SNB_FORWARD_H
#define SNB_FORWARD_H

#include "app.h"

#define FWD_DROP	(-1)
#define FWD_ALL		(-2)

struct fwd_out {
	struct ring	*ring;		/* NULL: the port is unbound */
	uint32_t	 used;		/* slots put since the last fwd_commit */
	uint32_t	 room;		/* free slots at fwd_room's look, this
					   burst (0: look again) */
	uint64_t	*sent;		/* counter: committed to it (or NULL) */
	struct port	*port;		/* its name, for the app's counters */
};

struct fwd {
	struct ring	**in;		/* every input ring, in turn */
	int		 *in_port;	/* ... and the index of its port */
	int		  nin, next;
	struct fwd_out	 *out;		/* one per output port named */
	int		  nout;
	/* Counters; NULL where the app does not count that. */
	uint64_t	 *packets;	/* taken from the inputs */
	uint64_t	 *drop_oversize;	/* made by fwd_init */
};

/*
 * Bind f to the input ports named in ins and the output ports named in
 * outs (NULL-ended lists; NULL for none).  "*" alone stands for every
 * bound port of its direction (exit 2 if there is none), ordered by
 * name (numbers by value: "2" before "10").  A named output left unbound
 * has a NULL f->out[k].ring; routing a packet there drops it, uncounted
 * (the app knows).
 * Makes the drop-oversize counter; packets is the app's to set.  Call
 * from init(): ports are bound by then.
 */
void	fwd_init(struct fwd *f, const char *const *ins,
	    const char *const *outs);

/* The input ring for visit j of this breath (fan-in order). */
static inline struct ring *
fwd_ring(struct fwd *f, int j, int *from)
{
	int i = (f->next + j) % f->nin;

	*from = f->in_port[i];
	return f->in[i];
}

/* End of a breath that took total: the next starts one ring further. */
static inline int
fwd_end(struct fwd *f, uint32_t total)
{
	if (f->nin > 0)
		f->next = (f->next + 1) % f->nin;
	if (f->packets != NULL)
		*f->packets += total;
	return (int)total;
}

static inline uint32_t
fwd_burst(struct ring *r)
{
	uint32_t n = ring_avail(r, APP_BURST);

	return n > APP_BURST ? APP_BURST : n;
}

/* How many of n packets to take: what every bound output has room for. */
static inline uint32_t
fwd_fit(struct fwd *f, uint32_t n)
{
	uint32_t room;
	int k;

	for (k = 0; k < f->nout && n > 0; k++)
		if (f->out[k].ring != NULL &&
		    (room = ring_room(f->out[k].ring, n)) < n)
			n = room;
	return n;
}

/*
 * Room in output k for one more packet beside those put since the last
 * fwd_commit() (an unbound output always has room): for apps that route
 * whole bursts of their own under fwd_take(), as bridge and vlan do.
 */
static inline int
fwd_room(struct fwd *f, int k)
{
	struct fwd_out *o = &f->out[k];

	if (o->used < o->room || o->ring == NULL)
		return 1;
	/* One look at the consumer's tail for all the room there is, not
	 * one per packet (its cache line is the consumer's to write). */
	o->room = ring_room(o->ring, (uint32_t)o->ring->mask + 1);
	return o->used < o->room;
}

/*
 * Output k's next slot (room checked) for len bytes the caller writes,
 * with p's metadata (wirelen too: an app that edits the frame fixes it);
 * NULL, counted in drop-oversize, if len does not fit.
 */
static inline struct packet *
fwd_slot(struct fwd *f, int k, const struct packet *p, uint32_t len)
{
	struct fwd_out *o = &f->out[k];
	struct packet *q;

	if (len > o->ring->capacity) {
		(*f->drop_oversize)++;
		return NULL;
	}
	q = ring_slot(o->ring, o->used++);
	q->len = (uint16_t)len;
	q->flags = p->flags;
	q->wirelen = p->wirelen;
	q->ts_ns = p->ts_ns;
	return q;
}

static inline void
fwd_put(struct fwd *f, int k, const struct packet *p, uint32_t len)
{
	struct fwd_out *o = &f->out[k];

	if (o->ring == NULL)
		return;
	if (ring_put_packet(o->ring, o->used, p, len))
		o->used++;
	else
		(*f->drop_oversize)++;
}

/*
 * Publish what was put.  The next fwd_room() looks at the ring afresh:
 * once per burst, as a leaky ring's promise needs (its real room is
 * what that look saw).
 */
static inline void
fwd_commit(struct fwd *f)
{
	struct fwd_out *o;

	for (o = f->out; o < f->out + f->nout; o++) {
		if (o->used > 0) {
			if (o->sent != NULL)
				*o->sent += o->used;
			ring_commit(o->ring, o->used);
			o->used = 0;
		}
		o->room = 0;
	}
}

typedef int	fwd_route_fn(void *ctx, int from, const struct packet *p,
		    uint32_t len);
typedef uint32_t fwd_take_fn(void *ctx, int from, struct ring *r,
		    uint32_t n);

/* One breath of forwarding; returns the packets taken from the inputs. */
static inline __attribute__((always_inline)) int
fwd_breathe(struct fwd *f, fwd_route_fn *route, void *ctx)
{
	uint32_t n, i, len, total = 0;
	int j, k, from;

	for (j = 0; j < f->nin; j++) {
		struct ring *r = fwd_ring(f, j, &from);

		if ((n = fwd_fit(f, fwd_burst(r))) == 0)
			continue;
		for (i = 0; i < n; i++) {
			const struct packet *p = ring_peek(r, i);

			len = packet_len(r, p);
			if ((k = route(ctx, from, p, len)) >= 0)
				fwd_put(f, k, p, len);
			else if (k == FWD_ALL)
				for (k = 0; k < f->nout; k++)
					fwd_put(f, k, p, len);
		}
		ring_release(r, n);
		fwd_commit(f);
		total += n;
	}
	return fwd_end(f, total);
}

/*
 * One breath of whole-burst consuming: take(ctx, from, r, n) handles up
 * to n packets at ring_peek(r, 0 .. n-1) and returns how many it took.
 */
static inline __attribute__((always_inline)) int
fwd_take(struct fwd *f, fwd_take_fn *take, void *ctx)
{
	uint32_t n, total = 0;
	int j, from;

	for (j = 0; j < f->nin; j++) {
		struct ring *r = fwd_ring(f, j, &from);

		if ((n = fwd_burst(r)) == 0)
			continue;
		n = take(ctx, from, r, n);
		ring_release(r, n);
		total += n;
	}
	fwd_commit(f);
	return fwd_end(f, total);
}

#endif
