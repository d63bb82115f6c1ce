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

static const char *name;	/* the file, for messages */
static pcap_t *pd;
static pcap_dumper_t *dumper;
static FILE *fp;
static int ts_mode = TS_KEEP, dirty, first_ring;
static uint64_t *packets, *bytes;
static struct port *in;

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

static void
pcap_write_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timestamps", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	const char *file;
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
	file = argv[optind];
	packets = app_counter("packets");
	bytes = app_counter("bytes");
	/* Open the file ourselves so that every message names it. */
	if (strcmp(file, "-") == 0) {
		name = "stdout";
		fp = stdout;
	} else {
		name = file;
		if (app_resumed() && resume(file))
			return;
		if ((fp = fopen(file, "wbe")) == NULL)
			err(1, "%s", file);
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
	struct pcap_pkthdr h;
	uint32_t n, i, len;
	uint64_t ts;
	int j, total = 0;

	if (in == NULL && (in = app_port("in")) == NULL)
		errx(1, "input port 'in' is not connected");
	/* Start with a different input ring each breath: fan-in fairness. */
	for (j = 0; j < in->nrings; j++) {
		struct ring *r = &in->rings[(first_ring + j) % in->nrings];

		if ((n = ring_avail(r, APP_BURST)) > APP_BURST)
			n = APP_BURST;
		for (i = 0; i < n; i++) {
			struct packet *p = ring_peek(r, i);

			/* Read once: the producer could change it under us. */
			len = packet_len(r, p);
			ts = ts_mode == TS_ZERO ? 0 : ts_mode == TS_NOW ||
			    p->ts_ns == 0 ? realtime_ns() : p->ts_ns;
			h.ts.tv_sec = (time_t)(ts / 1000000000ULL);
			h.ts.tv_usec = (suseconds_t)(ts % 1000000000ULL / 1000);
			h.caplen = len;
			h.len = p->wirelen ? p->wirelen : len;
			pcap_dump((u_char *)dumper, &h, p->data);
			*bytes += len;
		}
		/* errno still holds the failed write's reason here. */
		if (ferror(fp))
			err(1, "%s: write error", name);
		ring_release(r, n);
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
