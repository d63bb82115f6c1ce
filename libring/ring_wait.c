/*
 * ring_wait.c: sleeping on rings, the side of ring.h's wake-up protocol
 * that waits (ring.c wakes).  A sleeper stores its mode in its side's
 * waiting word, then re-checks the ring after a full fence: a waker that
 * published before the fence is seen by the re-check, one after it sees
 * the word and wakes (ring.h says why no wake-up is lost).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

static void
futex_wait(_Atomic uint32_t *word, int64_t timeout_ns)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000LL),
	    (long)(timeout_ns % 1000000000LL) };

	syscall(SYS_futex, word, FUTEX_WAIT, RING_WAIT_FUTEX,
	    timeout_ns < 0 ? NULL : &ts, NULL, 0);
}

/* The word this side sleeps on, and whether it may sleep now. */
static _Atomic uint32_t *
wait_word(struct ring *r)
{
	return r->side == RING_CONSUMER ? &r->shm->cons.waiting :
	    &r->shm->prod.waiting;
}

static int
still_blocked(struct ring *r)
{
	struct ring_shm *s = r->shm;

	if (r->side == RING_CONSUMER)
		return atomic_load_explicit(&s->prod.head, memory_order_relaxed)
		    == r->tail && !atomic_load_explicit(&s->prod.closed,
		    memory_order_relaxed);
	return r->head - atomic_load_explicit(&s->cons.tail,
	    memory_order_relaxed) > r->mask;
}

/* Set every ring's waiting word to how; 1 if all are still blocked. */
static int
arm(struct ring **rs, int n, uint32_t how)
{
	int i, blocked = 1;

	for (i = 0; i < n; i++)
		atomic_store_explicit(wait_word(rs[i]), how,
		    memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	for (i = 0; i < n && blocked; i++)
		blocked = still_blocked(rs[i]);
	return blocked;
}

int
ring_wait_arm(struct ring **rs, int n)
{
	if (arm(rs, n, RING_WAIT_SIGNAL))
		return 1;
	ring_wait_disarm(rs, n);
	return 0;
}

void
ring_wait_disarm(struct ring **rs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		atomic_store_explicit(wait_word(rs[i]), 0, memory_order_relaxed);
}

void
ring_wait(struct ring *r, int timeout_ms)
{
	ring_wait_many(&r, 1, timeout_ms < 0 ? -1 : timeout_ms * 1000000LL);
}

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

/*
 * Several rings: FUTEX_WAITV (Linux 5.16) sleeps on all their words at
 * once.  Without it, sleep on the first ring and wake up every
 * WAIT_POLL_NS to look at the others.
 */
#define WAIT_POLL_NS	2000000LL

void
ring_wait_many(struct ring **rs, int n, int64_t timeout_ns)
{
	static int no_waitv;
	struct futex_waitv fw[RING_WAIT_MANY];
	struct timespec ts;
	int64_t at;
	int i, blocked;

	if (n <= 0 || n > RING_WAIT_MANY)
		return;
	blocked = arm(rs, n, RING_WAIT_FUTEX);
	if (blocked && (n == 1 || no_waitv))
		futex_wait(wait_word(rs[0]), n > 1 && (timeout_ns < 0 ||
		    timeout_ns > WAIT_POLL_NS) ? WAIT_POLL_NS : timeout_ns);
	else if (blocked) {
		for (i = 0; i < n; i++)	/* shared: not FUTEX_PRIVATE */
			fw[i] = (struct futex_waitv){ .val = RING_WAIT_FUTEX,
			    .uaddr = (uintptr_t)wait_word(rs[i]),
			    .flags = FUTEX_32 };
		/* Its timeout is absolute (an hour for none). */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		at = ts.tv_sec * 1000000000LL + ts.tv_nsec + (timeout_ns < 0 ?
		    3600 * 1000000000LL : timeout_ns);
		ts.tv_sec = (time_t)(at / 1000000000LL);
		ts.tv_nsec = (long)(at % 1000000000LL);
		if (syscall(SYS_futex_waitv, fw, n, 0, &ts, CLOCK_MONOTONIC)
		    == -1 && errno == ENOSYS)
			no_waitv = 1;
	}
	ring_wait_disarm(rs, n);
}
