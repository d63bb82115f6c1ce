/*
 * memif_msg_fuzz: libFuzzer target for snb-memif's control-message decoder
 * and the handshake bookkeeping of both roles (drivers/memif/msg.c).
 *
 * Build and run (from the repository root; `make fuzz` does this; the
 * data path prints one line per violation, hence -close_fd_mask=2):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring -Idrivers/memif \
 *	    fuzz/memif_msg_fuzz.c libring/[a-z]*.c \
 *	    -lpcap -lbsd -o build/fuzz_memif
 *	mkdir -p build/fuzz-memif-corpus
 *	build/fuzz_memif -max_total_time=600 -close_fd_mask=2 \
 *	    build/fuzz-memif-corpus fuzz/corpus/memif
 *
 * Control messages: one byte of set-up below 0xe0 (bit 0: play master,
 * else slave; bits 1-7: the interface id the master expects), then
 * records of one length byte and that many bytes, each one message as it
 * would come off the socket.  Beyond "no crash": a decoded message encodes and decodes to
 * itself; a master that reaches CONNECT holds only rings inside announced
 * regions, numbered without gaps; a slave's ring size never exceeds what
 * it asked for or what HELLO allowed.
 *
 * A region's fd, when the first byte is 0xe0-0xef (mem.c's map_region(),
 * included): see fuzz_region().
 *
 * The master's control plane, when the first byte is 0xd0-0xdf: ctl.c's
 * ctl_read() and handle() over a real socket, with descriptors of every
 * kind attached (see fuzz_ctl()): sealing, mapping several regions, the
 * eventfd check, the rings placed at CONNECT, and the release of it all.
 *
 * The data path, when the first byte is 0xf0 or more: snb-memif's own
 * rx_ring() and tx_ring() (memif.c is included) run against a ring and
 * buffers whose every byte the input writes, as a hostile peer would, in
 * either role, for a few rounds.  Nothing may be read or written outside
 * the region (ASan sees the mapping's edges: it is placed between guard
 * pages), and every packet handed to the graph fits its slot.
 */
#define _GNU_SOURCE		/* memfd_create, seals: mem.c */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../drivers/memif/msg.c"
#define main snb_memif_main
#include "../drivers/memif/memif.c"
#undef main
#include "../drivers/memif/ctl.c"	/* ctl_read(), handle(): static */
#include "../drivers/memif/mem.c"

