/*
 * snb-pcap-read: replay a pcap or pcapng file into the graph (--loop N
 * times), as fast as the graph takes it or paced (pace.h).  Records are
 * read only when the output has room, so nothing is ever held back or
 * lost; timestamps keep libpcap's nanosecond precision; other link types
 * become Ethernet frames (linktype.h) or are refused by name.
 *
 * A restarted or swapped-in reader of the same file resumes where its
 * predecessor stopped.  The position comes from the output ring, which is
 * exact even after a SIGKILL: the packets this stage has published there
 * are prod.head (plus prod.drops on a leaky link, counted before head is
 * published), minus the head at which this file's stream began (its base,
 * in the hand-over state).  The stream of a file is a fixed sequence
 * (every record that fits the ring, pass after pass), so the successor
 * replays that sequence without sending it up to the same point.
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcap-read.h"

static int unresumable;
static struct stat file_st;	/* the file, as init() opened it (all
				   zero for standard input) */
static uint64_t *packets;
static struct port *out;

/*
 * The hand-over state: where this file's stream began on the output ring
 * (base), the counters then, and which file it is (a swap to another
 * file starts that file from its beginning).
 */
#define READ_MAGIC	0x32647270	/* "prd2" */
struct read_state {
	uint32_t	magic;		/* READ_MAGIC once committed */
	uint32_t	from_stdin;
	uint64_t	base;		/* output head + drops at the start */
	uint64_t	dev, ino, size;	/* the file */
	uint64_t	packets0;	/* counters at base */
	uint64_t	drops0;
	uint64_t	nonether0;
};

static void
timing_opt(const char *opt, char *arg, void *var)
{
	char *end;

	errno = 0;
	pace.mult = strtod(arg, &end);
	if (end == arg || *end != '\0' || errno ||
	    !(pace.mult >= 0.0001 && pace.mult <= 1e6))
		errx(2, "bad --timing '%s': must be a number 0.0001..1000000",
		    arg);
}

static void
pcap_read_init(int argc, char **argv)
{
	static const struct app_opt opts[] = {
		APP_NUM("loop", &loops, 0, LLONG_MAX),
		APP_ARG("timing", timing_opt, NULL, NULL),
		APP_NUM("rate", &pace.pps, 1, 1000000000),
		APP_OPT_END
	};

	if (app_options(argc, argv, opts, APP_OPT_WORDS) != argc - 1)
		app_usage();
	if (pace.mult && pace.pps)
		errx(2, "--timing and --rate are alternatives: give one");
	file = argv[argc - 1];
	from_stdin = strcmp(file, "-") == 0;
	if (from_stdin && loops != 1)
		errx(2, "--loop needs a file, not standard input");
	/* Unbound, "out" is refused by the runtime after init(). */
	if ((out = app_port("out")) == NULL)
		return;
	cap = out->rings[0].capacity;
	if ((frame = malloc(cap)) == NULL)
		err(1, NULL);
	packets = app_counter("packets");
	drop_oversize = app_counter("drop-oversize");
	drop_nonether = app_counter("drop-nonether");
	stream_reset();
	/*
	 * Standard input is opened in start(): in standby, reading its
	 * header would take bytes from a predecessor still reading it.  A
	 * file is opened now, so that a missing or foreign one refuses a
	 * swap while the old stage still runs.
	 */
	if (from_stdin)
		return;
	open_file(1);
	if (fstat(fileno(pcap_file(pc)), &file_st) == -1)
		err(1, "%s", file);
}

