/*
 * pace.h: when each packet of a replay is due, as tcpreplay paces: at the
 * capture's own timing divided by a multiplier (--multiplier), or a fixed
 * number of packets a second (--pps).  The app asks once per packet, in
 * order, and holds a packet until it is due (app_wake_at: the runtime
 * sleeps between breaths, no syscall per packet).  Late packets go as
 * fast as the graph takes them, so the schedule is kept on average.
 */
#ifndef SNB_PACE_H
#define SNB_PACE_H

#include <stdint.h>

struct pace {
	double		mult;		/* capture timing / mult, or 0 */
	uint64_t	pps;		/* or packets a second, or 0 */
	uint64_t	wall0, cap0;	/* a run's start: clock, capture */
	uint64_t	last, n;	/* the last due time; packets of the run */
	int		restart;	/* the next packet starts a run */
};

/* A run starts with the next packet, right after the last one (a pass
 * of a --loop), or at now (start, resume: no burst for time away). */
static inline void
pace_restart(struct pace *p, uint64_t now)
{
	if (now)
		p->last = now;
	p->restart = 1;
}

/* When the packet captured at ts (ns) is due, on CLOCK_MONOTONIC. */
static inline uint64_t
pace_due(struct pace *p, uint64_t ts)
{
	uint64_t d;

	if (p->restart) {
		p->wall0 = p->last;
		p->cap0 = ts;
		p->n = 0;
		p->restart = 0;
	}
	if (p->pps)
		d = p->wall0 + (uint64_t)((double)p->n++ * 1e9 /
		    (double)p->pps);
	else	/* a packet older than the run's first goes at once */
		d = ts < p->cap0 ? p->last : p->wall0 +
		    (uint64_t)((double)(ts - p->cap0) / p->mult);
	if (d < p->last)
		d = p->last;
	return p->last = d;
}

#endif
