/*
 * test_ring: the shared-memory packet ring and the run directory.
 *
 *  1. Create and attach: geometry checks, file mode, O_EXCL, symlinks,
 *     the header read back from every side.
 *  2. One process, both sides: fill to the brim, wrap around many times
 *     with bursts of 1, 7, 64 and nslots, data, lengths and byte counter.
 *  3. EOF only once the ring is closed and drained.
 *  4. Never trust the other side: oversized lengths are clamped, corrupt
 *     ring files are refused with a message naming the file.
 *  5. Sleep and wake across processes, both directions, and on close.
 *  6. Stress: two processes, SNB_STRESS_PACKETS packets (default 10
 *     million) of random sizes in random bursts, every byte verified.
 *  7. The run directory: per user by default, created 0700; refused if
 *     world-writable, a symlink, or owned by another uid.
 *
 * Everything lives in a private directory under /dev/shm that is removed
 * at the end, whatever happened.
 */
#define _GNU_SOURCE	/* nftw() */

#include <sys/types.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "ring.h"
#include "rundir.h"
#include "tap.h"

#define STRESS_DEFAULT	10000000ULL
#define STRESS_SLOTS	256
#define STRESS_CAP	10240
#define STRESS_WAIT_MS	1000
#define STRESS_LIMIT_S	120	/* give up (and fail) after this */
#define MIN_LEN		60	/* shortest test packet */

static char tmpdir[64];
static pid_t main_pid;
static volatile pid_t stress_child;

/* --- helpers --- */

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* name inside the private directory; every call gets its own string. */
static char *
tpath(const char *name)
{
	static char bufs[32][128];
	static int n;

	if (n == 32)
		abort();
	snprintf(bufs[n], sizeof(bufs[n]), "%s/%s", tmpdir, name);
	return bufs[n++];
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void
cleanup(void)
{
	if (getpid() != main_pid || tmpdir[0] == '\0')
		return;
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = '\0';
}

/* A watchdog: a hung test still removes its files. */
static void
on_alarm(int sig)
{
	(void)sig;
	if (stress_child > 0)
		kill(stress_child, SIGKILL);
	printf("Bail out! test_ring timed out\n");
	fflush(stdout);
	cleanup();
	_exit(1);
}

/* xorshift64*: deterministic and cheap. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* splitmix64's finaliser. */
static uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/*
 * A packet is a function of its sequence number: its length (mostly 60..200,
 * one in 64 up to cap), the number itself in the first 8 bytes, then 64-bit
 * words base + k * golden, where base is a hash of the number.  A stale,
 * shifted or foreign byte anywhere changes some word.
 */
static uint16_t
len_for(uint64_t seq, uint32_t cap)
{
	uint64_t h = mix64(seq ^ 0x5bd1e9955bd1e995ULL);

	if ((h & 63) == 0)
		return (uint16_t)(MIN_LEN + (h >> 8) % (cap - MIN_LEN + 1));
	return (uint16_t)(MIN_LEN + (h >> 8) % 141);
}

#define GOLDEN	0x9e3779b97f4a7c15ULL

static void
fill_data(unsigned char *d, uint64_t seq, uint16_t len)
{
	uint64_t w = mix64(seq);
	size_t off;

	memcpy(d, &seq, 8);
	for (off = 8; off + 8 <= len; off += 8, w += GOLDEN)
		memcpy(d + off, &w, 8);
	if (off < len)
		memcpy(d + off, &w, len - off);
}

/* 0 if d holds exactly packet seq's content. */
static int
check_data(const unsigned char *d, uint64_t seq, uint16_t len)
{
	uint64_t w = mix64(seq), v;
	size_t off;

	memcpy(&v, d, 8);
	if (v != seq)
		return -1;
	for (off = 8; off + 8 <= len; off += 8, w += GOLDEN) {
		memcpy(&v, d + off, 8);
		if (v != w)
			return -1;
	}
	if (off < len && memcmp(d + off, &w, len - off) != 0)
		return -1;
	return 0;
}

static void
put_seq(struct ring *r, uint32_t i, uint64_t seq, uint32_t cap)
{
	struct packet *p = ring_slot(r, i);
	uint16_t len = len_for(seq, cap);

	p->len = len;
	p->flags = 0;
	p->wirelen = 0;
	p->ts_ns = seq;
	fill_data(p->data, seq, len);
}

/*
 * Children report through a pipe: a fixed result record, plus their exit
 * status.  They always leave with _exit(): no atexit cleanup, no stdio
 * flush of the parent's buffers.
 */
struct result {
	double		ms;
	long long	v[8];
	char		msg[512];
};

struct child {
	pid_t	pid;
	int	fd;
};

static struct child
child_start(int (*fn)(void *, struct result *), void *arg)
{
	struct child c = { -1, -1 };
	struct result res;
	int fds[2];
	ssize_t off, n;

	fflush(stdout);
	if (pipe(fds) == -1)
		return c;
	if ((c.pid = fork()) == -1) {
		close(fds[0]);
		close(fds[1]);
		return c;
	}
	if (c.pid == 0) {
		int status;

		close(fds[0]);
		memset(&res, 0, sizeof(res));
		status = fn(arg, &res);
		for (off = 0; off < (ssize_t)sizeof(res); off += n)
			if ((n = write(fds[1], (char *)&res + off,
			    sizeof(res) - off)) <= 0)
				_exit(99);
		_exit(status);
	}
	close(fds[1]);
	c.fd = fds[0];
	return c;
}

/* The child's exit status, or -1 if it died or said nothing. */
static int
child_finish(struct child *c, struct result *res)
{
	ssize_t off, n = 0;
	int status;

	memset(res, 0, sizeof(*res));
	if (c->pid == -1)
		return -1;
	for (off = 0; off < (ssize_t)sizeof(*res); off += n)
		if ((n = read(c->fd, (char *)res + off, sizeof(*res) - off)) <=
		    0)
			break;
	close(c->fd);
	while (waitpid(c->pid, &status, 0) == -1 && errno == EINTR)
		;
	if (n <= 0 && off < (ssize_t)sizeof(*res))
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Wait up to ms for a shared word to become 1. */
static int
await_word(_Atomic uint32_t *w, int ms)
{
	double end = now_ms() + ms;

	while (now_ms() < end) {
		if (atomic_load(w))
			return 1;
		sleep_ms(1);
	}
	return 0;
}

/* --- 1. create and attach --- */


/*
 * Claims and trust (issue 11): the launcher forgets a dead process's
 * claim; a producer cannot claim a closed ring; a consumer that sees the
 * producer's head behind its tail or a lap ahead, and a producer that
 * sees the tail pass its head, mark the ring corrupt and read nothing.
 */
static void
test_claims_and_trust(const char *path)
{
	struct ring p, c, o;
	char errbuf[512];
	unsigned before;

	if (ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf)) ||
	    ring_attach(&c, path, RING_CONSUMER, errbuf, sizeof(errbuf)) ||
	    ring_attach(&o, path, RING_OWNER, errbuf, sizeof(errbuf))) {
		ok(0, "attach for claims: %s", errbuf);
		return;
	}
	ring_claim(&p, errbuf, sizeof(errbuf));
	ring_claim(&c, errbuf, sizeof(errbuf));
	atomic_store(&c.shm->cons.waiting, RING_WAIT_SIGNAL);
	ring_forget(&o, getpid() + 1);
	ok(atomic_load(&o.shm->cons.pid) == getpid(),
	    "ring_forget leaves another process's claim");
	ring_forget(&o, getpid());
	ok(atomic_load(&o.shm->prod.pid) == 0 &&
	    atomic_load(&o.shm->cons.pid) == 0 &&
	    atomic_load(&o.shm->cons.waiting) == 0,
	    "ring_forget clears a dead process's claims and armed signal");
	before = ring_corruptions;
	atomic_store(&o.shm->prod.head, c.tail + 1000);
	ok(ring_avail(&c, 1) == 0 && c.corrupt &&
	    ring_corruptions == before + 1,
	    "a head a lap ahead is corrupt: nothing to read");
	c.corrupt = 0;
	atomic_store(&o.shm->prod.head, c.tail - 1);
	ok(ring_avail(&c, 1) == 0 && c.corrupt,
	    "a head behind the tail is corrupt: nothing to read");
	atomic_store(&o.shm->prod.head, p.head);
	atomic_store(&o.shm->cons.tail, p.head + 5);
	p.tail = p.head - 64;	/* cached: full, so room re-reads */
	ok(ring_room(&p, 64) == 0 && p.corrupt,
	    "a tail past the head is corrupt: no room");
	ok(ring_claim(&c, errbuf, sizeof(errbuf)) == -1 &&
	    strstr(errbuf, "corrupt ring") != NULL,
	    "ring_claim refuses corrupt indexes: %s", errbuf);
	atomic_store(&o.shm->cons.tail, p.head);
	ring_close(&o, RING_EOF);
	ok(ring_claim(&p, errbuf, sizeof(errbuf)) == -1 &&
	    strstr(errbuf, "closed already") != NULL,
	    "a producer cannot claim a closed ring: %s", errbuf);
	ring_corruptions = before;
	ring_detach(&p);
	ring_detach(&c);
	ring_detach(&o);
}

