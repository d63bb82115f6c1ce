/*
 * audit.h: snb-esp's auditable events (RFC 4303 3.3.3, 3.4.2 to 3.4.4;
 * RFC 4301 5.2), logged to standard error, rate-limited.
 *
 * Each refusal those sections call an auditable event is counted in its
 * drop counter, and here: a packet only notes itself (an increment, and
 * for the first of a run its SPI, sequence number, addresses and flow
 * label copied), so a flood costs no syscall and no formatting per
 * packet.  Once a breath, audit_breath() writes at most one line per
 * kind per second, of the first event not yet in a line, with how many
 * more of that kind came since (the way the kernel's printk rate limit
 * counts what it suppressed); the stage's stop writes what is left.
 */
#ifndef SNB_ESP_AUDIT_H
#define SNB_ESP_AUDIT_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "proto.h"

enum audit_kind {
	AUDIT_NO_SA,		/* 3.4.2: no SA (SPI, destination, source) */
	AUDIT_REPLAY,		/* 3.4.3: a duplicate */
	AUDIT_TOO_OLD,		/* 3.4.3: left of the window */
	AUDIT_ICV,		/* 3.4.4: the ICV failed */
	AUDIT_SEQ_CYCLE,	/* 3.3.3: the counter would cycle (outbound) */
	AUDIT_INNER_REMOTE,	/* RFC 4301 5.2 step 4: the inner source is
				   not the SA's */
	AUDIT_KINDS
};

struct audit_ev {
	uint32_t	spi;
	uint32_t	seq;		/* as on the wire (the low half) */
	uint32_t	flow;		/* the outer IPv6 flow label */
	int		has_seq;
	uint8_t		src[16], dst[16];
};

struct audit_run {
	uint64_t	n;		/* events not yet in a line */
	uint64_t	quiet_until;	/* CLOCK_MONOTONIC ns: no line before */
	struct timespec	when;		/* the first's breath (tv_sec 0: not
					   stamped yet) */
	struct audit_ev	first;
};

extern struct audit_run audit_runs[AUDIT_KINDS];
extern int audit_pending;

/* On the data path: one event of kind k; esp is NULL or >= 8 bytes. */
static inline void
audit_note(enum audit_kind k, uint32_t spi, const uint8_t *esp,
    const uint8_t *src, const uint8_t *dst, uint32_t flow)
{
	struct audit_run *a = &audit_runs[k];

	if (a->n++ != 0)
		return;
	a->first.spi = spi;
	a->first.has_seq = esp != NULL;
	a->first.seq = esp == NULL ? 0 : (uint32_t)esp[4] << 24 |
	    (uint32_t)esp[5] << 16 | (uint32_t)esp[6] << 8 | esp[7];
	a->first.flow = flow;
	memcpy(a->first.src, src, 16);
	memcpy(a->first.dst, dst, 16);
	a->when.tv_sec = 0;
	audit_pending = 1;
}

/* Set the prefix of every line ("snb-esp: LABEL: audit: "). */
void	audit_init(const char *label);
/* After a breath that noted events (audit_pending): the lines due. */
void	audit_breath(void);
/* At the stop: a line for every kind with events not yet in one. */
void	audit_flush(void);

#endif
