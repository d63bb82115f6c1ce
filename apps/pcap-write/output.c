/*
 * output.c: snb-pcap-write's output: the file (or pipe) and its pcap
 * header, continued or started; its rotations; the writes of each burst,
 * and the hand-over of a record begun when the stage leaves (see main.c).
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>
#include <pcap/pcap.h>

#include "pcap-write.h"

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
	    h[0] != magic || h[5] != DLT_EN10MB)
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

/*
 * Write buf: len, or fewer bytes when the stage is asked to leave, at
 * once or after linger tenths of a second of a full pipe (a pipe's
 * descriptor is non-blocking: a full pipe is waited for here, looking at
 * the request every tenth of a second).  -1 when the reader of our pipe
 * has gone (the graph is ended).
 */
static ssize_t
write_all(const void *buf, size_t len, int linger)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	size_t done = 0;
	ssize_t w;

	while (done < len && !(app_detaching() && linger-- <= 0)) {
		if ((w = write(fd, (const char *)buf + done, len - done)) >= 0)
			done += (size_t)w;
		else if (errno == EPIPE) {
			gone = 1;
			app_end_graph();
			return -1;
		} else if (errno == EAGAIN)
			(void)poll(&pfd, 1, 100);
		else if (errno != EINTR)
			write_failed();
	}
	return (ssize_t)done;
}

/*
 * The name of the file to write: FILE, through strftime(3) at the -G
 * window's start with -G, and the -C file's number after it from the
 * second file on (tcpdump's names).
 */
void
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
void
check_path(const char *f)
{
	struct stat sb;
	char dir[PATH_MAX];

	if (stat(f, &sb) == 0) {
		if (S_ISDIR(sb.st_mode))
			errx(1, "%s: is a directory", f);
		if (access(f, W_OK) == -1)
			err(1, "%s", f);
		return;
	}
	if (errno != ENOENT)
		err(1, "%s", f);
	strlcpy(dir, f, sizeof(dir));	/* f is at most cur[] */
	if (access(dirname(dir), W_OK | X_OK) == -1)
		err(1, "%s", f);
}

static int
write_header(void)
{
	uint32_t h[6] = { (st->flags & W_NANO) ? PCAP_MAGIC_NS :
	    PCAP_MAGIC_US, 2 | 4 << 16, 0, 0, snaplen, DLT_EN10MB };

	/* Atomic on a pipe (PIPE_BUF): whole, or not at all. */
	if (write_all(h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -1;
	st->length += sizeof(h);
	st->part = 0;
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
int
open_output(int resumed)
{
	struct stat sb;
	char proc[32];
	int same, fl, nb;

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
	/* A pipe: a description of our own, non-blocking (write_all()). */
	if (S_ISFIFO(sb.st_mode)) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if ((nb = open(proc, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) ==
		    -1)
			warn("%s: a stop while the pipe is full may hang", proc);
		else {
			if (fd > 2)
				close(fd);
			fd = nb;
		}
	}
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
	if (write_header() == -1)
		return -1;
	st->sdev = (uint64_t)sb.st_dev;
	st->sino = (uint64_t)sb.st_ino;
	return 0;
}

/*
 * The stream's first output: nanosecond timestamps with --nano, or when
 * the first packets carry a capture time finer than a microsecond (as
 * those of a nanosecond capture do); tcpdump's microseconds otherwise.
 */
int
start_output(struct ring *r, uint32_t n)
{
	uint32_t i;
	int nano = nano_opt;

	for (i = 0; i < n && ts_mode == TS_KEEP && !nano; i++)
		nano = ring_peek(r, i)->ts_ns % 1000 != 0;
	st->flags = (st->flags & ~W_NANO) | (nano ? W_NANO : 0);
	st->gtime = (int64_t)time(NULL);
	st->cfile = 0;
	return open_output(0);
}

/* The next file of a rotation (-G: a new window, -C: the next number). */
int
rotate(int64_t gtime, uint32_t cfile)
{
	if (close(fd) == -1)
		err(1, "%s: write error", name);
	st->gtime = gtime;
	st->cfile = cfile;
	if (open_output(0) == -1)
		return -1;
	app_state_commit();
	return 0;
}

/*
 * Write off bytes of burst, packets [from, to) of ring r (from byte
 * skip: the rest of a predecessor's record), and commit.  Returns the
 * packets now whole in the output: to - from, or fewer when the stage
 * was asked to leave first; to a pipe, the record it was writing is then
 * its successor's to finish.  -1: reader gone.
 */
int
flush(struct ring *r, uint32_t from, uint32_t to, size_t off, size_t skip)
{
	uint64_t b = off - (uint64_t)REC_HDR * (to - from);	/* of data */
	size_t start = 0;
	ssize_t w, rest;

	if ((w = write_all(burst + skip, off - skip, 0)) == -1)
		return -1;
	st->length += (size_t)w;
	st->part = 0;
	if ((size_t)w < off - skip) {
		if (regular)
			return 0;	/* the successor cuts the file */
		w += (ssize_t)skip;	/* ends[to - 1] == off > w */
		for (to = from, b = 0; ends[to] <= (size_t)w; to++) {
			b += ends[to] - start - REC_HDR;
			start = ends[to];
		}
		/* The record begun, if its reader takes it within half a
		 * second: a graph stopped has no successor to finish it. */
		if ((size_t)w > start && (rest = write_all(burst + w,
		    ends[to] - (size_t)w, 5)) != -1 && (size_t)(w += rest) ==
		    ends[to] && (st->length += (size_t)rest)) {
			b += ends[to] - start - REC_HDR;
			start = ends[to++];
		}
		if ((st->part = (uint32_t)((size_t)w - start)) != 0) {
			memcpy(st->part_hdr, burst + start, REC_HDR);
			st->part_ring = (uint32_t)(r - in->rings);
		}
	}
	st->tail[r - in->rings] = r->tail + to;
	st->written += to - from;
	st->packets += to - from;
	st->bytes += b;
	app_state_commit();
	*bytes += b;
	return (int)(to - from);
}