static void
test_create_attach(void)
{
	static const struct { uint32_t nslots, cap; } bad[] = {
		{ 0, 2048 }, { 3, 2048 }, { 64, 10 }, { 64, 70000 },
	};
	const char *path = tpath("r1"), *side_name[] = { "producer",
	    "consumer", "observer" };
	char errbuf[512], *bp, *tp;
	struct ring r[3];
	struct stat st;
	size_t i;
	int rc, e;

	rc = ring_create(path, 64, 2048, 0);
	ok(rc == 0, "ring_create 64 slots of 2048: %s",
	    rc ? strerror(errno) : "ok");
	if (stat(path, &st) == -1)
		memset(&st, 0, sizeof(st));
	ok(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600,
	    "ring file is a regular file, 0600 (mode %o)",
	    (unsigned)(st.st_mode & 07777));
	errno = 0;
	rc = ring_create(path, 64, 2048, 0);
	ok(rc == -1 && errno == EEXIST, "second ring_create fails with EEXIST");
	bp = tpath("bad");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		rc = ring_create(bp, bad[i].nslots, bad[i].cap, 0);
		e = errno;
		ok(rc == -1 && e == EINVAL && access(bp, F_OK) == -1,
		    "ring_create nslots %u capacity %u: EINVAL, no file",
		    bad[i].nslots, bad[i].cap);
		unlink(bp);
	}

	for (i = 0; i < 3; i++) {
		errbuf[0] = '\0';
		rc = ring_attach(&r[i], path, (enum ring_side)i, errbuf,
		    sizeof(errbuf));
		ok(rc == 0, "attach as %s %s", side_name[i], errbuf);
		if (rc != 0)
			return;
	}
	ok(r[2].shm->hdr.magic == RING_MAGIC &&
	    r[2].shm->hdr.version == RING_VERSION &&
	    r[2].shm->hdr.nslots == 64 && r[2].shm->hdr.capacity == 2048 &&
	    r[2].shm->hdr.flags == 0 &&
	    r[2].shm->hdr.slot_size >= 2048 + PACKET_HDR &&
	    r[2].shm->hdr.slot_size % 64 == 0 &&
	    r[2].shm->hdr.file_size == (uint64_t)st.st_size &&
	    (uint64_t)st.st_size >= RING_DATA_OFFSET +
	    64ULL * r[2].shm->hdr.slot_size &&
	    strcmp(r[2].shm->hdr.name, "r1") == 0,
	    "header reads back: magic, version, 64 slots of %u bytes, "
	    "capacity 2048, file %lld bytes, name '%.24s'",
	    r[2].shm->hdr.slot_size, (long long)st.st_size,
	    r[2].shm->hdr.name);
	ok(r[0].mask == 63 && r[1].mask == 63 && r[2].mask == 63 &&
	    r[0].capacity == 2048 &&
	    r[1].slot_size == r[2].shm->hdr.slot_size &&
	    r[0].side == RING_PRODUCER && r[1].side == RING_CONSUMER &&
	    r[2].side == RING_OBSERVER && r[0].head == 0 && r[1].tail == 0,
	    "handles: mask, capacity, slot size, side, indexes");
	ok(atomic_load(&r[2].shm->prod.pid) == 0 &&
	    atomic_load(&r[2].shm->cons.pid) == 0,
	    "attaching claims nothing (a replacement attaches in standby)");
	ok(ring_claim(&r[0], errbuf, sizeof(errbuf)) == 0 &&
	    ring_claim(&r[1], errbuf, sizeof(errbuf)) == 0 &&
	    atomic_load(&r[2].shm->prod.pid) == getpid() &&
	    atomic_load(&r[2].shm->cons.pid) == getpid(),
	    "ring_claim records the producer's and consumer's pid");
	ok(ring_fill(&r[2]) == 0 && ring_room(&r[0], 64) == 64 &&
	    ring_avail(&r[1], 1) == 0, "a new ring is empty");
	/* A successor's claim survives its predecessor's late detach. */
	atomic_store(&r[0].shm->cons.pid, 1);	/* r[2] maps read-only */
	ring_detach(&r[1]);
	ok(atomic_load(&r[2].shm->cons.pid) == 1,
	    "detach leaves a claim that is not ours alone");
	atomic_store(&r[0].shm->cons.pid, 0);
	ring_detach(&r[0]);
	ok(atomic_load(&r[2].shm->prod.pid) == 0 &&
	    atomic_load(&r[2].shm->cons.pid) == 0 &&
	    atomic_load(&r[2].shm->prod.closed) == 0,
	    "detach clears the pids and does not close");
	ring_detach(&r[2]);
	ok(r[2].shm == NULL, "detach forgets the mapping");
	test_claims_and_trust(path);

	bp = tpath("leaky");
	rc = ring_create(bp, 2, 64, RING_FLAG_LEAKY);
	ok(rc == 0 && ring_attach(&r[0], bp, RING_OBSERVER, errbuf,
	    sizeof(errbuf)) == 0 && r[0].shm->hdr.flags == RING_FLAG_LEAKY &&
	    r[0].shm->hdr.nslots == 2 && r[0].capacity == 64,
	    "smallest geometry (2 slots of 64) with the leaky flag");
	if (r[0].shm)
		ring_detach(&r[0]);

	/* A symlink where the ring should go: never followed. */
	bp = tpath("link");
	tp = tpath("target");
	if (symlink(tp, bp) == -1)
		ok(0, "symlink: %s", strerror(errno));
	rc = ring_create(bp, 64, 2048, 0);
	ok(rc == -1 && access(tp, F_OK) == -1,
	    "ring_create refuses a symlink (%s)", strerror(errno));
	unlink(bp);
	if (symlink(path, bp) == -1)
		ok(0, "symlink: %s", strerror(errno));
	for (i = 0; i < 3; i++) {
		errbuf[0] = '\0';
		rc = ring_attach(&r[i], bp, (enum ring_side)i, errbuf,
		    sizeof(errbuf));
		ok(rc == -1 && strstr(errbuf, bp) != NULL,
		    "ring_attach as %s refuses a symlink: %s", side_name[i],
		    errbuf);
		if (rc == 0)
			ring_detach(&r[i]);
	}
	unlink(bp);
	unlink(path);
}