static void
pcap_read_start(void)
{
	struct read_state *st = app_state(sizeof(*st)), now;
	struct ring *r = &out->rings[0];
	uint64_t pos, k;
	int rv;

	/* The pace starts now, also for a successor: no burst to catch up. */
	pace_restart(&pace, app_now_ns());
	/* What this output has carried so far (see the top of the file). */
	pos = r->head;
	if (r->shm->hdr.flags & RING_FLAG_LEAKY)
		pos += atomic_load(&r->shm->prod.drops);
	/* This stream (standard input's file is all zero), and the state of
	 * the one a predecessor read: the same? */
	now = (struct read_state){ READ_MAGIC, (uint32_t)from_stdin, pos,
	    (uint64_t)file_st.st_dev, (uint64_t)file_st.st_ino,
	    (uint64_t)file_st.st_size, *packets, *drop_oversize,
	    *drop_nonether };
	if (app_resumed() && st->magic == now.magic && st->from_stdin ==
	    now.from_stdin && st->dev == now.dev && st->ino == now.ino &&
	    st->size == now.size && pos >= st->base) {
		k = pos - st->base;
		if (from_stdin) {
			/*
			 * The predecessor's buffered input went with it, and
			 * what is left may start in the middle of a record:
			 * end the stream as a failure (final, not restarted).
			 */
			warnx("standard input cannot be resumed after %llu "
			    "packets: ending the stream", (unsigned long long)k);
			unresumable = 1;
			app_done();
			return;
		}
		*packets = st->packets0 + k;
		*drop_oversize = st->drops0;
		*drop_nonether = st->nonether0;
		quiet = 1;	/* the predecessor warned already */
		rv = skip_records(k);
		quiet = 0;
		pace_restart(&pace, app_now_ns());
		if (rv < 0)
			errx(1, "%s: %s", file, pcap_geterr(pc));
		if (rv == 0)
			app_done();	/* it had sent everything */
		return;
	}
	*st = now;
	app_state_commit();
	if (from_stdin)
		open_file(1);
}

static int
pcap_read_breathe(void)
{
	static struct rec rc;		/* a paced record, until it is due */
	static uint64_t rc_due;
	static int held;
	struct ring *r = &out->rings[0];
	uint64_t skipped = *drop_oversize + *drop_nonether, now = 0;
	uint64_t bytes = 0;		/* of the slots not yet published */
	uint32_t n, i = 0, pub = 0;	/* pub: published before a read */
	int rv;

	if (unresumable || ended)
		return 0;
	n = app_room(out, APP_BURST);
	if (PACED)
		now = app_now_ns();	/* once a breath: a vDSO read */
	/* Unpaced --loop passes from the cache: the bench's fast path. */
	if (cached && !PACED)
		i = replay_cached(r, n, &bytes);
	while (i < n && !(cached && !PACED)) {
		if (held)
			held = 0;	/* rc is the record read before */
		else {
			/* A pipe's or FIFO's next record may be long in
			 * coming: publish what we hold before a read that
			 * may wait for it, not with a burst still to fill. */
			if (!S_ISREG(file_st.st_mode) && may_block()) {
				ring_commit_bytes(r, i - pub, bytes);
				ring_flush_wake(r, 1);	/* a last breath's too */
				*packets += i - pub;
				bytes = 0;
				pub = i;
			}
			errno = 0;
			if ((rv = read_record(&rc)) == 0) {
				if (next_pass())
					continue;
				app_done();
				break;
			}
			/* SIGTERM while blocked on a pipe: detach now, with
			 * what we have (the runtime saw the signal).  The
			 * stream cannot go on anyway: see start(). */
			if (rv < 0 && from_stdin && errno == EINTR)
				break;
			if (rv < 0) {
				/* Deliver what we have, then end the stream
				 * as a dying pipe writer would (a failure). */
				ring_commit_bytes(r, i - pub, bytes);
				ring_close(r, RING_FAILED);
				errx(1, "%s: %s", file, pcap_geterr(pc));
			}
			if (PACED)
				rc_due = pace_due(&pace, rc.ts_ns);
		}
		if (PACED && rc_due > now) {
			/* Not yet: the runtime sleeps until it is due. */
			held = 1;
			app_wake_at(rc_due);
			break;
		}
		put_rec(ring_slot(r, i - pub), &rc, rc.data);
		i++;
		bytes += rc.caplen;
	}
	ring_commit_bytes(r, i - pub, bytes);
	*packets += i - pub;
	/* Skipped records count as work: a breath of them is not idle. */
	return (int)(i + (*drop_oversize + *drop_nonether - skipped));
}

static void
pcap_read_stop(int eof)
{
	stream_reset();		/* the file closed, the cache freed */
	if (unresumable && eof) {
		/* A failure at end of stream: the output ends first. */
		ring_close(&out->rings[0], RING_FAILED);
		exit(1);
	}
}

static const struct app_desc desc = {
	.name = "pcap-read",
	.usage = "[--loop N] [--timing M | --rate PPS] FILE",
	.summary = "Replay a pcap/pcapng file (--loop 0: forever), paced or "
	    "not.",
	.ports = (const struct port_desc[]){ { "out", PORT_OUT | PORT_REQUIRED },
	    { NULL, 0 } },
	.init = pcap_read_init,
	.start = pcap_read_start,
	.breathe = pcap_read_breathe,
	.stop = pcap_read_stop,
};

APP_MAIN(desc)
