/*
 * xdp.c: the AF_XDP back-end, with libxdp's xsk API and its default XDP
 * program (which redirects the bound queue's frames to our socket).
 *
 * One UMEM of NUM_FRAMES frames, split once and for all: the first
 * RX_FRAMES circulate fill ring -> kernel -> rx ring -> (copied into a
 * slot) -> fill ring again; the others circulate free list -> tx ring ->
 * kernel -> completion ring -> free list.  Frames are copied into ring
 * slots (DESIGN 2), so a frame is back in the fill ring in the same breath
 * it arrived.  The kernel uses zero-copy where the driver can, else copy
 * mode (bind flags without XDP_COPY or XDP_ZEROCOPY let it choose).
 */
#include <sys/mman.h>
#include <sys/socket.h>

#include <linux/if_link.h>
#include <linux/if_xdp.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "nic.h"

#define FRAME_SIZE	XSK_UMEM__DEFAULT_FRAME_SIZE	/* 4096 */
#define NUM_FRAMES	6144
#define RX_FRAMES	4096
#define TX_FRAMES	(NUM_FRAMES - RX_FRAMES)
/*
 * The kernel publishes how far it has read the fill and tx rings lazily,
 * so a ring can look full while its frames are already back with us: the
 * rings we produce into have room for twice the frames they serve.
 */
#define RXQ		RX_FRAMES
#define FILLQ		(2 * RX_FRAMES)
#define TXQ		(2 * TX_FRAMES)
#define COMPQ		TX_FRAMES
#define KICKS		8	/* copy-mode sendto() sends 32 frames per call */
#define DRAIN_MS	500	/* at close, wait this long for the tx ring */
#define BUSY_TRIES	50	/* queue taken: retry this often ... */
#define BUSY_WAIT_MS	20	/* ... this far apart */

struct xdp {
	struct xsk_umem		*umem;
	struct xsk_socket	*xsk;
	struct xsk_ring_prod	 fill, tx;
	struct xsk_ring_cons	 rx, comp;
	unsigned char		*area;		/* the UMEM */
	uint32_t		 nfree;		/* tx frames in free[] */
	uint64_t		 free[TX_FRAMES];
	struct xdp_statistics	 last;		/* kernel's cumulative counts */
	uint64_t		*ring_full, *fill_empty, *fill_short;
	uint64_t		*tx_full;
};

/* libxdp and libbpf talk on stderr; keep their last warning as a reason. */
static char lib_msg[160];

static int
lib_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	static const char *noise[] = { "libbpf: ", "libxdp: ",
	    "Kernel error message: " };
	char buf[sizeof(lib_msg)], *m = buf;
	size_t i, n;

	if (level != LIBBPF_WARN)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	for (i = 0; i < sizeof(noise) / sizeof(*noise); i++)
		if (strncmp(m, noise[i], strlen(noise[i])) == 0)
			m += strlen(noise[i]);
	n = strlen(m);
	while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == '.'))
		m[--n] = '\0';
	memmove(lib_msg, m, n + 1);
	return 0;
}

static int
xdp_log(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	return lib_print(level == LIBXDP_WARN ? LIBBPF_WARN : LIBBPF_INFO,
	    fmt, ap);
}

static void
xdp_release(struct nic *nic)
{
	struct xdp *x = nic->priv;

	if (x->xsk)
		xsk_socket__delete(x->xsk);
	if (x->umem)
		xsk_umem__delete(x->umem);
	if (x->area)
		munmap(x->area, (size_t)NUM_FRAMES * FRAME_SIZE);
}

