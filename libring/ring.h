/*
 * ring.h: single-producer single-consumer packet rings in shared memory.
 *
 * A ring is one file (in hugetlbfs or /dev/shm) mapped by exactly two
 * processes: the stage that produces into it and the stage that consumes
 * from it.  The file holds a header and a power-of-two number of fixed-size
 * slots; every slot holds one packet inline.  Packets cross a hop by copy
 * into a slot, so no pointer ever crosses a process boundary and a process
 * that dies leaves nothing to leak.
 *
 *	offset 0        struct ring_hdr     magic, version, geometry (read-only)
 *	offset 64       struct ring_prod    written by the producer only
 *	offset 128      struct ring_cons    written by the consumer only
 *	offset 4096     slot[0] .. slot[nslots-1], each slot_size bytes
 *
 * Indexes are free-running 64-bit counters (they never wrap in practice):
 * the slot of index i is i & (nslots - 1); the ring holds head - tail
 * packets.  Each side keeps a private copy of the other side's index and
 * re-reads the shared one only when the copy says "full" or "empty", so the
 * hot path touches the other side's cache line once per burst, not once per
 * packet.
 *
 * Sleeping words ("waiting") are the one exception to "each side writes
 * only its own section": the sleeper sets its word to RING_WAIT_FUTEX (or
 * RING_WAIT_SIGNAL if it sleeps in poll()), the waker swaps it back to 0
 * before FUTEX_WAKE or kill() (see wake() in ring.c).
 *
 * Claims.  prod.pid and cons.pid name the live process on each side; a
 * waker sends RING_WAKE_SIGNAL to that pid and to nothing else.  A stage
 * claims a side only when it takes over (ring_claim(), after attaching,
 * and after its predecessor left in a swap), clears only its own claim
 * (compare-and-swap in ring_detach()), and the launcher clears the claim
 * of a stage that died before it reaps it (ring_forget()): a pid cannot
 * be reused before its parent reaps it, so no signal reaches a stranger.
 *
 * Trust.  The peer is another process: every index it publishes is
 * checked when it is re-read (0 <= head - tail <= nslots).  A violation
 * marks the handle corrupt (r->corrupt), the ring then looks empty (or
 * full) to us, and the runtime fails the stage with a message naming the
 * ring instead of reading garbage or reading packets twice.
 *
 * Memory ordering.  The producer writes slots, then publishes them with a
 * store-release of prod.head; the consumer load-acquires prod.head before
 * reading those slots.  Symmetrically the consumer store-releases cons.tail
 * after it has finished reading slots, and the producer load-acquires it
 * before overwriting them.  Sleeping uses a Dekker pattern: the sleeper sets
 * its "waiting" word, issues a full fence, and re-checks the index; the
 * waker publishes its index, issues a full fence, and then looks at the
 * waiting word.  One of the two is guaranteed to see the other's store, so
 * no wake-up is lost.
 */
#ifndef SNB_RING_H
#define SNB_RING_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RING_MAGIC		0x676e6972626e73ULL	/* "snbring" */
#define RING_VERSION		1
#define RING_DEFAULT_SLOTS	512
#define RING_DEFAULT_CAPACITY	10240		/* bytes of packet per slot */
#define RING_MAX_CAPACITY	65535		/* fits the uint16_t length */
#define RING_DATA_OFFSET	4096
#define RING_FLAG_LEAKY		0x1		/* producer drops when full */
#define RING_WAIT_FUTEX		1	/* "waiting" values: how to wake */
#define RING_WAIT_SIGNAL	2

/* A packet as it sits in a slot. */
struct packet {
	uint16_t	len;		/* bytes of data[] in use */
	uint16_t	flags;		/* reserved, 0 */
	uint32_t	wirelen;	/* original length when truncated, else 0 */
	uint64_t	ts_ns;		/* capture time (ns since epoch), 0 = none */
	unsigned char	data[];		/* len bytes (slot start + 16) */
} __attribute__((aligned(16)));

#define PACKET_HDR	sizeof(struct packet)