static struct ring outp, outc, inp, inc;	/* producer/consumer views */
static struct port out_port;
static uint64_t counters[16];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char dir[] = "/tmp/memif-fuzz-XXXXXX", path[64], e[256];
	uint64_t **c = (uint64_t **)&cnt;
	unsigned i;

	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(path, sizeof(path), "%s/out", dir);
	if (ring_create(path, 64, 9216, 0) || ring_attach(&outp, path,
	    RING_PRODUCER, e, sizeof(e)) || ring_attach(&outc, path,
	    RING_CONSUMER, e, sizeof(e)))
		abort();
	unlink(path);
	snprintf(path, sizeof(path), "%s/in", dir);
	if (ring_create(path, 64, 9216, 0) || ring_attach(&inp, path,
	    RING_PRODUCER, e, sizeof(e)) || ring_attach(&inc, path,
	    RING_CONSUMER, e, sizeof(e)))
		abort();
	unlink(path);
	rmdir(dir);
	snprintf(out_port.name, sizeof(out_port.name), "out");
	out_port.flags = PORT_OUT;
	out_port.nrings = 1;
	out_port.rings = &outp;
	out = &out_port;	/* memif_init() is not run: it would bind */
	for (i = 0; i < sizeof(cnt) / sizeof(*c); i++)
		c[i] = &counters[i];
	/* ctl.c adds the control socket and the rings' eventfds. */
	if ((epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		abort();
	return 0;
}

/* Read the next input byte, or 0 past the end. */
static uint8_t
take(const uint8_t **d, size_t *n)
{
	uint8_t v = 0;

	if (*n) {
		v = **d;
		(*d)++, (*n)--;
	}
	return v;
}

static void
fuzz_rings(const uint8_t *data, size_t size)
{
	size_t page = 4096, len, i;
	unsigned char *guard, *mem;
	unsigned log2, round;
	uint32_t nslots, rb;
	struct packet *p;
	uint32_t k;

	master = take(&data, &size) & 1;
	log2 = 1 + take(&data, &size) % 6;
	nslots = 1U << log2;
	bufsize = 64 * (1 + take(&data, &size) % 4);
	rb = (uint32_t)((memif_ring_bytes(log2) + 63) & ~63ULL);
	len = (2 * rb + 2ULL * nslots * bufsize + page - 1) & ~(page - 1);
	/* The region between two PROT_NONE pages: a stray access faults. */
	guard = mmap(NULL, len + 2 * page, PROT_NONE, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED)
		abort();
	mem = guard + page;
	if (mprotect(mem, len, PROT_READ | PROT_WRITE) == -1)
		abort();
	for (i = 0; i < len && size; i++)
		mem[i] = take(&data, &size);
	memset(&conn, 0, sizeof(conn));
	conn.fd = -1;
	conn.state = C_UP;
	conn.nregions = 1;
	conn.reg[0].addr = mem;	/* conn_down() may unmap it: harmless */
	conn.reg[0].size = len;
	conn.reg[0].fd = -1;
	conn.nrx = conn.ntx = 0;	/* so conn_down() closes nothing */
	for (i = 0; i < MEMIF_MAX_RINGS; i++)
		conn.rx[i].efd = conn.tx[i].efd = -1;
	/* As master we receive on the s2m ring (first), as slave on m2s. */
	conn.rx[0].base = mem + (master ? 0 : rb);
	conn.tx[0].base = mem + (master ? rb : 0);
	conn.rx[0].size = conn.tx[0].size = nslots;
	conn.rx[0].mask = conn.tx[0].mask = (uint16_t)(nslots - 1);
	conn.rx[0].buf0 = 2 * rb;
	conn.tx[0].buf0 = 2 * rb + nslots * bufsize;
	conn.rx[0].last = conn.tx[0].last = take(&data, &size);
	conn.rx[0].posted = (uint16_t)(conn.rx[0].last + nslots);
	for (round = 0; round < 4 && conn.state == C_UP; round++) {
		/* The peer moves its indexes and rewrites a descriptor. */
		uint16_t v = (uint16_t)(take(&data, &size) |
		    take(&data, &size) << 8);
		if (master)
			atomic_store(r_head(&conn.rx[0]), v);
		else
			atomic_store(r_tail(&conn.rx[0]), v);
		v = (uint16_t)(take(&data, &size) | take(&data, &size) << 8);
		if (master)
			atomic_store(r_head(&conn.tx[0]), v);
		else
			atomic_store(r_tail(&conn.tx[0]), v);
		for (i = 0; i < 16 && size; i++)
			((unsigned char *)r_desc(&conn.rx[0],
			    (uint16_t)(round * 4)))[i] = take(&data, &size);
		if (rx_ring(&conn.rx[0], 0) >= 0) {
			/* Packets from the input ring: sizes from the input. */
			k = take(&data, &size) % 8;
			if (ring_room(&inp, k) < k)
				k = 0;
			for (i = 0; i < k; i++) {
				p = ring_slot(&inp, (uint32_t)i);
				p->len = (uint16_t)(take(&data, &size) * 36);
				memset(p->data, (int)i, p->len);
			}
			ring_commit(&inp, k);
			k = ring_avail(&inc, 8);
			int t = tx_ring(&conn.tx[0], &inc, k);
			if (t > 0)
				ring_release(&inc, (uint32_t)t);
		}
		/* What reached the graph fits its slots. */
		k = ring_avail(&outc, 64);
		for (i = 0; i < k; i++)
			if (ring_peek(&outc, (uint32_t)i)->len > outc.capacity)
				abort();
		ring_release(&outc, k);
	}
	/* Leave the input ring empty for the next run. */
	k = ring_avail(&inc, 64);
	ring_release(&inc, k);
	conn.state = C_DOWN;
	conn.nregions = 0;
	munmap(guard, len + 2 * page);
}

/*
 * A region fd as a slave would pass it (first byte 0xe0-0xef): a memfd
 * with or without sealing allowed, already sealed against shrinking or
 * against more seals, a file smaller or larger than announced, or no
 * memory file at all.  map_region() must refuse, or hand back a mapping
 * whose every page is backed by a file that can no longer shrink.
 */
static void
fuzz_region(const uint8_t *d, size_t n)
{
	char why[MEMIF_REASON_LEN] = "";
	uint64_t announced, fsize;
	volatile unsigned char sum = 0;
	struct memif_conn saved;
	struct stat st;
	size_t off;
	int fd, p[2], kind, r;

	if (n < 5)
		return;
	kind = d[0] & 3;
	announced = ((uint64_t)d[1] << 8 | d[2]) % 4096 * 256;
	fsize = ((uint64_t)d[3] << 8 | d[4]) % 4096 * 256;
	if (kind == 2) {
		if (pipe(p) == -1)
			abort();
		close(p[1]);
		fd = p[0];
	} else if (kind == 3)
		fd = eventfd(0, 0);
	else
		fd = memfd_create("fuzz", kind == 0 ? MFD_ALLOW_SEALING : 0);
	if (fd == -1)
		abort();
	if (kind < 2) {
		if (ftruncate(fd, (off_t)fsize) == -1)
			abort();
		if (d[0] & 4)
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
		if (d[0] & 8)
			fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL);
	}
	saved = conn;
	memset(&conn, 0, sizeof(conn));
	conn.s.region_size[0] = announced;
	r = map_region(0, fd, why, sizeof(why));
	if (r != 0) {
		if (why[0] == '\0' || conn.nregions != 0)
			abort();
		close(fd);
		conn = saved;
		return;
	}
	/* Accepted: sealed, big enough, and it stays so. */
	if (kind != 0 || !(fcntl(fd, F_GET_SEALS) & F_SEAL_SHRINK) ||
	    fstat(fd, &st) == -1 || (uint64_t)st.st_size < announced ||
	    ftruncate(fd, 0) == 0 || conn.nregions != 1 ||
	    conn.reg[0].size != announced)
		abort();
	for (off = 0; off < announced; off += 4096)
		sum += conn.reg[0].addr[off];	/* SIGBUS if not backed */
	(void)sum;
	memguard_unmap(conn.reg[0].addr, conn.reg[0].size);
	close(fd);
	conn = saved;
}

