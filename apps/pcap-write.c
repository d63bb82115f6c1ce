/*
 * snb-pcap-write: write the packets reaching it to a pcap file (or to
 * standard output with "-"), in the classic microsecond format tcpdump
 * writes by default.  Truncated packets keep their original length.
 *
 * Each burst is written with write(2) as it is taken, whole: a partial
 * write or a signal (SIGTERM while blocked on a pipe) only makes the loop
 * write the rest, so no record is ever torn by a detach, and readers of
 * the file see every burst at once.
 *
 * Exactly once across restarts, swaps and SIGKILL, for a regular file:
 * write the burst, commit the hand-over state (the file's length after
 * it, the input ring's tail after it), then release the slots.  A
 * successor cuts the file to the committed length (dropping whatever
 * was written after the last commit, whole or torn) and releases the
 * input packets up to the committed tails (they are in the file): every
 * packet is in the file once.  A pipe cannot be cut: its header is
 * written once per stream, a successor appends records only.
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "forward.h"

enum { TS_KEEP, TS_ZERO, TS_NOW };

#define PCAP_MAGIC_US	0xa1b2c3d4
#define SNAPLEN		262144
#define HDR_LEN		24
#define REC_HDR		16

static const char *path;	/* FILE as given */
static const char *name;	/* the file, for messages */
static int fd = -1, to_stdout, ts_mode = TS_KEEP, regular;
static uint64_t *packets, *bytes;
static struct port *in;
static struct fwd fwd;
static unsigned char *burst;	/* a burst's records, see the breath */

/*
 * The hand-over state.  tail[j] is input ring j's tail after the last
 * burst written (rings in the order the launcher bound them; rings_id
 * tells that order is the same).
 */
#define WRITE_MAGIC	0x31777070	/* "ppw1" */
#define MAX_RINGS	48
struct write_state {
	uint32_t	magic;		/* WRITE_MAGIC once committed */
	uint32_t	nrings;
	uint32_t	rings_id;	/* hash of the input rings' names */
	uint32_t	pad;
	uint64_t	dev, ino;	/* what is written: file or stdout */
	uint64_t	length;		/* its length after the last burst */
	uint64_t	sdev, sino;	/* the stdout that has our file header */
	uint64_t	packets, bytes;	/* counters after the last burst */
	uint64_t	tail[MAX_RINGS];
};
static struct write_state *st;
static size_t st_size;
static uint32_t rings_id;

/*
 * The length of the whole records at the start of a pcap file of ours,
 * size bytes long: where a writer may continue it.  -1 when the file is
 * not a microsecond Ethernet pcap file.  For a file that lost what its
 * state says was written (someone cut it): the best we can still do.
 */
static off_t
pcap_whole(int f, off_t size)
{
	uint32_t h[6], rec[4];
	off_t off = HDR_LEN;

	if (pread(f, h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h[0] != PCAP_MAGIC_US || h[5] != DLT_EN10MB)
		return -1;
	while (off <= size - REC_HDR &&
	    pread(f, rec, sizeof(rec), off) == (ssize_t)sizeof(rec) &&
	    rec[2] <= SNAPLEN && rec[2] <= size - off - REC_HDR)
		off += REC_HDR + (off_t)rec[2];
	return off;
}

/* Write all of buf, whatever signals and partial writes come between. */
static void
write_all(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	struct pollfd pfd;
	ssize_t w;

	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				/* A non-blocking stdout: wait for room. */
				pfd.fd = fd;
				pfd.events = POLLOUT;
				(void)poll(&pfd, 1, -1);
				continue;
			}
			err(1, "%s: write error", name);
		}
		p += w;
		len -= (size_t)w;
	}
}

/* Refuse a file we could not write, before a swap retires the old stage. */
static void
check_path(void)
{
	struct stat sb;
	char *dir;

	if (stat(path, &sb) == 0) {
		if (S_ISDIR(sb.st_mode))
			errx(1, "%s: is a directory", path);
		if (access(path, W_OK) == -1)
			err(1, "%s", path);
		return;
	}
	if (errno != ENOENT)
		err(1, "%s", path);
	if ((dir = strdup(path)) == NULL)
		err(1, NULL);
	if (access(dirname(dir), W_OK | X_OK) == -1)
		err(1, "%s", path);
	free(dir);
}

