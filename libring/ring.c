/*
 * ring.c: creating, attaching and publishing on packet rings, and waking
 * a peer that sleeps (the sleeping side is ring_wait.c).  The hot-path
 * inlines live in ring.h; this file holds what runs once per burst or
 * once per process.
 */
#define _GNU_SOURCE	/* fallocate */
#include <err.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "ring.h"
#include "rundir.h"

#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC 0x958458f6
#endif

_Static_assert(sizeof(struct ring_shm) <= RING_DATA_OFFSET, "ring header");
_Static_assert(sizeof(struct packet) == 16, "packet header");

unsigned	ring_corruptions;
unsigned	ring_wakes_pending;

int
snb_is_hugetlbfs(const char *path, size_t *page)
{
	struct statfs sf;

	if (statfs(path, &sf) == -1 || (unsigned)sf.f_type != HUGETLBFS_MAGIC)
		return 0;
	if (page)
		*page = (size_t)sf.f_bsize;
	return 1;
}

static uint32_t
slot_size_for(uint32_t capacity)
{
	/* Data starts 16 bytes in; round the stride to whole cache lines. */
	return (uint32_t)((PACKET_HDR + capacity + 63) & ~(size_t)63);
}

/*
 * Take the file's pages now (tmpfs, hugetlbfs): a ring that a full
 * /dev/shm, or a pool short of huge pages, cannot hold is refused here
 * with ENOSPC, not met by SIGBUS in whichever stage first touches a slot
 * the file system had no page for.
 */
int
snb_reserve(int fd, size_t size)
{
	if (fallocate(fd, 0, 0, (off_t)size) == -1 && errno != EOPNOTSUPP)
		return -1;
	return 0;
}

int
ring_create(const char *path, uint32_t nslots, uint32_t capacity,
    uint32_t flags)
{
	struct ring_shm *shm;
	size_t page = 4096, size;
	uint32_t slot_size;
	const char *base;
	char dir[PATH_MAX], *slash;
	int fd, e;

	if (nslots < 2 || (nslots & (nslots - 1)) || nslots > (1u << 24) ||
	    capacity < 64 || capacity > RING_MAX_CAPACITY) {
		errno = EINVAL;
		return -1;
	}
	strlcpy(dir, path, sizeof(dir));
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	snb_is_hugetlbfs(slash ? dir : ".", &page);
	slot_size = slot_size_for(capacity);
	/* Whole pages: a huge page on hugetlbfs. */
	size = (RING_DATA_OFFSET + (size_t)nslots * slot_size + page - 1) /
	    page * page;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1)
		return -1;
	if (ftruncate(fd, (off_t)size) == -1 || snb_reserve(fd, size) == -1)
		goto fail;
	shm = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (shm == MAP_FAILED)
		goto fail;
	memset(shm, 0, sizeof(*shm));
	shm->hdr.version = RING_VERSION;
	shm->hdr.nslots = nslots;
	shm->hdr.slot_size = slot_size;
	shm->hdr.capacity = capacity;
	shm->hdr.flags = flags;
	shm->hdr.file_size = size;
	base = strrchr(path, '/');
	strlcpy(shm->hdr.name, base ? base + 1 : path, sizeof(shm->hdr.name));
	/* The magic goes last: a half-made ring never looks valid. */
	atomic_thread_fence(memory_order_release);
	shm->hdr.magic = RING_MAGIC;
	munmap(shm, size);
	close(fd);
	return 0;
fail:
	e = errno;
	close(fd);
	unlink(path);
	errno = e;
	return -1;
}

