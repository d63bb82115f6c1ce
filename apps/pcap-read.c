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
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "app.h"
#include "linktype.h"
#include "pace.h"

static const char *file;
static int from_stdin, unresumable, ended;
static int streaming;		/* a pipe or FIFO: records come when they
				   are written, and a read may block */
static struct stat file_st;	/* the file, as init() opened it */
static pcap_t *pc;
static uint32_t cap;		/* the output's capacity: larger records
				   are skipped */
static uint64_t loops = 1, pass, pass_sent, pass_skipped;
static uint64_t pass_len, pass_oversize;	/* pass 0's figures once */
static uint64_t pass_nonether0, pass_nonether;	/* it ended; this pass's */
static uint64_t *packets, *drop_oversize, *drop_nonether;
static int warned, warned_ne, quiet;
static struct port *out;
static int dlt;			/* the file's link type */
static unsigned char *frame;	/* a record made Ethernet, cap bytes */

static struct pace pace;	/* --timing (mult), --rate (pps) */
#define PACED	(pace.mult != 0 || pace.pps != 0)

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

/* A record to send; data is valid until the next read. */
struct rec {
	const unsigned char *data;
	uint32_t	caplen, wirelen;
	uint64_t	ts_ns;
};

/*
 * With --loop, the first pass keeps the records it sends in memory (up to
 * CACHE_MAX bytes) and later passes replay them from there: reopening and
 * parsing a file of one record per pass would cost a syscall per packet.
 * The cache holds each record as a struct rec (data unused: the cache
 * moves as it grows) followed by its bytes, padded to the next struct.
 */
#define CACHE_MAX	(256u << 20)
#define CACHED_LEN(caplen) \
	((sizeof(struct rec) + (caplen) + 7) & ~(size_t)7)
static size_t cache_len, cache_cap, cur;
static unsigned char *cache;
static int caching, cached;

static void
cache_drop(void)
{
	free(cache);
	cache = NULL;
	cache_len = cache_cap = 0;
	caching = cached = 0;
}

static void
cache_add(const struct rec *rc)
{
	if (cache_len + CACHED_LEN(rc->caplen) > CACHE_MAX) {
		cache_drop();
		return;
	}
	while (cache_len + CACHED_LEN(rc->caplen) > cache_cap) {
		cache_cap = cache_cap ? cache_cap * 2 : 65536;
		if ((cache = realloc(cache, cache_cap)) == NULL)
			err(1, NULL);
	}
	memcpy(cache + cache_len, rc, sizeof(*rc));
	memcpy(cache + cache_len + sizeof(*rc), rc->data, rc->caplen);
	cache_len += CACHED_LEN(rc->caplen);
}

/* Open the file for a pass; -1 with the reason in msg. */
static int
open_file(char *msg, size_t len)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	const char *lt;
	FILE *fp;

	/* Opening the file ourselves makes every message name it. */
	if (from_stdin)
		fp = stdin;
	else if ((fp = fopen(file, "rbe")) == NULL) {
		snprintf(msg, len, "%s: %s", file, strerror(errno));
		return -1;
	}
	pc = pcap_fopen_offline_with_tstamp_precision(fp,
	    PCAP_TSTAMP_PRECISION_NANO, errbuf);
	if (pc == NULL) {
		snprintf(msg, len, "%s: %s", file, errbuf);
		if (fp != stdin)
			fclose(fp);
		return -1;
	}
	if (!linktype_known(dlt = pcap_datalink(pc))) {
		lt = pcap_datalink_val_to_name(dlt);
		snprintf(msg, len, "%s: link type %s (%d) is not supported "
		    "(" LINKTYPE_NAMES " are)", file, lt ? lt : "unknown",
		    dlt);
		pcap_close(pc);
		pc = NULL;
		return -1;
	}
	return 0;
}

/* Back to the start of the stream (init, stop, the fuzzer's runs). */
static void
stream_reset(void)
{
	if (pc != NULL)
		pcap_close(pc);
	pc = NULL;
	cache_drop();
	pass = pass_sent = pass_skipped = 0;
	pass_len = pass_oversize = 0;
	pass_nonether = pass_nonether0 = 0;
	ended = 0;
	cur = 0;
	caching = loops != 1;
}

/*
 * The next record of this pass to send: 1, 0 at the end of the pass, -1
 * on a read error (pcap_geterr() says which).  Records larger than the
 * output's capacity are skipped and counted here, so that the sequence
 * of records sent depends on the file and the capacity alone.
 */