/* Read-only after creation. */
struct ring_hdr {
	uint64_t	magic;
	uint32_t	version;
	uint32_t	nslots;		/* power of two */
	uint32_t	slot_size;	/* bytes from one slot to the next */
	uint32_t	capacity;	/* max packet length (<= slot_size - PACKET_HDR) */
	uint32_t	flags;		/* RING_FLAG_* */
	uint32_t	hdr_pad;
	uint64_t	file_size;
	char		name[24];	/* informational */
} __attribute__((aligned(64)));

/* Written only by the producer. */
struct ring_prod {
	_Atomic uint64_t head;		/* next index to publish */
	_Atomic uint32_t closed;	/* RING_EOF or RING_FAILED: no more
					   packets will come */
	_Atomic uint32_t waiting;	/* futex: producer sleeps for room */
	_Atomic int32_t	pid;		/* attached producer, 0 = none */
	uint32_t	pad;
	_Atomic uint64_t bytes;		/* published (packets = head) */
	_Atomic uint64_t drops;		/* leaky ring full */
} __attribute__((aligned(64)));

/* Written only by the consumer. */
struct ring_cons {
	_Atomic uint64_t tail;		/* next index to read */
	_Atomic uint32_t waiting;	/* futex: consumer sleeps for data */
	_Atomic int32_t	pid;		/* attached consumer, 0 = none */
} __attribute__((aligned(64)));

struct ring_shm {
	struct ring_hdr	 hdr;
	struct ring_prod prod;
	struct ring_cons cons;
};

/*
 * RING_OWNER is the launcher's read-write view: it claims nothing, and
 * may close a ring whose producer died (ring_close) or clear a dead
 * process's claim (ring_forget).
 */
enum ring_side { RING_PRODUCER, RING_CONSUMER, RING_OBSERVER, RING_OWNER };

/* A process's handle on a mapped ring (private memory). */
struct ring {
	struct ring_shm	*shm;
	unsigned char	*slots;
	uint64_t	 mask;
	uint32_t	 slot_size;
	uint32_t	 capacity;
	enum ring_side	 side;
	uint64_t	 head;		/* producer: local head; consumer: cached */
	uint64_t	 tail;		/* consumer: local tail; producer: cached */
	size_t		 map_len;
	int		 corrupt;	/* the peer published an impossible index */
	char		 path[256];
	/*
	 * Producer of a leaky ring (RING_FLAG_LEAKY): ring_room() promises
	 * whatever is asked, the slots past the real room (real_room, as of
	 * the last ring_room()) all map to this private scratch slot, and
	 * ring_commit() publishes the real ones and counts the rest as
	 * drops.
	 * Apps need not know: a leaky output simply never fills.
	 */
	struct packet	*leak;
	uint32_t	 real_room;
	int		 leak_pinned;	/* a slot went to scratch since the
					   commit: real_room may not grow */
	/*
	 * Batched wake-ups (0: the peer is woken at every publish).  With
	 * wake_batch set, a publish leaves the wake-up pending, and whoever
	 * set it calls ring_flush_wake(): see ring_commit().
	 */
	uint32_t	 wake_batch;
	int		 wake_pending;
};

/*
 * Create the ring file at path (O_EXCL, O_NOFOLLOW, mode 0600).  nslots
 * must be a power of two; capacity the largest packet.  Returns 0 or -1
 * with errno set.  The file is closed again; stages attach.
 */
int	ring_create(const char *path, uint32_t nslots, uint32_t capacity,
	    uint32_t flags);
/*
 * Allocate a shared file's pages (fallocate): -1 with errno (ENOSPC) if
 * the file system cannot, rather than SIGBUS at the first touch of one.
 */
int	snb_reserve(int fd, size_t size);
/*
 * Map an existing ring file as producer, consumer or observer.  Checks the
 * magic, version and geometry against the file size; on failure returns -1
 * and writes a reason (naming the file) into errbuf.
 */
int	ring_attach(struct ring *r, const char *path, enum ring_side side,
	    char *errbuf, size_t errlen);
/*
 * Take over: load the shared indexes (checked), clear our side's sleeping
 * word and claim the side with our pid.  A stage calls this once, when it
 * takes over (after its predecessor detached, in a swap).  Returns -1
 * with a reason naming the ring if the indexes are corrupt, or if we
 * produce and the ring is closed already (its stream ended: producing
 * more would reach a consumer that may have left).
 */