static void
pcap_write_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timestamps", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	const char *b;
	uint32_t len;
	int ch, j;

	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 't':
			if (strcmp(optarg, "keep") == 0)
				ts_mode = TS_KEEP;
			else if (strcmp(optarg, "zero") == 0)
				ts_mode = TS_ZERO;
			else if (strcmp(optarg, "now") == 0)
				ts_mode = TS_NOW;
			else
				errx(2, "bad --timestamps '%s' (keep, zero or "
				    "now)", optarg);
			break;
		default:
			errx(2, "usage: snb-pcap-write [--timestamps "
			    "keep|zero|now] FILE");
		}
	}
	if (argc - optind != 1)
		errx(2, "usage: snb-pcap-write [--timestamps keep|zero|now] "
		    "FILE");
	path = argv[optind];
	to_stdout = strcmp(path, "-") == 0;
	name = to_stdout ? "stdout" : path;
	fwd_init(&fwd, (const char *[]){ "in", NULL }, NULL);
	if ((in = app_port("in")) == NULL)
		return;		/* refused by the runtime */
	if (in->nrings > MAX_RINGS)
		errx(2, "%d input links, at most %d", in->nrings, MAX_RINGS);
	/* FNV-1a over the rings' file names, in order. */
	rings_id = 2166136261u;
	for (j = 0, len = 0; j < in->nrings; j++) {
		b = strrchr(in->rings[j].path, '/');
		for (b = b ? b + 1 : in->rings[j].path; ; b++) {
			rings_id = (rings_id ^ (unsigned char)*b) * 16777619u;
			if (*b == '\0')
				break;
		}
		if (in->rings[j].capacity > len)
			len = in->rings[j].capacity;
	}
	/* Room for a whole burst of the largest packets. */
	if ((burst = malloc((size_t)APP_BURST * (REC_HDR + len))) == NULL)
		err(1, NULL);
	fwd.packets = packets = app_counter("packets");
	bytes = app_counter("bytes");
	/* The file is opened in start(): a replacement writes nothing
	 * before it takes over. */
	if (!to_stdout)
		check_path();
}

static void
write_header(void)
{
	uint32_t h[6] = { PCAP_MAGIC_US, 2 | 4 << 16, 0, 0, SNAPLEN,
	    DLT_EN10MB };

	write_all(h, sizeof(h));
	st->length += sizeof(h);
}

/* A regular file continued: cut it to the committed length. */
static void
cut(const struct stat *sb)
{
	off_t whole;

	if ((uint64_t)sb->st_size < st->length) {
		/* Someone else cut it: continue after its last whole record. */
		if ((whole = pcap_whole(fd, sb->st_size)) == -1)
			errx(1, "%s: not a microsecond Ethernet pcap file to "
			    "continue", name);
		warnx("%s: shorter than written (%llu bytes, not %llu): "
		    "continuing after its last whole record", name,
		    (unsigned long long)sb->st_size,
		    (unsigned long long)st->length);
		st->length = (uint64_t)whole;
	}
	if (ftruncate(fd, (off_t)st->length) == -1 ||
	    lseek(fd, (off_t)st->length, SEEK_SET) == -1)
		err(1, "%s", name);
}

/*
 * Open the output: continue what the state describes when it is the same
 * file (or the same standard output), else start it.
 */
static void
open_output(int resumed)
{
	struct stat sb;
	int same, fl;

	if (to_stdout)
		fd = 1;
	else {
		same = resumed && stat(path, &sb) == 0 &&
		    st->dev == (uint64_t)sb.st_dev &&
		    st->ino == (uint64_t)sb.st_ino;
		if ((fd = open(path, O_WRONLY | O_CLOEXEC |
		    (same ? 0 : O_CREAT | O_TRUNC), 0666)) == -1)
			err(1, "%s", path);
	}
	if (fstat(fd, &sb) == -1)
		err(1, "%s", name);
	regular = S_ISREG(sb.st_mode);
	same = resumed && st->dev == (uint64_t)sb.st_dev &&
	    st->ino == (uint64_t)sb.st_ino;
	if (same && regular)
		cut(&sb);
	else if (regular && !to_stdout) {
		st->length = 0;		/* open() truncated it */
		write_header();
	} else {
		/* Our standard output, or a FIFO: we write where it is. */
		if (regular && ((fl = fcntl(fd, F_GETFL)) == -1 ||
		    (st->length = (uint64_t)((fl & O_APPEND) ? sb.st_size :
		    lseek(fd, 0, SEEK_CUR))) == (uint64_t)-1))
			err(1, "%s", name);
		/* One file header per stream, whoever writes it. */
		if (st->sdev != (uint64_t)sb.st_dev ||
		    st->sino != (uint64_t)sb.st_ino) {
			write_header();
			st->sdev = (uint64_t)sb.st_dev;
			st->sino = (uint64_t)sb.st_ino;
		}
	}
	st->dev = (uint64_t)sb.st_dev;
	st->ino = (uint64_t)sb.st_ino;
}