/* --- 2. one process, both sides --- */

static void
test_single(void)
{
	const char *path = tpath("r2");
	const uint32_t ns = 64, cap = 2048;
	const uint32_t bursts[] = { 1, 7, 64, ns, 3, 64, 1, 13 };
	const uint32_t nb = sizeof(bursts) / sizeof(bursts[0]);
	struct ring p, c, o;
	char errbuf[512];
	uint64_t sent = 0, got = 0, sum = 0, bad = 0, badfill = 0, rs = 7, b;
	uint64_t target = 2000 * (uint64_t)ns;
	uint32_t i, k, n, round = 0;

	if (ring_create(path, ns, cap, 0) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf)) ||
	    ring_attach(&c, path, RING_CONSUMER, errbuf, sizeof(errbuf)) ||
	    ring_attach(&o, path, RING_OBSERVER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}

	/* To the brim and back. */
	n = ring_room(&p, ns);
	for (i = 0; i < n; i++)
		put_seq(&p, i, sent + i, cap);
	ring_commit(&p, n);
	for (i = 0; i < n; i++)
		sum += len_for(sent + i, cap);
	sent += n;
	ok(n == ns && ring_room(&p, 1) == 0 && ring_room(&p, ns) == 0,
	    "fill to exactly nslots: room %u, then 0", n);
	ok(ring_fill(&o) == ns, "observer sees fill %llu",
	    (unsigned long long)ring_fill(&o));
	n = ring_avail(&c, ns);
	ok(n == ns, "consumer sees %u available", n);
	for (i = 0; i < n; i++) {
		struct packet *pk = ring_peek(&c, i);
		if (pk->len != len_for(got + i, cap) || pk->ts_ns != got + i ||
		    check_data(pk->data, got + i, pk->len))
			bad++;
	}
	ring_release(&c, n);
	got += n;
	ok(bad == 0 && ring_fill(&o) == 0 && ring_room(&p, ns) == ns,
	    "full ring drains intact, room back to nslots");

	/* Wrap around many times with mismatched bursts. */
	while (got < target) {
		k = bursts[round % nb];
		if (sent < target) {
			n = ring_room(&p, k);
			if (n > k)
				n = k;
			if (n > target - sent)
				n = (uint32_t)(target - sent);
			for (i = 0, b = 0; i < n; i++) {
				put_seq(&p, i, sent + i, cap);
				b += len_for(sent + i, cap);
			}
			/* Every other burst with the bytes summed by us. */
			if (round % 2)
				ring_commit_bytes(&p, n, b);
			else
				ring_commit(&p, n);
			sum += b;
			sent += n;
		}
		if (ring_fill(&o) != sent - got)
			badfill++;
		k = round % 5 == 0 ? bursts[(round / 3) % nb] :
		    1 + (uint32_t)(rnd(&rs) % ns);
		n = ring_avail(&c, k);
		if (n > k)
			n = k;
		for (i = 0; i < n; i++) {
			struct packet *pk = ring_peek(&c, i);
			if (pk->len != len_for(got + i, cap) ||
			    pk->ts_ns != got + i ||
			    check_data(pk->data, got + i, pk->len))
				bad++;
		}
		ring_release(&c, n);
		got += n;
		round++;
	}
	ok(got == target && sent == target && bad == 0,
	    "%llu packets through %u slots (%llu wraps) in bursts of 1, 7, "
	    "64, nslots and random: %llu bad", (unsigned long long)got, ns,
	    (unsigned long long)(got / ns), (unsigned long long)bad);
	ok(badfill == 0, "ring_fill always equals head - tail");
	ok(atomic_load(&o.shm->prod.bytes) == sum,
	    "prod.bytes %llu == sum of lengths %llu (ring_commit and "
	    "ring_commit_bytes in turn)",
	    (unsigned long long)atomic_load(&o.shm->prod.bytes),
	    (unsigned long long)sum);
	ok(atomic_load(&o.shm->prod.head) == target &&
	    atomic_load(&o.shm->cons.tail) == target && p.head == target &&
	    c.tail == target, "shared and local indexes agree");

	ring_detach(&p);
	ring_detach(&c);
	ring_detach(&o);
	unlink(path);
}

/* --- 3. EOF --- */

static void
test_eof(void)
{
	const char *path = tpath("r3");
	struct ring p, c;
	char errbuf[512];
	uint32_t i;

	if (ring_create(path, 16, 256, 0) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf)) ||
	    ring_attach(&c, path, RING_CONSUMER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	ok(!ring_eof(&c), "no EOF on an open empty ring");
	for (i = 0; i < 5; i++)
		put_seq(&p, i, i, 256);
	ring_commit(&p, 5);
	ring_close(&p, RING_EOF);
	ok(!ring_eof(&c), "no EOF on a closed ring holding 5 packets");
	ok(ring_avail(&c, 3) == 5, "5 packets still readable after close");
	ring_release(&c, 3);
	ok(!ring_eof(&c), "no EOF with 2 packets left");
	ok(ring_avail(&c, 2) == 2 && check_data(ring_peek(&c, 1)->data, 4,
	    ring_peek(&c, 1)->len) == 0, "the last packet is intact");
	ring_release(&c, 2);
	ok(ring_eof(&c), "EOF once drained");
	ok(ring_eof(&c), "EOF stays");
	ring_detach(&p);
	ring_detach(&c);
	unlink(path);
}

