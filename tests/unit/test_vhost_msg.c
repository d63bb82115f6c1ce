/*
 * test_vhost_msg: snb-vhost's memory table (drivers/vhost/msg.c) against
 * what a frontend can send after the queues run.
 *
 * A new table must never leave a queue's rings pointing into memory that
 * is no longer mapped (issue 17, item 7): the table is refused whole when
 * either queue's rings do not fit it, and the old table stays in use.
 */
#define _GNU_SOURCE		/* memfd_create */
#include <sys/eventfd.h>
#include <sys/mman.h>

#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "../../drivers/vhost/msg.c"

#define UVA	0x7f0000000000ULL
#define MEM	0x10000
#define Q1	0x8000		/* queue 1's rings; queue 0's at 0 */
#define N	8

static struct vu_dev dev;

static int
request(uint32_t req, const void *payload, uint32_t size, int *fds, int nfds)
{
	static struct vu_msg m, reply;
	size_t rlen;

	memset(&m, 0, sizeof(m));
	m.request = req;
	m.flags = VU_VERSION;
	m.size = size;
	memcpy(m.p.bytes, payload, size);
	return vu_handle(&dev, &m, fds, nfds, &reply, &rlen);
}

/* A table of one region: uva .. uva + size of a new memfd at gpa 0. */
static int
table(uint64_t uva, uint64_t size)
{
	struct {
		struct vu_mem		h;
		struct vu_mem_region	r;
	} t = { { 1, 0 }, { 0, size, uva, 0 } };
	int fd = memfd_create("guest", 0);

	if (fd == -1 || ftruncate(fd, MEM) == -1)
		err(1, "memfd");
	return request(VU_SET_MEM_TABLE, &t, sizeof(t), &fd, 1);
}

static void
queue(uint32_t q, uint64_t base)
{
	struct vu_state st = { q, N };
	struct vu_addr a = { q, 0, UVA + base, UVA + base + 0x200,
	    UVA + base + 0x100, 0 };
	int kick = eventfd(0, 0);

	if (request(VU_SET_VRING_NUM, &st, sizeof(st), NULL, 0) == -1 ||
	    request(VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0) == -1 ||
	    request(VU_SET_VRING_KICK, &(uint64_t){ q }, 8, &kick, 1) == -1)
		errx(1, "queue %u: %s", q, dev.err);
}

/* p .. p + len lies in a region of the device's current table. */
static int
mapped(const void *p, size_t len)
{
	const uint8_t *a = p;
	int i;

	for (i = 0; i < dev.nregions; i++)
		if (a >= dev.regions[i].host &&
		    a + len <= dev.regions[i].host + dev.regions[i].size)
			return 1;
	return 0;
}

/* Every ring of every queue is absent or inside the current table. */
static int
rings_mapped(void)
{
	int q;

	for (q = 0; q < VU_NQUEUES; q++) {
		const struct vu_vring *vq = &dev.vq[q];

		if (vq->desc == NULL && vq->avail == NULL && vq->used == NULL)
			continue;
		if (vq->desc == NULL || !mapped(vq->desc, 16 * N) ||
		    !mapped(vq->avail, 6 + 2 * N) ||
		    !mapped(vq->used, 6 + 8 * N))
			return 0;
	}
	return 1;
}

int
main(void)
{
	struct vring_desc *d0, *d1;

	vu_init(&dev);
	ok(table(UVA, MEM) == 0, "a table of 64 KiB");
	queue(0, 0);
	queue(1, Q1);
	ok(vu_vring_live(&dev.vq[0]) && vu_vring_live(&dev.vq[1]) &&
	    rings_mapped(), "both queues live, their rings in the table");
	d0 = dev.vq[0].desc;
	d1 = dev.vq[1].desc;

	/* Queue 0's rings outside the new table, queue 1's inside. */
	ok(table(UVA + Q1, MEM - Q1) == -1 && strstr(dev.err, "queue 0"),
	    "a table without queue 0's rings is refused (%s)", dev.err);
	ok(rings_mapped(), "no ring points outside the table in use");
	ok(dev.vq[0].desc == d0 && dev.vq[1].desc == d1 && dev.nregions == 1 &&
	    dev.regions[0].uva == UVA, "the old table and rings stay in use");
	/* Readable: the old mapping is still there. */
	ok(dev.vq[1].avail->idx == 0 && dev.vq[0].avail->idx == 0,
	    "queue 1's rings can be read");

	/* Queue 1's outside, queue 0's inside. */
	ok(table(UVA, Q1) == -1 && strstr(dev.err, "queue 1"),
	    "a table without queue 1's rings is refused (%s)", dev.err);
	ok(rings_mapped() && dev.vq[0].desc == d0 && dev.vq[1].desc == d1,
	    "the old table stays in use");

	/* A table with both: both queues move into it together. */
	ok(table(UVA, MEM) == 0, "a new table with both queues' rings");
	ok(rings_mapped() && dev.vq[0].desc != d0 && dev.vq[1].desc != d1 &&
	    vu_vring_live(&dev.vq[0]) && vu_vring_live(&dev.vq[1]),
	    "both queues use the new table");
	vu_reset(&dev);
	return tap_done();
}