static void
pcap_write_start(void)
{
	struct ring *r;
	uint64_t n;
	int j, resumed;

	st_size = offsetof(struct write_state, tail) +
	    (size_t)in->nrings * sizeof(st->tail[0]);
	st = app_state(st_size);
	resumed = app_resumed() && st->magic == WRITE_MAGIC;
	if (resumed && (st->nrings != (uint32_t)in->nrings ||
	    st->rings_id != rings_id)) {
		warnx("%s: the inputs are not those of the writer before: "
		    "continuing without skipping what it wrote", name);
		resumed = 0;
	}
	if (resumed) {
		/*
		 * Packets up to the committed tails are in the output;
		 * the predecessor may have died before releasing them.
		 */
		for (j = 0; j < in->nrings; j++) {
			r = &in->rings[j];
			n = st->tail[j] - r->tail;
			if (n > APP_BURST || ring_avail(r, (uint32_t)n) < n) {
				warnx("%s: input %d: committed tail %llu is "
				    "not that ring's (tail %llu): not skipping",
				    name, j, (unsigned long long)st->tail[j],
				    (unsigned long long)r->tail);
				continue;
			}
			ring_release(r, (uint32_t)n);
		}
		*packets = st->packets;
		*bytes = st->bytes;
	} else if (st->magic != WRITE_MAGIC) {
		memset(st, 0, st_size);
		st->packets = *packets;
		st->bytes = *bytes;
	}
	st->magic = WRITE_MAGIC;
	st->nrings = (uint32_t)in->nrings;
	st->rings_id = rings_id;
	for (j = 0; j < in->nrings; j++)
		st->tail[j] = in->rings[j].tail;
	open_output(resumed);
	app_state_commit();
}

static uint64_t
realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A burst of ring r: written, committed, released (see the top). */
static uint32_t
write_burst(void *ctx, int from, struct ring *r, uint32_t n)
{
	uint32_t i, len, h[4];
	uint64_t ts, b = 0;
	size_t off = 0;

	for (i = 0; i < n; i++) {
		const struct packet *p = ring_peek(r, i);

		len = packet_len(r, p);
		ts = ts_mode == TS_ZERO ? 0 : ts_mode == TS_NOW ||
		    p->ts_ns == 0 ? realtime_ns() : p->ts_ns;
		h[0] = (uint32_t)(ts / 1000000000ULL);
		h[1] = (uint32_t)(ts % 1000000000ULL / 1000);
		h[2] = len;
		h[3] = p->wirelen ? p->wirelen : len;
		memcpy(burst + off, h, sizeof(h));
		memcpy(burst + off + sizeof(h), p->data, len);
		off += sizeof(h) + len;
		b += len;
	}
	write_all(burst, off);
	st->length += off;
	st->tail[r - in->rings] = r->tail + n;
	st->packets += n;
	st->bytes += b;
	app_state_commit();
	*bytes += b;
	return n;
}

static int
pcap_write_breathe(void)
{
	return fwd_take(&fwd, write_burst, NULL);
}

static void
pcap_write_stop(int eof)
{
	/* Every burst is in the file already; only a file is ours to close. */
	if (fd > 2 && close(fd) == -1)
		err(1, "%s: write error", name);
	fd = -1;
}

static const struct port_desc ports[] = {
	{ "in", PORT_IN | PORT_REQUIRED },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "pcap-write",
	.usage = "[--timestamps keep|zero|now] FILE",
	.summary = "Write packets to a pcap file ('-': standard output).",
	.ports = ports,
	.init = pcap_write_init,
	.start = pcap_write_start,
	.breathe = pcap_write_breathe,
	.stop = pcap_write_stop,
};

APP_MAIN(desc)
