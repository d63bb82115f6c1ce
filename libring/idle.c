/*
 * idle.c: a stage's idling: the spin, yield and sleep of an empty
 * breath, what ends a sleep (rings, the app's descriptors and deadline),
 * and the batched wake-ups of peers.  See idle.h.
 */
#define _GNU_SOURCE	/* ppoll */
#include <err.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "app.h"
#include "idle.h"
#include "stage.h"

static uint64_t wake_at_ns;
static struct pollfd app_fds[APP_MAX_FDS];
static int app_nfds;
static sigset_t wake_mask;	/* our mask with RING_WAKE_SIGNAL unblocked */

/*
 * Back-off: empty breaths spent spinning, then yielding, then sleeping.
 * Spinning pays only while a peer works on another core; where it shares
 * ours (more stages than cores) a spin only burns the time the peer
 * needs.  So the spin is adaptive: an idle spell that spinning ended
 * keeps the whole spin, one that went on to yield halves it, and every
 * SPIN_PROBE-th spell spins whole again to see whether it pays now.
 */
#define IDLE_SPIN	64
#define IDLE_YIELDS	16
#define SPIN_PROBE	16
#define WAKE_BATCH	256	/* see idle_wake_batch() */
#define WAKE_DEFER_NS	20000	/* a pending wake-up waits no longer */
#define SLEEP_NS	100000000ULL	/* safety net: a peer's wake-up or
					   the app's own deadline comes first;
					   SNB_IDLE_CAP_MS changes it (tests
					   make a lost wake-up obvious) */
#define RACE_SPINS	8	/* see idle_sleep() */
static uint64_t sleep_cap_ns = SLEEP_NS;

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax()	__builtin_ia32_pause()
#else
#define cpu_relax()	__asm__ __volatile__("" ::: "memory")
#endif
void
app_wait_fd(int fd, short events)
{
	if (app_nfds == APP_MAX_FDS)
		errx(1, "too many file descriptors to wait on");
	app_fds[app_nfds++] = (struct pollfd){ .fd = fd, .events = events };
}

void
app_wake_at(uint64_t ns)
{
	wake_at_ns = ns;
}
/*
 * Nothing happened this breath: find what we wait for and sleep until it
 * comes.  Inputs that hold packets mean the app waits for room: sleep on
 * the full outputs.  Otherwise sleep on the empty open inputs and the
 * full outputs together (a source waits only for room), or on the app's
 * descriptors (a device), never past the app's own deadline.
 *
 * Packets can arrive between the empty breath and the look taken here:
 * then an input holds packets the app has not seen, and the right sleep
 * is none at all.  (Sleeping there for the safety net was the 100 ms
 * stall of issue 11.)  That holds whether an output is full or not: a
 * full output the app does not need now (lb's output of other flows,
 * whose consumer is stopped) may not drain for long.  So inputs with
 * packets get another breath first; left by that one too, they wait for
 * room if an output is full.  An app that keeps packets waiting while
 * its outputs have room, for reasons of its own, gets a short nap after
 * RACE_SPINS such looks in a row (breaths that moved nothing), not a
 * busy loop.
 */
static void
idle_sleep(struct idle *s)
{
	/* Room for every ring: a stage after copies has up to 1024 inputs. */
	struct ring *rs[app_nrings + 1];
	struct timespec ts;
	uint64_t timeout = sleep_cap_ns, now;
	int i, n = 0, n_out, pending = 0;

	for (i = 0; i < app_nrings; i++)
		if (app_rings[i]->side == RING_PRODUCER) {
			if (ring_room(app_rings[i], 1) == 0)
				rs[n++] = app_rings[i];
		} else if (ring_avail(app_rings[i], 1) > 0)
			pending = 1;
	n_out = n;
	if (!pending) {
		s->races = 0;
		for (i = 0; i < app_nrings; i++)
			if (app_rings[i]->side == RING_CONSUMER &&
			    !ring_eof(app_rings[i]))
				rs[n++] = app_rings[i];
	} else if (++s->races < (n_out ? 2 : RACE_SPINS))
		return;
	else if (n_out == 0)
		timeout = 1000000;	/* the nap */
	if (wake_at_ns) {
		now = app_now_ns();
		if (wake_at_ns <= now) {
			wake_at_ns = 0;	/* spent: the app sets a new one */
			return;
		}
		if (wake_at_ns - now < timeout)
			timeout = wake_at_ns - now;
	}
	app_stage->idle_sleeps++;
	ts.tv_sec = (time_t)(timeout / 1000000000ULL);
	ts.tv_nsec = (long)(timeout % 1000000000ULL);
	if (app_nfds || n > RING_WAIT_MANY) {
		/*
		 * A device sleeps in ppoll() on its descriptors, and a stage
		 * with more rings than one futex wait takes sleeps there too:
		 * the rings are armed so that a peer signals us instead of
		 * waking a futex nobody waits on.
		 */
		if (n == 0 || ring_wait_arm(rs, n)) {
			ppoll(app_fds, (nfds_t)app_nfds, &ts, &wake_mask);
			if (n)
				ring_wait_disarm(rs, n);
		}
	} else if (n)
		ring_wait_many(rs, n, (int64_t)timeout);
	else
		nanosleep(&ts, NULL);
}
void
idle_init(struct idle *s, const sigset_t *mask)
{
	const char *a;

	*s = (struct idle){ .spin = IDLE_SPIN };
	wake_mask = *mask;
	if ((a = getenv("SNB_IDLE_CAP_MS")) != NULL && *a)
		sleep_cap_ns = strtoull(a, NULL, 10) * 1000000ULL;
}

/* A peer is woken once it has half a ring, at most WAKE_BATCH. */
uint32_t
idle_wake_batch(uint32_t slots)
{
	return slots / 2 < WAKE_BATCH ? slots / 2 : WAKE_BATCH;
}

/*
 * After every breath: wake-ups left pending go out once the peer has a
 * batch, once we have nothing more to give (moved == 0), or when one has
 * waited WAKE_DEFER_NS (a stage that never idles but trickles).  1: a
 * peer was woken, and may have taken our core here (the caller keeps
 * that out of its busy time).
 */
int
idle_flush(struct idle *s, int moved, uint64_t now)
{
	int i, woke = 0, all;

	if (ring_wakes_pending == 0) {
		s->pending_since = 0;
		return 0;
	}
	if (s->pending_since == 0)
		s->pending_since = now;
	all = moved == 0 || now - s->pending_since >= WAKE_DEFER_NS;
	for (i = 0; i < app_nrings && ring_wakes_pending; i++)
		woke |= ring_flush_wake(app_rings[i], all);
	if (ring_wakes_pending == 0)
		s->pending_since = 0;
	return woke;
}

/* A breath moved packets. */
void
idle_busy(struct idle *s)
{
	if (s->idle > 0 && s->idle <= s->spell_spin)
		s->spin = IDLE_SPIN;	/* the spin paid */
	s->idle = 0;
	s->races = 0;
}

/* An empty breath.  1: we gave the core away (yield or sleep). */
int
idle_wait(struct idle *s)
{
	if (s->idle++ == 0)	/* a new idle spell */
		s->spell_spin = ++s->spells % SPIN_PROBE == 0 ? IDLE_SPIN :
		    s->spin;
	if (s->idle <= s->spell_spin) {
		cpu_relax();
		return 0;
	}
	if (s->idle == s->spell_spin + 1)
		s->spin /= 2;	/* it did not pay */
	if (s->idle <= s->spell_spin + IDLE_YIELDS)
		sched_yield();
	else
		idle_sleep(s);
	return 1;
}
