/*
 * virtio_mq.c: one virtio-net device, several processes, each serving one
 * queue pair ("nic pci:ADDR/qN"), with VIRTIO_NET_F_MQ and, where the
 * device offers it, VIRTIO_NET_F_RSS (QEMU's virtio-net-pci mq=on rss=on);
 * what this looks like from outside is in snb-nic(1), Queues.
 *
 * Every queue's rings and buffers live in one file of hugepages in the
 * graph's ring directory (GRAPH/rings/virtio-ADDR, on hugetlbfs: see
 * rundir.h), so that every process maps the same physical pages (which
 * hugetlbfs does not move) and the file goes with the graph:
 *
 *	page 0		struct vmq_hdr at 0 (what the owner set up), the
 *			control queue's region at CTRL_OFF
 *	page 1 + k	queue pair k: receive queue 2k at 0, transmit
 *			queue 2k + 1 at QREGION (virtio_ring.h's layout)
 *
 * Under an flock on the file, the first process to find no header (magic
 * 0) is the owner: it claims the device (pci_open first = 1: no other
 * driver has it), sets it up whole (set_up) and writes the header, the
 * magic last.  Everyone, the owner included, then attaches to its own
 * pair: it touches only that pair's memory, its notify address (from the
 * header: selecting a queue in the common configuration would race with
 * the others) and the device's status and link, which it only reads.
 * Configuration registers are never written after set-up.
 *
 * A successor takes its pair over where the last one left it (vq_attach):
 * a frame is lost only if its predecessor died after reposting a burst and
 * before committing it to its ring.  The device is never reset while
 * anyone holds it: the PCI lock is shared, and only the last process to
 * leave (pci_last), or the last one's watcher (pci.c), stops it.  A new
 * graph has a new ring directory, so it sets the device up afresh; a
 * second graph's owner would find the PCI lock held and is refused.
 */
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "virtio.h"

#define MAX_PAIRS	8
#define CTRL_OFF	(1UL << 20)	/* control queue region in page 0 */
#define VMQ_MAGIC	0x736e626d	/* "snbm" */
#define LOCK_TRIES	500		/* 10 ms apart: 5 s for a set-up */

#define F_NET_CTRL_VQ	(1ULL << 17)
#define F_NET_MQ	(1ULL << 22)
#define F_NET_RSS	(1ULL << 60)

/* Device configuration (5.1.4). */
#define DC_MAX_PAIRS	8	/* le16 max_virtqueue_pairs */
#define DC_RSS_KEY	17	/* u8 rss_max_key_size */
#define DC_RSS_TABLE	18	/* le16 rss_max_indirection_table_length */
#define DC_HASH_TYPES	20	/* le32 supported_hash_types */

/* Control queue (5.1.6.5): class MQ, its commands, the ack. */
#define CTRL_MQ		4
#define MQ_PAIRS_SET	0
#define MQ_RSS_CONFIG	1
#define CTRL_OK		0
#define DESC_F_NEXT	1
#define RSS_TABLE	128
#define RSS_KEY		40
/* IPv4, TCPv4, UDPv4, IPv6, TCPv6, UDPv6 (5.1.6.5.7.1). */
#define RSS_HASHES	0x3f

/* What the owner set up, for the others (page 0 of the file). */
struct vmq_hdr {
	uint32_t	magic;		/* VMQ_MAGIC once all is set up */
	uint16_t	pairs;		/* queue pairs in use */
	uint16_t	rss;		/* spread by RSS (else by the device) */
	uint16_t	qsize[2 * MAX_PAIRS];
	uint32_t	noff[2 * MAX_PAIRS];	/* notify offsets */
	uint64_t	features;	/* as agreed */
};

/* The Toeplitz key most RSS implementations start with (Microsoft's). */
static const uint8_t rss_key[RSS_KEY] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3e, 0xbe, 0xac, 0x01, 0xfa,
};

/* Map (first len bytes of) the shared file; 0 or an errno value. */
static int
map_shm(struct virtio *v, int fd, size_t len, char *errbuf, size_t elen)
{
	if (v->shm != NULL)
		munmap(v->shm, v->shm_len);
	v->shm = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED |
	    MAP_POPULATE | MAP_LOCKED, fd, 0);
	if (v->shm == MAP_FAILED) {
		v->shm = NULL;
		return nic_fail(errbuf, elen, errno, "%s: mapping %s (%zu "
		    "MiB of hugepages)", v->pci.addr, v->shm_path, len >> 20);
	}
	v->shm_len = len;
	return 0;
}