int	ring_claim(struct ring *r, char *errbuf, size_t errlen);
/*
 * A ring's geometry in private memory, without slots or a peer: what an
 * app's init() may look at (capacity, slot count) when the launcher only
 * checks its words (snb-run -c).  -1 with errno set on a bad geometry.
 */
int	ring_geometry_only(struct ring *r, const char *name, uint32_t nslots,
	    uint32_t capacity, enum ring_side side);
/* Unmap; a producer or consumer clears its claim if it is still ours. */
void	ring_detach(struct ring *r);
/*
 * The launcher (RING_OWNER): pid died; clear its claim on either side and
 * any sleeping word it left armed for a signal, and wake its peer (a
 * batched wake-up it held died with it).  Call before reaping pid.
 */
void	ring_forget(struct ring *r, pid_t pid);
/*
 * The launcher: pid stopped (SIGSTOP): wake the peer of every side it
 * holds, for a batched wake-up it had not sent yet.  Claims are kept.
 */
void	ring_wake_peers(struct ring *r, pid_t pid);

/*
 * Cold path of the index checks below: warns naming the ring, marks r
 * corrupt and counts it in ring_corruptions (one load per breath tells
 * the runtime that some ring of the process went bad).
 */
void	ring_mark_corrupt(struct ring *r, uint64_t head, uint64_t tail);
extern unsigned ring_corruptions;

/* --- producer --- */

/* Free slots, re-reading the consumer's tail only when the cache is short. */
static inline uint32_t
ring_room(struct ring *r, uint32_t want)
{
	uint64_t size = r->mask + 1;

	uint32_t room;

	if (size - (r->head - r->tail) < want) {
		uint64_t tail = atomic_load_explicit(&r->shm->cons.tail,
		    memory_order_acquire);
		/* The consumer's tail may never pass our head. */
		if (__builtin_expect(r->head - tail > size, 0)) {
			ring_mark_corrupt(r, r->head, tail);
			return 0;
		}
		r->tail = tail;
	}
	room = (uint32_t)(size - (r->head - r->tail));
	if (__builtin_expect(r->leak != NULL, 0)) {
		/* Once a slot went to scratch, the real room may not grow
		 * before the commit (the slots after it would be garbage). */
		if (!r->leak_pinned || room < r->real_room)
			r->real_room = room;
		return room < want ? want : room;
	}
	return room;
}

/* The slot i places after the local head (i < ring_room()). */
static inline struct packet *
ring_slot(struct ring *r, uint32_t i)
{
	if (__builtin_expect(r->leak != NULL, 0) && i >= r->real_room) {
		r->leak_pinned = 1;
		return r->leak;
	}
	return (struct packet *)(r->slots +
	    ((r->head + i) & r->mask) * (uint64_t)r->slot_size);
}

/*
 * Publish n filled slots; wakes the consumer if it sleeps.  With
 * wake_batch set, the wake-up is left pending (counted in
 * ring_wakes_pending) for ring_flush_wake(r, all): all = 0 sends it only
 * once the sleeper has wake_batch packets to read (or slots to fill),
 * all = 1 in any case.  The runtime calls it after every breath, with
 * all = 1 when the stage goes idle or a wake-up has waited too long: on a
 * shared core a context switch then moves a batch, not a burst, and the
 * system call is no part of a breath.
 */
void	ring_commit(struct ring *r, uint32_t n);
/*
 * The same for a producer that summed the lengths of the n packets as it
 * filled their slots (bytes): ring_commit() reads every slot again to
 * count them, which costs as much as the rest of a publish together.
 */
void	ring_commit_bytes(struct ring *r, uint32_t n, uint64_t bytes);
int	ring_flush_wake(struct ring *r, int all);	/* 1: it woke */
extern unsigned ring_wakes_pending;	/* rings of the process with one */
/*
 * End of stream: the consumer drains what is there, then sees EOF.  how:
 * RING_EOF, or RING_FAILED for a stream cut short by a failure (a stage
 * that could not go on, the launcher's drain after one): the consumer may
 * tell a whole stream from a cut one (ring_failed), e.g. not to replace a
 * file with an empty one.  The runtime passes it on downstream.
 */
