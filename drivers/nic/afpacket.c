/*
 * afpacket.c: the AF_PACKET back-end (packet(7)).
 *
 * Receive uses a TPACKET_V3 ring mapped into our memory: the kernel packs
 * frames into blocks and hands a whole block over (TP_STATUS_USER) when it
 * is full or RETIRE_MS after its first frame; we copy the frames into ring
 * slots and hand the block back.  poll() reports a handed-over block, so
 * an idle nic sleeps.  One system call per breath at most, none per frame.
 *
 * Transmit is sendmmsg() of a whole burst, straight from the input ring's
 * slots: the kernel copies each frame into an skb before the call returns,
 * so the slots can be released at once.  Unlike a mapped TX ring, every
 * refused frame is seen and counted.
 */
#define _GNU_SOURCE	/* sendmmsg() */
#include <sys/mman.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "nic.h"

#define BLOCK_SIZE	(1u << 17)	/* 128 KiB: ~900 minimum-size frames */
#define BLOCK_NR	32		/* 4 MiB of kernel-side buffering */
#define FRAME_SIZE	2048		/* only for the kernel's sanity check */
#define RETIRE_MS	1		/* latency bound at low packet rates */

/*
 * Back-end state.  The receive cursor walks blocks in the kernel's order:
 * blk is the block being read, left the frames not yet read in it (0: the
 * block is not ours yet), frame the next one.  A block goes back to the
 * kernel as soon as its last frame is read.
 */
struct afp {
	unsigned char		*map;		/* BLOCK_NR blocks, or NULL */
	uint32_t		 blk;
	uint32_t		 left;
	struct tpacket3_hdr	*frame;
	struct mmsghdr		 msgs[APP_BURST];
	struct iovec		 iovs[APP_BURST];
};

static int
afp_open(struct nic *nic, char *errbuf, size_t len)
{
	struct tpacket_req3 req = { .tp_block_size = BLOCK_SIZE,
	    .tp_block_nr = BLOCK_NR, .tp_frame_size = FRAME_SIZE,
	    .tp_frame_nr = BLOCK_SIZE / FRAME_SIZE * BLOCK_NR,
	    .tp_retire_blk_tov = RETIRE_MS };
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
	    .sll_protocol = nic->rx ? htons(ETH_P_ALL) : 0,
	    .sll_ifindex = nic->ifindex };
	const char *what = "AF_PACKET socket";
	struct afp *a = nic->priv;
	struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
	struct sock_fprog none = { 1, &drop };
	int v3 = TPACKET_V3, one = 1, fanout, join, e;

	/* Flows stay with one member of a fanout group; fragments are
	 * reassembled first so that they hash like the rest of their flow. */
	fanout = (int)((unsigned)nic->fanout | (unsigned)(PACKET_FANOUT_HASH |
	    PACKET_FANOUT_FLAG_DEFRAG) << 16);
	if ((nic->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, 0)) == -1)
		goto fail;
	if (nic->rx) {
		what = "TPACKET_V3 ring";
		if (setsockopt(nic->fd, SOL_PACKET, PACKET_VERSION, &v3,
		    sizeof(v3)) == -1 || setsockopt(nic->fd, SOL_PACKET,
		    PACKET_RX_RING, &req, sizeof(req)) == -1)
			goto fail;
		a->map = mmap(NULL, (size_t)BLOCK_SIZE * BLOCK_NR,
		    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, nic->fd,
		    0);
		if (a->map == MAP_FAILED)
			goto fail;
		/* What we (or the host) send on the interface is not input. */
		what = "PACKET_IGNORE_OUTGOING";
		if (setsockopt(nic->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING,
		    &one, sizeof(one)) == -1)
			goto fail;
	}
	/*
	 * A socket joins a fanout group only once bound, and a bound socket
	 * receives every frame: between bind() and the join it would get
	 * copies of frames the group's members get too.  A filter that
	 * takes nothing closes that window; it goes once we are a member.
	 */
	join = nic->fanout >= 0 && nic->rx;
	what = "SO_ATTACH_FILTER";
	if (join && setsockopt(nic->fd, SOL_SOCKET, SO_ATTACH_FILTER, &none,
	    sizeof(none)) == -1)
		goto fail;
	/* Protocol 0 until bind() to sll: nothing is queued before the ring
	 * is set up.  A transmit-only socket stays at 0, receiving nothing. */
	what = "bind";
	if (bind(nic->fd, (struct sockaddr *)&sll, sizeof(sll)) == -1)
		goto fail;
	what = "--fanout";
	if (join && setsockopt(nic->fd, SOL_PACKET, PACKET_FANOUT, &fanout,
	    sizeof(fanout)) == -1)
		goto fail;
	what = "SO_DETACH_FILTER";
	if (join && setsockopt(nic->fd, SOL_SOCKET, SO_DETACH_FILTER, &one,
	    sizeof(one)) == -1)
		goto fail;
	for (e = 0; e < APP_BURST; e++) {
		a->msgs[e].msg_hdr.msg_iov = &a->iovs[e];
		a->msgs[e].msg_hdr.msg_iovlen = 1;
	}
	return 0;
fail:
	if (a->map == MAP_FAILED)
		a->map = NULL;
	return nic_fail(errbuf, len, errno, "%s", what);
}

static struct tpacket_block_desc *
block(struct afp *a, uint32_t i)
{
	return (struct tpacket_block_desc *)(a->map + (size_t)i * BLOCK_SIZE);
}

