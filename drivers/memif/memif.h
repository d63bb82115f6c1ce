/*
 * memif.h: what the parts of snb-memif share.  ctl.c is the control
 * plane (socket, handshake), mem.c the shared memory it sets up; memif.c
 * the options, the data path and the breath.  msg.h is the protocol.
 */
#ifndef SNB_MEMIF_H
#define SNB_MEMIF_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "app.h"
#include "msg.h"
#include "unixsock.h"

#define MS		1000000ULL
#define CTL_BUSY_NS	(1 * MS)	/* control socket while packets move */
#define HANDSHAKE_NS	(3000 * MS)	/* a peer must finish set-up by then */
#define RETRY_MIN_NS	(20 * MS)	/* slave: first reconnect delay ... */
#define RETRY_MAX_NS	(1000 * MS)	/* ... doubling up to this */
#define IDLE_UNMASK	32		/* idle breaths before asking for kicks */

/* One ring as we use it (private memory; base points into a region). */
struct mring {
	unsigned char	*base;		/* ring header */
	uint16_t	 mask;		/* slots - 1 */
	uint32_t	 size;		/* slots */
	uint16_t	 last;		/* next slot we read (rx) or fill (tx) */
	uint16_t	 posted;	/* slave rx: our head (buffers given) */
	uint32_t	 buf0;		/* slave: region-0 offset of slot 0's buffer */
	int		 efd;		/* the ring's eventfd, -1 if none */
	int		 masked;	/* rx: we set MASK_INT */
};

struct region {
	unsigned char	*addr;
	uint64_t	 size;
	int		 fd;
};

enum { C_DOWN, C_SETUP, C_UP };

/* The one connection (private memory). */
struct memif_conn {
	int		 fd;		/* control socket, -1 when none */
	int		 state;		/* C_* */
	uint64_t	 deadline;	/* C_SETUP must end by then */
	struct memif_session s;
	unsigned	 nregions;
	struct region	 reg[MEMIF_MAX_REGIONS];
	unsigned	 nrx, ntx;	/* rings in use (all hold an efd or -1) */
	struct mring	 rx[MEMIF_MAX_RINGS], tx[MEMIF_MAX_RINGS];
	/* Set by the SIGBUS guard (libring/memguard.h; every region is
	 * guarded while mapped): a region lost pages under us and is now
	 * private zero pages.  memory_lost() ends the connection. */
	volatile sig_atomic_t mem_lost;
};
extern struct memif_conn conn;

/* Options (memif.c). */
extern struct unix_sock sock;		/* SOCKET; the master listens on it */
extern int master, lossless;
extern uint32_t id, bufsize;
extern uint8_t want_log2;
extern char secret[MEMIF_SECRET_LEN + 1];
extern unsigned idle_breaths;		/* breaths in a row without packets */

/* Control-plane state (ctl.c). */
extern int epfd;			/* the epoll set */
extern int ever_up;			/* some connection was made */
extern uint64_t last_ctl;		/* when control() last ran */

/* Counters, in the stage file (memif.c makes them: the order of its
 * cnt_names). */
struct memif_counters {
	uint64_t *rx_packets, *rx_bytes, *tx_packets, *tx_bytes;
	uint64_t *drop_disconnected, *drop_oversize, *drop_no_output;
	uint64_t *connects, *disconnects, *bad_messages, *bad_descriptors;
	uint64_t *kicks, *kicks_received, *memory_faults;
};
extern struct memif_counters cnt;

static inline _Atomic uint16_t *
r_head(struct mring *r)
{
	return (_Atomic uint16_t *)(void *)(r->base + MEMIF_RING_HEAD_OFF);
}

static inline _Atomic uint16_t *
r_tail(struct mring *r)
{
	return (_Atomic uint16_t *)(void *)(r->base + MEMIF_RING_TAIL_OFF);
}

static inline volatile uint16_t *
r_flags(struct mring *r)
{
	return (volatile uint16_t *)(void *)(r->base + MEMIF_RING_FLAGS_OFF);
}

static inline volatile struct memif_desc *
r_desc(struct mring *r, uint16_t slot)
{
	return (volatile struct memif_desc *)(void *)(r->base +
	    MEMIF_RING_HDR) + (slot & r->mask);
}

/* Each field read once: the peer may rewrite the descriptor meanwhile. */
static inline struct memif_desc
desc_read(volatile struct memif_desc *vd)
{
	return (struct memif_desc){ vd->flags, vd->region, vd->length,
	    vd->offset, 0 };
}

/* memif.c */
void	wake_by(uint64_t t);

/* ctl.c */
void	control(uint64_t now, int wait_ms);	/* sockets, fds, timers */
void	conn_down(const char *reason, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
void	bad_ring(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int	memory_lost(void);	/* 1: the peer's memory faulted, conn ended */

/* mem.c: 0, or -1 with the reason in why */
int	map_region(unsigned i, int fd, char *why, size_t whylen);
int	master_connect(char *why, size_t whylen);	/* CONNECT came */
int	slave_memory(uint8_t log2, char *why, size_t whylen);
void	slave_post(struct mring *r, uint16_t from, uint16_t to);
void	release_memory(void);	/* unmap, close; the socket stays */

#endif
