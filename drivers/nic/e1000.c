/*
 * e1000.c: a user-space driver for Intel's 8254x/8257x gigabit family with
 * legacy descriptors: the 82540EM (8086:100e, QEMU's "e1000") and the
 * 82574L (8086:10d3, QEMU's "e1000e").  Facts from Intel's public
 * "PCI/PCI-X Family of Gigabit Ethernet Controllers Software Developer's
 * Manual" (8254x) and the "82574 GbE Controller Family Datasheet".
 *
 * The device is polled, its interrupts masked; its rings, whose code
 * checks what the device writes there, are e1000_ring.c.  The shape
 * (model table, reset, rx/tx ring set-up, burst rx/tx, clear-on-read
 * statistics folded into counters, link from STATUS) is meant to be
 * followed by an 82599 driver: there the same steps use advanced
 * descriptors and per-queue enable bits.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "e1000_ring.h"
#include "nic.h"
#include "pci.h"

/* Registers (byte offsets into BAR 0). */
#define CTRL		0x0000
#define  CTRL_FD	(1u << 0)
#define  CTRL_LRST	(1u << 3)
#define  CTRL_ASDE	(1u << 5)
#define  CTRL_SLU	(1u << 6)
#define  CTRL_ILOS	(1u << 7)
#define  CTRL_RST	(1u << 26)
#define  CTRL_VME	(1u << 30)
#define  CTRL_PHY_RST	(1u << 31)
#define STATUS		0x0008
#define  STATUS_LU	(1u << 1)
#define EERD		0x0014
#define ICR		0x00c0
#define IMC		0x00d8
#define RCTL		0x0100
#define  RCTL_EN	(1u << 1)
#define  RCTL_UPE	(1u << 3)
#define  RCTL_MPE	(1u << 4)
#define  RCTL_BAM	(1u << 15)	/* BSIZE 00: 2048-byte buffers */
#define  RCTL_SECRC	(1u << 26)
#define TCTL		0x0400
#define  TCTL_EN	(1u << 1)
#define  TCTL_PSP	(1u << 3)	/* pad short frames to 64 bytes */
#define  TCTL_CT	(0x0fu << 4)
#define  TCTL_COLD	(0x40u << 12)	/* full duplex */
#define TIPG		0x0410
#define  TIPG_COPPER	(10u | 8u << 10 | 6u << 20)
#define RDBAL		0x2800		/* BAH, LEN, H, T follow: ring_regs */
#define RDT		0x2818
#define RDTR		0x2820
#define TDBAL		0x3800
#define TDH		0x3810
#define TDT		0x3818
#define RXCSUM		0x5000
#define RFCTL		0x5008		/* 82574 only */
#define  RFCTL_EXTEN	(1u << 15)
#define MTA		0x5200		/* 128 words */
#define RAL0		0x5400
#define RAH0		0x5404
#define  RAH_AV		(1u << 31)

/* A model: how its EEPROM read register is laid out, and its quirks. */
struct model {
	uint16_t	 vendor, device;
	const char	*name;
	uint32_t	 eerd_done;	/* EERD: done bit */
	int		 eerd_shift;	/* EERD: word address shift */
	int		 e1000e;	/* 82574: RFCTL exists */
};

static const struct model models[] = {
	{ 0x8086, 0x100e, "82540EM", 1u << 4, 8, 0 },
	{ 0x8086, 0x10d3, "82574L", 1u << 1, 2, 1 },
	{ 0, 0, NULL, 0, 0, 0 }
};

/*
 * The device's clear-on-read statistics registers we read: added to our
 * own counter of that name, and, when drop is set, to drop-device too
 * (frames the device lost).  Registers QEMU does not implement read 0.
 */