int
ring_attach(struct ring *r, const char *path, enum ring_side side,
    char *errbuf, size_t errlen)
{
	struct ring_shm *shm;
	struct stat st;
	int fd, prot;
	uint32_t ns, ss, cap;

	memset(r, 0, sizeof(*r));
	prot = PROT_READ | (side == RING_OBSERVER ? 0 : PROT_WRITE);
	fd = open(path, (side == RING_OBSERVER ? O_RDONLY : O_RDWR) |
	    O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size < RING_DATA_OFFSET) {
		snprintf(errbuf, errlen, "%s: not a ring (too small)", path);
		close(fd);
		return -1;
	}
	shm = mmap(NULL, (size_t)st.st_size, prot, MAP_SHARED, fd, 0);
	close(fd);
	if (shm == MAP_FAILED) {
		snprintf(errbuf, errlen, "%s: mmap: %s", path, strerror(errno));
		return -1;
	}
	ns = shm->hdr.nslots;
	ss = shm->hdr.slot_size;
	cap = shm->hdr.capacity;
	if (shm->hdr.magic != RING_MAGIC) {
		snprintf(errbuf, errlen, "%s: not a ring (bad magic)", path);
		goto bad;
	}
	if (shm->hdr.version != RING_VERSION) {
		snprintf(errbuf, errlen, "%s: ring version %u, expected %u",
		    path, shm->hdr.version, RING_VERSION);
		goto bad;
	}
	if (ns < 2 || (ns & (ns - 1)) || cap < 64 || cap > RING_MAX_CAPACITY ||
	    ss < slot_size_for(cap) || ss % 64 ||
	    RING_DATA_OFFSET + (uint64_t)ns * ss > (uint64_t)st.st_size) {
		snprintf(errbuf, errlen, "%s: corrupt ring geometry "
		    "(%u slots of %u bytes, capacity %u, file %lld bytes)",
		    path, ns, ss, cap, (long long)st.st_size);
		goto bad;
	}
	r->shm = shm;
	r->slots = (unsigned char *)shm + RING_DATA_OFFSET;
	r->mask = ns - 1;
	r->slot_size = ss;
	r->capacity = cap;
	r->side = side;
	r->map_len = (size_t)st.st_size;
	strlcpy(r->path, path, sizeof(r->path));
	r->head = atomic_load_explicit(&shm->prod.head, memory_order_acquire);
	r->tail = atomic_load_explicit(&shm->cons.tail, memory_order_acquire);
	if (side == RING_PRODUCER && (shm->hdr.flags & RING_FLAG_LEAKY) &&
	    (r->leak = aligned_alloc(64, ss)) == NULL) {
		snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		goto bad;
	}
	/* No claim here: a replacement attaches long before it takes over. */
	return 0;
bad:
	munmap(shm, (size_t)st.st_size);
	return -1;
}

int
ring_geometry_only(struct ring *r, const char *name, uint32_t nslots,
    uint32_t capacity, enum ring_side side)
{
	struct ring_shm *shm;

	memset(r, 0, sizeof(*r));
	if (nslots < 2 || (nslots & (nslots - 1)) || nslots > (1u << 24) ||
	    capacity < 64 || capacity > RING_MAX_CAPACITY ||
	    (shm = calloc(1, sizeof(*shm))) == NULL)
		return -1;
	shm->hdr.magic = RING_MAGIC;
	shm->hdr.version = RING_VERSION;
	shm->hdr.nslots = nslots;
	shm->hdr.slot_size = slot_size_for(capacity);
	shm->hdr.capacity = capacity;
	r->shm = shm;
	r->mask = nslots - 1;
	r->slot_size = shm->hdr.slot_size;
	r->capacity = capacity;
	r->side = side;
	strlcpy(r->path, name, sizeof(r->path));
	return 0;
}

void
ring_mark_corrupt(struct ring *r, uint64_t head, uint64_t tail)
{
	if (!r->corrupt)
		warnx("%s: corrupt ring: head %llu, tail %llu, %llu slots",
		    r->path, (unsigned long long)head,
		    (unsigned long long)tail, (unsigned long long)r->mask + 1);
	r->corrupt = 1;
	ring_corruptions++;
}

int
ring_claim(struct ring *r, char *errbuf, size_t errlen)
{
	struct ring_shm *s = r->shm;
	uint64_t head, tail;

	tail = atomic_load_explicit(&s->cons.tail, memory_order_acquire);
	head = atomic_load_explicit(&s->prod.head, memory_order_acquire);
	if (head - tail > r->mask + 1) {
		snprintf(errbuf, errlen, "%s: corrupt ring: head %llu, tail "
		    "%llu, %llu slots", r->path, (unsigned long long)head,
		    (unsigned long long)tail, (unsigned long long)r->mask + 1);
		r->corrupt = 1;
		return -1;
	}
	r->head = head;
	r->tail = tail;
	if (r->side == RING_PRODUCER) {
		if (atomic_load_explicit(&s->prod.closed, memory_order_acquire)) {
			snprintf(errbuf, errlen, "%s: closed already (the stream "
			    "through it has ended)", r->path);
			return -1;
		}
		atomic_store(&s->prod.waiting, 0);
		atomic_store(&s->prod.pid, (int32_t)getpid());
	} else if (r->side == RING_CONSUMER) {
		atomic_store(&s->cons.waiting, 0);
		atomic_store(&s->cons.pid, (int32_t)getpid());
	}
	return 0;
}

