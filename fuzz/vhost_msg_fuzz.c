/*
 * vhost_msg_fuzz: libFuzzer target for snb-vhost's control-message parser
 * (drivers/vhost/msg.c) and, behind it, the virtqueue data path
 * (drivers/vhost/virtq.c) reading whatever the "frontend" left in its
 * memory.  The same code the driver runs; only the socket is replaced.
 *
 * Build and run (from the repository root; `make fuzz` does both):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring -Idrivers/vhost \
 *	    fuzz/vhost_msg_fuzz.c drivers/vhost/msg.c drivers/vhost/virtq.c \
 *	    (every libring .c file) -lpcap -lbsd -o build/fuzz_vhost
 *	build/fuzz_vhost -max_total_time=600 build/fuzz-vhost-corpus \
 *	    fuzz/corpus/vhost
 *
 * An input is a sequence of records, each starting with an op byte:
 *	op % 8 == 0  a request: [nfds:1][header:12][payload: size bytes,
 *		     zero-filled past the end of the input].  SET_MEM_TABLE
 *		     gets nfds (0..8) duplicates of a 64 KiB memfd, any other
 *		     request nfds % 4 descriptors of the kind nfds / 4 % 4
 *		     picks: an eventfd (0, 1; we keep a copy, as a frontend
 *		     does, and signal it), the memfd (2), a pipe (3).
 *	op % 8 == 1  write into the frontend's memory: [offset:2][len:1][bytes]
 *	op % 8 == 2  a breath: [npackets:1][size:1] packets into the
 *		     receive queue, then up to 64 frames out of the transmit
 *		     queue, as the driver would with both queues live
 *	op % 8 == 3  the frontend disconnects (vu_reset)
 *	op % 8 == 4  a request through the socket, as the driver receives it
 *		     (msg.c): [chunk:1][fds:1][header:12][payload], sent in
 *		     pieces of 1 + chunk * 17 bytes, each piece read as far as
 *		     it goes; fds % 16 descriptors (up to 9: one more than a
 *		     request may carry) ride on the first piece, of the kind
 *		     fds / 16 % 8 picks: an eventfd (0, 1), the guest memfd
 *		     (2), a pipe (3), a socket (4), a memfd that can be
 *		     sealed (5), /dev/null (6), an epoll fd (7)
 *	op % 8 == 5  the frontend shrinks the guest memfd: [pages:1]; the
 *		     driver's SIGBUS guard (libring/memguard.c) is installed, so the
 *		     next touch of a lost page marks the device lost
 *	op % 8 == 6  the frontend closes the socket, maybe mid-request
 *	op % 8 == 7  the guest memfd grows back to its size
 * A refused request resets the device, as the driver's disconnect does;
 * so does lost memory.  A region from a memfd that can be sealed must be
 * sealed against shrinking once the table is taken.
 * Every input starts from zeroed memory and a fresh device.  Queue 1's
 * kick fd is watched in an epoll set, as the driver does; after the
 * device is reset that set must be empty although our copies of the
 * eventfds are still open and signalled (no registration outlives the
 * driver's fd).  With
 * FUZZ_VHOST_DEBUG set, each input's counters and last error go to stderr
 * (to check that the seeds in fuzz/corpus/vhost reach the data path).
 */
#define _GNU_SOURCE		/* memfd_create */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcntl.h>

#include "fuzz.h"
#include "memguard.h"
#include "msg.h"
#include "vhost.h"

#define MEM_SIZE	65536

static int memfd = -1, ep = -1, sock[2] = { -1, -1 };
static struct vu_rx rx;
static int held[256], nheld;	/* our copies of the eventfds we sent */
static uint8_t *mem;
static struct vu_dev dev;
static struct ring in_p, in_c, out_p, out_c;
static uint64_t cnt[16];
static char lasterr[sizeof(dev.err)];

/* A refused request or a malformed queue: the driver disconnects. */
static void
failed(void)
{
	memcpy(lasterr, dev.err, sizeof(lasterr));
	vu_reset(&dev);
}
static struct vh_counters c = {
	&cnt[0], &cnt[1], &cnt[2], &cnt[3], &cnt[4], &cnt[5], &cnt[6],
	&cnt[7], &cnt[8], &cnt[9], &cnt[10], &cnt[11], &cnt[12], &cnt[13],
	&cnt[14], &cnt[15],
};