/* A leaky ring: the producer always has room, the excess is counted. */
static void
test_leaky(void)
{
	const char *path = tpath("r4");
	struct ring p, c;
	char errbuf[512];
	uint32_t i, room;
	uint64_t bytes;

	if (ring_create(path, 8, 256, RING_FLAG_LEAKY) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf)) ||
	    ring_attach(&c, path, RING_CONSUMER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	ok(c.leak == NULL && p.leak != NULL, "only the producer has a scratch "
	    "slot");
	room = ring_room(&p, 20);
	ok(room == 20, "a leaky ring promises the room asked for (%u)", room);
	for (i = 0; i < 20; i++)
		put_seq(&p, i, i, 256);
	ring_commit(&p, 20);
	ok(ring_avail(&c, 20) == 8, "8 slots filled, the rest dropped");
	ok(p.shm->prod.drops == 12, "12 drops counted (%llu)",
	    (unsigned long long)p.shm->prod.drops);
	for (i = 0, bytes = 0; i < 8; i++) {
		if (check_data(ring_peek(&c, i)->data, i, ring_peek(&c, i)->len))
			break;
		bytes += ring_peek(&c, i)->len;
	}
	ok(i == 8, "the first 8 packets intact, in order (%u)", i);
	ok(p.shm->prod.bytes == bytes, "only published bytes counted");
	/* Two commits after one room check: the real room is used up. */
	ring_release(&c, 3);
	room = ring_room(&p, 2);
	put_seq(&p, 0, 100, 256);
	put_seq(&p, 1, 101, 256);
	ring_commit(&p, 2);
	put_seq(&p, 0, 102, 256);
	put_seq(&p, 1, 103, 256);
	ring_commit(&p, 2);
	ok(ring_avail(&c, 8) == 8 && p.shm->prod.drops == 13 &&
	    check_data(ring_peek(&c, 7)->data, 102, ring_peek(&c, 7)->len) == 0,
	    "a second commit fills the real room left, then drops");
	/* The bytes a producer sums include scratch slots': not counted. */
	ring_release(&c, 1);
	bytes = p.shm->prod.bytes;
	ring_room(&p, 3);
	for (i = 0; i < 3; i++)
		put_seq(&p, i, 200 + i, 256);
	ring_commit_bytes(&p, 3, 3 * 1000);
	ok(p.shm->prod.drops == 15 && p.shm->prod.bytes - bytes ==
	    ring_peek(&c, 7)->len, "ring_commit_bytes on a leaky ring: 1 "
	    "published, its bytes alone counted, 2 drops");
	ring_detach(&p);
	ring_detach(&c);
	unlink(path);
}

/*
 * A leaky ring's real room: a look that hands out no scratch slot must
 * not cap the next burst (an idle stage's ring_room(r, 1) used to), and
 * once a slot went to scratch, a later look may not let the slots after
 * it be published (they would be garbage).
 */
static void
test_leaky_room(void)
{
	const char *path = tpath("r5");
	struct ring p, c;
	char errbuf[512];
	uint32_t i;

	if (ring_create(path, 64, 256, RING_FLAG_LEAKY) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf)) ||
	    ring_attach(&c, path, RING_CONSUMER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	ring_room(&p, 40);
	for (i = 0; i < 40; i++)
		put_seq(&p, i, i, 256);
	ring_commit(&p, 40);
	ring_avail(&c, 64);
	ring_release(&c, 40);		/* drained; our cache says 24 free */
	ring_room(&p, 1);		/* an idle look */
	ring_room(&p, 64);
	for (i = 0; i < 64; i++)
		put_seq(&p, i, 40 + i, 256);
	ring_commit(&p, 64);
	ok(ring_avail(&c, 64) == 64 && p.shm->prod.drops == 0,
	    "a look that dropped nothing does not cap the next burst "
	    "(%u published, %llu drops)", ring_avail(&c, 64),
	    (unsigned long long)p.shm->prod.drops);
	ring_release(&c, 54);		/* 10 left: 54 free */
	ring_room(&p, 64);		/* 54 real */
	for (i = 0; i < 60; i++)	/* 54 real, 6 to scratch */
		put_seq(&p, i, 200 + i, 256);
	ring_release(&c, 10);		/* now 64 free, but slot 54.. was
					   written to scratch */
	ring_room(&p, 64);
	put_seq(&p, 60, 260, 256);
	ring_commit(&p, 61);
	ok(ring_avail(&c, 64) == 54 && p.shm->prod.drops == 7 &&
	    check_data(ring_peek(&c, 53)->data, 253,
	    ring_peek(&c, 53)->len) == 0,
	    "after a slot went to scratch, a later look publishes no "
	    "garbage (%u published, %llu drops)", ring_avail(&c, 64),
	    (unsigned long long)p.shm->prod.drops);
	ring_detach(&p);
	ring_detach(&c);
	unlink(path);
}

/* --- 4. never trust the other side --- */

static int
poke(const char *path, off_t off, const void *v, size_t n)
{
	int fd, rc;

	if ((fd = open(path, O_WRONLY)) == -1)
		return -1;
	rc = pwrite(fd, v, n, off) == (ssize_t)n ? 0 : -1;
	close(fd);
	return rc;
}

static int
write_file(const char *path, size_t n)
{
	unsigned char buf[128];
	int fd;

	memset(buf, 0xa5, sizeof(buf));
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == -1)
		return -1;
	if (n > sizeof(buf) || write(fd, buf, n) != (ssize_t)n) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static void