/*
 * A descriptor for a control message: kind & 7 picks a memfd that can be
 * sealed (1), one that cannot (2), an eventfd (3), a pipe (4), a socket
 * (5), a sealable memfd already sealed against sealing (6), /dev/null (7),
 * or none (0).  A memfd is as big as the region the message announces
 * (kind & 8) or half of it, filled with the ring cookie (so that rings
 * anywhere in it pass master_connect's check).
 */
static int
ctl_fd(int kind, const struct memif_msg *m, int decoded)
{
	static unsigned char fill[65536];
	uint64_t size = 4096, i;
	uint32_t cookie = MEMIF_COOKIE;
	int fd, p[2];

	switch (kind & 7) {
	case 1: case 2: case 6:
		if (decoded && m->type == MEMIF_MSG_ADD_REGION &&
		    m->add_region.size <= (1U << 24))
			size = m->add_region.size;
		if (!(kind & 8))
			size /= 2;
		fd = memfd_create("ctl-fuzz", (kind & 7) == 2 ? 0 :
		    MFD_ALLOW_SEALING);
		if (fd == -1 || ftruncate(fd, (off_t)size) == -1)
			abort();
		for (i = 0; i < sizeof(fill) / 4; i++)
			memcpy(fill + 4 * i, &cookie, 4);
		if (pwrite(fd, fill, size < sizeof(fill) ? size : sizeof(fill),
		    0) == -1)
			abort();
		if ((kind & 7) == 6)
			fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL);
		return fd;
	case 3:
		return eventfd(0, 0);
	case 4:
		if (pipe(p) == -1)
			abort();
		close(p[1]);
		return p[0];
	case 5:
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) == -1)
			abort();
		close(p[1]);
		return p[0];
	case 7:
		return open("/dev/null", O_RDWR);
	}
	return -1;
}

/* [base, base + len) lies inside one mapped region. */
static int
in_region(const unsigned char *base, uint64_t len)
{
	unsigned i;

	for (i = 0; i < conn.nregions; i++)
		if (base >= conn.reg[i].addr && len <= conn.reg[i].size &&
		    (uint64_t)(base - conn.reg[i].addr) <= conn.reg[i].size - len)
			return 1;
	return 0;
}

