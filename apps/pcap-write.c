/*
 * snb-pcap-write: write the packets reaching it to a pcap file ("-":
 * standard output) as tcpdump -w does: -c, -C, -G, -s, --nano (the
 * rotations with tcpdump's file names); truncated packets keep their
 * original length.
 *
 * Nothing is touched before there is something to write: the file is
 * created (or an existing one replaced) with the first burst, or at the
 * end of a whole stream that brought no packet (an empty capture).  A
 * graph that failed before sending anything, or whose stream was cut by
 * a failure (RING_FAILED), leaves the file as it was, and says so.
 *
 * Each burst is written with write(2) as it is taken, whole: a partial
 * write or a signal (SIGTERM while blocked on a pipe) only makes the loop
 * write the rest, so no record is ever torn by a detach, and readers of
 * the file see every burst at once.  A pipe whose reader went away
 * (EPIPE) ends the graph quietly with status 0, as `tcpdump -w - | head`.
 *
 * Exactly once across restarts, swaps and SIGKILL, for a regular file:
 * write the burst, commit the hand-over state (the file's length and the
 * input ring's tail after it; which file: -C number, -G window), then
 * release the slots.  A successor cuts the file to the committed length
 * (dropping whatever was written after the last commit, whole or torn)
 * and releases the input packets up to the committed tails (they are in
 * the file): every packet is in the file once.  A pipe cannot be cut:
 * its header is written once per stream, a successor appends records.
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>
#include <pcap/pcap.h>

#include "forward.h"

enum { TS_KEEP, TS_ZERO, TS_NOW };

#define PCAP_MAGIC_US	0xa1b2c3d4
#define PCAP_MAGIC_NS	0xa1b23c4d
#define SNAPLEN		262144	/* tcpdump's, and -s 0's */
#define HDR_LEN		24
#define REC_HDR		16

static const char *path;	/* FILE as given */
static const char *name;	/* the file being written, for messages */
static char cur[PATH_MAX];	/* its name, with rotation */
static int fd = -1, to_stdout, ts_mode = TS_KEEP, regular, gone, nano_opt;
static uint64_t count, rotate_bytes;	/* -c, -C (0: none) */
static int64_t rotate_secs;		/* -G (0: none) */
static uint32_t snaplen = SNAPLEN;
static uint64_t *packets, *bytes;
static struct port *in;
static struct fwd fwd;
static unsigned char *burst;	/* a burst's records, see the breath */

/* The hand-over state.  tail[j] is input ring j's tail after the last
 * burst written (in the launcher's order; rings_id tells it is the same). */
#define WRITE_MAGIC	0x32777070	/* "ppw2" */
#define MAX_RINGS	48
#define W_OPEN		0x1		/* the output was opened */
#define W_NANO		0x2		/* its header says nanoseconds */
struct write_state {
	uint32_t	magic;		/* WRITE_MAGIC once committed */
	uint32_t	nrings;
	uint32_t	rings_id;	/* hash of the input rings' names */
	uint32_t	flags;		/* W_* */
	uint64_t	dev, ino;	/* what is written: file or stdout */
	uint64_t	length;		/* its length after the last burst */
	uint64_t	sdev, sino;	/* the stdout that has our file header */
	uint64_t	packets, bytes;	/* counters after the last burst */
	uint64_t	written;	/* packets of this stream (-c) */
	int64_t		gtime;		/* the -G window's start (time_t) */
	uint32_t	cfile;		/* the -C file's number, 0 first */
	uint32_t	pad;
	uint64_t	tail[MAX_RINGS];
};
_Static_assert(sizeof(struct write_state) <= APP_STATE_MAX, "state size");
static struct write_state *st;
static size_t st_size;
static uint32_t rings_id;

/*
 * The length of the whole records at the start of our pcap file, size
 * bytes long: where a writer may continue a file someone cut.  -1 when
 * it is not an Ethernet pcap file with that magic number.
 */