/* A descriptor of the kind k for a request that takes an eventfd. */
static int
some_fd(int k)
{
	int fd, pfd[2];

	switch (k) {
	case 2:
		return dup(memfd);
	case 3:
		if (pipe(pfd) == -1)
			return -1;
		close(pfd[0]);
		return pfd[1];
	case 4:
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, pfd) == -1)
			return -1;
		close(pfd[1]);
		return pfd[0];
	case 5:
		if ((fd = memfd_create("sealable", MFD_ALLOW_SEALING)) == -1 ||
		    ftruncate(fd, MEM_SIZE) == -1)
			abort();
		return fd;
	case 6:
		return open("/dev/null", O_RDWR | O_CLOEXEC);
	case 7:
		return epoll_create1(EPOLL_CLOEXEC);
	default:
		if ((fd = eventfd(0, 0)) == -1)
			return -1;
		if (nheld < (int)(sizeof(held) / sizeof(held[0])))
			held[nheld++] = dup(fd);
		eventfd_write(fd, 1);
		return fd;
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if ((memfd = memfd_create("vhost-fuzz", MFD_CLOEXEC)) == -1 ||
	    ftruncate(memfd, MEM_SIZE) == -1)
		err(1, "memfd");
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd,
	    0);
	if (mem == MAP_FAILED)
		err(1, "mmap");
	fuzz_ring("in", 128, 4096, &in_p, &in_c);
	fuzz_ring("out", 128, 4096, &out_p, &out_c);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		err(1, "epoll_create1");
	vu_init(&dev);
	dev.watch_ep = ep;
	dev.watch_q = 1;
	return 0;
}

static void
breath(uint32_t npkts, uint32_t size)
{
	uint8_t frame[4096];
	uint32_t i, room;
	int k;

	memset(frame, 0xab, sizeof(frame));
	if (vu_queue_ready(&dev, 0)) {
		room = ring_room(&in_p, npkts);
		if (npkts > room)
			npkts = room;
		for (i = 0; i < npkts; i++)
			fuzz_put(&in_p, i, frame,
			    (uint16_t)((size * 16 + i) % (sizeof(frame) + 1)));
		ring_commit(&in_p, npkts);
		k = vq_to_frontend(&dev, &in_c, ring_avail(&in_c, 64), &c);
		if (k == -1) {
			failed();
			return;
		}
		ring_release(&in_c, (uint32_t)k);
		vq_want_kicks(&dev.vq[0], 0);
	}
	if (vu_queue_ready(&dev, 1)) {
		room = ring_room(&out_p, 64);
		if (vq_from_frontend(&dev, &out_p, room, &c) == -1) {
			failed();
			return;
		}
		vq_want_kicks(&dev.vq[1], 1);
	}
	fuzz_drain(&out_c);
	if (dev.mem_lost)
		failed();	/* the driver drops the frontend */
}

/* A new connection: the old one's partial request is dropped with it. */
static void
reconnect(void)
{
	vu_rx_clear(&rx);
	if (sock[0] >= 0)
		close(sock[0]);
	if (sock[1] >= 0)
		close(sock[1]);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sock) == -1)
		abort();
}

/* Apply a request received whole, as vhost.c's handle_msg does. */
static void
apply_received(void)
{
	static struct vu_msg reply;
	size_t rlen;
	int i, r, seals, nfds = rx.nfds, copy[VU_MAX_FDS], could[VU_MAX_FDS];

	/* Copies, to see afterwards what became of files that could be
	 * sealed (vu_handle keeps or closes the descriptors). */
	for (i = 0; i < nfds; i++) {
		copy[i] = dup(rx.fds[i]);
		seals = fcntl(rx.fds[i], F_GET_SEALS);
		could[i] = seals != -1 && !(seals & F_SEAL_SEAL);
	}
	rx.nfds = 0;
	r = vu_handle(&dev, &rx.m, rx.fds, nfds, &reply, &rlen);
	if (r == 0 && rlen > VU_HDR_SIZE + sizeof(reply.p))
		__builtin_trap();
	/* A table taken from a memfd that can be sealed: sealed. */
	for (i = 0; i < nfds; i++) {
		if (r == 0 && rx.m.request == VU_SET_MEM_TABLE && could[i] &&
		    ftruncate(copy[i], 0) == 0)
			__builtin_trap();
		close(copy[i]);
	}
	if (r == -1) {
		failed();
		reconnect();
		return;
	}
	vu_rx_clear(&rx);
}

/* Read what the socket holds, as the driver does on a socket event. */
static void
receive(void)
{
	for (;;) {
		switch (vu_rx_read(&rx, sock[0], &dev)) {
		case VU_RX_MORE:
			return;
		case VU_RX_DONE:
			apply_received();
			break;
		default:	/* closed or malformed: disconnect */
			failed();
			reconnect();
			return;
		}
	}
}