test_untrusted(void)
{
	const char *path = tpath("r4"), *side_name[] = { "producer",
	    "consumer", "observer" };
	struct ring p, c;
	struct packet *pk;
	char errbuf[512];
	uint32_t u32, ss = 0;
	size_t i;
	int s, rc, setup;

	if (ring_create(path, 8, 2048, 0) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf)) ||
	    ring_attach(&c, path, RING_CONSUMER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	ss = p.slot_size;
	pk = ring_slot(&p, 0);
	pk->len = 65000;
	ring_commit(&p, 1);
	pk = ring_avail(&c, 1) == 1 ? ring_peek(&c, 0) : NULL;
	ok(pk && pk->len == 2048, "len 65000 in a capacity-2048 ring: "
	    "ring_peek gives %u", pk ? pk->len : 0);
	ring_release(&c, 1);
	ring_detach(&p);
	ring_detach(&c);
	unlink(path);

	/* Corrupt ring files: each one spoils a fresh, valid ring. */
	for (i = 0; i < 11; i++) {
		const char *what = "", *expect = "";

		unlink(path);
		rmdir(path);
		setup = ring_create(path, 8, 2048, 0);
		switch (i) {
		case 0:
			what = "bad magic";
			expect = "magic";
			setup |= poke(path, 0, "NOTARING", 8);
			break;
		case 1:
			what = "version 2";
			expect = "version";
			u32 = RING_VERSION + 1;
			setup |= poke(path, offsetof(struct ring_hdr, version),
			    &u32, 4);
			break;
		case 2:
			what = "nslots 12 (not a power of two)";
			expect = "geometry";
			u32 = 12;
			setup |= poke(path, offsetof(struct ring_hdr, nslots),
			    &u32, 4);
			break;
		case 3:
			what = "nslots 0";
			expect = "geometry";
			u32 = 0;
			setup |= poke(path, offsetof(struct ring_hdr, nslots),
			    &u32, 4);
			break;
		case 4:
			what = "slot_size too small for capacity";
			expect = "geometry";
			u32 = 2048;
			setup |= poke(path,
			    offsetof(struct ring_hdr, slot_size), &u32, 4);
			break;
		case 5:
			what = "capacity above the maximum";
			expect = "geometry";
			u32 = 70000;
			setup |= poke(path,
			    offsetof(struct ring_hdr, capacity), &u32, 4);
			break;
		case 6:
			what = "nslots too large for the file";
			expect = "geometry";
			u32 = 1u << 31;
			setup |= poke(path, offsetof(struct ring_hdr, nslots),
			    &u32, 4);
			break;
		case 7:
			what = "file truncated by one slot";
			expect = "geometry";
			setup |= truncate(path,
			    RING_DATA_OFFSET + 7 * (off_t)ss);
			break;
		case 8:
			what = "a file of 100 bytes";
			expect = "";
			unlink(path);
			setup = write_file(path, 100);
			break;
		case 9:
			what = "an empty file";
			expect = "";
			unlink(path);
			setup = write_file(path, 0);
			break;
		case 10:
			what = "a directory";
			expect = "";
			unlink(path);
			setup = mkdir(path, 0700);
			break;
		}
		if (setup != 0) {
			ok(0, "corrupt ring '%s': setup failed", what);
			continue;
		}
		for (s = 0; s < 3; s++) {
			struct ring r;

			memset(errbuf, 0, sizeof(errbuf));
			rc = ring_attach(&r, path, (enum ring_side)s, errbuf,
			    sizeof(errbuf));
			ok(rc == -1 && r.shm == NULL &&
			    strstr(errbuf, path) != NULL &&
			    strlen(errbuf) > strlen(path) + 2 &&
			    strstr(errbuf, expect) != NULL,
			    "%s refused for %s: %s", what, side_name[s],
			    errbuf);
			if (rc == 0)
				ring_detach(&r);
		}
	}
	rmdir(path);
	unlink(path);

	/* Nonexistent file. */
	rc = ring_attach(&p, path, RING_CONSUMER, errbuf, sizeof(errbuf));
	ok(rc == -1 && strstr(errbuf, path) != NULL,
	    "missing ring refused: %s", errbuf);
}

/* --- 5. sleep and wake --- */

struct wait_arg {
	const char	*path;
	enum ring_side	 side;
	uint32_t	 prefill;	/* producer: fill this many first */
};

static int
waiter(void *va, struct result *res)
{
	struct wait_arg *a = va;
	struct ring r;
	uint32_t i;
	double t0;

	if (ring_attach(&r, a->path, a->side, res->msg, sizeof(res->msg)))
		return 1;
	if (a->side == RING_PRODUCER) {
		for (i = 0; i < a->prefill; i++)
			put_seq(&r, i, i, r.capacity);
		ring_commit(&r, a->prefill);
	}
	t0 = now_ms();
	ring_wait(&r, 5000);
	res->ms = now_ms() - t0;
	if (a->side == RING_PRODUCER)
		res->v[0] = ring_room(&r, 1);
	else {
		res->v[0] = ring_avail(&r, 1);
		res->v[1] = ring_eof(&r);
	}
	ring_detach(&r);
	return 0;
}

