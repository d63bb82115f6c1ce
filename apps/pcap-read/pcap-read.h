/*
 * pcap-read.h: what snb-pcap-read's stage (main.c) and its stream of
 * records (stream.c) share.
 */
#ifndef SNB_PCAP_READ_H
#define SNB_PCAP_READ_H

#include <string.h>

#include <pcap/pcap.h>

#include "app.h"
#include "linktype.h"
#include "pace.h"

/* A record to send; data is valid until the next read. */
struct rec {
	const unsigned char *data;
	uint32_t	caplen, wirelen;
	uint64_t	ts_ns;
};

extern const char *file;
extern int from_stdin;
extern int ended;		/* the stream has ended */
extern int cached;		/* this pass is replayed from memory */
extern int quiet, warned, warned_ne;	/* no warning; given already */
extern pcap_t *pc;
extern uint32_t cap;		/* the output's capacity: larger records
				   are skipped */
extern uint64_t loops;		/* --loop: passes, 0 for ever */
extern uint64_t *drop_oversize, *drop_nonether;
extern unsigned char *frame;	/* a record made Ethernet, cap bytes */
extern struct pace pace;	/* --timing (mult), --rate (pps) */
#define PACED	(pace.mult != 0 || pace.pps != 0)

int	open_file(int fatal);
void	stream_reset(void);
int	read_record(struct rec *rc);
int	next_pass(void);
int	skip_records(uint64_t k);
int	may_block(void);
uint32_t replay_cached(struct ring *r, uint32_t n, uint64_t *bytes);

/* A record, its bytes at data, into an output slot. */
static inline void
put_rec(struct packet *p, const struct rec *rc, const void *data)
{
	p->len = (uint16_t)rc->caplen;
	p->flags = 0;
	p->wirelen = rc->wirelen;
	p->ts_ns = rc->ts_ns;
	memcpy(p->data, data, rc->caplen);
}

#endif