/* op 4: [chunk][fds][header][payload], sent in pieces. */
static const uint8_t *
socket_request(const uint8_t *p, const uint8_t *end)
{
	static uint8_t buf[VU_HDR_SIZE + VU_MAX_PAYLOAD];
	union {
		struct cmsghdr	hdr;
		char		b[CMSG_SPACE(9 * sizeof(int))];
	} cm;
	struct msghdr mh;
	struct iovec iov;
	struct cmsghdr *cmsg;
	uint32_t size;
	size_t chunk, len, off, k;
	int fds[9], nfds, kind, i;

	if (end - p < 2 + VU_HDR_SIZE)
		return end;
	chunk = 1 + (size_t)p[0] * 17;
	nfds = p[1] % 16 % 10;
	kind = p[1] / 16 % 8;
	p += 2;
	memcpy(&size, p + 8, 4);
	size %= VU_MAX_PAYLOAD + 64;	/* a little too big, sometimes */
	len = VU_HDR_SIZE + size;
	memset(buf, 0, sizeof(buf));
	k = (size_t)(end - p) < len ? (size_t)(end - p) : len;
	if (len > sizeof(buf))
		len = sizeof(buf);
	memcpy(buf, p, k < len ? k : len);
	p += k;
	for (i = 0; i < nfds; i++)
		fds[i] = some_fd(kind);
	for (off = 0; off < len; off += k) {
		k = len - off < chunk ? len - off : chunk;
		iov.iov_base = buf + off;
		iov.iov_len = k;
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		if (off == 0 && nfds > 0) {
			memset(&cm, 0, sizeof(cm));
			mh.msg_control = cm.b;
			mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
			cmsg = CMSG_FIRSTHDR(&mh);
			cmsg->cmsg_level = SOL_SOCKET;
			cmsg->cmsg_type = SCM_RIGHTS;
			cmsg->cmsg_len = CMSG_LEN(nfds * sizeof(int));
			memcpy(CMSG_DATA(cmsg), fds, nfds * sizeof(int));
		}
		if (sendmsg(sock[1], &mh, MSG_NOSIGNAL) != (ssize_t)k)
			break;	/* the "driver" hung up on us */
		receive();
	}
	for (i = 0; i < nfds; i++)
		close(fds[i]);	/* the receiver has its own copies */
	return p;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vu_msg m, reply;
	const uint8_t *p = data, *end = data + size;
	struct epoll_event ev;
	int fds[VU_MAX_FDS], nfds, kind, i;
	size_t rlen, k;
	uint32_t off, len;

	/* The whole file again (op 5 shrinks it) before our mapping is
	 * touched; the guard again (libFuzzer and ASan have their own). */
	if (ftruncate(memfd, MEM_SIZE) == -1 || memguard_init() == -1)
		abort();
	memset(mem, 0, MEM_SIZE);
	reconnect();
	while (p < end) {
		uint8_t op = *p++;

		switch (op % 8) {
		case 0:
			if (end - p < 1 + VU_HDR_SIZE)
				goto out;
			nfds = *p;
			kind = *p++ / 4 % 4;
			memcpy(&m, p, VU_HDR_SIZE);
			p += VU_HDR_SIZE;
			if (vu_check_header(&dev, &m) == -1) {
				failed();
				break;
			}
			k = (size_t)(end - p) < m.size ? (size_t)(end - p) :
			    m.size;
			memset(m.p.bytes, 0, m.size);
			memcpy(m.p.bytes, p, k);
			p += k;
			nfds = m.request == VU_SET_MEM_TABLE ? nfds % 9 :
			    nfds % 4;
			for (i = 0; i < nfds; i++)
				fds[i] = m.request == VU_SET_MEM_TABLE ?
				    dup(memfd) : some_fd(kind);
			if (vu_handle(&dev, &m, fds, nfds, &reply, &rlen) ==
			    -1)
				failed();
			else if (rlen > VU_HDR_SIZE + sizeof(reply.p))
				__builtin_trap();
			break;
		case 1:
			if (end - p < 3)
				goto out;
			off = (uint32_t)p[0] | (uint32_t)p[1] << 8;
			len = p[2];
			p += 3;
			if (len > (uint32_t)(end - p))
				len = (uint32_t)(end - p);
			if (off + len > MEM_SIZE)
				len = MEM_SIZE - off;
			/* Not through our mapping: the file may be shorter
			 * now (op 5), and a write past its end is SIGBUS. */
			if (pwrite(memfd, p, len, off) == -1)
				abort();
			p += len;
			break;
		case 2:
			if (end - p < 2)
				goto out;
			breath(p[0] % 64, p[1]);
			p += 2;
			break;
		case 3:
			vu_reset(&dev);
			break;
		case 4:
			p = socket_request(p, end);
			break;
		case 5:
			if (end - p < 1)
				goto out;
			if (ftruncate(memfd, (off_t)(*p++ % (MEM_SIZE / 4096 + 1))
			    * 4096) == -1)
				abort();
			break;
		case 6:
			shutdown(sock[1], SHUT_WR);
			receive();
			reconnect();
			break;
		case 7:
			if (ftruncate(memfd, MEM_SIZE) == -1)
				abort();
			break;
		}
	}
out:
	if (getenv("FUZZ_VHOST_DEBUG"))
		fprintf(stderr, "to frontend %llu, from frontend %llu, short "
		    "%llu, calls %llu; last error: %s\n",
		    (unsigned long long)cnt[2], (unsigned long long)cnt[0],
		    (unsigned long long)cnt[6], (unsigned long long)cnt[13],
		    lasterr);
	memset(cnt, 0, sizeof(cnt));
	lasterr[0] = '\0';
	vu_reset(&dev);
	if (epoll_wait(ep, &ev, 1, 0) != 0)
		__builtin_trap();	/* a kick registration outlived its fd */
	while (nheld > 0)
		close(held[--nheld]);
	vu_rx_clear(&rx);
	fuzz_drain(&in_c);
	fuzz_drain(&out_c);
	return 0;
}