/* What must hold after every message, whatever the slave sent. */
static void
check_conn(void)
{
	volatile unsigned char sum = 0;
	struct stat st;
	unsigned i;
	uint64_t off;

	if (conn.fd < 0 && conn.nregions != 0)
		abort();	/* a connection down holds no memory */
	if (conn.nregions > MEMIF_MAX_REGIONS)
		abort();
	for (i = 0; i < conn.nregions; i++) {
		/* Mapped only when sealed, and as big as announced. */
		if (conn.reg[i].addr == NULL)
			continue;
		if (!(fcntl(conn.reg[i].fd, F_GET_SEALS) & F_SEAL_SHRINK) ||
		    fstat(conn.reg[i].fd, &st) == -1 ||
		    (uint64_t)st.st_size < conn.reg[i].size ||
		    ftruncate(conn.reg[i].fd, 0) == 0)
			abort();
		for (off = 0; off < conn.reg[i].size; off += 4096)
			sum += conn.reg[i].addr[off];	/* SIGBUS if not */
	}
	(void)sum;
	if (conn.state != C_UP)
		return;
	for (i = 0; i < conn.nrx + conn.ntx; i++) {
		const struct mring *r = i < conn.nrx ? &conn.rx[i] :
		    &conn.tx[i - conn.nrx];

		if (!in_region(r->base, memif_ring_bytes(
		    (uint8_t)__builtin_ctz(r->size))) ||
		    (r->efd >= 0 && !fd_is_eventfd(r->efd)))
			abort();
	}
}

/*
 * The master's handshake against records [len][kind][len bytes], each
 * sent on a SOCK_SEQPACKET pair as one message (any length: 128 is
 * right) with kind's descriptor attached, two of them with kind & 16;
 * ctl_read() takes them as snb-memif does.  Every descriptor we made is
 * ours to close, every one ctl.c kept is closed by conn_down(): no
 * descriptor may be left behind.
 */
static void
fuzz_ctl(const uint8_t *d, size_t n)
{
	unsigned char buf[256];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	struct iovec iov;
	struct msghdr mh;
	struct cmsghdr *c;
	struct memif_msg m;
	char why[MEMIF_REASON_LEN];
	int sv[2], fds[2], nfds, kind, probe0, probe1, decoded, i;
	size_t len;

	probe0 = dup(0);
	close(probe0);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0, sv) == -1)
		abort();
	memset(&conn, 0, sizeof(conn));
	conn.fd = -1;
	for (i = 0; i < MEMIF_MAX_RINGS; i++)
		conn.rx[i].efd = conn.tx[i].efd = -1;
	master = 1;
	id = 0;
	secret[0] = '\0';
	conn_setup(sv[0]);
	while (n >= 2 && conn.fd >= 0) {
		len = d[0];
		kind = d[1];
		d += 2, n -= 2;
		if (len > n)
			len = n;
		memset(buf, 0, sizeof(buf));
		memcpy(buf, d, len);
		d += len, n -= len;
		decoded = memif_msg_decode(buf, MEMIF_MSG_SIZE, &m, why,
		    sizeof(why)) == 0;
		nfds = (kind & 7) ? ((kind & 16) ? 2 : 1) : 0;
		for (i = 0; i < nfds; i++)
			if ((fds[i] = ctl_fd(kind, &m, decoded)) == -1)
				abort();
		iov.iov_base = buf;
		iov.iov_len = len;
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		if (nfds) {
			memset(&cm, 0, sizeof(cm));
			mh.msg_control = cm.b;
			mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
			memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
		}
		if (sendmsg(sv[1], &mh, MSG_NOSIGNAL) == -1)
			abort();
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		ctl_read();
		check_conn();
		/* What the master sent back (HELLO, ACKs, CONNECTED). */
		while (recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
	}
	if (conn.fd >= 0)
		conn_down(NULL, "end of input");
	check_conn();
	close(sv[1]);
	probe1 = dup(0);
	close(probe1);
	if (probe1 != probe0)
		abort();	/* a descriptor left open */
}