static const struct hwstat {
	uint32_t	 reg;
	const char	*name;
	int		 drop;
} hwstats[] = {
	{ 0x4010, "dev-rx-missed", 1 },		/* MPC: no room, frame lost */
	{ 0x4000, "dev-rx-crc-errors", 1 },	/* CRCERRS */
	{ 0x400c, "dev-rx-errors", 1 },		/* RXERRC */
	{ 0x40a4, "dev-rx-undersize", 1 },	/* RUC */
	{ 0x40ac, "dev-rx-oversize", 1 },	/* ROC */
	{ 0x40a0, "dev-rx-no-desc", 0 },	/* RNBC: waited, not lost */
	{ 0x40d0, "dev-rx-total", 0 },		/* TPR */
	{ 0x4074, "dev-rx-good", 0 },		/* GPRC */
	{ 0x4080, "dev-tx-good", 0 },		/* GPTC */
};
#define NHWSTATS	(sizeof(hwstats) / sizeof(*hwstats))

struct e1000 {
	struct pci_dev	 pci;
	const struct model *model;
	volatile uint8_t *bar;
	size_t		 barlen;
	struct dma_mem	 rxm, txm;	/* descriptors, then buffers */
	struct e1000_rxq rx;
	struct e1000_txq tx;
	uint8_t		 mac[6];
	uint64_t	*hw[NHWSTATS];
};

static int
e1000_match(uint16_t vendor, uint16_t device)
{
	const struct model *m;

	for (m = models; m->name != NULL; m++)
		if (m->vendor == vendor && m->device == device)
			return 1;
	return 0;
}

/* EEPROM word n through EERD; -1 if the read never completes. */
static int
eeprom_word(struct e1000 *e, int n)
{
	uint32_t v;
	int i;

	reg_write(e->bar, EERD, 1u | (uint32_t)n << e->model->eerd_shift);
	for (i = 0; i < 1000 &&
	    !((v = reg_read(e->bar, EERD)) & e->model->eerd_done); i++)
		usleep(10);
	return i < 1000 ? (int)(v >> 16) : -1;
}

/*
 * The MAC address: receive address 0 as the device loaded it from its
 * EEPROM at reset, or the EEPROM's words 0-2 when that entry is not valid
 * (and then written to receive address 0, so unicast filtering works).
 */
static int
read_mac(struct e1000 *e)
{
	uint32_t lo = reg_read(e->bar, RAL0), hi = reg_read(e->bar, RAH0);
	int i, w[3];

	if (!(hi & RAH_AV)) {
		for (i = 0; i < 3; i++)
			if ((w[i] = eeprom_word(e, i)) < 0)
				return -1;
		lo = (uint32_t)w[0] | (uint32_t)w[1] << 16;
		hi = (uint32_t)w[2] | RAH_AV;
		reg_write(e->bar, RAL0, lo);
		reg_write(e->bar, RAH0, hi);
	}
	/* The registers hold it little-endian, as the host does. */
	memcpy(e->mac, &lo, 4);
	memcpy(e->mac + 4, &hi, 2);
	return 0;
}

/* Global reset: every register to its default, receive and transmit off.
 * QEMU's 82574 keeps most registers across it: we set all we rely on. */
static int
reset(struct e1000 *e)
{
	int i;

	reg_write(e->bar, IMC, ~0u);
	reg_write(e->bar, RCTL, 0);
	reg_write(e->bar, TCTL, 0);
	reg_write(e->bar, CTRL, reg_read(e->bar, CTRL) | CTRL_RST);
	usleep(1000);	/* no register access for 1 us after RST */
	for (i = 0; i < 1000 && (reg_read(e->bar, CTRL) & CTRL_RST); i++)
		usleep(1000);
	if (reg_read(e->bar, CTRL) & CTRL_RST)
		return -1;
	reg_write(e->bar, IMC, ~0u);	/* masked by the reset; be sure */
	(void)reg_read(e->bar, ICR);
	return 0;
}