static off_t
pcap_whole(int f, off_t size, uint32_t magic)
{
	uint32_t h[6], rec[4];
	off_t off = HDR_LEN;

	if (pread(f, h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h[0] != magic ||
	    h[5] != DLT_EN10MB)
		return -1;
	while (off <= size - REC_HDR &&
	    pread(f, rec, sizeof(rec), off) == (ssize_t)sizeof(rec) &&
	    rec[2] <= SNAPLEN && rec[2] <= size - off - REC_HDR)
		off += REC_HDR + (off_t)rec[2];
	return off;
}

/* A write failed (a full disk): our file is cut after its last whole
 * record, readable; the packets not written stay in the ring. */
static void __attribute__((noreturn))
write_failed(void)
{
	int e = errno;

	if (regular && !to_stdout && ftruncate(fd, (off_t)st->length) == 0)
		errx(1, "%s: write error: %s (the file ends after its last "
		    "whole record)", name, strerror(e));
	errx(1, "%s: write error: %s", name, strerror(e));
}

/* Write all of buf, whatever signals and partial writes come between:
 * 0, or -1 when the reader of our pipe has gone (the graph is ended). */
static int
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
			if (errno == EPIPE) {
				gone = 1;
				app_end_graph();
				return -1;
			}
			write_failed();
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * The name of the file to write: FILE, through strftime(3) at the -G
 * window's start with -G, and the -C file's number after it from the
 * second file on (tcpdump's names).
 */
static void
file_name(char *buf, size_t len, int64_t gtime, uint32_t cfile)
{
	time_t t = (time_t)gtime;
	struct tm tm;
	size_t n;

	if (rotate_secs) {
		if (localtime_r(&t, &tm) == NULL ||
		    (n = strftime(buf, len, path, &tm)) == 0)
			errx(1, "%s: no file name for this time (too long?)",
			    path);
	} else if ((n = strlcpy(buf, path, len)) >= len)
		errx(1, "%s: file name too long", path);
	if (cfile && (size_t)snprintf(buf + n, len - n, "%u", cfile) >=
	    len - n)
		errx(1, "%s: file name too long", path);
}

/* Refuse a file we cannot write, before a swap retires the old stage. */
static void
check_path(const char *f)
{
	struct stat sb;
	char *dir;

	if (stat(f, &sb) == 0) {
		if (S_ISDIR(sb.st_mode))
			errx(1, "%s: is a directory", f);
		if (access(f, W_OK) == -1)
			err(1, "%s", f);
		return;
	}
	if (errno != ENOENT)
		err(1, "%s", f);
	if ((dir = strdup(f)) == NULL)
		err(1, NULL);
	if (access(dirname(dir), W_OK | X_OK) == -1)
		err(1, "%s", f);
	free(dir);
}

#define USAGE	"[-c count] [-C file_size] [-G rotate_seconds] " \
		"[-s snaplen] [--nano] [--timestamps keep|zero|now] FILE"

static void
pcap_write_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timestamps", required_argument, NULL, 't' },
		{ "nano", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 }
	};
	const char *b;
	uint32_t len;
	int ch, j;

	while ((ch = getopt_long(argc, argv, "+c:C:G:s:", opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			count = (uint64_t)app_parse_num("-c", optarg, 1,
			    LLONG_MAX);
			break;
		case 'C':	/* millions of bytes, as tcpdump */
			rotate_bytes = (uint64_t)app_parse_num("-C", optarg, 1,
			    1000000000) * 1000000;
			break;
		case 'G':
			rotate_secs = app_parse_num("-G", optarg, 1,
			    100 * 365 * 86400LL);
			break;
		case 's':
			snaplen = (uint32_t)app_parse_num("-s", optarg, 0,
			    SNAPLEN);
			if (snaplen == 0)
				snaplen = SNAPLEN;
			break;
		case 'n':
			nano_opt = 1;
			break;
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
			app_usage();
		}
	}
	if (argc - optind != 1)
		app_usage();
	path = argv[optind];
	to_stdout = strcmp(path, "-") == 0;
	name = to_stdout ? "stdout" : path;
	if (to_stdout && (rotate_bytes || rotate_secs))
		errx(2, "-C and -G need a file, not standard output");
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
	/* Opened with the first burst (see the top): checked now. */
	if (!to_stdout) {
		file_name(cur, sizeof(cur), (int64_t)time(NULL), 0);
		check_path(cur);
	}
}

static int
write_header(void)
{
	uint32_t h[6] = { (st->flags & W_NANO) ? PCAP_MAGIC_NS :
	    PCAP_MAGIC_US, 2 | 4 << 16, 0, 0, snaplen, DLT_EN10MB };

	if (write_all(h, sizeof(h)) == -1)
		return -1;
	st->length += sizeof(h);
	return 0;
}

/* A regular file continued: cut it to the committed length. */
static void
cut(const struct stat *sb)
{
	off_t whole;

	if ((uint64_t)sb->st_size < st->length) {
		/* Someone else cut it: continue after its last whole record. */
		if ((whole = pcap_whole(fd, sb->st_size, (st->flags & W_NANO) ?
		    PCAP_MAGIC_NS : PCAP_MAGIC_US)) == -1)
			errx(1, "%s: not the Ethernet pcap file written to "
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
 * file (or the same standard output), else start it.  -1 when the reader
 * of the pipe has gone.
 */
static int
open_output(int resumed)
{
	struct stat sb;
	int same, fl;

	if (to_stdout)
		fd = 1;
	else {
		file_name(cur, sizeof(cur), st->gtime, st->cfile);
		name = cur;
		same = resumed && stat(cur, &sb) == 0 &&
		    st->dev == (uint64_t)sb.st_dev &&
		    st->ino == (uint64_t)sb.st_ino;
		if ((fd = open(cur, O_WRONLY | O_CLOEXEC |
		    (same ? 0 : O_CREAT | O_TRUNC), 0666)) == -1)
			err(1, "%s", cur);
	}
	if (fstat(fd, &sb) == -1)
		err(1, "%s", name);
	st->flags |= W_OPEN;
	regular = S_ISREG(sb.st_mode);
	same = resumed && st->dev == (uint64_t)sb.st_dev &&
	    st->ino == (uint64_t)sb.st_ino;
	st->dev = (uint64_t)sb.st_dev;
	st->ino = (uint64_t)sb.st_ino;
	if (same && regular) {
		cut(&sb);
		return 0;
	}
	if (regular && !to_stdout) {
		st->length = 0;		/* open() truncated it */
		return write_header();
	}
	/* Our standard output, or a FIFO: we write where it is. */
	if (regular && ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    (st->length = (uint64_t)((fl & O_APPEND) ? sb.st_size :
	    lseek(fd, 0, SEEK_CUR))) == (uint64_t)-1))
		err(1, "%s", name);
	/* One file header per stream, whoever writes it. */
	if (st->sdev == (uint64_t)sb.st_dev && st->sino == (uint64_t)sb.st_ino)
		return 0;
	st->sdev = (uint64_t)sb.st_dev;
	st->sino = (uint64_t)sb.st_ino;
	return write_header();
}

/*
 * The stream's first output: nanosecond timestamps with --nano, or when
 * the first packets carry a capture time finer than a microsecond (as
 * those of a nanosecond capture do); tcpdump's microseconds otherwise.
 */
static int
start_output(struct ring *r, uint32_t n)
{
	uint32_t i;

	st->flags &= ~W_NANO;
	if (nano_opt)
		st->flags |= W_NANO;
	for (i = 0; i < n && ts_mode == TS_KEEP && !nano_opt; i++)
		if (ring_peek(r, i)->ts_ns % 1000 != 0) {
			st->flags |= W_NANO;
			break;
		}
	st->gtime = (int64_t)time(NULL);
	st->cfile = 0;
	return open_output(0);
}

/* The next file of a rotation (-G: a new window, -C: the next number). */
static int
rotate(int64_t gtime, uint32_t cfile)
{
	if (close(fd) == -1)
		err(1, "%s: write error", name);
	fd = -1;
	st->gtime = gtime;
	st->cfile = cfile;
	if (open_output(0) == -1)
		return -1;
	app_state_commit();
	return 0;
}

static void
pcap_write_start(void)
{
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
		for (j = 0; j < in->nrings; j++)
			(void)app_release_to(&in->rings[j], st->tail[j]);
		*packets = st->packets;
		*bytes = st->bytes;
	} else if (st->magic != WRITE_MAGIC) {
		memset(st, 0, st_size);
		st->packets = *packets;
		st->bytes = *bytes;
	}
	if (!resumed) {
		st->flags &= ~W_OPEN;	/* a stream of our own */
		st->written = 0;
	}
	st->magic = WRITE_MAGIC;
	st->nrings = (uint32_t)in->nrings;
	st->rings_id = rings_id;
	for (j = 0; j < in->nrings; j++)
		st->tail[j] = in->rings[j].tail;
	/* A predecessor's output is continued at once. */
	if ((st->flags & W_OPEN) && open_output(1) == -1)
		return;
	app_state_commit();
	if (count && st->written >= count)
		app_end_graph();	/* the predecessor wrote them all */
}

/* Write off bytes of burst, packets [from, to) of ring r holding b bytes
 * of data, and commit. */
static int
flush(struct ring *r, uint32_t from, uint32_t to, size_t off, uint64_t b)
{
	if (write_all(burst, off) == -1)
		return -1;
	st->length += off;
	st->tail[r - in->rings] = r->tail + to;
	st->written += to - from;
	st->packets += to - from;
	st->bytes += b;
	app_state_commit();
	*bytes += b;
	return 0;
}

/* A burst of ring r: written, committed, released (see the top). */
static uint32_t
write_burst(void *ctx, int from, struct ring *r, uint32_t n)
{
	uint32_t i, done = 0, len, h[4], snap, usec;
	uint64_t ts, b = 0, now;
	int64_t room;		/* -C: bytes this file takes before it rotates */
	size_t off = 0;

	if (gone)
		return 0;
	if (count && n > count - st->written)
		n = (uint32_t)(count - st->written);
	if (fd == -1 && start_output(r, n) == -1)
		return 0;
	/* -G: a new file on the first burst after the window (tcpdump). */
	if (rotate_secs && (int64_t)(now = (uint64_t)time(NULL)) -
	    st->gtime >= rotate_secs && rotate((int64_t)now, 0) == -1)
		return 0;
	/* In locals: the memcpy calls below would reload globals. */
	snap = snaplen;
	usec = !(st->flags & W_NANO);
	room = rotate_bytes ? (int64_t)(rotate_bytes - st->length) : INT64_MAX;
	for (i = 0; i < n; i++) {
		const struct packet *p = ring_peek(r, i);

		/* -C: a new file once this one is larger than the size. */
		if (__builtin_expect((int64_t)off > room, 0)) {
			if (flush(r, done, i, off, b) == -1 ||
			    rotate(st->gtime, st->cfile + 1) == -1)
				return 0;
			room = (int64_t)(rotate_bytes - st->length);
			done = i;
			off = 0;
			b = 0;
		}
		len = packet_len(r, p);
		ts = ts_mode == TS_ZERO ? 0 : ts_mode == TS_NOW ||
		    p->ts_ns == 0 ? app_realtime_ns() : p->ts_ns;
		h[0] = (uint32_t)(ts / 1000000000ULL);
		h[1] = (uint32_t)(ts % 1000000000ULL);
		if (usec)	/* by a constant: no division instruction */
			h[1] /= 1000;
		h[2] = len < snap ? len : snap;
		h[3] = p->wirelen ? p->wirelen : len;
		memcpy(burst + off, h, sizeof(h));
		memcpy(burst + off + sizeof(h), p->data, h[2]);
		off += sizeof(h) + h[2];
		b += h[2];
	}
	if (flush(r, done, n, off, b) == -1)
		return 0;
	/* -c: done, like tcpdump -c, whatever still comes. */
	if (count && st->written >= count)
		app_end_graph();
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
	struct stat sb;
	int failed = eof && app_inputs_failed();

	/* Nothing came, and the stream was cut or stopped: no file. */
	if (fd == -1 && !gone && (!eof || failed)) {
		if (!to_stdout)
			warnx("%s: no packet written%s: %s", name, failed ?
			    " (the stream was cut by a failure)" : "",
			    stat(name, &sb) == 0 ? "left as it was" :
			    "not created");
	} else if (fd == -1 && !gone) {
		/* A whole stream without packets: an empty capture. */
		if (start_output(NULL, 0) == 0)
			app_state_commit();
	}
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
	.usage = USAGE,
	.summary = "Write packets to a pcap file ('-': standard output).",
	.ports = ports,
	.init = pcap_write_init,
	.start = pcap_write_start,
	.breathe = pcap_write_breathe,
	.stop = pcap_write_stop,
};

APP_MAIN(desc)
