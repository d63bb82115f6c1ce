/*
 * esp_bench: snb-esp's per-packet work alone (apps/esp/crypt.c), the
 * way Snabb's `snabbmark esp N SIZE tunnel encapsulate|decapsulate`
 * measures its own: a frame of SIZE bytes (Ethernet 14, IPv6 40,
 * payload), its IPv6 packet encapsulated (or one such ESP packet
 * decapsulated) again and again, Gbit/s = SIZE * 8 * packets / time.
 * Time is this process's CPU time, as `openssl speed` divides by (CPU
 * user time): per core, whatever else the machine runs.
 *
 *	esp_bench [--packets N] SIZE...
 *
 * Decapsulation takes distinct sequence numbers (a set of 1024 packets
 * encrypted beforehand, the window set back between rounds), so every
 * packet passes the window and the ICV as a real stream's would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../apps/esp/crypt.c"
#include "../tests/unit/util.h"

#define SET	1024

static struct esp_sa *
mksa(enum esp_dir dir)
{
	static const uint8_t key[16] = "0123456789abcdef";
	struct esp_sa *sa = calloc(1, sizeof(*sa));

	sa->dir = dir;
	sa->spi = 0x1001;
	memcpy(sa->key, key, 16);
	replay_init(&sa->replay, ESP_WINDOW_DEFAULT, 0);
	if (esp_sa_cipher(sa) == -1)
		abort();
	return sa;
}

int
main(int argc, char **argv)
{
	static uint8_t in[2048], out[2048];
	static uint8_t (*set)[2048];
	long n = 2000000;
	int a = 1;

	if (argc > 2 && strcmp(argv[1], "--packets") == 0) {
		n = atol(argv[2]);
		a = 3;
	}
	if (a >= argc || n <= 0) {
		fprintf(stderr, "usage: esp_bench [--packets N] SIZE...\n");
		return 2;
	}
	set = malloc(SET * sizeof(*set));
	for (; a < argc; a++) {
		uint32_t size = (uint32_t)atoi(argv[a]), len, elen = 0;
		struct esp_sa *e = mksa(ESP_OUT), *d = mksa(ESP_IN);
		double t0, te, td;
		long i;

		if (size < 14 + 40 || size > 1600) {
			fprintf(stderr, "esp_bench: size %u: 54..1600\n", size);
			return 2;
		}
		len = size - 14;
		memset(in, 0, len);
		in[0] = 0x60;
		in[4] = (uint8_t)((len - 40) >> 8);
		in[5] = (uint8_t)(len - 40);
		t0 = cpu();
		for (i = 0; i < n; i++)
			esp_encap(e, in, len, out);
		te = cpu() - t0;
		for (i = 0; i < SET; i++)
			elen = esp_encap(e, in, len, set[i]);
		t0 = cpu();
		for (i = 0; i < n; i++) {
			uint32_t olen;

			if (i % SET == 0)
				replay_init(&d->replay, ESP_WINDOW_DEFAULT,
				    (uint64_t)n);	/* the set: n+1.. */
			if (esp_decap(d, set[i % SET], elen, out, &olen) !=
			    ESP_OK || olen != len) {
				fprintf(stderr, "esp_bench: decap failed\n");
				return 1;
			}
		}
		td = cpu() - t0;
		printf("esp_bench size=%-4u encap %6.2f Gbit/s (%.2f Mpps)  "
		    "decap %6.2f Gbit/s (%.2f Mpps)\n", size,
		    size * 8.0 * n / te / 1e9, n / te / 1e6,
		    size * 8.0 * n / td / 1e9, n / td / 1e6);
	}
	return 0;
}