static int
read_record(struct rec *rc)
{
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned type;
	int rv;

	if (cached) {
		if (cur == cache_len)
			return 0;
		memcpy(rc, cache + cur, sizeof(*rc));
		rc->data = cache + cur + sizeof(*rc);
		cur += CACHED_LEN(rc->caplen);
		pass_sent++;
		return 1;
	}
	for (;;) {
		if ((rv = pcap_next_ex(pc, &h, &data)) == PCAP_ERROR_BREAK)
			return 0;
		if (rv != 1)
			return -1;
		rc->data = data;
		rc->caplen = h->caplen;
		rc->wirelen = h->len > h->caplen ? h->len : 0;
		/* Another link type: made Ethernet in frame[] (one copy). */
		if (dlt != DLT_EN10MB && (rv = linktype_to_ether(dlt, data,
		    &rc->caplen, frame, cap, &type)) == 0) {
			rc->data = frame;
			if (rc->wirelen)
				rc->wirelen += rc->caplen - h->caplen;
		} else if (rv == LT_TOO_LONG)
			rc->caplen = cap + 1;	/* skipped below */
		else if (rv == LT_NOT_ETHER) {
			(*drop_nonether)++;
			pass_nonether++;
			if (!warned_ne && !quiet)
				warnx("%s: dropping records with no Ethernet "
				    "form (first: protocol 0x%04x)", file,
				    type);
			warned_ne = 1;
			continue;
		}
		if (rc->caplen > cap) {
			(*drop_oversize)++;
			pass_skipped++;
			if (!warned && !quiet)
				warnx("%s: dropping records larger than %u "
				    "bytes (first: %u bytes)", file, cap,
				    h->caplen);
			warned = 1;
			continue;
		}
		/* Nanosecond precision: tv_usec holds nanoseconds. */
		rc->ts_ns = (uint64_t)h->ts.tv_sec * 1000000000ULL +
		    (uint64_t)h->ts.tv_usec;
		pass_sent++;
		if (caching)
			cache_add(rc);
		return 1;
	}
}

/* End of a pass: start the next one (1), or the stream has ended (0). */
static int
next_pass(void)
{
	char msg[PCAP_ERRBUF_SIZE + 256];

	if (cached) {	/* the cache holds no skipped record: count them */
		*drop_oversize += pass_oversize;
		*drop_nonether += pass_nonether0;
	} else if (pass == 0) {
		pass_len = pass_sent;
		pass_oversize = pass_skipped;
		pass_nonether0 = pass_nonether;
	}
	pace_restart(&pace, 0);
	if (pc != NULL)
		pcap_close(pc);
	pc = NULL;
	pass++;
	/* A pass that sent nothing would loop forever doing nothing. */
	if ((loops != 0 && pass >= loops) || pass_sent == 0) {
		ended = 1;
		return 0;
	}
	pass_sent = pass_skipped = pass_nonether = 0;
	if (caching || cached) {	/* from the cache pass 0 filled */
		caching = 0;
		cached = 1;
		cur = 0;
		return 1;
	}
	if (open_file(msg, sizeof(msg)) == -1)
		errx(1, "%s", msg);
	return 1;
}

/*
 * Go through the first k records of the stream without sending them (a
 * resumed reader), whole passes at a time once pass 0 has told how many
 * records a pass sends.  Returns 1, 0 if the stream ends first, -1 on a
 * read error.
 */
static int
skip_records(uint64_t k)
{
	struct rec rc;
	uint64_t w;
	int rv;

	while (k > 0) {
		if ((rv = read_record(&rc)) == 1) {
			k--;
			continue;
		}
		if (rv < 0)
			return -1;
		if (!next_pass())
			return 0;
		/*
		 * At the start of a pass: pass_len > 0, or the stream ended.
		 * Whole passes go at once, their skipped records counted as
		 * next_pass() counts them.
		 */
		w = k / pass_len;
		if (loops != 0 && w > loops - pass)
			w = loops - pass;
		pass += w;
		k -= w * pass_len;
		*drop_oversize += w * pass_oversize;
		*drop_nonether += w * pass_nonether0;
		if (loops != 0 && pass == loops) {
			ended = 1;
			return 0;
		}
	}
	return 1;
}

#define USAGE	"[--loop N] [--timing M | --rate PPS] FILE"

static void
pcap_read_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "loop", required_argument, NULL, 'l' },
		{ "timing", required_argument, NULL, 't' },
		{ "rate", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	char msg[PCAP_ERRBUF_SIZE + 256], *end;
	int ch;

	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			loops = (uint64_t)app_parse_num("--loop", optarg, 0,
			    LLONG_MAX);
			break;
		case 't':
			errno = 0;
			pace.mult = strtod(optarg, &end);
			if (end == optarg || *end != '\0' || errno ||
			    !(pace.mult >= 0.0001 && pace.mult <= 1e6))
				errx(2, "bad --timing '%s': must be a number "
				    "0.0001..1000000", optarg);
			break;
		case 'r':
			pace.pps = (uint64_t)app_parse_num("--rate", optarg, 1,
			    1000000000);
			break;
		default:
			app_usage();
		}
	}
	if (argc - optind != 1)
		app_usage();
	if (pace.mult && pace.pps)
		errx(2, "--timing and --rate are alternatives: give one");
	file = argv[optind];
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
	if (open_file(msg, sizeof(msg)) == -1)
		errx(1, "%s", msg);
	if (fstat(fileno(pcap_file(pc)), &file_st) == -1)
		err(1, "%s", file);
	streaming = !S_ISREG(file_st.st_mode);
}

