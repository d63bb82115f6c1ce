/*
 * lwaftr_frames_fuzz: libFuzzer target feeding arbitrary frames to both
 * ports of the lwAFTR data path (the real main.c, driven breath by breath
 * through in-process rings).
 *
 * Build and run (from the repository root; `make fuzz` does both):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring -Iapps/lwaftr \
 *	    fuzz/lwaftr_frames_fuzz.c apps/lwaftr/bt.c apps/lwaftr/btlookup.c \
 *	    apps/lwaftr/btedit.c \
 *	    apps/lwaftr/conf.c apps/lwaftr/ctl.c \
 *	    apps/lwaftr/icmp.c apps/lwaftr/rx.c apps/lwaftr/tx.c \
 *	    apps/lwaftr/xlate.c libring/[a-z]*.c -lpcap -lbsd -o build/fuzz_frames
 *	FUZZ_CONF=../shared/conformance/lwaftr/tunnel_icmp_withoutmac.conf \
 *	    build/fuzz_frames -max_total_time=600 build/fuzz-frames-corpus
 *
 * An input is a sequence of records [side:1][len:2, little endian][bytes]:
 * bit 0 of side picks v4 or v6, bit 7 asks for a breath after the frame.
 * Outputs are drained and their lengths checked after every breath.
 */
#include <unistd.h>

#include <bsd/string.h>

#define main lwaftr_main
#include "../apps/lwaftr/main.c"
#undef main

static struct ring in4_p, in4_c, in6_p, in6_c, out4_p, out4_c, out6_p, out6_c;

/* A ring private to this process: both ends attached, file unlinked. */
static void
make_ring(const char *name, struct ring *prod, struct ring *cons)
{
	char path[256], eb[256];

	snprintf(path, sizeof(path), "/dev/shm/snb-fuzz-%d-%s", getpid(), name);
	unlink(path);
	if (ring_create(path, 512, RING_DEFAULT_CAPACITY, 0) == -1)
		err(1, "%s", path);
	if (ring_attach(prod, path, RING_PRODUCER, eb, sizeof(eb)) == -1 ||
	    ring_attach(cons, path, RING_CONSUMER, eb, sizeof(eb)) == -1)
		errx(1, "%s", eb);
	unlink(path);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *names[4] = { "v4", "v4", "v6", "v6" };
	static const int dirs[4] = { PORT_IN, PORT_OUT, PORT_IN, PORT_OUT };
	struct ring *rings[4] = { &in4_c, &out4_p, &in6_c, &out6_p };
	const char *conf = getenv("FUZZ_CONF");
	char *av[] = { "lwaftr", "--deterministic", NULL, NULL };
	int i;

	(void)argc;
	(void)argv;
	av[2] = (char *)(conf ? conf :
	    "../shared/conformance/lwaftr/tunnel_icmp_withoutmac.conf");
	optind = 1;
	lw_init(3, av);
	make_ring("in4", &in4_p, &in4_c);
	make_ring("in6", &in6_p, &in6_c);
	make_ring("out4", &out4_p, &out4_c);
	make_ring("out6", &out6_p, &out6_c);
	if ((app_ports = calloc(4, sizeof(struct port))) == NULL)
		err(1, NULL);
	app_nports = 4;
	for (i = 0; i < 4; i++) {
		strlcpy(app_ports[i].name, names[i], sizeof(app_ports[i].name));
		app_ports[i].flags = dirs[i];
		app_ports[i].nrings = 1;
		app_ports[i].rings = rings[i];
	}
	stage.npub = STAGE_MAX_COUNTERS;	/* no stage file here */
	return 0;
}

static void
drain(struct ring *r)
{
	uint32_t n = ring_avail(r, 512), i;

	for (i = 0; i < n; i++)
		if (ring_peek(r, i)->len > RING_DEFAULT_CAPACITY)
			abort();
	ring_release(r, n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct ring *p;
	size_t off = 0, len;
	int queued = 0, side, breathe;

	while (off + 3 <= n) {
		side = d[off] & 1;
		breathe = d[off] & 0x80;
		len = (size_t)d[off + 1] | (size_t)d[off + 2] << 8;
		off += 3;
		if (len > n - off)
			len = n - off;
		if (len > RING_DEFAULT_CAPACITY)
			len = RING_DEFAULT_CAPACITY;
		p = side ? &in6_p : &in4_p;
		if (ring_room(p, 1) > 0) {
			ring_put(p, 0, d + off, (uint16_t)len);
			ring_commit(p, 1);
			queued++;
		}
		off += len;
		if (breathe || queued >= 60) {
			lw_breathe();
			drain(&out4_c);
			drain(&out6_c);
			queued = 0;
		}
	}
	lw_breathe();
	drain(&out4_c);
	drain(&out6_c);
	return 0;
}
