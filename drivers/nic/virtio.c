/*
 * virtio.c: a user-space driver for virtio-net PCI functions through the
 * virtio 1.x PCI transport only (what it drives: snb-nic(1)).  Features:
 * VERSION_1, MAC and STATUS (the link).  Without offloads every frame
 * crosses whole; without mergeable buffers a receive buffer holds one
 * frame; without event index the plain flags suppress notifications.  We
 * poll: the device is told never to interrupt (AVAIL_F_NO_INTERRUPT, and
 * INTx off in the command register).
 *
 * Receive queue 0 and transmit queue 1 share one 2 MiB hugepage; their
 * ring code, which checks all that the device writes there, is
 * virtio_ring.c.  A device with several queue pairs, one process each
 * (pci:ADDR/qN), is virtio_mq.c's.
 */
#include <sys/mman.h>

#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nic.h"
#include "pci.h"
#include "virtio.h"

/* 64-bit fields are written as two 32-bit halves, low first (4.1.3.1). */
static void
wr64(volatile unsigned char *b, uint32_t off, uint64_t v)
{
	reg_write(b, off, (uint32_t)v);
	reg_write(b, off + 4, (uint32_t)(v >> 32));
}

/* Write 0 to the status and wait (up to a second) for it to read 0. */
static int
virtio_reset(struct virtio *v)
{
	int i;

	R8(v->common, CC_STATUS) = 0;
	for (i = 0; i < 1000 && R8(v->common, CC_STATUS) != 0; i++)
		usleep(1000);
	return R8(v->common, CC_STATUS) == 0 ? 0 : -1;
}

static int
virtio_match(uint16_t vendor, uint16_t device)
{
	return vendor == VENDOR_VIRTIO &&
	    (device == DEV_NET_LEGACY || device == DEV_NET_MODERN);
}

/*
 * A vendor capability (struct virtio_pci_cap, 4.1.4; the notification one
 * with its le32 notify_off_multiplier at 16): the first of each type whose
 * region lies in a memory BAR we can map is taken, as the order of the
 * list is the device's order of preference.
 */
static void
use_cap(struct virtio *v, const uint8_t *cap)
{
	volatile unsigned char **slot[CAP_DEVICE + 1] = { [CAP_COMMON] =
	    &v->common, [CAP_NOTIFY] = &v->notify, [CAP_DEVICE] = &v->device };
	volatile unsigned char **where;
	uint32_t off, len;
	uint8_t type = cap[3], bar = cap[4];

	if (type > CAP_DEVICE || (where = slot[type]) == NULL ||
	    *where != NULL || bar > 5)
		return;
	if (v->bar[bar] == NULL &&
	    (v->bar[bar] = pci_map_bar(&v->pci, bar, &v->barlen[bar])) == NULL)
		return;		/* an I/O BAR, or unmappable: look further */
	memcpy(&off, cap + 8, 4);
	memcpy(&len, cap + 12, 4);
	if (off > v->barlen[bar] || len > v->barlen[bar] - off ||
	    (type == CAP_COMMON && len < CC_LEN))
		return;
	*where = (volatile unsigned char *)v->bar[bar] + off;
	if (type == CAP_NOTIFY) {
		v->notify_len = len;
		memcpy(&v->notify_mult, cap + 16, 4);
	} else if (type == CAP_DEVICE)
		v->device_len = len;
}

int
virtio_caps(struct virtio *v, char *errbuf, size_t len)
{
	uint8_t cfg[256], *cap, ptr;
	int i;

	if (pci_config_read(&v->pci, 0, cfg, sizeof(cfg)) == -1)
		return nic_fail(errbuf, len, errno, "%s: config space",
		    v->pci.addr);
	ptr = cfg[PCI_STATUS] & PCI_STATUS_CAPS ? cfg[PCI_CAP_PTR] : 0;
	/* 48 capabilities at most fit; a loop in the list ends there. */
	for (i = 0; i < 48 && ptr >= 0x40 && ptr <= 256 - 20; i++) {
		cap = cfg + (ptr & 0xfc);
		if (cap[0] == PCI_CAP_VENDOR &&
		    cap[2] >= (cap[3] == CAP_NOTIFY ? 20 : 16))
			use_cap(v, cap);
		ptr = cap[1];
	}
	if (v->common == NULL || v->notify == NULL)
		return nic_fail(errbuf, len, ENOTSUP, "%s: no virtio 1.x "
		    "capabilities in a memory BAR (a legacy-only device?)",
		    v->pci.addr);
	return 0;
}