/*
 * Could reading the next record block (a pipe's writer has not written
 * it yet)?  Not while libpcap's stdio buffer holds bytes: a writer that
 * writes whole records (tcpdump -U, pcap-write) has written the rest of
 * that one.  So the records read so far are published, and the peer
 * woken, once per refill of the buffer, not once per record.  (glibc's
 * FILE says how much it holds, as gnulib's freadahead() reads it;
 * elsewhere every record is taken to block.)
 */
static int
may_block(void)
{
#ifdef __GLIBC__
	FILE *fp = pcap_file(pc);

	return fp->_IO_read_ptr >= fp->_IO_read_end;
#else
	return 1;
#endif
}

/* Does the handed-over state describe the stream we would read? */
static int
same_stream(const struct read_state *st)
{
	if (st->magic != READ_MAGIC || st->from_stdin != (uint32_t)from_stdin)
		return 0;
	return from_stdin || (st->dev == (uint64_t)file_st.st_dev &&
	    st->ino == (uint64_t)file_st.st_ino &&
	    st->size == (uint64_t)file_st.st_size);
}

static void
pcap_read_start(void)
{
	struct read_state *st = app_state(sizeof(*st));
	struct ring *r = &out->rings[0];
	char msg[PCAP_ERRBUF_SIZE + 256];
	uint64_t pos, k;
	int rv;

	/* The pace starts now, also for a successor: no burst to catch up. */
	pace_restart(&pace, app_now_ns());
	/* What this output has carried so far (see the top of the file). */
	pos = r->head;
	if (r->shm->hdr.flags & RING_FLAG_LEAKY)
		pos += atomic_load(&r->shm->prod.drops);
	if (app_resumed() && same_stream(st) && pos >= st->base) {
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
	memset(st, 0, sizeof(*st));
	st->magic = READ_MAGIC;
	st->from_stdin = (uint32_t)from_stdin;
	st->base = pos;
	st->dev = (uint64_t)file_st.st_dev;
	st->ino = (uint64_t)file_st.st_ino;
	st->size = (uint64_t)file_st.st_size;
	st->packets0 = *packets;
	st->drops0 = *drop_oversize;
	st->nonether0 = *drop_nonether;
	app_state_commit();
	if (from_stdin && open_file(msg, sizeof(msg)) == -1)
		errx(1, "%s", msg);
	if (from_stdin)
		streaming = 1;
}

/* A record, its bytes at data, into an output slot. */
static void
put_rec(struct packet *p, const struct rec *rc, const void *data)
{
	p->len = (uint16_t)rc->caplen;
	p->flags = 0;
	p->wirelen = rc->wirelen;
	p->ts_ns = rc->ts_ns;
	memcpy(p->data, data, rc->caplen);
}

/*
 * --loop's later passes: up to n records from the cache into the slots,
 * pass after pass.  A pass with nothing to count (no skipped record) that
 * is not the last begins with a compare and a store, in locals: the
 * bench captures are one record long, a pass per packet, and cost what a
 * long capture costs per packet.  Returns the records sent, adds their
 * bytes to *bytes; the stream may have ended (ended).
 */
static uint32_t
replay_cached(struct ring *r, uint32_t n, uint64_t *bytes)
{
	const unsigned char *base = cache;
	const struct rec *c;
	size_t at = cur, len = cache_len;
	uint64_t b = 0, more = 0, passes = 0;	/* more: passes to begin here */
	uint32_t i;

	if (pass_oversize == 0 && pass_nonether0 == 0)
		more = loops == 0 ? UINT64_MAX : loops - pass - 1;
	for (i = 0; i < n; i++) {
		if (at == len) {
			if (passes < more) {
				passes++;
				at = 0;
			} else {
				pass += passes;
				passes = more = 0;
				pass_sent = pass_len;	/* a whole pass */
				if (!next_pass()) {
					app_done();
					break;
				}
				at = cur;
			}
		}
		c = (const struct rec *)(base + at);
		put_rec(ring_slot(r, i), c, c + 1);
		b += c->caplen;
		at += CACHED_LEN(c->caplen);
	}
	pass += passes;
	cur = at;
	*bytes += b;
	return i;
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
	if ((n = ring_room(r, APP_BURST)) > APP_BURST)
		n = APP_BURST;
	if (PACED)
		now = app_now_ns();	/* once a breath: a vDSO read */
	/* Unpaced --loop passes from the cache: the bench's fast path. */
	if (cached && !PACED)
		i = replay_cached(r, n, &bytes);
	while (i < n && !(cached && !PACED)) {
		if (held)
			held = 0;	/* rc is the record read before */
		else {
			/* A pipe's next record may be long in coming:
			 * publish what we hold before a read that may wait
			 * for it, not with a burst still to fill. */
			if (streaming && may_block()) {
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
				ring_close_failed(r);
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
		ring_close_failed(&out->rings[0]);
		exit(1);
	}
}

static const struct app_desc desc = {
	.name = "pcap-read",
	.usage = USAGE,
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