#define RING_EOF	1
#define RING_FAILED	2
void	ring_close(struct ring *r, uint32_t how);

/* --- consumer --- */

/* Packets ready to read, re-reading the producer's head only when needed. */
static inline uint32_t
ring_avail(struct ring *r, uint32_t want)
{
	if (r->head - r->tail < want) {
		uint64_t head = atomic_load_explicit(&r->shm->prod.head,
		    memory_order_acquire);
		/* Nor may the producer's head run a lap ahead or go back. */
		if (__builtin_expect(head - r->tail > r->mask + 1, 0)) {
			ring_mark_corrupt(r, head, r->tail);
			return 0;
		}
		r->head = head;
	}
	return (uint32_t)(r->head - r->tail);
}

/*
 * The packet i places after the local tail (i < ring_avail()).  Its length
 * is clamped to the slot capacity: the producer is another process and a
 * bug there must not become an overrun here.  (A producer rewriting len
 * while we read could still defeat the clamp; such a producer runs as our
 * uid, owns the 0600 file, and could as well ptrace us.)
 */
static inline struct packet *
ring_peek(struct ring *r, uint32_t i)
{
	struct packet *p = (struct packet *)(r->slots +
	    ((r->tail + i) & r->mask) * (uint64_t)r->slot_size);

	if (__builtin_expect(p->len > r->capacity, 0))
		p->len = (uint16_t)r->capacity;
	return p;
}

/*
 * A packet's length, read once and clamped: use this, not p->len, when
 * the length decides how many bytes to touch.
 */
static inline uint32_t
packet_len(const struct ring *r, const struct packet *p)
{
	uint32_t len = *(const volatile uint16_t *)&p->len;

	return len > r->capacity ? r->capacity : len;
}

/*
 * Copy len bytes of p, with its metadata, into output slot i of r.
 * Returns 0 (nothing written) when len exceeds r's capacity.
 */
static inline int
ring_put_packet(struct ring *r, uint32_t i, const struct packet *p,
    uint32_t len)
{
	struct packet *q;

	if (len > r->capacity)
		return 0;
	q = ring_slot(r, i);
	q->len = (uint16_t)len;
	q->flags = p->flags;
	q->wirelen = p->wirelen;
	q->ts_ns = p->ts_ns;
	__builtin_memcpy(q->data, p->data, len);
	return 1;
}

/*
 * Hand n read slots back to the producer; wakes it if it sleeps (with
 * wake_batch set: once it has wake_batch free slots, as ring_commit).
 */
void	ring_release(struct ring *r, uint32_t n);
/* True once the producer closed the ring and everything was read. */
int	ring_eof(struct ring *r);
/* True when the producer closed the ring with RING_FAILED. */
int	ring_failed(const struct ring *r);

/* --- sleeping (both sides) --- */

/*
 * Sleep until the other side publishes (consumer: data or close; producer:
 * room), or until timeout_ms passes, or a signal arrives.  Returns at once
 * if the condition already holds.
 */
void	ring_wait(struct ring *r, int timeout_ms);
/*
 * The same for up to RING_WAIT_MANY rings (producer and consumer sides
 * mixed): wakes when any of them is ready; timeout in nanoseconds (< 0:
 * none).  More rings than that: ring_wait_arm() below.
 */
#define RING_WAIT_MANY	16
void	ring_wait_many(struct ring **rs, int n, int64_t timeout_ns);
/*
 * For a process that sleeps in poll() on its own descriptors (a device):
 * arm the rings so that the peer, instead of FUTEX_WAKE, sends us
 * RING_WAKE_SIGNAL.  Keep that signal blocked and ppoll() with it
 * unblocked, so a wake-up between arming and sleeping is not lost.
 * Any number of rings.  Returns 0 (and disarms) if some ring is ready
 * already.
 */
#define RING_WAKE_SIGNAL	SIGUSR2
int	ring_wait_arm(struct ring **rs, int n);
void	ring_wait_disarm(struct ring **rs, int n);

/* Current fill (observer view). */
uint64_t ring_fill(const struct ring *r);

#endif