/* Base, length, head, tail: one layout from RDBAL and from TDBAL. */
static void
ring_regs(struct e1000 *e, uint32_t base, uint64_t phys)
{
	reg_write(e->bar, base, (uint32_t)phys);
	reg_write(e->bar, base + 0x04, (uint32_t)(phys >> 32));
	reg_write(e->bar, base + 0x08, RING_BYTES);
	reg_write(e->bar, base + 0x10, 0);
	reg_write(e->bar, base + 0x18, 0);
}

/* Link up (SLU), speed and duplex by auto-negotiation (ASDE); the rings.
 * The receiver is enabled only when the graph takes what it receives:
 * otherwise every frame would end as a missed packet. */
static void
start(struct e1000 *e, int enable, int promisc)
{
	uint32_t i, rctl;

	reg_write(e->bar, CTRL, (reg_read(e->bar, CTRL) | CTRL_SLU |
	    CTRL_ASDE | CTRL_FD) & ~(CTRL_LRST | CTRL_PHY_RST | CTRL_ILOS |
	    CTRL_VME));
	e1000_rxq_init(&e->rx, e->rxm.virt, e->rxm.phys,
	    app_counter("dev-rx-desc-errors"),
	    app_counter("dev-rx-bad-length"));
	for (i = 0; i < 128; i++)
		reg_write(e->bar, MTA + 4 * i, 0);
	reg_write(e->bar, RXCSUM, 0);	/* no offload: we copy frames whole */
	if (e->model->e1000e)	/* legacy, not extended, descriptors */
		reg_write(e->bar, RFCTL, reg_read(e->bar, RFCTL) &
		    ~RFCTL_EXTEN);
	ring_regs(e, RDBAL, e->rxm.phys);
	reg_write(e->bar, RDTR, 0);	/* no interrupt delay: we poll */
	rctl = (enable ? RCTL_EN : 0) | RCTL_BAM | RCTL_SECRC;
	if (promisc)
		rctl |= RCTL_UPE | RCTL_MPE;
	reg_write(e->bar, RCTL, rctl);
	/* All descriptors but one to the device: head == tail means empty. */
	reg_write(e->bar, RDT, e1000_rx_tail(&e->rx));
	e1000_txq_init(&e->tx, e->txm.virt, e->txm.phys);
	ring_regs(e, TDBAL, e->txm.phys);
	reg_write(e->bar, TIPG, TIPG_COPPER);
	reg_write(e->bar, TCTL, TCTL_EN | TCTL_PSP | TCTL_CT | TCTL_COLD);
}

static int
e1000_link(struct nic *nic)
{
	struct e1000 *e = nic->priv;

	return (reg_read(e->bar, STATUS) & STATUS_LU) != 0;
}

/* Also after a failed open: each part is let go if it was taken. */
static void
e1000_release(struct nic *nic)
{
	struct e1000 *e = nic->priv;

	if (e->bar != NULL)
		munmap((void *)e->bar, e->barlen);
	pci_close(&e->pci);
	dma_free(&e->rxm);
	dma_free(&e->txm);
}