/* Steps 1-6 of 3.1.1. */
int
virtio_negotiate(struct virtio *v, uint64_t extra, char *errbuf, size_t len)
{
	volatile unsigned char *cc = v->common;
	uint64_t have, want;
	int gen, i, e;

	/* No DMA until the device is reset (pci.c): one left running (a
	 * killed process's, a device that needs a reset) still holds the
	 * buffers it was given. */
	if ((e = pci_bus_master(&v->pci, 0, errbuf, len)) != 0)
		return e;
	if (virtio_reset(v) == -1)
		return nic_fail(errbuf, len, ETIMEDOUT, "%s: device reset",
		    v->pci.addr);
	if ((e = pci_bus_master(&v->pci, 1, errbuf, len)) != 0)
		return e;
	R8(cc, CC_STATUS) = ST_ACKNOWLEDGE;
	R8(cc, CC_STATUS) = ST_ACKNOWLEDGE | ST_DRIVER;
	reg_write(cc, CC_DFSELECT, 0);
	have = reg_read(cc, CC_DF);
	reg_write(cc, CC_DFSELECT, 1);
	have |= (uint64_t)reg_read(cc, CC_DF) << 32;
	if (!(have & F_VERSION_1))
		return nic_fail(errbuf, len, ENOTSUP, "%s: no "
		    "VIRTIO_F_VERSION_1 (legacy-only device)", v->pci.addr);
	want = F_VERSION_1 | (have & (F_NET_MAC | F_NET_STATUS | extra));
	reg_write(cc, CC_GFSELECT, 0);
	reg_write(cc, CC_GF, (uint32_t)want);
	reg_write(cc, CC_GFSELECT, 1);
	reg_write(cc, CC_GF, (uint32_t)(want >> 32));
	R8(cc, CC_STATUS) = ST_FEATURES;
	if (!(R8(cc, CC_STATUS) & ST_FEATURES_OK))
		return nic_fail(errbuf, len, ENOTSUP, "%s: the device refused "
		    "features 0x%llx (offered 0x%llx)", v->pci.addr,
		    (unsigned long long)want, (unsigned long long)have);
	v->features = want;
	/* The MAC, read again if the device changed its configuration
	 * meanwhile (config_generation, 4.1.4.3.1). */
	if ((want & F_NET_MAC) && v->device != NULL && v->device_len >= 6)
		do {
			gen = R8(cc, CC_GEN);
			for (i = 0; i < 6; i++)
				v->mac[i] = R8(v->device, (uint32_t)i);
		} while (gen != R8(cc, CC_GEN));
	return 0;
}

/* Step 7 of 3.1.1. */
int
virtio_vq_setup(struct virtio *v, struct vq *q, uint16_t index,
    unsigned char *mem, uint64_t phys, uint32_t *noffp, char *errbuf,
    size_t len)
{
	volatile unsigned char *cc = v->common;
	uint32_t noff, max;
	uint16_t size;

	R16(cc, CC_QSELECT) = index;
	if ((max = R16(cc, CC_QSIZE)) == 0)
		return nic_fail(errbuf, len, ENODEV, "%s: no queue %u",
		    v->pci.addr, index);
	/* Split rings index with a mask: a power of two, at most ours. */
	for (size = MAX_QSIZE; size > max; size >>= 1)
		;
	noff = (uint32_t)R16(cc, CC_QNOTIFYOFF) * v->notify_mult;
	if (noff > v->notify_len || v->notify_len - noff < 2)
		return nic_fail(errbuf, len, EINVAL, "%s: queue %u notifies "
		    "outside its capability", v->pci.addr, index);
	if (noffp != NULL)
		*noffp = noff;
	vq_init(q, index, size, mem, phys,
	    (volatile uint16_t *)(v->notify + noff), v->used_errors);
	R16(cc, CC_QSIZE) = q->size;
	wr64(cc, CC_QDESC, phys);
	wr64(cc, CC_QDRIVER, phys + AVAIL_OFF);
	wr64(cc, CC_QDEVICE, phys + USED_OFF);
	R16(cc, CC_QENABLE) = 1;
	return 0;
}

/* Without VIRTIO_NET_F_STATUS the link is always up (5.1.4). */
int
virtio_link(struct nic *nic)
{
	struct virtio *v = nic->priv;

	return !(v->features & F_NET_STATUS) || v->device == NULL ||
	    v->device_len < 8 || (R16(v->device, 6) & NET_S_LINK_UP);
}

