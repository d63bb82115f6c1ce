/*
 * The records snb-pcap-read sends, in order: the file read pass after
 * pass (--loop), records the output cannot take skipped and counted, a
 * resumed reader's first records gone through unsent, and --loop's later
 * passes replayed from memory.  main.c is the stage around it (options,
 * the hand-over, the breath).  fuzz/pcap_fuzz.c drives this file alone.
 */
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcap-read.h"

const char *file;
int from_stdin, ended, quiet, warned, warned_ne;
pcap_t *pc;
uint32_t cap;
uint64_t loops = 1;
uint64_t *drop_oversize, *drop_nonether;
unsigned char *frame;
struct pace pace;
static uint64_t pass, pass_sent, pass_skipped;
static uint64_t pass_len, pass_oversize;	/* pass 0's figures once */
static uint64_t pass_nonether0, pass_nonether;	/* it ended; this pass's */
static int dlt;			/* the file's link type */

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
static int caching;
int cached;

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

/* Open the file for a pass; on failure, exit 1 if fatal, else -1. */
int
open_file(int fatal)
{
	char errbuf[PCAP_ERRBUF_SIZE], msg[PCAP_ERRBUF_SIZE + 256];
	const char *lt;
	FILE *fp;

	/* Opening the file ourselves makes every message name it. */
	if (from_stdin)
		fp = stdin;
	else if ((fp = fopen(file, "rbe")) == NULL) {
		snprintf(msg, sizeof(msg), "%s: %s", file, strerror(errno));
		goto fail;
	}
	pc = pcap_fopen_offline_with_tstamp_precision(fp,
	    PCAP_TSTAMP_PRECISION_NANO, errbuf);
	if (pc == NULL) {
		snprintf(msg, sizeof(msg), "%s: %s", file, errbuf);
		if (fp != stdin)
			fclose(fp);
		goto fail;
	}
	if (linktype_known(dlt = pcap_datalink(pc)))
		return 0;
	lt = pcap_datalink_val_to_name(dlt);
	snprintf(msg, sizeof(msg), "%s: link type %s (%d) is not supported "
	    "(" LINKTYPE_NAMES " are)", file, lt ? lt : "unknown", dlt);
	pcap_close(pc);
	pc = NULL;
fail:
	if (fatal)
		errx(1, "%s", msg);
	return -1;
}

/* Back to the start of the stream (init, stop, the fuzzer's runs). */
void
stream_reset(void)
{
	if (pc != NULL)
		pcap_close(pc);
	pc = NULL;
	cache_drop();
	pass = pass_sent = pass_skipped = pass_len = pass_oversize = 0;
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
int
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
int
next_pass(void)
{
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
	open_file(1);
	return 1;
}

/*
 * Go through the first k records of the stream without sending them (a
 * resumed reader), whole passes at a time once pass 0 has told how many
 * records a pass sends.  Returns 1, 0 if the stream ends first, -1 on a
 * read error.
 */
int
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

/*
 * Could reading the next record block (a pipe's writer has not written
 * it yet)?  Not while libpcap's stdio buffer holds bytes: a writer that
 * writes whole records (tcpdump -U, pcap-write) has written the rest of
 * that one.  So the records read so far are published, and the peer
 * woken, once per refill of the buffer, not once per record.  (glibc's
 * FILE says how much it holds, as gnulib's freadahead() reads it;
 * elsewhere every record is taken to block.)
 */
int
may_block(void)
{
#ifdef __GLIBC__
	FILE *fp = pcap_file(pc);

	return fp->_IO_read_ptr >= fp->_IO_read_end;
#else
	return 1;
#endif
}

/*
 * --loop's later passes: up to n records from the cache into the slots,
 * pass after pass.  A pass with nothing to count (no skipped record) that
 * is not the last begins with a compare and a store, in locals: the
 * bench captures are one record long, a pass per packet, and cost what a
 * long capture costs per packet.  Returns the records sent, adds their
 * bytes to *bytes; the stream may have ended (ended).
 */
uint32_t
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
