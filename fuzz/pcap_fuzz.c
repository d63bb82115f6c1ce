/*
 * pcap_fuzz: libFuzzer target for capture input: snb-pcap-read's reading
 * path (apps/pcap-read/stream.c, included) and snb-pcap-write's scanner
 * of a file to continue (apps/pcap-write/, included in a second
 * compilation of this file, -DPCAP_FUZZ_WRITE: it has a main, ports and
 * desc).
 *
 * Build and run (from the repository root; `make fuzz` does this):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring -DPCAP_FUZZ_WRITE \
 *	    -c fuzz/pcap_fuzz.c -o build/pcap_fuzz_write.o
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring fuzz/pcap_fuzz.c \
 *	    build/pcap_fuzz_write.o (every libring .c file) -lpcap -lbsd \
 *	    -o build/fuzz_pcap
 *	mkdir -p build/fuzz-pcap-corpus
 *	build/fuzz_pcap -max_total_time=600 build/fuzz-pcap-corpus \
 *	    fuzz/corpus/pcap
 *
 * Input: byte 0 the --loop count (mod 5, 0 = forever), byte 1 the ring
 * capacity in units of 64 bytes (records above it are skipped), bytes 2-3
 * where a resumed reader takes over, then the capture file (pcap or
 * pcapng, any byte order and precision: libpcap decides).
 *
 * Beyond "no crash": the stream is read twice, once whole (up to LIMIT
 * records) and once by a reader resumed after k records (skip_records(),
 * whole passes at a time); from k on both must send the same records,
 * end the same way, and count the same skipped records.  The writer's
 * scanner must return a length inside the file, made of whole records,
 * that it returns again for the file cut there.
 */
#define _GNU_SOURCE	/* memfd_create */
#include <sys/mman.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIMIT	4096	/* records of an endless (--loop 0) stream */

#ifdef PCAP_FUZZ_WRITE

#define main snb_pcap_write_main
#include "../apps/pcap-write/main.c"
#undef main
#include "../apps/pcap-write/output.c"

void
fuzz_write_scanner(const uint8_t *data, size_t size)
{
	static const uint32_t magics[] = { PCAP_MAGIC_US, PCAP_MAGIC_NS };
	uint32_t rec[4];
	off_t whole, off;
	int f, m;

	if ((f = memfd_create("pcap-write", 0)) == -1)
		abort();
	if (size > 0 && write(f, data, size) != (ssize_t)size)
		abort();
	for (m = 0; m < 2; m++) {
		if ((whole = pcap_whole(f, (off_t)size, magics[m])) == -1)
			continue;
		if (whole < HDR_LEN || whole > (off_t)size)
			abort();
		/* Whole records, one after the other, up to exactly there. */
		for (off = HDR_LEN; off < whole; off += REC_HDR + (off_t)rec[2])
			if (pread(f, rec, sizeof(rec), off) !=
			    (ssize_t)sizeof(rec))
				abort();
		if (off != whole)
			abort();
		if (ftruncate(f, whole) == -1 ||
		    pcap_whole(f, whole, magics[m]) != whole)
			abort();
	}
	close(f);
}

#else	/* the reader, and the fuzzer's entry point */

#include "../apps/pcap-read/stream.c"

void	fuzz_write_scanner(const uint8_t *, size_t);

struct seen {
	uint32_t	caplen, wirelen;
	uint64_t	ts_ns, hash;
};
static struct seen seen[LIMIT];
static uint64_t drops;
static char path[64];
static int memfd = -1;

static uint64_t
hash(const unsigned char *p, uint32_t len)
{
	uint64_t h = 14695981039346656037ULL;

	while (len--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
}

/* The breath's loop without the ring: 1 a record, 0 the end, -1 error. */
static int
stream_next(struct rec *rc)
{
	int rv;

	for (;;) {
		if ((rv = read_record(rc)) != 0)
			return rv;
		if (!next_pass())
			return 0;
	}
}

/* From the start of the stream; 0 when the file does not open. */
static int
begin(void)
{
	stream_reset();
	drops = 0;
	return open_file(0) == 0;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if ((memfd = memfd_create("pcap-read", 0)) == -1)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	file = path;
	drop_oversize = &drops;
	drop_nonether = &drops;
	if ((frame = malloc(256 * 64)) == NULL)	/* the largest cap */
		abort();
	warned = warned_ne = 1;	/* no warning on every input */
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec rc;
	uint64_t k, total_drops = 0;
	size_t n = 0, i;
	int end = 1, rv;

	if (size < 4)
		return 0;
	fuzz_write_scanner(data + 4, size - 4);
	loops = data[0] % 5;
	cap = (uint32_t)data[1] * 64;
	if (ftruncate(memfd, 0) == -1 || pwrite(memfd, data + 4, size - 4, 0)
	    != (ssize_t)(size - 4))
		abort();

	/* Once whole. */
	if (!begin())
		return 0;
	while (n < LIMIT && (end = stream_next(&rc)) == 1) {
		if (rc.caplen > cap)
			abort();
		seen[n].caplen = rc.caplen;
		seen[n].wirelen = rc.wirelen;
		seen[n].ts_ns = rc.ts_ns;
		seen[n].hash = hash(rc.data, rc.caplen);
		n++;
	}
	if (n < LIMIT)
		total_drops = drops;

	/* Resumed after k records: the same from there. */
	k = (((uint64_t)data[2] << 8) | data[3]) % (n + 1);
	if (!begin())
		abort();
	quiet = 1;
	rv = skip_records(k);
	quiet = 0;
	/* Those k records were read once already: no error, no end. */
	if (rv == -1 || (rv == 0 && (k != n || end != 0)))
		abort();
	for (i = k; rv == 1 && i < n; i++) {
		if (stream_next(&rc) != 1 || rc.caplen != seen[i].caplen ||
		    rc.wirelen != seen[i].wirelen ||
		    rc.ts_ns != seen[i].ts_ns ||
		    hash(rc.data, rc.caplen) != seen[i].hash)
			abort();
	}
	if (n < LIMIT) {
		if (rv == 1 && stream_next(&rc) != end)
			abort();
		if (end == 0 && drops != total_drops)
			abort();
	}
	stream_reset();
	return 0;
}

#endif