static void
test_wait(void)
{
	const char *path = tpath("r5");
	struct wait_arg a = { path, RING_CONSUMER, 0 };
	struct ring p, c;
	struct child ch;
	struct result res;
	char errbuf[512];
	int st, asleep;
	double t0, ms;

	/* Consumer sleeps for data. */
	if (ring_create(path, 8, 256, 0) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	ch = child_start(waiter, &a);
	asleep = await_word(&p.shm->cons.waiting, 3000);
	sleep_ms(50);
	asleep = asleep && atomic_load(&p.shm->cons.waiting);
	put_seq(&p, 0, 0, 256);
	ring_commit(&p, 1);
	st = child_finish(&ch, &res);
	ok(st == 0 && asleep, "consumer asleep in ring_wait on an empty ring "
	    "%s", res.msg);
	ok(st == 0 && res.ms < 1000 && res.v[0] == 1,
	    "consumer woken by a commit after %.1f ms, sees %lld packet",
	    res.ms, res.v[0]);

	/* Consumer sleeps, the producer closes. */
	ring_detach(&p);
	unlink(path);
	if (ring_create(path, 8, 256, 0) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	ch = child_start(waiter, &a);
	asleep = await_word(&p.shm->cons.waiting, 3000);
	sleep_ms(50);
	asleep = asleep && atomic_load(&p.shm->cons.waiting);
	ring_close(&p, RING_EOF);
	st = child_finish(&ch, &res);
	ok(st == 0 && asleep && res.ms < 1000 && res.v[0] == 0 &&
	    res.v[1] == 1, "consumer woken by ring_close after %.1f ms, "
	    "sees EOF", res.ms);
	ring_detach(&p);
	unlink(path);

	/* Producer sleeps for room. */
	a.side = RING_PRODUCER;
	a.prefill = 8;
	if (ring_create(path, 8, 256, 0) == -1 ||
	    ring_attach(&c, path, RING_CONSUMER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	ch = child_start(waiter, &a);
	asleep = await_word(&c.shm->prod.waiting, 3000);
	sleep_ms(50);
	asleep = asleep && atomic_load(&c.shm->prod.waiting);
	ok(ring_avail(&c, 8) == 8, "the producer filled the ring");
	ring_release(&c, 1);
	st = child_finish(&ch, &res);
	ok(st == 0 && asleep, "producer asleep in ring_wait on a full ring "
	    "%s", res.msg);
	ok(st == 0 && res.ms < 1000 && res.v[0] == 1,
	    "producer woken by a release after %.1f ms, sees room %lld",
	    res.ms, res.v[0]);
	ring_detach(&c);
	unlink(path);

	/* No sleep when there is nothing to wait for. */
	if (ring_create(path, 8, 256, 0) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf)) ||
	    ring_attach(&c, path, RING_CONSUMER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	t0 = now_ms();
	ring_wait(&p, 5000);
	ms = now_ms() - t0;
	ok(ms < 200, "producer with room returns at once (%.3f ms)", ms);
	put_seq(&p, 0, 0, 256);
	ring_commit(&p, 1);
	t0 = now_ms();
	ring_wait(&c, 5000);
	ms = now_ms() - t0;
	ok(ms < 200, "consumer with data returns at once (%.3f ms)", ms);
	ring_avail(&c, 1);
	ring_release(&c, 1);
	ring_close(&p, RING_EOF);
	t0 = now_ms();
	ring_wait(&c, 5000);
	ms = now_ms() - t0;
	ok(ms < 200 && ring_eof(&c),
	    "consumer on a closed ring returns at once (%.3f ms)", ms);
	ring_detach(&p);
	ring_detach(&c);
	unlink(path);
}

/*
 * Batched wake-ups (wake_batch): a commit leaves the wake-up of a
 * sleeping consumer pending; ring_flush_wake(r, 0) sends it once the
 * ring holds a batch, ring_flush_wake(r, 1) in any case; the same for a
 * producer sleeping for room, and ring_close wakes at once.  The sleeper
 * is another process in ring_wait: its waiting word shows whether it
 * was woken (only the waker clears it while it sleeps).
 */
static void
test_wait_batched(void)
{
	const char *path = tpath("r5b");
	struct wait_arg a = { path, RING_CONSUMER, 0 };
	struct ring p, c;
	struct child ch;
	struct result res;
	char errbuf[512];
	int st, asleep, still;
	uint32_t i;

	if (ring_create(path, 8, 256, 0) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	p.wake_batch = 4;
	ch = child_start(waiter, &a);
	asleep = await_word(&p.shm->cons.waiting, 3000);
	for (i = 0; i < 3; i++) {
		put_seq(&p, 0, i, 256);
		ring_commit(&p, 1);
		ring_flush_wake(&p, 0);
	}
	sleep_ms(50);
	still = atomic_load(&p.shm->cons.waiting) != 0;
	ok(asleep && still && p.wake_pending && ring_wakes_pending == 1,
	    "3 packets of a batch of 4: the consumer sleeps on, the wake-up "
	    "is pending");
	put_seq(&p, 0, 3, 256);
	ring_commit(&p, 1);
	still = atomic_load(&p.shm->cons.waiting) != 0;
	ring_flush_wake(&p, 0);
	st = child_finish(&ch, &res);
	ok(st == 0 && still && res.ms < 1000 && res.v[0] == 4 &&
	    !p.wake_pending && ring_wakes_pending == 0, "the commit of the "
	    "4th packet leaves it to the flush, which wakes it (after %.1f "
	    "ms, it sees %lld)", res.ms, res.v[0]);
	ring_detach(&p);
	unlink(path);

	/* Less than a batch, then the producer goes idle: a flush. */
	if (ring_create(path, 8, 256, 0) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	p.wake_batch = 4;
	ch = child_start(waiter, &a);
	asleep = await_word(&p.shm->cons.waiting, 3000);
	put_seq(&p, 0, 0, 256);
	ring_commit(&p, 1);
	ring_flush_wake(&p, 0);
	sleep_ms(50);
	still = atomic_load(&p.shm->cons.waiting) != 0;
	ring_flush_wake(&p, 1);
	st = child_finish(&ch, &res);
	ok(st == 0 && asleep && still && res.ms < 1000 && res.v[0] == 1 &&
	    ring_wakes_pending == 0, "one packet waits for the flush of all "
	    "(the producer idle), which wakes the consumer (%.1f ms)", res.ms);
	ring_detach(&p);
	unlink(path);

	/* Less than a batch, then the close: woken at once. */
	if (ring_create(path, 8, 256, 0) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	p.wake_batch = 4;
	ch = child_start(waiter, &a);
	asleep = await_word(&p.shm->cons.waiting, 3000);
	put_seq(&p, 0, 0, 256);
	ring_commit(&p, 1);
	ring_close(&p, RING_EOF);
	st = child_finish(&ch, &res);
	ok(st == 0 && asleep && res.ms < 1000 && res.v[0] == 1 &&
	    ring_wakes_pending == 0, "a pending wake-up goes with the close "
	    "(%.1f ms)", res.ms);
	ring_detach(&p);
	unlink(path);

	/* The producer sleeps for room: woken by a batch of free slots. */
	a.side = RING_PRODUCER;
	a.prefill = 8;
	if (ring_create(path, 8, 256, 0) == -1 ||
	    ring_attach(&c, path, RING_CONSUMER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	c.wake_batch = 4;
	ch = child_start(waiter, &a);
	asleep = await_word(&c.shm->prod.waiting, 3000);
	ok(ring_avail(&c, 8) == 8, "the producer filled the ring");
	ring_release(&c, 3);
	ring_flush_wake(&c, 0);
	sleep_ms(50);
	still = atomic_load(&c.shm->prod.waiting) != 0;
	ok(asleep && still && c.wake_pending, "3 free slots of a batch of 4: "
	    "the producer sleeps on");
	ring_release(&c, 1);
	ring_flush_wake(&c, 0);
	st = child_finish(&ch, &res);
	ok(st == 0 && res.ms < 1000 && res.v[0] == 4 && !c.wake_pending &&
	    ring_wakes_pending == 0, "the 4th free slot and a flush wake it (%.1f ms, "
	    "room %lld)", res.ms, res.v[0]);
	ring_detach(&c);
	unlink(path);
}

/*
 * A stage killed (SIGKILL) between a commit or release and the flush
 * after its breath takes its pending wake-up with it; its peer would
 * sleep on with work waiting until its own timeout.  The launcher's
 * ring_forget() of the dead pid wakes the peer: a spurious wake-up costs
 * the peer one look, a lost one a whole sleep.
 */
static void
die_pending(const char *path, enum ring_side side)
{
	struct ring r;
	char errbuf[512];

	if (ring_attach(&r, path, side, errbuf, sizeof(errbuf)) ||
	    ring_claim(&r, errbuf, sizeof(errbuf)))
		_exit(1);
	r.wake_batch = 4;
	if (side == RING_PRODUCER) {
		put_seq(&r, 0, 0, 256);
		ring_commit(&r, 1);
	} else if (ring_avail(&r, 8) == 8)
		ring_release(&r, 1);
	if (!r.wake_pending)
		_exit(2);
	raise(SIGKILL);
	_exit(3);
}

static void
test_forget_wakes(void)
{
	const char *path = tpath("r5k");
	struct wait_arg a = { path, RING_CONSUMER, 0 };
	struct ring o;
	struct child ch;
	struct result res;
	siginfo_t si;
	char errbuf[512];
	enum ring_side dead;
	int st, asleep, still, k;
	pid_t pid;

	for (k = 0; k < 2; k++) {
		/* k = 0: the producer dies; 1: the consumer. */
		a.side = k ? RING_PRODUCER : RING_CONSUMER;
		a.prefill = k ? 8 : 0;
		dead = k ? RING_CONSUMER : RING_PRODUCER;
		if (ring_create(path, 8, 256, 0) == -1 ||
		    ring_attach(&o, path, RING_OWNER, errbuf, sizeof(errbuf))) {
			ok(0, "set up %s: %s", path, errbuf);
			return;
		}
		ch = child_start(waiter, &a);
		asleep = await_word(k ? &o.shm->prod.waiting :
		    &o.shm->cons.waiting, 3000);
		fflush(stdout);
		if ((pid = fork()) == 0)
			die_pending(path, dead);
		/* As snb-run: the dead child's claims go before it is reaped. */
		memset(&si, 0, sizeof(si));
		while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == -1 &&
		    errno == EINTR)
			;
		sleep_ms(50);
		still = atomic_load(k ? &o.shm->prod.waiting :
		    &o.shm->cons.waiting) != 0;
		ring_forget(&o, pid);
		while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
			;
		ok(asleep && still && WIFSIGNALED(st) &&
		    WTERMSIG(st) == SIGKILL, "%s killed with a wake-up pending: "
		    "its peer sleeps on", k ? "consumer" : "producer");
		st = child_finish(&ch, &res);
		ok(st == 0 && res.ms < 1000 && res.v[0] == 1, "ring_forget of "
		    "the dead %s wakes the %s (after %.1f ms, %s %lld)",
		    k ? "consumer" : "producer", k ? "producer" : "consumer",
		    res.ms, k ? "room" : "packets", res.v[0]);
		ring_detach(&o);
		unlink(path);
	}
}

/* --- 6. stress --- */

struct stress_arg {
	const char	*path;
	uint64_t	 npackets;
	double		 deadline;	/* now_ms() to give up at */
	uint32_t	 batch;		/* wake_batch on both sides */
};

/* Sleep for the ring; count waits and those that ran to the timeout. */
static void
timed_wait(struct ring *r, long long *waits, long long *timeouts)
{
	double t0 = now_ms();

	ring_wait(r, STRESS_WAIT_MS);
	(*waits)++;
	if (now_ms() - t0 >= STRESS_WAIT_MS * 0.9)
		(*timeouts)++;
}

/*
 * The consumer: v[0] received, v[1] out of order, v[2] corrupt, v[3] EOF
 * seen, v[4] waits, v[5] timed-out waits, v[6] bytes, v[7] gave up.
 */
static int
stress_consumer(void *va, struct result *res)
{
	struct stress_arg *a = va;
	struct ring c;
	uint64_t expect = 0, rs = 0x1234567887654321ULL, seq;
	uint32_t want, n, i;
	long long *v = res->v;

	if (ring_attach(&c, a->path, RING_CONSUMER, res->msg,
	    sizeof(res->msg)))
		return 1;
	c.wake_batch = a->batch;
	for (;;) {
		want = 1 + (uint32_t)(rnd(&rs) % 64);
		if ((n = ring_avail(&c, want)) == 0) {
			if (ring_eof(&c)) {
				v[3] = 1;
				break;
			}
			if (now_ms() > a->deadline) {
				v[7] = 1;
				break;
			}
			ring_flush_wake(&c, 1);	/* as the runtime, idle */
			timed_wait(&c, &v[4], &v[5]);
			continue;
		}
		if (n > want)
			n = want;
		for (i = 0; i < n; i++) {
			struct packet *p = ring_peek(&c, i);
			uint16_t len = p->len;

			memcpy(&seq, p->data, 8);
			if (seq != expect) {
				if (v[1]++ < 3)
					snprintf(res->msg, sizeof(res->msg),
					    "expected seq %llu, got %llu",
					    (unsigned long long)expect,
					    (unsigned long long)seq);
				expect = seq;
			}
			if (len != len_for(seq, STRESS_CAP) ||
			    p->ts_ns != seq || check_data(p->data, seq, len))
				v[2]++;
			v[6] += len;
			expect++;
			v[0]++;
		}
		ring_release(&c, n);
		ring_flush_wake(&c, 0);	/* as the runtime, after a breath */
	}
	ring_detach(&c);
	return v[0] == (long long)a->npackets && v[1] == 0 && v[2] == 0 &&
	    v[3] == 1 ? 0 : 1;
}

/* batch: wake_batch on both sides (0: none), each flushing when idle. */
static void
test_stress(uint32_t batch)
{
	const char *path = tpath(batch ? "r6b" : "r6"), *env;
	const char *what = batch ? "stress, batched wake-ups" : "stress";
	struct stress_arg a;
	struct ring p;
	struct child ch;
	struct result res;
	char errbuf[512];
	uint64_t seq = 0, rs = 0x0ddba11cafef00dULL, sum = 0;
	long long waits = 0, timeouts = 0;
	uint32_t want, n, i;
	int st, gaveup = 0;
	double t0, secs;

	a.path = path;
	a.npackets = STRESS_DEFAULT;
	a.batch = batch;
	if ((env = getenv("SNB_STRESS_PACKETS")) != NULL && *env)
		a.npackets = strtoull(env, NULL, 10);
	if (batch)
		a.npackets /= 4;
	if (ring_create(path, STRESS_SLOTS, STRESS_CAP, 0) == -1 ||
	    ring_attach(&p, path, RING_PRODUCER, errbuf, sizeof(errbuf))) {
		ok(0, "set up %s: %s", path, errbuf);
		return;
	}
	p.wake_batch = batch;
	t0 = now_ms();
	a.deadline = t0 + STRESS_LIMIT_S * 1e3;
	ch = child_start(stress_consumer, &a);
	stress_child = ch.pid;
	while (seq < a.npackets) {
		want = 1 + (uint32_t)(rnd(&rs) % 64);
		if (want > a.npackets - seq)
			want = (uint32_t)(a.npackets - seq);
		if ((n = ring_room(&p, want)) == 0) {
			if (now_ms() > a.deadline) {
				gaveup = 1;
				break;
			}
			ring_flush_wake(&p, 1);
			timed_wait(&p, &waits, &timeouts);
			continue;
		}
		if (n > want)
			n = want;
		for (i = 0; i < n; i++) {
			put_seq(&p, i, seq + i, STRESS_CAP);
			sum += ring_slot(&p, i)->len;
		}
		ring_commit(&p, n);
		ring_flush_wake(&p, 0);
		seq += n;
	}
	ring_close(&p, RING_EOF);
	st = child_finish(&ch, &res);
	stress_child = 0;
	secs = (now_ms() - t0) / 1e3;

	ok(st == 0 && !gaveup && !res.v[7], "%s: consumer exited 0 "
	    "within %d s %s", what, STRESS_LIMIT_S, res.msg);
	ok(seq == a.npackets && res.v[0] == (long long)a.npackets,
	    "%s: received %lld of %llu sent", what, res.v[0],
	    (unsigned long long)seq);
	ok(res.v[1] == 0, "%s: %lld out of order", what, res.v[1]);
	ok(res.v[2] == 0, "%s: %lld corrupt", what, res.v[2]);
	ok(res.v[3] == 1, "%s: EOF seen", what);
	ok((uint64_t)res.v[6] == sum &&
	    atomic_load(&p.shm->prod.bytes) == sum,
	    "%s: %llu bytes, consumer and prod.bytes agree",
	    what, (unsigned long long)sum);
	printf("# %s: %llu packets in %.2f s, %.2f Mpps, "
	    "%lld timed-out waits (producer %lld of %lld waits, "
	    "consumer %lld of %lld)\n", what, (unsigned long long)seq, secs,
	    secs > 0 ? seq / secs / 1e6 : 0.0, timeouts + res.v[5],
	    timeouts, waits, res.v[5], res.v[4]);
	/*
	 * Neither side can legitimately sleep STRESS_WAIT_MS while the other
	 * is busy: a timed-out wait is a lost wake-up (both sides asleep).
	 */
	ok(timeouts + res.v[5] == 0, "%s: no wait ran to its %d ms "
	    "timeout (a lost wake-up): %lld did", what, STRESS_WAIT_MS,
	    timeouts + res.v[5]);
	ring_detach(&p);
	unlink(path);
}

/* --- 7. run directory --- */

static int
rundir_child(void *va, struct result *res)
{
	const char *dir = va, *got;
	char own[64];
	struct stat st;

	/* No directory given: the per-user default. */
	snprintf(own, sizeof(own), "/dev/shm/snb-%u", (unsigned)geteuid());
	if (dir == NULL) {
		unsetenv("SNB_RUN_DIR");
		dir = own;
	} else if (setenv("SNB_RUN_DIR", dir, 1) == -1)
		return 1;
	got = snb_run_dir(res->msg, sizeof(res->msg));
	res->v[0] = got != NULL;
	if (got) {
		res->v[1] = strcmp(got, dir) == 0;
		if (lstat(dir, &st) == 0) {
			res->v[2] = S_ISDIR(st.st_mode);
			res->v[3] = st.st_mode & 07777;
		}
		/* Cached: a second call gives the same answer. */
		res->v[4] = snb_run_dir(res->msg, sizeof(res->msg)) == got;
	}
	return 0;
}

/* Refused, with a message naming dir and saying why. */
static void
rundir_refused(const char *dir, const char *why, const char *what)
{
	struct child ch;
	struct result res;
	int st;

	ch = child_start(rundir_child, (void *)dir);
	st = child_finish(&ch, &res);
	ok(st == 0 && !res.v[0] && strstr(res.msg, dir) != NULL &&
	    strstr(res.msg, why) != NULL, "%s refused: %s", what, res.msg);
}

/*
 * The default is /dev/shm/snb-UID; it is made here only if missing, and
 * then removed again.
 */
static void
test_rundir_default(void)
{
	char own[64];
	struct child ch;
	struct result res;
	struct stat st;
	int made, rc;

	snprintf(own, sizeof(own), "/dev/shm/snb-%u", (unsigned)geteuid());
	made = lstat(own, &st) == -1;
	ch = child_start(rundir_child, NULL);
	rc = child_finish(&ch, &res);
	ok(rc == 0 && res.v[0] && res.v[1] && res.v[2],
	    "without SNB_RUN_DIR the run directory is %s %s", own, res.msg);
	if (made)
		ok(res.v[3] == 0700, "made 0700 (mode %llo)",
		    (unsigned long long)res.v[3]);
	if (made && rmdir(own) == -1)
		ok(0, "rmdir %s: %s", own, strerror(errno));
}

static void
test_rundir(void)
{
	char *fresh = tpath("run"), *ww = tpath("ww"), *file = tpath("f");
	char *link = tpath("link"), *theirs = tpath("theirs");
	struct child ch;
	struct result res;
	int st;

	test_rundir_default();
	ch = child_start(rundir_child, fresh);
	st = child_finish(&ch, &res);
	ok(st == 0 && res.v[0] && res.v[1] && res.v[4],
	    "snb_run_dir uses SNB_RUN_DIR %s %s", fresh, res.msg);
	ok(res.v[2] && res.v[3] == 0700, "it creates the directory 0700 "
	    "(mode %llo)", (unsigned long long)res.v[3]);

	ch = child_start(rundir_child, fresh);
	st = child_finish(&ch, &res);
	ok(st == 0 && res.v[0] && res.v[3] == 0700,
	    "an existing private run directory is accepted");

	if (mkdir(ww, 0700) == -1 || chmod(ww, 0777) == -1)
		ok(0, "mkdir %s: %s", ww, strerror(errno));
	rundir_refused(ww, "writable by others", "a world-writable run "
	    "directory");

	if (write_file(file, 0) == -1)
		ok(0, "create %s: %s", file, strerror(errno));
	rundir_refused(file, "not a directory", "a file as run directory");

	/* A symlink to a good directory: whoever made it can repoint it. */
	if (symlink(fresh, link) == -1)
		ok(0, "symlink %s: %s", link, strerror(errno));
	rundir_refused(link, "symbolic link", "a symlink as run directory");

	if (mkdir(theirs, 0700) == -1)
		ok(0, "mkdir %s: %s", theirs, strerror(errno));
	if (geteuid() != 0 || chown(theirs, 65534, 65534) == -1)
		ok(1, "# SKIP another uid's run directory: cannot chown as "
		    "uid %u", (unsigned)geteuid());
	else
		rundir_refused(theirs, "owned by uid 65534", "a run "
		    "directory owned by nobody");
}

int
main(void)
{
	struct sigaction sa;

	main_pid = getpid();
	strlcpy(tmpdir, "/dev/shm/snb-test-XXXXXX", sizeof(tmpdir));
	if (mkdtemp(tmpdir) == NULL) {
		printf("Bail out! mkdtemp %s: %s\n", tmpdir, strerror(errno));
		return 1;
	}
	atexit(cleanup);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarm(4 * STRESS_LIMIT_S);

	test_create_attach();
	test_single();
	test_eof();
	test_leaky();
	test_leaky_room();
	test_untrusted();
	test_wait();
	test_wait_batched();
	test_forget_wakes();
	test_stress(0);
	test_stress(STRESS_SLOTS / 4);
	test_rundir();

	cleanup();
	return tap_done();
}
