/*
 * l2vpn_fuzz: libFuzzer target feeding arbitrary frames to every port of
 * the L2 VPN's stages, the real code driven breath by breath through
 * in-process rings:
 *
 *	-DFUZZ_L2TP	libring/pwstage.c as snb-l2tp (fuzz/l2vpn.conf)
 *	-DFUZZ_GRE	the same as snb-gre
 *	-DFUZZ_ND	apps/nd.c (resolving a next hop)
 *	-DFUZZ_CONF	the pseudowire configuration reader: the input is
 *			the file
 *
 * Build and run (from the repository root; `make fuzz` does both):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring -DFUZZ_L2TP \
 *	    fuzz/l2vpn_fuzz.c libring/[a-z]*.c -lpcap -lbsd -o build/fuzz_l2tp
 *	build/fuzz_l2tp -max_total_time=600 build/fuzz-l2tp-corpus
 *
 * An input is a sequence of records [port:1][len:2, little endian]
 * [bytes]: the low bits of port pick the input port, bit 7 asks for a
 * breath after the frame.  Outputs are drained and their lengths checked
 * after every breath; the runtime's clock is the real one.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

#include "stage.h"

#if defined(FUZZ_CONF)
#include "pwconf.h"

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct pw_conf c;
	char e[256], *text;

	if ((text = malloc(n + 1)) == NULL)
		return 0;
	memcpy(text, d, n);
	text[n] = '\0';
	if (pw_conf_parse(&c, text, n, "f", e, sizeof(e)) == 0) {
		if (c.npw == 0 || c.npw > PW_MAX)
			abort();
		pw_conf_free(&c);
	}
	free(text);
	return 0;
}
#else

#if defined(FUZZ_ND)
#define main nd_main
#include "../apps/nd.c"
#undef main
static const char *pnames[] = { "north", "south" };
#define NPORTS	2
#define BREATHE	nd_breathe
#else
#include "pwstage.h"
/* fuzz/l2vpn.conf's pseudowires of each kind, and one unbound. */
#if defined(FUZZ_GRE)
static const char *pnames[] = { "core", "c", "d" };
#else
static const char *pnames[] = { "core", "b", "e" };
#endif
#define NPORTS	3
#define BREATHE	pwstage_breathe
#endif

static struct ring inp[NPORTS], inc[NPORTS], outp[NPORTS], outc[NPORTS];

/* A ring private to this process: both ends attached, file unlinked. */
static void
make_ring(const char *name, int i, struct ring *prod, struct ring *cons)
{
	char path[256], eb[256];

	snprintf(path, sizeof(path), "/dev/shm/snb-fuzz-%d-%s%d", getpid(),
	    name, i);
	unlink(path);
	/* Slots of 2048 bytes: an encapsulation that does not fit is
	 * counted, a case to reach too. */
	if (ring_create(path, 512, 2048, 0) == -1)
		err(1, "%s", path);
	if (ring_attach(prod, path, RING_PRODUCER, eb, sizeof(eb)) == -1 ||
	    ring_attach(cons, path, RING_CONSUMER, eb, sizeof(eb)) == -1)
		errx(1, "%s", eb);
	unlink(path);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *conf = getenv("FUZZ_PW_CONF");
	int i;

	(void)argc;
	(void)argv;
	if ((app_stage = calloc(1, sizeof(*app_stage))) == NULL ||
	    (app_ports = calloc(2 * NPORTS, sizeof(struct port))) == NULL)
		err(1, NULL);
	app_nports = 2 * NPORTS;
	for (i = 0; i < NPORTS; i++) {
		make_ring("in", i, &inp[i], &inc[i]);
		make_ring("out", i, &outp[i], &outc[i]);
		strlcpy(app_ports[2 * i].name, pnames[i], sizeof(app_ports[0].name));
		app_ports[2 * i].flags = PORT_IN;
		app_ports[2 * i].nrings = 1;
		app_ports[2 * i].rings = &inc[i];
		strlcpy(app_ports[2 * i + 1].name, pnames[i],
		    sizeof(app_ports[0].name));
		app_ports[2 * i + 1].flags = PORT_OUT;
		app_ports[2 * i + 1].nrings = 1;
		app_ports[2 * i + 1].rings = &outp[i];
	}
	optind = 1;
#if defined(FUZZ_ND)
	{
		char *av[] = { "nd", "--address", "2001:db8::1", "--mac",
		    "02:00:00:00:00:01", "--next-hop", "2001:db8::fe", NULL };

		nd_init(7, av);
		nd_start();
	}
#else
	{
		char *av[] = { "x", (char *)(conf ? conf : "fuzz/l2vpn.conf"),
		    NULL };

#if defined(FUZZ_GRE)
		pwstage_init(PW_GRE, 2, av);
#else
		pwstage_init(PW_L2TP, 2, av);
#endif
	}
#endif
	return 0;
}

static void
drain(void)
{
	uint32_t n, i;
	int k;

	for (k = 0; k < NPORTS; k++) {
		n = ring_avail(&outc[k], 512);
		for (i = 0; i < n; i++)
			if (ring_peek(&outc[k], i)->len > 2048)
				abort();
		ring_release(&outc[k], n);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	size_t off = 0, len;
	int queued = 0, k, breathe;

	while (off + 3 <= n) {
		k = (d[off] & 0x7f) % NPORTS;
		breathe = d[off] & 0x80;
		len = (size_t)d[off + 1] | (size_t)d[off + 2] << 8;
		off += 3;
		if (len > n - off)
			len = n - off;
		if (len > 2048)
			len = 2048;
		if (ring_room(&inp[k], 1) > 0) {
			ring_put(&inp[k], 0, d + off, (uint16_t)len);
			ring_commit(&inp[k], 1);
			queued++;
		}
		off += len;
		if (breathe || queued >= 60) {
			BREATHE();
			drain();
			queued = 0;
		}
	}
	BREATHE();
	drain();
	/* What is left in the inputs (an output was full) goes now. */
	for (k = 0; k < NPORTS; k++)
		if (ring_avail(&inc[k], 1) > 0) {
			BREATHE();
			drain();
		}
	return 0;
}
#endif