static int
e1000_open(struct nic *nic, char *errbuf, size_t len)
{
	struct e1000 *e = nic->priv;
	const struct model *m;
	size_t i;
	int err, k;

	if ((err = pci_open(&e->pci, nic->ifname, -1, errbuf, len)) != 0)
		return err;
	for (m = models; m->name != NULL; m++)
		if (m->vendor == e->pci.vendor && m->device == e->pci.device)
			e->model = m;
	if (e->model == NULL)	/* nic.c matched: it changed under us */
		return nic_fail(errbuf, len, ENODEV, "PCI %s: %04x:%04x",
		    e->pci.addr, e->pci.vendor, e->pci.device);
	if ((e->bar = pci_map_bar(&e->pci, 0, &e->barlen)) == NULL)
		return nic_fail(errbuf, len, errno, "PCI %s: mapping BAR 0",
		    e->pci.addr);
	if (e->barlen < 0x10000)
		return nic_fail(errbuf, len, ENXIO, "PCI %s: BAR 0 is %zu "
		    "bytes", e->pci.addr, e->barlen);
	if ((err = dma_alloc(&e->pci, RING_MEM, &e->rxm, errbuf, len)) != 0 ||
	    (err = dma_alloc(&e->pci, RING_MEM, &e->txm, errbuf, len)) != 0)
		return err;
	if (reset(e) == -1)
		return nic_fail(errbuf, len, ETIMEDOUT, "PCI %s: reset",
		    e->pci.addr);
	/* Reset, the device has no rings and receives nothing: now it
	 * may master. */
	if ((err = pci_bus_master(&e->pci, 1, errbuf, len)) != 0)
		return err;
	if (read_mac(e) == -1)
		return nic_fail(errbuf, len, ETIMEDOUT, "PCI %s: EEPROM",
		    e->pci.addr);
	start(e, nic->rx, nic->promisc);
	for (i = 0; i < NHWSTATS; i++) {
		(void)reg_read(e->bar, hwstats[i].reg);	/* clear the past */
		e->hw[i] = app_counter(hwstats[i].name);
	}
	/* Auto-negotiation takes a moment; a link that stays down is
	 * reported by the link hook and pauses transmission. */
	for (k = 0; k < 300 && !e1000_link(nic); k++)
		usleep(10000);
	fprintf(stderr, "snb-nic: %s: %s (%04x:%04x) "
	    "%02x:%02x:%02x:%02x:%02x:%02x, link %s\n", e->pci.addr,
	    e->model->name, e->pci.vendor, e->pci.device, e->mac[0],
	    e->mac[1], e->mac[2], e->mac[3], e->mac[4], e->mac[5],
	    e1000_link(nic) ? "up" : "down");
	return 0;
}

/* Receive (e1000_ring.c): one tail write returns the whole burst's
 * descriptors to the device. */
static void
e1000_rx(struct nic *nic, struct rx_burst *b)
{
	struct e1000 *e = nic->priv;

	if (e1000_rx_burst(&e->rx, nic, b) != 0)
		reg_write(e->bar, RDT, e1000_rx_tail(&e->rx));
}

/* Transmit (e1000_ring.c): one tail write for the burst. */
static uint32_t
e1000_tx(struct nic *nic, struct ring *in, uint32_t n)
{
	struct e1000 *e = nic->priv;
	uint32_t t = e->tx.tail;

	n = e1000_tx_burst(&e->tx, nic, in, n);
	if (e->tx.tail != t)
		reg_write(e->bar, TDT, e->tx.tail);
	return n;
}

/* Fold the clear-on-read statistics into our counters. */
static void
e1000_stats(struct nic *nic)
{
	struct e1000 *e = nic->priv;
	uint32_t v;
	size_t i;

	for (i = 0; i < NHWSTATS; i++) {
		v = reg_read(e->bar, hwstats[i].reg);
		*e->hw[i] += v;
		if (hwstats[i].drop)
			*nic->c.drop_kernel += v;
	}
}

/* Let the device send what it holds (up to 100 ms), then reset it;
 * e1000_release then lets go: bus mastering off (pci_close), memory freed
 * after that. */
static void
e1000_drain(struct nic *nic)
{
	struct e1000 *e = nic->priv;
	int i;

	for (i = 0; i < 100 && reg_read(e->bar, TDH) != e->tx.tail; i++)
		usleep(1000);
	e1000_stats(nic);
	reset(e);
}

const struct nic_ops e1000_ops = {
	.name = "e1000",
	.caps = "root",	/* sysfs PCI access, /proc/self/pagemap, hugepages */
	.size = sizeof(struct e1000),
	.match = e1000_match,
	.open = e1000_open,
	.rx = e1000_rx,
	.tx = e1000_tx,
	.stats = e1000_stats,
	.link = e1000_link,
	.drain = e1000_drain,
	.release = e1000_release,
};
