/*
 * idle.h: how a stage's breathe loop (app.c) idles and wakes its peers.
 *
 *   breath moved packets ──> idle_busy()      the spin that ended the
 *                                             last spell paid: keep it
 *   every breath ─────────> idle_flush()      pending wake-ups go out
 *   empty breath ─────────> idle_wait()       spin, then yield, then
 *                                             sleep on what we wait for
 *
 * Wake-ups are batched: ring_commit() and ring_release() only mark a
 * sleeping peer (see ring.h); idle_flush() sends the mark once the peer
 * has a batch to work on (idle_wake_batch() packets or slots), once we
 * have nothing more to give, or once it has waited WAKE_DEFER_NS.  So on
 * a shared core one context switch moves hundreds of packets, and no
 * packet waits on a sleep longer than that.
 *
 * Apps add what else ends a sleep with app_wait_fd() and app_wake_at()
 * (app.h); both live here.
 */
#ifndef SNB_IDLE_H
#define SNB_IDLE_H

#include <signal.h>
#include <stdint.h>

struct idle {
	unsigned	 idle;		/* empty breaths in this spell */
	unsigned	 spin;		/* spin for the next spell */
	unsigned	 spell_spin;	/* spin of this spell */
	unsigned	 spells;
	unsigned	 races;		/* looks in a row finding packets */
	uint64_t	 pending_since;	/* oldest wake-up left pending */
};

/* wake_mask: our signal mask with RING_WAKE_SIGNAL unblocked. */
void		idle_init(struct idle *, const sigset_t *wake_mask);
uint32_t	idle_wake_batch(uint32_t slots);
int		idle_flush(struct idle *, int moved, uint64_t now);
void		idle_busy(struct idle *);
int		idle_wait(struct idle *);

#endif
