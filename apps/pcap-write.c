/*
 * snb-pcap-write: write the packets reaching it to a pcap file (or to
 * standard output with "-"), in the classic microsecond format tcpdump
 * writes by default.  Truncated packets keep their original length.  The
 * file is flushed whenever the stage idles and closed complete both at end
 * of stream and on SIGTERM.
 */
#include <sys/stat.h>

#include <err.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "app.h"

enum { TS_KEEP, TS_ZERO, TS_NOW };

static const char *path;	/* FILE as given */
static const char *name;	/* the file, for messages */
static pcap_t *pd;
static pcap_dumper_t *dumper;
static FILE *fp;
static int ts_mode = TS_KEEP, dirty, first_ring;
static uint64_t *packets, *bytes;
static struct port *in;
static unsigned char *burst;	/* a burst's records, see the breath */

/*
 * A restarted or swapped-in writer continues the file its predecessor
 * wrote instead of starting it again.  A predecessor killed in the middle
 * of a write may have left half a record: cut the file after the last
 * whole one.  The file is then written with O_APPEND, so the records a
 * retiring writer flushes as it detaches can never be overwritten by ours.
 * Returns 0 when there is nothing to continue (no file, or an empty one).
 */
static int
resume(const char *file)
{
	uint32_t h[6], rec[4];
	off_t off = 24;
	struct stat st;
	int fd;

	if ((fd = open(file, O_RDWR | O_CLOEXEC)) == -1 || fstat(fd, &st) == -1
	    || st.st_size == 0) {
		if (fd != -1)
			close(fd);
		return 0;
	}
	if (pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h[0] != 0xa1b2c3d4 || h[5] != DLT_EN10MB)
		errx(1, "%s: not a microsecond Ethernet pcap file to continue",
		    file);
	while (off + 16 <= st.st_size &&
	    pread(fd, rec, sizeof(rec), off) == (ssize_t)sizeof(rec) &&
	    off + 16 + (off_t)rec[2] <= st.st_size)
		off += 16 + (off_t)rec[2];
	if (off < st.st_size) {
		warnx("%s: cut a torn record at the end (%lld bytes)", file,
		    (long long)(st.st_size - off));
		if (ftruncate(fd, off) == -1)
			err(1, "%s", file);
	}
	close(fd);
	pd = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 262144,
	    PCAP_TSTAMP_PRECISION_MICRO);
	if (pd == NULL)
		errx(1, "pcap_open_dead failed");
	if ((dumper = pcap_dump_open_append(pd, file)) == NULL)
		errx(1, "%s: %s", file, pcap_geterr(pd));
	fp = pcap_dump_file(dumper);
	if (fcntl(fileno(fp), F_SETFL, O_APPEND) == -1)
		err(1, "%s", file);
	return 1;
}

static void	open_output(void);

static void
pcap_write_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timestamps", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

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
	packets = app_counter("packets");
	bytes = app_counter("bytes");
	/*
	 * A replacement (swap) is started while the stage it replaces still
	 * writes the file: it must not look at the file before its first
	 * breath, which comes only after the old stage has detached and
	 * flushed.  A fresh writer opens at once, so a bad path fails early.
	 */
	if (!app_resumed() || strcmp(path, "-") == 0)
		open_output();
}

/* Open path (see resume()), for good: dumper is set from here on. */
static void
open_output(void)
{
	/* Open the file ourselves so that every message names it. */
	if (strcmp(path, "-") == 0) {
		name = "stdout";
		fp = stdout;
	} else {
		name = path;
		if (app_resumed() && resume(path))
			return;
		if ((fp = fopen(path, "wbe")) == NULL)
			err(1, "%s", path);
	}
	pd = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 262144,
	    PCAP_TSTAMP_PRECISION_MICRO);
	if (pd == NULL)
		errx(1, "pcap_open_dead failed");
	if ((dumper = pcap_dump_fopen(pd, fp)) == NULL)
		errx(1, "%s: %s", name, pcap_geterr(pd));
	dirty = 1;	/* the file header */
}

static void
flush(void)
{
	if (pcap_dump_flush(dumper) == -1 || ferror(fp))
		err(1, "%s: write error", name);
	dirty = 0;
}

static uint64_t
realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int
pcap_write_breathe(void)
{
	uint32_t n, i, len, h[4];
	uint64_t ts;
	size_t off;
	int j, total = 0;

	if (in == NULL && (in = app_port("in")) == NULL)
		errx(1, "input port 'in' is not connected");
	if (dumper == NULL)
		open_output();
	if (burst == NULL) {
		/* Room for a whole burst of the largest packets. */
		for (j = 0, len = 0; j < in->nrings; j++)
			if (in->rings[j].capacity > len)
				len = in->rings[j].capacity;
		if ((burst = malloc((size_t)APP_BURST * (16 + len))) == NULL)
			err(1, NULL);
	}
	/* Start with a different input ring each breath: fan-in fairness. */
	for (j = 0; j < in->nrings; j++) {
		struct ring *r = &in->rings[(first_ring + j) % in->nrings];

		if ((n = ring_avail(r, APP_BURST)) > APP_BURST)
			n = APP_BURST;
		if (n == 0)
			continue;
		/*
		 * Records go into our own buffer and reach the file only after
		 * the slots are released: a writer killed in between loses
		 * them, but a restarted one can never write them twice.
		 */
		for (i = 0, off = 0; i < n; i++) {
			struct packet *p = ring_peek(r, i);

			/* Read once: the producer could change it under us. */
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
			*bytes += len;
		}
		ring_release(r, n);
		/* errno holds the failed write's reason here. */
		if (fwrite(burst, 1, off, fp) != off || ferror(fp))
			err(1, "%s: write error", name);
		*packets += n;
		total += (int)n;
	}
	if (in->nrings > 0)
		first_ring = (first_ring + 1) % in->nrings;
	if (total > 0)
		dirty = 1;
	else if (dirty)
		flush();	/* idle: let readers of the file catch up */
	return total;
}

static void
pcap_write_stop(int eof)
{
	if (dumper == NULL)	/* detached before its first breath */
		return;
	flush();
	pcap_dump_close(dumper);
	pcap_close(pd);
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
	.breathe = pcap_write_breathe,
	.stop = pcap_write_stop,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