/* Stop the device before the memory it writes into goes away. */
static void
virtio_release(struct nic *nic)
{
	struct virtio *v = nic->priv;
	int i;

	/* A queue pair resets the device only as the last to leave. */
	if ((nic->queue < 0 || vmq_last(v)) && v->common != NULL &&
	    virtio_reset(v) == -1)
		warnx("%s: device reset timed out", v->pci.addr);
	pci_close(&v->pci);	/* bus mastering off */
	dma_free(&v->mem);
	if (v->shm != NULL)	/* the file goes with the graph */
		munmap(v->shm, v->shm_len);
	for (i = 0; i < 6; i++)
		if (v->bar[i] != NULL)
			munmap(v->bar[i], v->barlen[i]);
}

static int
virtio_open(struct nic *nic, char *errbuf, size_t len)
{
	struct virtio *v = nic->priv;
	int e;

	v->used_errors = app_counter("dev-used-errors");
	if (nic->queue >= 0)
		return vmq_open(nic, errbuf, len);
	if ((e = pci_open(&v->pci, nic->ifname, -1, errbuf, len)) != 0 ||
	    (e = virtio_caps(v, errbuf, len)) != 0 ||
	    (e = virtio_negotiate(v, 0, errbuf, len)) != 0)
		return e;
	if (R16(v->common, CC_NUMQ) < 2)
		return nic_fail(errbuf, len, ENODEV, "%s: fewer than 2 "
		    "queues", v->pci.addr);
	if ((e = dma_alloc(&v->pci, 2 * QREGION, &v->mem, errbuf, len)) != 0)
		return e;
	if ((e = virtio_vq_setup(v, &v->rx, RXQ, v->mem.virt, v->mem.phys,
	    NULL, errbuf, len)) != 0 || (e = virtio_vq_setup(v, &v->tx, TXQ,
	    v->mem.virt + QREGION, v->mem.phys + QREGION, NULL, errbuf,
	    len)) != 0)
		return e;
	/* Every receive buffer posted, if the graph takes what arrives
	 * (else the device keeps frames to itself: QEMU leaves them on
	 * the tap). */
	if (nic->rx)
		vq_rx_post_all(&v->rx);
	R8(v->common, CC_STATUS) = ST_FEATURES | ST_DRIVER_OK;
	/* The device may not look at a queue before DRIVER_OK. */
	vq_publish(&v->rx);
	fprintf(stderr, "snb-nic: %s: virtio-net (%04x:%04x) "
	    "%02x:%02x:%02x:%02x:%02x:%02x, queues %u/%u, link %s\n",
	    v->pci.addr, v->pci.vendor, v->pci.device, v->mac[0], v->mac[1],
	    v->mac[2], v->mac[3], v->mac[4], v->mac[5], v->rx.size,
	    v->tx.size, virtio_link(nic) ? "up" : "down");
	return 0;
}

static void
virtio_rx(struct nic *nic, struct rx_burst *b)
{
	struct virtio *v = nic->priv;

	vq_rx(&v->rx, nic, b);
}

static uint32_t
virtio_tx(struct nic *nic, struct ring *in, uint32_t n)
{
	struct virtio *v = nic->priv;

	return vq_tx(&v->tx, nic, in, n);
}

/* A device that found an error in what we gave it stops until reset. */
static void
virtio_check(struct nic *nic)
{
	struct virtio *v = nic->priv;

	if (R8(v->common, CC_STATUS) & ST_NEEDS_RESET) {
		virtio_release(nic);
		errx(1, "%s: the device needs a reset (DEVICE_NEEDS_RESET)",
		    nic->spec);
	}
}

/* Give the device up to 100 ms to send what it holds. */
static void
virtio_drain(struct nic *nic)
{
	struct virtio *v = nic->priv;
	int i;

	for (i = 0; i < 100; i++) {
		vq_tx_reclaim(&v->tx);
		if (v->tx.nfree == v->tx.size)
			break;
		usleep(1000);
	}
}

const struct nic_ops virtio_ops = {
	.name = "virtio",
	.caps = "root",	/* sysfs PCI access, hugepages */
	.size = sizeof(struct virtio),
	.match = virtio_match,
	.open = virtio_open,
	.rx = virtio_rx,
	.tx = virtio_tx,
	.check = virtio_check,
	.drain = virtio_drain,
	.release = virtio_release,
	.link = virtio_link,
};
