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
 *	op % 4 == 0  a request: [nfds:1][header:12][payload: size bytes,
 *		     zero-filled past the end of the input].  SET_MEM_TABLE
 *		     gets nfds (0..8) duplicates of a 64 KiB memfd, any other
 *		     request nfds % 4 descriptors of the kind nfds / 4 % 4
 *		     picks: an eventfd (0, 1; we keep a copy, as a frontend
 *		     does, and signal it), the memfd (2), a pipe (3).
 *	op % 4 == 1  write into the frontend's memory: [offset:2][len:1][bytes]
 *	op % 4 == 2  a breath: [npackets:1][size:1] packets into the
 *		     receive queue, then up to 64 frames out of the transmit
 *		     queue, as the driver would with both queues live
 *	op % 4 == 3  the frontend disconnects (vu_reset)
 * A refused request resets the device, as the driver's disconnect does.
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

#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"
#include "vhost.h"

#define MEM_SIZE	65536

static int memfd = -1, ep = -1;
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
	&cnt[14],
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
	default:
		if ((fd = eventfd(0, 0)) == -1)
			return -1;
		if (nheld < (int)(sizeof(held) / sizeof(held[0])))
			held[nheld++] = dup(fd);
		eventfd_write(fd, 1);
		return fd;
	}
}

static void
make_ring(const char *name, struct ring *prod, struct ring *cons)
{
	char path[256], eb[256];

	snprintf(path, sizeof(path), "/dev/shm/snb-fuzz-%d-%s", getpid(),
	    name);
	unlink(path);
	if (ring_create(path, 128, 4096, 0) == -1)
		err(1, "%s", path);
	if (ring_attach(prod, path, RING_PRODUCER, eb, sizeof(eb)) == -1 ||
	    ring_attach(cons, path, RING_CONSUMER, eb, sizeof(eb)) == -1)
		errx(1, "%s", eb);
	unlink(path);
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
	make_ring("in", &in_p, &in_c);
	make_ring("out", &out_p, &out_c);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		err(1, "epoll_create1");
	vu_init(&dev);
	vu_watch_kicks(&dev, ep, 1);
	return 0;
}

static void
drain(struct ring *r)
{
	uint32_t n;

	while ((n = ring_avail(r, 64)) > 0)
		ring_release(r, n);
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
			ring_put(&in_p, i, frame,
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
	drain(&out_c);
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

	memset(mem, 0, MEM_SIZE);
	while (p < end) {
		uint8_t op = *p++;

		switch (op % 4) {
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
			memcpy(mem + off, p, len);
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
	drain(&in_c);
	drain(&out_c);
	return 0;
}