/*
 * Send one command on the control queue and wait (up to a second) for
 * the device's answer: header, data and ack in buffers 0, 1 and 2.
 */
static int
ctrl_cmd(struct virtio *v, struct vq *q, uint8_t cmd, const void *data,
    uint32_t dlen, char *errbuf, size_t len)
{
	uint16_t used;
	int i;

	q->buf[0] = CTRL_MQ;
	q->buf[1] = cmd;
	memcpy(q->buf + BUF_SIZE, data, dlen);
	q->buf[2 * BUF_SIZE] = 0xff;
	/* Address (buffer i, vq_init's), length, flags, next. */
	q->desc[0] = (struct vq_desc){ q->desc[0].addr, 2, DESC_F_NEXT, 1 };
	q->desc[1] = (struct vq_desc){ q->desc[1].addr, dlen, DESC_F_NEXT, 2 };
	q->desc[2] = (struct vq_desc){ q->desc[2].addr, 1, DESC_F_WRITE, 0 };
	used = __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE);
	q->avail->ring[q->avail_idx++ & q->mask] = 0;
	vq_publish(q);
	for (i = 0; i < 1000 && __atomic_load_n(&q->used->idx,
	    __ATOMIC_ACQUIRE) == used; i++)
		usleep(1000);
	if (i == 1000 || q->buf[2 * BUF_SIZE] != CTRL_OK)
		return nic_fail(errbuf, len, EIO, "%s: control command %u "
		    "%s", v->pci.addr, cmd, i == 1000 ? "not answered" :
		    "refused");
	return 0;
}

/* Spread received frames over the pairs: RSS if we have it, else MQ. */
static int
spread(struct virtio *v, struct vq *ctrl, struct vmq_hdr *h, char *errbuf,
    size_t len)
{
	struct {		/* struct virtio_net_rss_config */
		uint32_t	hash_types;
		uint16_t	table_mask, unclassified_queue;
		uint16_t	table[RSS_TABLE], max_tx_vq;
		uint8_t		key_len, key[RSS_KEY];
	} __attribute__((packed)) c = { .table_mask = RSS_TABLE - 1,
	    .max_tx_vq = h->pairs, .key_len = RSS_KEY };
	uint16_t i;

	if (!h->rss)
		return ctrl_cmd(v, ctrl, MQ_PAIRS_SET, &h->pairs, 2, errbuf,
		    len);
	c.hash_types = reg_read(v->device, DC_HASH_TYPES) & RSS_HASHES;
	for (i = 0; i < RSS_TABLE; i++)		/* pair k: receiveq k+1 */
		c.table[i] = (uint16_t)(i % h->pairs);
	memcpy(c.key, rss_key, RSS_KEY);
	return ctrl_cmd(v, ctrl, MQ_RSS_CONFIG, &c, sizeof(c), errbuf, len);
}

/* Queue index at off in the shared file, told to the device. */
static int
shm_vq(struct virtio *v, struct vq *q, uint16_t index, size_t off,
    uint32_t *noff, char *errbuf, size_t len)
{
	uint64_t phys = pci_phys(v->shm + off / HUGEPAGE * HUGEPAGE);

	if (phys == 0)
		return nic_fail(errbuf, len, EPERM, "%s: physical address of "
		    "%s", v->pci.addr, v->shm_path);
	return virtio_vq_setup(v, q, index, v->shm + off, phys + off %
	    HUGEPAGE, noff, errbuf, len);
}

/*
 * The owner: features, every queue pair (its receive buffers all posted)
 * and the control queue before DRIVER_OK, then the spreading of frames.
 */