static int
xdp_open(struct nic *nic, char *errbuf, size_t len)
{
	struct xsk_umem_config ucfg = { .fill_size = FILLQ,
	    .comp_size = COMPQ, .frame_size = FRAME_SIZE };
	struct xsk_socket_config scfg = { .rx_size = RXQ, .tx_size = TXQ,
	    .bind_flags = XDP_USE_NEED_WAKEUP };
	struct xdp *x = nic->priv;
	uint32_t i, idx, queue = nic->queue < 0 ? 0 : (uint32_t)nic->queue;
	int r, e, tries;

	libbpf_set_print(lib_print);
	libxdp_set_print(xdp_log);
	lib_msg[0] = '\0';
	x->area = mmap(NULL, (size_t)NUM_FRAMES * FRAME_SIZE,
	    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
	    -1, 0);
	if (x->area == MAP_FAILED) {
		x->area = NULL;
		return nic_fail(errbuf, len, errno, "mmap of the UMEM");
	}
	/* Without a receive side no program is needed: loading one would
	 * steal the queue's frames from the host for nothing. */
	scfg.libxdp_flags = nic->rx ? 0 : XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
	scfg.xdp_flags = nic->native_only && nic->rx ? XDP_FLAGS_DRV_MODE : 0;
	for (tries = 0;; tries++) {
		/*
		 * libxdp maps the rings afresh but keeps the cached
		 * indexes it finds in these (the fill and completion
		 * rings').  After a failed try the fill ring's cached
		 * producer would still be RX_FRAMES ahead: our buffers
		 * would go RX_FRAMES slots past where the kernel reads,
		 * the kernel would read zeros and put every frame at
		 * address 0, each overwriting the last before we copy it
		 * (after two failed tries, no buffer would fit at all).
		 * Every try starts from nothing.
		 */
		x->fill = x->tx = (struct xsk_ring_prod){ 0 };
		x->rx = x->comp = (struct xsk_ring_cons){ 0 };
		if ((r = xsk_umem__create(&x->umem, x->area,
		    (uint64_t)NUM_FRAMES * FRAME_SIZE, &x->fill, &x->comp,
		    &ucfg)) != 0) {
			x->umem = NULL;
			return nic_fail(errbuf, len, -r, "AF_XDP UMEM");
		}
		/* Buffers first: the program redirects frames to us as soon
		 * as the socket exists, and without buffers they are lost. */
		if (nic->rx && xsk_ring_prod__reserve(&x->fill, RX_FRAMES,
		    &idx) == RX_FRAMES) {
			for (i = 0; i < RX_FRAMES; i++)
				*xsk_ring_prod__fill_addr(&x->fill, idx + i) =
				    (uint64_t)i * FRAME_SIZE;
			xsk_ring_prod__submit(&x->fill, RX_FRAMES);
		}
		if ((r = xsk_socket__create(&x->xsk, nic->ifname, queue,
		    x->umem, nic->rx ? &x->rx : NULL, nic->tx ? &x->tx : NULL,
		    &scfg)) == 0)
			break;
		x->xsk = NULL;
		xsk_umem__delete(x->umem);
		x->umem = NULL;
		/*
		 * EBUSY: the kernel tears a closed socket down
		 * asynchronously, so the queue stays taken a moment after
		 * its owner exits, as when a stage is restarted; or another
		 * process attached the XDP program between libxdp's look
		 * for one and its own attach (several queues of one
		 * interface opening at once), and the next try finds and
		 * shares it.  Give either that moment.
		 */
		if (r == -EBUSY && tries < BUSY_TRIES) {
			usleep(BUSY_WAIT_MS * 1000);
			continue;
		}
		e = nic_fail(errbuf, len, -r, "AF_XDP socket");
		if (r == -EBUSY)
			snprintf(errbuf + strlen(errbuf), len - strlen(errbuf),
			    " (queue %u in use?)", queue);
		else if (lib_msg[0])
			snprintf(errbuf + strlen(errbuf), len - strlen(errbuf),
			    " (%s)", lib_msg);
		return e;
	}
	nic->fd = xsk_socket__fd(x->xsk);
	for (i = 0; i < TX_FRAMES; i++)
		x->free[i] = (uint64_t)(RX_FRAMES + i) * FRAME_SIZE;
	x->nfree = TX_FRAMES;
	x->ring_full = app_counter("xdp-rx-ring-full");
	x->fill_empty = app_counter("xdp-fill-empty");
	x->fill_short = app_counter("xdp-fill-short");
	x->tx_full = app_counter("xdp-tx-ring-full");
	return 0;
}

