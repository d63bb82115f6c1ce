/*
 * e1000_ring.h: the receive and transmit rings of snb-nic's e1000 driver
 * (legacy descriptors, 8254x/8257x), apart from its registers (e1000.c):
 * which descriptors the device is done with, copying frames between
 * their buffers and ring slots, where the tail goes next.  The caller
 * writes the tail register; nothing here touches the device otherwise, so
 * a model of the device can drive it (tests/unit/test_nic_rings.c,
 * fuzz/e1000_ring_fuzz.c).
 *
 * Each ring is NDESC descriptors and then NDESC buffers of BUF bytes in
 * one piece of DMA memory; descriptor i always uses buffer i.  What the
 * device writes into a receive descriptor is not trusted: each field is
 * loaded once, and a length that does not fit the buffer (or is 0) drops
 * the frame, counted in *bad_length.
 */
#ifndef SNB_E1000_RING_H
#define SNB_E1000_RING_H

#include <stdint.h>

#include "nic.h"

#define NDESC		512	/* per ring: a multiple of 8 (RDLEN % 128) */
#define BUF		2048	/* RCTL.BSIZE 00 */
#define RING_BYTES	(NDESC * 16)	/* buffers follow the descriptors */
#define RING_MEM	(RING_BYTES + NDESC * BUF)

/* Legacy receive descriptor: the device writes length, status, errors. */
struct rx_desc {
	uint64_t	addr;
	uint16_t	length;
	uint16_t	csum;
	uint8_t		status;
	uint8_t		errors;
	uint16_t	special;
};
#define RXD_DD		0x01
#define RXD_EOP		0x02
/* Errors that make a frame bad (CRC, symbol, sequence, data); the
 * checksum error bits (TCPE, IPE) are left to the graph. */
#define RXE_FRAME	0x87

/* Legacy transmit descriptor: we fill it, the device sets status DD. */
struct tx_desc {
	uint64_t	addr;
	uint16_t	length;
	uint8_t		cso;
	uint8_t		cmd;
	uint8_t		status;
	uint8_t		css;
	uint16_t	special;
};
#define TXD_EOP		0x01
#define TXD_IFCS	0x02	/* the device appends the FCS */
#define TXD_RS		0x08	/* report status: DD when done */
#define TXD_DD		0x01

struct e1000_rxq {
	volatile struct rx_desc *desc;
	uint8_t		*buf;		/* buffer i: buf + i * BUF */
	uint32_t	 next;		/* next descriptor to look at */
	int		 partial;	/* dropping the rest of a frame */
	uint64_t	*desc_errors;	/* frames the device marked bad */
	uint64_t	*bad_length;	/* lengths outside the buffer */
};

struct e1000_txq {
	volatile struct tx_desc *desc;
	uint8_t		*buf;
	uint64_t	 buf_phys;	/* the device's address of buf */
	uint32_t	 tail;		/* next descriptor to fill */
	uint32_t	 clean;		/* oldest not known to be sent */
};

/* Lay a ring out in RING_MEM bytes at mem (physical address phys). */
void	 e1000_rxq_init(struct e1000_rxq *, void *mem, uint64_t phys,
	    uint64_t *desc_errors, uint64_t *bad_length);
void	 e1000_txq_init(struct e1000_txq *, void *mem, uint64_t phys);
/*
 * Frames the device is done with, in order, up to b's budget, into b's
 * ring (or counted drops); returns how many descriptors were used: when
 * not 0, the caller writes e1000_rx_tail() to RDT.
 */
uint32_t e1000_rx_burst(struct e1000_rxq *, struct nic *, struct rx_burst *);
/* The receive tail: all descriptors but one are the device's. */
uint32_t e1000_rx_tail(const struct e1000_rxq *);
/*
 * Reclaim what the device has sent, fill descriptors with up to n packets
 * of in; returns how many were taken.  When q->tail moved, the caller
 * writes it to TDT.
 */
uint32_t e1000_tx_burst(struct e1000_txq *, struct nic *, struct ring *in,
	    uint32_t n);

#endif
