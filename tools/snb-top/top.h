/*
 * top.h: snb-top's parts and what they share.
 *
 *	main.c		options, the display loop, the terminal (keys, size)
 *	show.c		samples, and the screen, batch and JSON forms of two
 *	prom.c		the Prometheus text exposition of the counters
 *	http.c		--listen: GET /metrics over HTTP, without blocking
 */
#ifndef SNB_TOP_H
#define SNB_TOP_H

#include <signal.h>
#include <stdio.h>
#include <stdint.h>

#include "stats.h"

/* What we read of a link and of a stage at one instant. */
struct link_sample {
	uint64_t	packets, bytes, drops, fill;
};

struct stage_sample {
	uint64_t	in, out, busy_ns, busy_breaths;
	uint64_t	c[STAGE_MAX_COUNTERS];
};

/* Every graph's counters at one instant (CLOCK_MONOTONIC t). */
struct sample {
	struct link_sample	*l;
	struct stage_sample	*s;
	double			 t;
};

/* Where lines go: a screen (cut to its size, escape codes) or a stream. */
struct page {
	FILE	*f;
	int	 screen;	/* move and erase with escape codes */
	int	 cols, rows;	/* cut lines to cols, stop at rows; 0: no cut */
	int	 row;
};

extern volatile sig_atomic_t	quit;	/* a signal asked us to leave */

/* show.c */
double	now_s(void);
void	sample_take(struct graph_view *g, int n, struct sample *s);
void	sample_free(struct sample *s);
void	show_page(struct page *p, struct graph_view *g, int n,
	    const struct sample *a, const struct sample *b, double interval);
void	show_json(FILE *f, struct graph_view *g, int n,
	    const struct sample *a, const struct sample *b);

/* prom.c */
void	prom_write(FILE *f, struct graph_view *g, int n);

/* http.c: http_listen() is -2 for a malformed address, -1 if it fails */
int	http_listen(const char *addr, char *errbuf, size_t errlen);
int	http_serve(int fd, const char *run, const char *only);

#endif