static void
same(const struct memif_msg *a, const struct memif_msg *b)
{
	/* Compare field by field: the union's padding is not ours. */
	if (a->type != b->type)
		abort();
	switch (a->type) {
	case MEMIF_MSG_HELLO:
		if (strcmp(a->hello.name, b->hello.name) ||
		    a->hello.min_version != b->hello.min_version ||
		    a->hello.max_version != b->hello.max_version ||
		    a->hello.max_region != b->hello.max_region ||
		    a->hello.max_m2s_ring != b->hello.max_m2s_ring ||
		    a->hello.max_s2m_ring != b->hello.max_s2m_ring ||
		    a->hello.max_log2_ring_size != b->hello.max_log2_ring_size)
			abort();
		break;
	case MEMIF_MSG_INIT:
		if (a->init.version != b->init.version ||
		    a->init.id != b->init.id || a->init.mode != b->init.mode ||
		    strcmp(a->init.secret, b->init.secret) ||
		    strcmp(a->init.name, b->init.name))
			abort();
		break;
	case MEMIF_MSG_ADD_REGION:
		if (a->add_region.index != b->add_region.index ||
		    a->add_region.size != b->add_region.size)
			abort();
		break;
	case MEMIF_MSG_ADD_RING:
		if (memcmp(&a->add_ring, &b->add_ring, sizeof(a->add_ring)))
			abort();
		break;
	case MEMIF_MSG_CONNECT:
	case MEMIF_MSG_CONNECTED:
		if (strcmp(a->connect.name, b->connect.name))
			abort();
		break;
	case MEMIF_MSG_DISCONNECT:
		if (a->disconnect.code != b->disconnect.code ||
		    strcmp(a->disconnect.reason, b->disconnect.reason))
			abort();
		break;
	}
}

static void
check_connected(const struct memif_session *s)
{
	unsigned i, dir;

	if (s->ns2m == 0 || s->nm2s == 0 || s->ns2m > MEMIF_MAX_RINGS ||
	    s->nm2s > MEMIF_MAX_RINGS || s->nregions > MEMIF_MAX_REGIONS)
		abort();
	for (dir = 0; dir < 2; dir++)
		for (i = 0; i < (dir ? s->nm2s : s->ns2m); i++) {
			const struct memif_ring_cfg *r = dir ? &s->m2s[i] :
			    &s->s2m[i];
			if (r->region >= s->nregions ||
			    r->log2 < 1 || r->log2 > MEMIF_MAX_LOG2_RING ||
			    r->offset + memif_ring_bytes(r->log2) >
			    s->region_size[r->region])
				abort();
		}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct memif_session s;
	struct memif_msg m, m2;
	unsigned char buf[MEMIF_MSG_SIZE];
	char why[MEMIF_REASON_LEN];
	enum memif_action a;
	int is_master;
	uint8_t want;
	size_t len;

	if (size < 1)
		return 0;
	if (data[0] >= 0xf0) {
		fuzz_rings(data + 1, size - 1);
		return 0;
	}
	if (data[0] >= 0xe0) {
		fuzz_region(data, size);
		return 0;
	}
	if (data[0] >= 0xd0) {
		fuzz_ctl(data + 1, size - 1);
		return 0;
	}
	is_master = data[0] & 1;
	memset(&s, 0, sizeof(s));
	s.id = data[0] >> 1;
	if (data[0] & 0x80)
		strcpy(s.secret, "sesame");
	if (!is_master) {
		s.state = MEMIF_S_WAIT_HELLO;
		s.nsteps = 4;
	}
	want = (uint8_t)(1 + (data[0] >> 1) % MEMIF_MAX_LOG2_RING);
	s.log2 = want;
	data++, size--;
	while (size > 0) {
		len = data[0];
		data++, size--;
		if (len > size)
			len = size;
		if (memif_msg_decode(data, len, &m, why, sizeof(why)) == 0) {
			memif_msg_encode(&m, buf);
			if (memif_msg_decode(buf, sizeof(buf), &m2, why,
			    sizeof(why)) != 0)
				abort();
			same(&m, &m2);
			if (m.type == MEMIF_MSG_DISCONNECT)
				break;	/* ctl.c closes, in any state */
			if (is_master) {
				a = memif_master_step(&s, &m, why, sizeof(why));
				if (a == MEMIF_A_CONNECT)
					check_connected(&s);
				if (a == MEMIF_A_ERROR && why[0] == '\0')
					abort();
			} else {
				a = memif_slave_step(&s, &m, why, sizeof(why));
				if (a == MEMIF_A_SEND_INIT && (s.log2 > want ||
				    s.log2 > m.hello.max_log2_ring_size ||
				    s.log2 < 1))
					abort();
				if (a == MEMIF_A_SEND_NEXT &&
				    (s.step < 1 || s.step > s.nsteps))
					abort();
			}
			if (a == MEMIF_A_ERROR)
				break;	/* the connection is closed */
		} else if (why[0] == '\0')
			abort();
		data += len, size -= len;
	}
	return 0;
}
