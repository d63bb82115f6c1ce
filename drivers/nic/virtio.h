/*
 * virtio.h: what the virtio-net PCI transport (virtio.c) shares with its
 * multi-queue part (virtio_mq.c): registers, features, the device state.
 */
#ifndef SNB_VIRTIO_H
#define SNB_VIRTIO_H

#include "nic.h"
#include "pci.h"
#include "virtio_ring.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
    "virtio.c reads little-endian device structures natively");

#define VENDOR_VIRTIO	0x1af4
#define DEV_NET_LEGACY	0x1000	/* transitional virtio-net */
#define DEV_NET_MODERN	0x1041	/* 0x1040 + device type 1 (net) */

/* PCI configuration space. */
#define PCI_STATUS	0x06
#define PCI_STATUS_CAPS	0x0010	/* capability list present */
#define PCI_CAP_PTR	0x34
#define PCI_CAP_VENDOR	0x09

/*
 * struct virtio_pci_cap (virtio 1.x 4.1.4): vendor, next, length,
 * cfg_type, bar, id, 2 bytes padding, le32 offset, le32 length; the
 * notification capability adds le32 notify_off_multiplier.
 */
#define CAP_COMMON	1
#define CAP_NOTIFY	2
#define CAP_DEVICE	4

/* Offsets in the common configuration structure (4.1.4.3). */
#define CC_DFSELECT	0x00	/* le32 device_feature_select */
#define CC_DF		0x04	/* le32 device_feature */
#define CC_GFSELECT	0x08	/* le32 driver_feature_select */
#define CC_GF		0x0c	/* le32 driver_feature */
#define CC_NUMQ		0x12	/* le16 num_queues */
#define CC_STATUS	0x14	/* u8 device_status */
#define CC_GEN		0x15	/* u8 config_generation */
#define CC_QSELECT	0x16	/* le16 queue_select */
#define CC_QSIZE	0x18	/* le16 queue_size */
#define CC_QENABLE	0x1c	/* le16 queue_enable */
#define CC_QNOTIFYOFF	0x1e	/* le16 queue_notify_off */
#define CC_QDESC	0x20	/* le64 queue_desc */
#define CC_QDRIVER	0x28	/* le64 queue_driver (avail ring) */
#define CC_QDEVICE	0x30	/* le64 queue_device (used ring) */
#define CC_LEN		0x38

/* device_status bits (2.1). */
#define ST_ACKNOWLEDGE	0x01
#define ST_DRIVER	0x02
#define ST_DRIVER_OK	0x04
#define ST_FEATURES_OK	0x08
#define ST_NEEDS_RESET	0x40
#define ST_FEATURES	(ST_ACKNOWLEDGE | ST_DRIVER | ST_FEATURES_OK)

#define F_NET_MAC	(1ULL << 5)
#define F_NET_STATUS	(1ULL << 16)
#define NET_S_LINK_UP	1	/* in the le16 status at device config + 6 */
#define F_VERSION_1	(1ULL << 32)

#define RXQ		0
#define TXQ		1

struct virtio {
	struct pci_dev		 pci;
	struct dma_mem		 mem;
	void			*bar[6];	/* mapped BARs, NULL if not */
	size_t			 barlen[6];
	volatile unsigned char	*common, *notify, *device;
	uint32_t		 notify_len, notify_mult, device_len;
	struct vq		 rx, tx;
	uint8_t			 mac[6];
	uint64_t		*used_errors;	/* both queues' (virtio_ring.h) */
	uint64_t		 features;	/* as agreed */
	/* A queue pair of a device shared by processes (virtio_mq.c). */
	unsigned char		*shm;		/* the shared DMA file, mapped */
	size_t			 shm_len;
	char			 shm_path[4096];
};

/* Device registers: volatile, each field with an access of its width. */
#define R8(b, off)	(*(volatile uint8_t *)((b) + (off)))
#define R16(b, off)	(*(volatile uint16_t *)((b) + (off)))

/* The transport, in virtio.c: 0 or an errno value with errbuf set. */
int	virtio_caps(struct virtio *, char *errbuf, size_t len);
/* Reset (bus mastering off until then), acknowledge, agree on VERSION_1,
 * MAC, STATUS and what of extra the device offers (v->features says what
 * was agreed). */
int	virtio_negotiate(struct virtio *, uint64_t extra, char *errbuf,
	    size_t len);
/* Queue index at mem/phys, told to the device; *noff its notify offset. */
int	virtio_vq_setup(struct virtio *, struct vq *, uint16_t index,
	    unsigned char *mem, uint64_t phys, uint32_t *noff, char *errbuf,
	    size_t len);

int	virtio_link(struct nic *);			/* 1: up */

/* The shared queues, in virtio_mq.c. */
int	vmq_open(struct nic *, char *errbuf, size_t len);
/* 1 if this process is the last on the device: it is reset then. */
int	vmq_last(struct virtio *);

#endif