static void
xdp_rx(struct nic *nic, struct rx_burst *b)
{
	struct xdp *x = nic->priv;
	const struct xdp_desc *d;
	struct packet *p;
	uint32_t n, i, idx, fidx;

	if ((n = xsk_ring_cons__peek(&x->rx, b->budget, &idx)) == 0)
		return;
	/*
	 * See FILLQ: this should not fail.  It did once in a forwarding
	 * bench; rather than die, leave the frames in the rx ring, count,
	 * and try again next breath (the kernel counts what it then drops).
	 */
	if (xsk_ring_prod__reserve(&x->fill, n, &fidx) != n) {
		xsk_ring_cons__cancel(&x->rx, n);
		(*x->fill_short)++;
		return;
	}
	for (i = 0; i < n; i++) {
		d = xsk_ring_cons__rx_desc(&x->rx, idx + i);
		if ((p = nic_rx_slot(nic, b, d->len, b->ts_ns)) != NULL)
			memcpy(p->data, xsk_umem__get_data(x->area, d->addr),
			    d->len);
		*xsk_ring_prod__fill_addr(&x->fill, fidx + i) =
		    d->addr & ~(uint64_t)(FRAME_SIZE - 1);
	}
	xsk_ring_cons__release(&x->rx, n);
	xsk_ring_prod__submit(&x->fill, n);
	if (xsk_ring_prod__needs_wakeup(&x->fill))
		recvfrom(nic->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

/*
 * Frames the kernel has finished sending go back to the free list.  No
 * more than the list lacks: the kernel completes each frame once, but
 * free[] must not overflow even if it did not.
 */
static void
reclaim(struct xdp *x)
{
	uint32_t n, i, idx;

	if ((n = xsk_ring_cons__peek(&x->comp, TX_FRAMES - x->nfree,
	    &idx)) == 0)
		return;
	for (i = 0; i < n; i++)
		x->free[x->nfree++] = *xsk_ring_cons__comp_addr(&x->comp,
		    idx + i);
	xsk_ring_cons__release(&x->comp, n);
}

/* Make the kernel send what the tx ring holds (until it has taken all). */
static void
kick(struct nic *nic, struct xdp *x)
{
	int i;

	for (i = 0; i < KICKS && xsk_prod_nb_free(&x->tx, TXQ) < TXQ; i++) {
		if (!xsk_ring_prod__needs_wakeup(&x->tx))
			return;
		if (sendto(nic->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) == 0)
			continue;
		if (errno == ENETDOWN || errno == ENXIO)
			nic_link_lost(nic);
		/* EAGAIN: 32 sent and more to go, or a busy queue. */
		if (errno != EAGAIN)
			return;
	}
}

static uint32_t
xdp_tx(struct nic *nic, struct ring *in, uint32_t n)
{
	struct xdp *x = nic->priv;
	struct xdp_desc *d;
	uint32_t lens[APP_BURST], i, ok = 0, idx = 0, k;

	reclaim(x);
	if (n > x->nfree)
		n = x->nfree;
	for (i = 0; i < n; i++)
		if ((lens[i] = nic_tx_len(in, ring_peek(in, i))) <= FRAME_SIZE)
			ok++;
	/*
	 * See TXQ: this should not fail.  Should the kernel lag all the same,
	 * it is transient: take nothing, count, push the kernel along, and
	 * the caller retries the same packets next breath (never a reason
	 * to stop the stage, issue 17).
	 */
	if (ok && xsk_ring_prod__reserve(&x->tx, ok, &idx) != ok) {
		(*x->tx_full)++;
		kick(nic, x);
		return 0;
	}
	for (i = 0, k = 0; i < n; i++) {
		if (lens[i] > FRAME_SIZE) {
			(*nic->c.drop_tx_error)++;
			continue;
		}
		d = xsk_ring_prod__tx_desc(&x->tx, idx + k++);
		d->addr = x->free[--x->nfree];
		d->len = lens[i];
		d->options = 0;
		memcpy(xsk_umem__get_data(x->area, d->addr),
		    ring_peek(in, i)->data, lens[i]);
		*nic->c.tx_bytes += lens[i];
	}
	*nic->c.tx_packets += ok;
	if (ok)
		xsk_ring_prod__submit(&x->tx, ok);
	kick(nic, x);
	return n;
}

static void
xdp_stats(struct nic *nic)
{
	struct xdp *x = nic->priv;
	struct xdp_statistics st = { 0 };
	socklen_t sl = sizeof(st);

	if (getsockopt(nic->fd, SOL_XDP, XDP_STATISTICS, &st, &sl) == -1)
		return;
	/* Cumulative in the kernel: add what is new since last time. */
	*nic->c.drop_kernel += (st.rx_dropped - x->last.rx_dropped) +
	    (st.rx_invalid_descs - x->last.rx_invalid_descs) +
	    (st.rx_ring_full - x->last.rx_ring_full);
	*x->ring_full += st.rx_ring_full - x->last.rx_ring_full;
	*x->fill_empty += st.rx_fill_ring_empty_descs -
	    x->last.rx_fill_ring_empty_descs;
	*nic->c.drop_tx_error += st.tx_invalid_descs -
	    x->last.tx_invalid_descs;
	x->last = st;
}

static void
xdp_drain(struct nic *nic)
{
	struct xdp *x = nic->priv;
	int i;

	/* Let what we queued leave before the socket (and UMEM) go. */
	for (i = 0; i < DRAIN_MS && x->xsk && x->nfree < TX_FRAMES &&
	    !nic->down; i++) {
		kick(nic, x);
		reclaim(x);
		if (x->nfree < TX_FRAMES)
			usleep(1000);
	}
}

const struct nic_ops xdp_ops = {
	.name = "xdp",
	.caps = "CAP_NET_RAW, CAP_NET_ADMIN and CAP_BPF",
	.size = sizeof(struct xdp),
	.open = xdp_open,
	.rx = xdp_rx,
	.tx = xdp_tx,
	.stats = xdp_stats,
	.drain = xdp_drain,
	.release = xdp_release,
};
