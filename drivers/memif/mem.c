/*
 * mem.c: snb-memif's shared memory.  Master: the regions the slave sent,
 * checked and mapped, and the rings it described found in them.  Slave:
 * our own memory, one sealed memfd, made and laid out.  Either way, all
 * of it unmapped and closed when the connection ends.
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memguard.h"
#include "memif.h"

/*
 * TEST ONLY: build/tests/snb-memif-unsealed (see the Makefile) is built
 * with SNB_TEST_UNSEALED=1 and maps region files it cannot seal, so that
 * tests/memif.bats can shrink one under it and show the SIGBUS guard.
 * snb-memif itself always refuses them.
 */
#ifndef SNB_TEST_UNSEALED
#define SNB_TEST_UNSEALED	0
#endif

/* The reason in why (whylen bytes), and -1. */
#define WHY(...)	memif_why(why, whylen, __VA_ARGS__)

/* Unmap and close everything of the connection; the socket stays. */
void
release_memory(void)
{
	unsigned i;

	for (i = 0; i < conn.nregions; i++) {
		memguard_unmap(conn.reg[i].addr, conn.reg[i].size);
		closefd(&conn.reg[i].fd);
	}
	conn.nregions = 0;
	memset(conn.reg, 0, sizeof(conn.reg));
	conn.mem_lost = 0;	/* what faulted is unmapped */
	for (i = 0; i < MEMIF_MAX_RINGS; i++) {
		epoll_set(epfd, EPOLL_CTL_DEL, conn.rx[i].efd);
		closefd(&conn.rx[i].efd);
		closefd(&conn.tx[i].efd);
	}
	conn.nrx = conn.ntx = 0;
}

/*
 * Region i's fd from the slave, mapped once sealed against shrinking and
 * found as big as announced; a file that cannot be sealed is refused.  A
 * hole punched later is caught by the guard (libring/memguard.h, issue 17).
 */
int
map_region(unsigned i, int fd, char *why, size_t whylen)
{
	char e[MEMIF_REASON_LEN];
	void *a;

	if ((a = memguard_map(fd, conn.s.region_size[i], !SNB_TEST_UNSEALED,
	    &conn.mem_lost, e, sizeof(e))) == NULL)
		return WHY("region %u: %s", i, e);
	conn.reg[i] = (struct region){ a, conn.s.region_size[i], fd };
	conn.nregions = i + 1;
	return 0;
}

/* Ring r where cfg puts it; its eventfd (ADD_RING's or ours) stays. */
static void
ring_use(struct mring *r, const struct memif_ring_cfg *cfg)
{
	*r = (struct mring){ .base = conn.reg[cfg->region].addr + cfg->offset,
	    .size = 1U << cfg->log2, .mask = (uint16_t)((1U << cfg->log2) - 1),
	    .efd = r->efd };
}

/* Master: CONNECT came and the session checked the geometry. */
int
master_connect(char *why, size_t whylen)
{
	struct mring *r;
	uint32_t cookie;
	unsigned i;

	conn.nrx = conn.s.ns2m;
	conn.ntx = conn.s.nm2s;
	for (i = 0; i < conn.nrx + conn.ntx; i++) {
		r = i < conn.nrx ? &conn.rx[i] : &conn.tx[i - conn.nrx];
		ring_use(r, i < conn.nrx ? &conn.s.s2m[i] :
		    &conn.s.m2s[i - conn.nrx]);
		memcpy(&cookie, r->base + MEMIF_RING_COOKIE_OFF, 4);
		if (cookie != MEMIF_COOKIE)
			return WHY("ring without the memif cookie");
		/* Both sides start from 0, as the slave initialised them;
		 * our receive rings start unmasked (kicks wanted). */
		atomic_store_explicit(r_tail(r), 0, memory_order_release);
		if (i < conn.nrx) {
			*r_flags(r) = 0;
			epoll_set(epfd, EPOLL_CTL_ADD, r->efd);
		}
	}
	return 0;
}

/*
 * Slave: slots from .. to - 1 of ring r get their own buffers (slot i's
 * at buf0 + i * bufsize), whatever the master wrote there.
 */
void
slave_post(struct mring *r, uint16_t from, uint16_t to)
{
	volatile struct memif_desc *d;

	for (; from != to; from++) {
		d = r_desc(r, from);
		d->flags = 0;
		d->region = 0;
		d->length = bufsize;
		d->offset = r->buf0 + (uint32_t)(from & r->mask) * bufsize;
	}
}

/*
 * Slave: one region (a sealed memfd) holding our s2m ring (we send),
 * our m2s ring (we receive), then the buffers of each, 2^log2 apiece.
 */
int
slave_memory(uint8_t log2, char *why, size_t whylen)
{
	uint64_t rb = (memif_ring_bytes(log2) + 63) & ~63ULL, size;
	uint32_t n = 1U << log2, i;
	struct mring *rs[2] = { &conn.tx[0], &conn.rx[0] };
	char e[MEMIF_REASON_LEN];
	int fd;
	void *a;

	size = 2 * rb + 2ULL * n * bufsize;
	size = (size + 4095) & ~4095ULL;
	/* Our memfd, but the master holds it too: guarded as the master
	 * guards the slave's (a punched hole in a memfd reads as zeros
	 * today; guarded, nothing depends on that). */
	a = NULL;
	if ((fd = memfd_create("snb-memif", MFD_CLOEXEC |
	    MFD_ALLOW_SEALING)) == -1 || ftruncate(fd, (off_t)size) == -1 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_SEAL) == -1)
		snprintf(e, sizeof(e), "%s", strerror(errno));
	else
		a = memguard_map(fd, size, 1, &conn.mem_lost, e, sizeof(e));
	if (a == NULL) {
		if (fd >= 0)
			close(fd);
		return WHY("shared memory of %llu bytes: %s",
		    (unsigned long long)size, e);
	}
	conn.reg[0] = (struct region){ a, size, fd };
	conn.nregions = 1;
	conn.s.nregions = 1;
	conn.s.region_size[0] = size;
	conn.ntx = conn.nrx = 1;	/* from here on release_memory() cleans up */
	for (i = 0; i < 2; i++) {
		struct mring *r = rs[i];
		struct memif_ring_cfg *cfg = i ? &conn.s.m2s[0] : &conn.s.s2m[0];
		uint32_t cookie = MEMIF_COOKIE;

		*cfg = (struct memif_ring_cfg){ 0, (uint32_t)(i * rb), log2 };
		ring_use(r, cfg);
		if ((r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1)
			return WHY("eventfd: %s", strerror(errno));
		r->buf0 = (uint32_t)(2 * rb + (uint64_t)i * n * bufsize);
		memcpy(r->base + MEMIF_RING_COOKIE_OFF, &cookie, 4);
		slave_post(r, 0, (uint16_t)n);
	}
	conn.s.ns2m = conn.s.nm2s = 1;
	epoll_set(epfd, EPOLL_CTL_ADD, conn.rx[0].efd);
	return 0;
}
