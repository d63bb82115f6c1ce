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
#include "fuzz.h"

#define main lwaftr_main
#include "../apps/lwaftr/main.c"
#undef main

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *names[2] = { "v4", "v6" };
	const char *conf = getenv("FUZZ_CONF");
	char *av[] = { "lwaftr", "--deterministic", NULL, NULL };

	(void)argc;
	(void)argv;
	av[2] = (char *)(conf ? conf :
	    "../shared/conformance/lwaftr/tunnel_icmp_withoutmac.conf");
	optind = 1;
	lw_init(3, av);
	fuzz_ports(names, 2, RING_DEFAULT_CAPACITY);	/* no stage file:
							   nothing published */
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	fuzz_frames(d, n, lw_breathe);
	return 0;
}
