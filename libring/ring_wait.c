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
futex_wait(_Atomic uint32_t *word, uint32_t val, int64_t timeout_ns)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(timeout_ns / 1000000000LL);
	ts.tv_nsec = (long)(timeout_ns % 1000000000LL);
	syscall(SYS_futex, word, FUTEX_WAIT, val, timeout_ns < 0 ? NULL : &ts,
	    NULL, 0);
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

int
ring_wait_arm(struct ring **rs, int n)
{
	int i, blocked = 1;

	for (i = 0; i < n; i++)
		atomic_store_explicit(wait_word(rs[i]), RING_WAIT_SIGNAL,
		    memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	for (i = 0; i < n && blocked; i++)
		blocked = still_blocked(rs[i]);
	if (!blocked)
		ring_wait_disarm(rs, n);
	return blocked;
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
 * WAIT_POLL_MS to look at the others.
 */
#define WAIT_POLL_NS	2000000LL

void
ring_wait_many(struct ring **rs, int n, int64_t timeout_ns)
{
	static int no_waitv;
	struct futex_waitv fw[RING_WAIT_MANY];
	struct timespec ts;
	int i, blocked = 1;

	if (n <= 0 || n > RING_WAIT_MANY)
		return;
	for (i = 0; i < n; i++)
		atomic_store_explicit(wait_word(rs[i]), RING_WAIT_FUTEX,
		    memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	for (i = 0; i < n && blocked; i++)
		blocked = still_blocked(rs[i]);
	if (blocked && n == 1)
		futex_wait(wait_word(rs[0]), 1, timeout_ns);
	else if (blocked && !no_waitv) {
		for (i = 0; i < n; i++) {
			fw[i].val = 1;
			fw[i].uaddr = (uint64_t)(uintptr_t)wait_word(rs[i]);
			fw[i].flags = FUTEX_32;	/* shared: not FUTEX_PRIVATE */
			fw[i].__reserved = 0;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (timeout_ns < 0)
			timeout_ns = 3600 * 1000000000LL;
		ts.tv_sec += (time_t)(timeout_ns / 1000000000LL);
		ts.tv_nsec += (long)(timeout_ns % 1000000000LL);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (syscall(SYS_futex_waitv, fw, n, 0, &ts, CLOCK_MONOTONIC)
		    == -1 && errno == ENOSYS)
			no_waitv = 1;
	} else if (blocked)
		futex_wait(wait_word(rs[0]), 1, timeout_ns >= 0 &&
		    timeout_ns < WAIT_POLL_NS ? timeout_ns : WAIT_POLL_NS);
	for (i = 0; i < n; i++)
		atomic_store_explicit(wait_word(rs[i]), 0, memory_order_relaxed);
}