void
ring_detach(struct ring *r)
{
	int32_t me = (int32_t)getpid();

	if (r->shm == NULL)
		return;
	ring_flush_wake(r, 1);	/* a successor may take a while */
	/* Clear our claim only: a successor may hold the side already. */
	if (r->side == RING_PRODUCER)
		atomic_compare_exchange_strong(&r->shm->prod.pid, &me, 0);
	else if (r->side == RING_CONSUMER)
		atomic_compare_exchange_strong(&r->shm->cons.pid, &me, 0);
	munmap(r->shm, r->map_len);
	r->shm = NULL;
	free(r->leak);
	r->leak = NULL;
}

/*
 * Wake the other side if it sleeps (1: it did).  The waker, not the
 * sleeper, clears the word: a sleeper between its re-check and FUTEX_WAIT
 * then finds 0 where it expects 1 and does not sleep at all, so the
 * wake-up cannot be lost.
 */
static inline int
wake(_Atomic uint32_t *waiting, _Atomic int32_t *sleeper)
{
	uint32_t how;
	int32_t pid;

	if (!atomic_load_explicit(waiting, memory_order_relaxed))
		return 0;	/* awake already */
	how = atomic_exchange(waiting, 0);
	if (how == RING_WAIT_FUTEX)
		syscall(SYS_futex, waiting, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	else if (how == RING_WAIT_SIGNAL &&
	    (pid = atomic_load_explicit(sleeper, memory_order_relaxed)) > 0)
		kill(pid, RING_WAKE_SIGNAL);	/* the claim: a live peer */
	return 1;
}

/*
 * A process killed between a publish and the flush after its breath took
 * a batched wake-up with it (ring_commit): its peer would sleep on with
 * work waiting.  So the peer of every side pid held is woken; a spurious
 * wake-up costs it one look.  Both claims go first: the peer may be pid.
 */
void
ring_forget(struct ring *r, pid_t pid)
{
	int32_t p;
	int prod, cons;

	p = (int32_t)pid;
	if ((prod = atomic_compare_exchange_strong(&r->shm->prod.pid, &p, 0))) {
		uint32_t w = RING_WAIT_SIGNAL;
		atomic_compare_exchange_strong(&r->shm->prod.waiting, &w, 0);
	}
	p = (int32_t)pid;
	if ((cons = atomic_compare_exchange_strong(&r->shm->cons.pid, &p, 0))) {
		uint32_t w = RING_WAIT_SIGNAL;
		atomic_compare_exchange_strong(&r->shm->cons.waiting, &w, 0);
	}
	atomic_thread_fence(memory_order_seq_cst);
	if (prod)
		wake(&r->shm->cons.waiting, &r->shm->cons.pid);
	if (cons)
		wake(&r->shm->prod.waiting, &r->shm->prod.pid);
}

/*
 * A stopped process (SIGSTOP) cannot send the wake-up it left pending
 * after a publish (batched: ring_commit), and its peer would sleep on
 * with packets (or room) waiting until the idle cap.  The launcher sees
 * the stop and wakes the peer of every side pid holds, claims kept.
 */
void
ring_wake_peers(struct ring *r, pid_t pid)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&r->shm->prod.pid) == (int32_t)pid)
		wake(&r->shm->cons.waiting, &r->shm->cons.pid);
	if (atomic_load(&r->shm->cons.pid) == (int32_t)pid)
		wake(&r->shm->prod.waiting, &r->shm->prod.pid);
}

static void
clear_pending(struct ring *r)
{
	if (r->wake_pending) {
		r->wake_pending = 0;
		ring_wakes_pending--;
	}
}

/*
 * After a publish (and its fence): wake the sleeping peer, or, with
 * wake_batch, leave the wake-up pending for ring_flush_wake(), which the
 * runtime calls after the breath: the system call (and the peer taking
 * our core at once) is then no part of the breath.  A pending wake-up is
 * safe to hold: the peer's waiting word stays set (only the waker clears
 * it, or the peer itself once awake), and the flush runs wake() on it.
 */
