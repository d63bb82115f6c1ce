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

#include "fuzz.h"
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

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if ((app_stage = calloc(1, sizeof(*app_stage))) == NULL)
		err(1, NULL);
	/* Slots of 2048 bytes: an encapsulation that does not fit is
	 * counted, a case to reach too. */
	fuzz_ports(pnames, NPORTS, 2048);
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
		const char *conf = getenv("FUZZ_PW_CONF");
		char *av[] = { "x", (char *)(conf ? conf : "fuzz/l2vpn.conf"),
		    NULL };

#if !defined(FUZZ_GRE)
		snprintf(app_stage->app, sizeof(app_stage->app), "l2tp");
#endif
		pwstage_init(2, av);
	}
#endif
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	fuzz_frames(d, n, BREATHE);
	return 0;
}
#endif
