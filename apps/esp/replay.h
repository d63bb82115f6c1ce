/*
 * replay.h: the receiver's anti-replay window with extended sequence
 * numbers (RFC 4303 3.4.3 and appendix A2).
 *
 * Only the low 32 bits of the sequence number travel; the high half is
 * guessed from the window (replay_guess), the ICV proves the guess (the
 * high half is in the AAD), and only then does the window move
 * (replay_accept).  A guess is checked against the window before the
 * ICV (replay_check) so that a replayed or too old packet costs no
 * decryption.
 *
 * With the window of w bits and top = Th the highest accepted number,
 * its bottom Tl = Th - w + 1 (mod 2^32 in the low half):
 *  - the window within one 2^32 subspace (Th low >= w - 1): a low
 *    half >= Tl is in Th's subspace, a smaller one in the next;
 *  - the window across two (Th low < w - 1): a low half >= Tl is in the
 *    subspace before Th's, a smaller one in Th's.
 * The subspace before 0 does not exist: there, a low half >= Tl is read
 * as Th's subspace, ahead of the window (a sender that starts high).
 */
#ifndef SNB_ESP_REPLAY_H
#define SNB_ESP_REPLAY_H

#include <string.h>

#include "esp.h"

static inline uint64_t
replay_guess(const struct esp_replay *r, uint32_t low)
{
	uint32_t th = (uint32_t)r->top, hi = (uint32_t)(r->top >> 32);
	uint32_t tl = th - r->w + 1;

	if (th >= r->w - 1) {
		if (low < tl)
			hi++;		/* wraps to 0 past 2^64: too old */
	} else if (low >= tl && hi > 0)
		hi--;
	return (uint64_t)hi << 32 | low;
}

/* ESP_OK, ESP_REPLAY or ESP_TOO_OLD for sequence number s. */
static inline int
replay_check(const struct esp_replay *r, uint64_t s)
{
	if (s > r->top)
		return ESP_OK;
	/* 0 is never sent: the first packet of an SA is 1. */
	if (s == 0 || r->top - s >= r->w)
		return ESP_TOO_OLD;
	return r->bits[s % r->w / 64] >> (s % r->w % 64) & 1 ? ESP_REPLAY :
	    ESP_OK;
}

/* s passed replay_check and the ICV: mark it, move the window. */
static inline void
replay_accept(struct esp_replay *r, uint64_t s)
{
	uint32_t b;

	if (s > r->top) {
		if (s - r->top >= r->w)
			memset(r->bits, 0, r->w / 8);
		else
			for (uint64_t t = r->top + 1; t < s; t++) {
				b = (uint32_t)(t % r->w);
				r->bits[b / 64] &= ~(1ULL << (b % 64));
			}
		r->top = s;
	}
	b = (uint32_t)(s % r->w);
	r->bits[b / 64] |= 1ULL << (b % 64);
}

/* A window of w bits whose highest accepted number is top. */
static inline void
replay_init(struct esp_replay *r, uint32_t w, uint64_t top)
{
	memset(r, 0, sizeof(*r));
	r->w = w;
	if (top > 0)
		replay_accept(r, top);
}

#endif