static void
wake_peer(struct ring *r, _Atomic uint32_t *waiting, _Atomic int32_t *pid)
{
	if (!atomic_load_explicit(waiting, memory_order_relaxed))
		return;
	if (r->wake_batch) {
		if (!r->wake_pending) {
			r->wake_pending = 1;
			ring_wakes_pending++;
		}
		return;
	}
	wake(waiting, pid);
}

/* What a sleeping peer of r would find now: packets, or free slots. */
static uint64_t
peer_ready(const struct ring *r)
{
	if (r->side == RING_PRODUCER)
		return r->head - atomic_load_explicit(&r->shm->cons.tail,
		    memory_order_relaxed);
	return r->mask + 1 - (atomic_load_explicit(&r->shm->prod.head,
	    memory_order_relaxed) - r->tail);
}

/* The peer's index is stable while it sleeps; our cached copy may be
   older, so it is read afresh. */
int
ring_flush_wake(struct ring *r, int all)
{
	if (!r->wake_pending || (!all && peer_ready(r) < r->wake_batch))
		return 0;
	clear_pending(r);
	/* Our publish's fence came before: wake()'s load still pairs with it. */
	if (r->side == RING_PRODUCER)
		return wake(&r->shm->cons.waiting, &r->shm->cons.pid);
	return wake(&r->shm->prod.waiting, &r->shm->prod.pid);
}

/* Publish n filled slots holding `bytes` bytes of packets. */
static void
publish(struct ring *r, uint32_t n, uint64_t bytes)
{
	if (r->leak != NULL)
		r->real_room -= n;
	r->head += n;
	atomic_store_explicit(&r->shm->prod.bytes,
	    atomic_load_explicit(&r->shm->prod.bytes, memory_order_relaxed) +
	    bytes, memory_order_relaxed);
	atomic_store_explicit(&r->shm->prod.head, r->head,
	    memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	wake_peer(r, &r->shm->cons.waiting, &r->shm->cons.pid);
}

void
ring_commit(struct ring *r, uint32_t n)
{
	uint64_t bytes = 0;
	uint32_t i;

	if (r->leak != NULL) {
		r->leak_pinned = 0;
		if (n > r->real_room) {
			atomic_store_explicit(&r->shm->prod.drops,
			    atomic_load_explicit(&r->shm->prod.drops,
			    memory_order_relaxed) + n - r->real_room,
			    memory_order_relaxed);
			n = r->real_room;
		}
	}
	if (n == 0)
		return;
	/* The slots are still in our cache: counting bytes here is cheap. */
	for (i = 0; i < n; i++)
		bytes += ring_slot(r, i)->len;
	publish(r, n, bytes);
}

void
ring_commit_bytes(struct ring *r, uint32_t n, uint64_t bytes)
{
	/* Slots past a leaky ring's real room went to scratch: their bytes
	   are not to be counted, and only ring_commit() tells them apart. */
	if (r->leak != NULL)
		ring_commit(r, n);
	else if (n > 0)
		publish(r, n, bytes);
}

void
ring_close(struct ring *r, uint32_t how)
{
	atomic_store_explicit(&r->shm->prod.closed, how, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	clear_pending(r);
	wake(&r->shm->cons.waiting, &r->shm->cons.pid);
}

int
ring_failed(const struct ring *r)
{
	return atomic_load_explicit(&r->shm->prod.closed,
	    memory_order_acquire) == RING_FAILED;
}

void
ring_release(struct ring *r, uint32_t n)
{
	if (n == 0)
		return;
	r->tail += n;
	atomic_store_explicit(&r->shm->cons.tail, r->tail,
	    memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	wake_peer(r, &r->shm->prod.waiting, &r->shm->prod.pid);
}

int
ring_eof(struct ring *r)
{
	/* Read closed before head: a close is published after the last head. */
	if (!atomic_load_explicit(&r->shm->prod.closed, memory_order_acquire))
		return 0;
	return ring_avail(r, UINT32_MAX) == 0;
}

uint64_t
ring_fill(const struct ring *r)
{
	/* Tail first: it never passes a head read after it. */
	uint64_t tail = atomic_load(&r->shm->cons.tail);
	uint64_t head = atomic_load(&r->shm->prod.head);

	/* A corrupt peer must not make a display show 2^64 packets. */
	return head - tail > r->mask + 1 ? r->mask + 1 : head - tail;
}
