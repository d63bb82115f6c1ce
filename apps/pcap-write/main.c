/*
 * snb-pcap-write: write the packets reaching it to a pcap file as
 * tcpdump -w does (snb-pcap-write(1): when the file is created or left
 * as it was, what a pipe's reader sees).
 *
 * Exactly once across restarts, swaps and SIGKILL, for a regular file:
 * write the burst, commit the hand-over state (the file's length and the
 * input rings' tails after it; which file: -C number, -G window), then
 * release the slots.  A successor cuts the file to the committed length
 * (dropping whatever was written after the last commit, whole or torn)
 * and releases the input packets up to the committed tails (they are in
 * the file).  A pipe cannot be cut: its header is written once per
 * stream, a successor appends records, and a writer asked to leave while
 * the pipe is full (its descriptor is non-blocking) hands the record it
 * was writing to its successor, who writes the rest.
 */
#include <sys/stat.h>

#include <err.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pcap-write.h"

const char *path;		/* FILE as given */
const char *name;		/* the file being written, for messages */
char cur[PATH_MAX];		/* its name, with rotation */
int fd = -1, to_stdout, ts_mode = TS_KEEP, regular, gone, nano_opt;
static uint64_t count, rotate_bytes;	/* -c, -C (0: none) */
int64_t rotate_secs;			/* -G (0: none) */
uint32_t snaplen = SNAPLEN;
uint64_t *bytes;
static uint64_t *packets;
struct port *in;
static struct fwd fwd;
unsigned char *burst;
size_t ends[APP_BURST];
struct write_state *st;
static size_t st_size;
static uint32_t rings_id;

static void
ts_opt(const char *opt, char *arg, void *var)
{
	static const char *const modes[] = {	/* by TS_* */
		"keep", "zero", "now", NULL };

	for (ts_mode = 0; modes[ts_mode] != NULL; ts_mode++)
		if (strcmp(arg, modes[ts_mode]) == 0)
			return;
	errx(2, "bad --timestamps '%s' (keep, zero or now)", arg);
}

static void
pcap_write_init(int argc, char **argv)
{
	static const struct app_opt opts[] = {
		APP_NUM("c", &count, 1, LLONG_MAX),
		APP_NUM("C", &rotate_bytes, 1, 1000000000),
		APP_NUM("G", &rotate_secs, 1, 100 * 365 * 86400LL),
		APP_NUM("s", &snaplen, 0, SNAPLEN),
		APP_FLAG("nano", &nano_opt),
		APP_ARG("timestamps", ts_opt, NULL, NULL),
		APP_OPT_END
	};
	const char *b;
	uint32_t len;
	int j;

	if (app_options(argc, argv, opts, APP_OPT_WORDS) != argc - 1)
		app_usage();
	rotate_bytes *= 1000000;	/* -C: millions of bytes, as tcpdump */
	if (snaplen == 0)
		snaplen = SNAPLEN;
	path = argv[argc - 1];
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
		b = b ? b + 1 : in->rings[j].path;
		do	/* the NUL too */
			rings_id = (rings_id ^ (unsigned char)*b) * 16777619u;
		while (*b++ != '\0');
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
		st->part = 0;		/* its record is of other rings */
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

/* A burst of ring r: written, committed, released (see the top). */
static uint32_t
write_burst(void *ctx, int from, struct ring *r, uint32_t n)
{
	uint32_t i, done = 0, len, h[4], snap, usec;
	uint64_t ts, now;
	int64_t room;		/* -C: bytes this file takes before it rotates */
	size_t off = 0, skip = 0;
	int w;

	/* A predecessor's record is finished first (see flush()). */
	if (gone || (st->part && r != &in->rings[st->part_ring]))
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
			if ((w = flush(r, done, i, off, skip)) !=
			    (int)(i - done))
				return w == -1 ? 0 : done + (uint32_t)w;
			if (rotate(st->gtime, st->cfile + 1) == -1)
				return 0;
			room = (int64_t)(rotate_bytes - st->length);
			done = i;
			off = 0;
			skip = 0;
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
		if (i == 0 && st->part) {	/* as the predecessor began it */
			memcpy(h, st->part_hdr, sizeof(h));
			skip = st->part;
		}
		memcpy(burst + off, h, sizeof(h));
		memcpy(burst + off + sizeof(h), p->data, h[2]);
		off += sizeof(h) + h[2];
		ends[i] = off;
	}
	if ((w = flush(r, done, n, off, skip)) != (int)(n - done))
		return w == -1 ? 0 : done + (uint32_t)w;
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

static const struct app_desc desc = {
	.name = "pcap-write",
	.usage = "[-c count] [-C file_size] [-G rotate_seconds] "
	    "[-s snaplen] [--nano] [--timestamps keep|zero|now] FILE",
	.summary = "Write packets to a pcap file ('-': standard output).",
	.ports = (const struct port_desc[]){ { "in", PORT_IN | PORT_REQUIRED },
	    { NULL, 0 } },
	.init = pcap_write_init,
	.start = pcap_write_start,
	.breathe = pcap_write_breathe,
	.stop = pcap_write_stop,
};

APP_MAIN(desc)