static int
set_up(struct virtio *v, int fd, char *errbuf, size_t len)
{
	struct vmq_hdr h = { 0 };
	struct vq q, rxq[MAX_PAIRS], ctrl;
	uint16_t max, k;
	int e;

	if ((e = virtio_negotiate(v, F_NET_CTRL_VQ | F_NET_MQ | F_NET_RSS,
	    errbuf, len)) != 0)
		return e;
	if (!(v->features & F_NET_MQ) || !(v->features & F_NET_CTRL_VQ) ||
	    v->device == NULL || v->device_len < 24)
		return nic_fail(errbuf, len, ENOTSUP, "%s: no multi-queue "
		    "(VIRTIO_NET_F_MQ): pci:%s alone drives it", v->pci.addr,
		    v->pci.addr);
	max = R16(v->device, DC_MAX_PAIRS);
	h.pairs = max < MAX_PAIRS ? max : MAX_PAIRS;
	h.rss = (v->features & F_NET_RSS) &&
	    R16(v->device, DC_RSS_TABLE) >= RSS_TABLE &&
	    R8(v->device, DC_RSS_KEY) >= RSS_KEY;
	if (h.pairs < 1 || R16(v->common, CC_NUMQ) < 2 * max + 1)
		return nic_fail(errbuf, len, ENODEV, "%s: %u queue pairs but "
		    "%u queues", v->pci.addr, max, R16(v->common, CC_NUMQ));
	if (ftruncate(fd, (off_t)((1 + h.pairs) * HUGEPAGE)) == -1)
		return nic_fail(errbuf, len, errno, "%s: %s", v->pci.addr,
		    v->shm_path);
	if ((e = map_shm(v, fd, (1 + h.pairs) * HUGEPAGE, errbuf, len)) != 0)
		return e;
	/* The control queue (after all max pairs, 5.1.2) in page 0. */
	if ((e = shm_vq(v, &ctrl, 2 * max, CTRL_OFF, NULL, errbuf, len)) != 0)
		return e;
	for (k = 0; k < h.pairs; k++) {
		if ((e = shm_vq(v, &rxq[k], 2 * k, (1 + k) * HUGEPAGE,
		    &h.noff[2 * k], errbuf, len)) != 0 || (e = shm_vq(v, &q,
		    2 * k + 1, (1 + k) * HUGEPAGE + QREGION, &h.noff[2 * k + 1],
		    errbuf, len)) != 0)
			return e;
		vq_rx_post_all(&rxq[k]);
		h.qsize[2 * k] = rxq[k].size;
		h.qsize[2 * k + 1] = q.size;
	}
	R8(v->common, CC_STATUS) = ST_FEATURES | ST_DRIVER_OK;
	/* The device may not look at a queue before DRIVER_OK. */
	for (k = 0; k < h.pairs; k++)
		vq_publish(&rxq[k]);
	if ((e = spread(v, &ctrl, &h, errbuf, len)) != 0)
		return e;
	h.features = v->features;
	memcpy(v->shm, &h, sizeof(h));
	__atomic_store_n((uint32_t *)v->shm, VMQ_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* Open the shared file and take its lock: 0, or an errno value. */
static int
lock_shm(struct virtio *v, int *fdp, char *errbuf, size_t len)
{
	const char *gdir = app_graph_dir();
	int fd, i;

	if (gdir == NULL)
		return nic_fail(errbuf, len, EINVAL, "%s: a queue pair is for "
		    "a graph (snb-run): its memory is shared in the graph's "
		    "directory", v->pci.addr);
	snprintf(v->shm_path, sizeof(v->shm_path), "%s/rings/virtio-%s",
	    gdir, v->pci.addr);
	if ((fd = open(v->shm_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) ==
	    -1)
		return nic_fail(errbuf, len, errno, "%s: %s", v->pci.addr,
		    v->shm_path);
	for (i = 0; flock(fd, LOCK_EX | LOCK_NB) == -1; i++) {
		if (errno != EWOULDBLOCK || i == LOCK_TRIES) {
			close(fd);
			return nic_fail(errbuf, len, errno == EWOULDBLOCK ?
			    ETIMEDOUT : errno, "%s: waiting for the device's "
			    "set-up (a lock on %s)", v->pci.addr, v->shm_path);
		}
		usleep(10000);
	}
	*fdp = fd;
	return 0;
}

int
vmq_open(struct nic *nic, char *errbuf, size_t len)
{
	struct virtio *v = nic->priv;
	struct vmq_hdr h;
	struct stat st;
	uint16_t cmd, k = (uint16_t)nic->queue;
	int fd = -1, e, owner, i;

	if ((e = pci_probe(&v->pci, nic->ifname, errbuf, len)) != 0 ||
	    (e = lock_shm(v, &fd, errbuf, len)) != 0)
		return e;
	/* Page 0 first: whether the device is set up already. */
	if (fstat(fd, &st) == -1 || (st.st_size < (off_t)HUGEPAGE &&
	    ftruncate(fd, HUGEPAGE) == -1)) {
		e = nic_fail(errbuf, len, errno, "%s: %s (hugetlbfs, with "
		    "free hugepages?)", v->pci.addr, v->shm_path);
		goto out;
	}
	if ((e = map_shm(v, fd, HUGEPAGE, errbuf, len)) != 0)
		goto out;
	owner = __atomic_load_n((uint32_t *)v->shm, __ATOMIC_ACQUIRE) !=
	    VMQ_MAGIC;
	/* The watcher holds the memory too: killed, we leave it to the
	 * device until bus mastering is off (pci_watch.c). */
	if ((e = pci_open(&v->pci, nic->ifname, owner, errbuf,
	    len)) != 0 || (e = pci_watch_hold(&v->pci, fd)) != 0 ||
	    (e = virtio_caps(v, errbuf, len)) != 0)
		goto out;
	/*
	 * Set up, but stopped since: the device found an error, or the
	 * last process was killed and its watcher stopped the device's
	 * DMA (which the device may have tried meanwhile).  Set it up
	 * again; no one else can be using it.
	 */
	if (!owner && ((R8(v->common, CC_STATUS) & (ST_DRIVER_OK |
	    ST_NEEDS_RESET)) != ST_DRIVER_OK || pci_config_read(&v->pci, 4,
	    &cmd, 2) == -1 || !(cmd & PCI_CMD_MASTER))) {
		fprintf(stderr, "snb-nic: %s: the device was stopped; "
		    "setting it up again\n", nic->spec);
		owner = 1;
	}
	if (owner && (e = set_up(v, fd, errbuf, len)) != 0)
		goto out;
	memcpy(&h, v->shm, sizeof(h));
	if (k >= h.pairs) {
		e = nic_fail(errbuf, len, ENODEV, "%s: no queue pair %u (the "
		    "device has %u: q0 to q%u)", nic->spec, k, h.pairs,
		    h.pairs - 1);
		goto out;
	}
	if ((e = map_shm(v, fd, (1 + h.pairs) * HUGEPAGE, errbuf, len)) != 0)
		goto out;
	if (h.noff[2 * k + 1] > v->notify_len - 2) {
		e = nic_fail(errbuf, len, EINVAL, "%s: bad notify offset",
		    nic->spec);
		goto out;
	}
	v->features = h.features;
	vq_attach(&v->rx, 2 * k, h.qsize[2 * k], v->shm + (1 + k) * HUGEPAGE,
	    (volatile uint16_t *)(v->notify + h.noff[2 * k]), v->used_errors,
	    1);
	/* A predecessor's last burst: kicked, then given time to leave. */
	for (i = 0; vq_attach(&v->tx, 2 * k + 1, h.qsize[2 * k + 1], v->shm +
	    (1 + k) * HUGEPAGE + QREGION, (volatile uint16_t *)(v->notify +
	    h.noff[2 * k + 1]), v->used_errors, 0) == -1; i++) {
		if (i == 1000) {
			e = nic_fail(errbuf, len, ETIMEDOUT, "%s: the device "
			    "keeps transmit buffers of queue %u", nic->spec,
			    2 * k + 1);
			goto out;
		}
		*v->tx.notify = v->tx.index;
		usleep(1000);
	}
	/* Whatever arrived while nobody served the pair is read now. */
	*v->rx.notify = v->rx.index;
	fprintf(stderr, "snb-nic: %s: virtio-net queue pair %u of %u (%s), "
	    "%s, link %s\n", nic->spec, k, h.pairs, h.rss ? "RSS" : "MQ",
	    owner ? "device set up" : "attached", virtio_link(nic) ? "up" :
	    "down");
out:
	flock(fd, LOCK_UN);
	close(fd);
	return e;
}

/*
 * Leaving, the pair stays as it is for a successor; the last one to leave
 * stops the device, and whoever comes next sets it up again.
 */
int
vmq_last(struct virtio *v)
{
	if (v->pci.config_fd == -1 || !pci_last(&v->pci))
		return 0;
	if (v->shm != NULL)
		__atomic_store_n((uint32_t *)v->shm, 0, __ATOMIC_RELEASE);
	return 1;
}