/* Give the current block back and move to the next. */
static void
give_back(struct afp *a)
{
	/* Release: our reads of the block happen before the kernel reuses it. */
	__atomic_store_n(&block(a, a->blk)->hdr.bh1.block_status,
	    TP_STATUS_KERNEL, __ATOMIC_RELEASE);
	a->blk = (a->blk + 1) % BLOCK_NR;
	a->left = 0;
}

/* Make a->frame the next frame to read; 0 when the kernel has none. */
static int
next_frame(struct afp *a)
{
	struct tpacket_block_desc *bd;

	while (a->left == 0) {
		bd = block(a, a->blk);
		/* Acquire: the block's frames are visible once we see it. */
		if (!(__atomic_load_n(&bd->hdr.bh1.block_status,
		    __ATOMIC_ACQUIRE) & TP_STATUS_USER))
			return 0;
		a->left = bd->hdr.bh1.num_pkts;
		a->frame = (struct tpacket3_hdr *)((unsigned char *)bd +
		    bd->hdr.bh1.offset_to_first_pkt);
		if (a->left == 0)
			give_back(a);
	}
	return 1;
}

static void
afp_rx(struct nic *nic, struct rx_burst *b)
{
	struct afp *a = nic->priv;
	struct tpacket3_hdr *h;
	struct packet *p;
	unsigned char *data;
	uint32_t len, vlan;
	uint16_t tpid, tci;

	while (b->seen < b->budget && next_frame(a)) {
		h = a->frame;
		data = (unsigned char *)h + h->tp_mac;
		len = h->tp_snaplen;
		/* The kernel takes 802.1Q tags off on receive and reports
		 * them beside the frame; put them back where they were. */
		vlan = (h->tp_status & TP_STATUS_VLAN_VALID) && len >= 12 ?
		    4 : 0;
		if (h->tp_snaplen < h->tp_len) {
			/* Cut by the kernel to fit a block: not whole. */
			b->seen++;
			(*nic->c.drop_oversize)++;
		} else if ((p = nic_rx_slot(nic, b, len + vlan,
		    (uint64_t)h->tp_sec * 1000000000ULL + h->tp_nsec))) {
			if (vlan) {
				tpid = htons(h->tp_status &
				    TP_STATUS_VLAN_TPID_VALID ?
				    h->hv1.tp_vlan_tpid : ETH_P_8021Q);
				tci = htons((uint16_t)h->hv1.tp_vlan_tci);
				memcpy(p->data, data, 12);
				memcpy(p->data + 12, &tpid, 2);
				memcpy(p->data + 14, &tci, 2);
				memcpy(p->data + 16, data + 12, len - 12);
			} else
				memcpy(p->data, data, len);
		}
		if (--a->left == 0)
			give_back(a);
		else
			a->frame = (struct tpacket3_hdr *)((unsigned char *)h +
			    h->tp_next_offset);
	}
}

static uint32_t
afp_tx(struct nic *nic, struct ring *in, uint32_t n)
{
	struct afp *a = nic->priv;
	uint32_t i, done = 0;
	int k;

	for (i = 0; i < n; i++) {
		struct packet *p = ring_peek(in, i);
		a->iovs[i].iov_base = p->data;
		a->iovs[i].iov_len = nic_tx_len(in, p);
	}
	while (done < n) {
		k = sendmmsg(nic->fd, a->msgs + done, n - done, MSG_DONTWAIT);
		if (k > 0) {
			for (i = done; i < done + (uint32_t)k; i++)
				*nic->c.tx_bytes += a->iovs[i].iov_len;
			*nic->c.tx_packets += (uint32_t)k;
			done += (uint32_t)k;
			continue;
		}
		if (errno == EINTR)
			continue;
		/* The queue toward the device is full: keep the rest. */
		if (errno == EAGAIN || errno == ENOBUFS)
			break;
		if (errno == ENETDOWN || errno == ENXIO)
			return nic_tx_lost(nic, done, n);
		/* This frame is refused (EMSGSIZE above the MTU, ...). */
		(*nic->c.drop_tx_error)++;
		done++;
	}
	return done;
}

/*
 * When the interface goes down the kernel unhooks the socket and sets
 * ENETDOWN on it (it hooks it again when the link comes back up).  With a
 * mapped ring nothing ever reads that error, and poll() would report it
 * forever: read it here.
 */
static void
afp_check(struct nic *nic)
{
	socklen_t sl = sizeof(int);
	int e = 0;

	if (getsockopt(nic->fd, SOL_SOCKET, SO_ERROR, &e, &sl) == 0 &&
	    (e == ENETDOWN || e == ENXIO))
		nic_link_lost(nic);
}

/* The kernel's counters reset on every read: add them up. */
static void
afp_stats(struct nic *nic)
{
	struct afp *a = nic->priv;
	struct tpacket_stats_v3 st = { 0 };
	socklen_t sl = sizeof(st);

	if (a->map != NULL && getsockopt(nic->fd, SOL_PACKET,
	    PACKET_STATISTICS, &st, &sl) == 0)
		*nic->c.drop_kernel += st.tp_drops;
}

/* The socket is open (or -1): afp_open made it first. */
static void
afp_release(struct nic *nic)
{
	struct afp *a = nic->priv;

	if (a->map)
		munmap(a->map, (size_t)BLOCK_SIZE * BLOCK_NR);
	close(nic->fd);
}

const struct nic_ops afpacket_ops = {
	.name = "afpacket",
	.caps = "CAP_NET_RAW",
	.size = sizeof(struct afp),
	.open = afp_open,
	.rx = afp_rx,
	.tx = afp_tx,
	.check = afp_check,
	.stats = afp_stats,
	.release = afp_release,
};
