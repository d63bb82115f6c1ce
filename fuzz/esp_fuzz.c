/*
 * esp_fuzz: libFuzzer target for snb-esp's input: the decapsulation of
 * ESP packets (apps/esp/crypt.c, the window of replay.h) and the SA file
 * parser (apps/esp/sa.c).
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring fuzz/esp_fuzz.c \
 *	    libring/cfg.c libring/cfg_read.c -lIPSec_MB -o build/fuzz_esp
 *	build/fuzz_esp -max_total_time=600 build/fuzz-esp-corpus fuzz/corpus/esp
 *
 * The first byte of an input picks what the rest is:
 *	0	an SA file
 *	1	an ESP packet as it comes from the wire, after 10 bytes that
 *		set the window (its size in 64s, its top): almost none pass
 *		the ICV, this is the path before it (lengths, the guess of
 *		the high half, the window checks, a failed ICV's second try)
 *	2	8 bytes of sequence number, 10 of window, then a
 *		plaintext that this target seals with the SA's key (one call
 *		of the library's GCM, not crypt.c's encapsulation): the ICV
 *		holds, and what comes after it (pad length, padding, next
 *		header, the inner packet) sees any bytes
 * The window bytes also set re-synchronisation (RFC 4303 A3): a
 * threshold of 0..3 failures and 0..7 attempts, so that a sealed packet
 * 2^32 or more ahead is found by it.
 * After a decapsulation that says ESP_OK the inner packet must lie
 * within what was decrypted; one that refused the packet left the window
 * as it was; one that authenticated it (2) marked the number it was
 * sealed with, no other.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../apps/esp/crypt.c"
#include "../apps/esp/sa.c"

static const uint8_t key[16] = "fuzzfuzzfuzzfuzz";
static const uint8_t salt[4] = { 9, 8, 7, 6 };
static struct esp_sa sa;
static uint8_t pkt[70000], out[70000];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	sa.dir = ESP_IN;
	sa.spi = 0x4242;
	memcpy(sa.key, key, 16);
	memcpy(sa.salt, salt, 4);
	if (esp_sa_cipher(&sa) == -1)
		abort();
	return 0;
}

static void
window(const uint8_t *d)
{
	uint64_t top;

	memcpy(&top, d + 2, 8);
	replay_init(&sa.replay, 64 * (1 + d[0] % (ESP_WINDOW_MAX / 64)),
	    d[1] & 1 ? top : top & 0xffffffffff);
	sa.resync_threshold = d[1] >> 2 & 3;
	sa.resync_attempts = d[1] >> 4 & 7;
	sa.fails = d[1] >> 7;
}

/* A verdict that refused the packet, before or at the ICV. */
static int
refused(enum esp_verdict v)
{
	return v == ESP_TOO_SHORT || v == ESP_REPLAY || v == ESP_TOO_OLD ||
	    v == ESP_BAD_ICV;
}

static uint32_t
seal(uint64_t seq, const uint8_t *pt, uint32_t len)
{
	struct gcm_context_data c;
	uint8_t nonce[12], aad[12];

	put32(pkt, sa.spi);
	put32(pkt + 4, (uint32_t)seq);
	put32(pkt + 8, (uint32_t)(seq >> 32));
	put32(pkt + 12, (uint32_t)seq);
	memcpy(nonce, salt, 4);
	memcpy(nonce + 4, pkt + 8, 8);
	put32(aad, sa.spi);
	put32(aad + 4, (uint32_t)(seq >> 32));
	put32(aad + 8, (uint32_t)seq);
	IMB_AES128_GCM_ENC(imb, sa.gcm, &c, pkt + 16, pt, len, nonce, aad,
	    12, pkt + 16 + len, 16);
	return 16 + len + 16;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct esp_replay before;
	struct esp_sadb db;
	enum esp_verdict v;
	char err[256];
	uint32_t len, outlen;
	uint64_t seq;

	if (n < 1)
		return 0;
	switch (d[0] % 3) {
	case 0:
		if (esp_sadb_parse(&db, (const char *)d + 1, n - 1, "f", err,
		    sizeof(err)) == 0)
			esp_sadb_free(&db);
		break;
	case 1:
		if (n < 11 || n - 11 > sizeof(pkt))
			return 0;
		window(d + 1);
		/* a copy of exactly its length: ASan sees any overread */
		memcpy(pkt, d + 11, n - 11);
		memcpy(&before, &sa.replay, sizeof(before));
		v = esp_decap(&sa, pkt, (uint32_t)(n - 11), out, &outlen);
		if ((v == ESP_OK && outlen > n - 11) || (refused(v) &&
		    memcmp(&before, &sa.replay, sizeof(before)) != 0))
			abort();
		break;
	case 2:
		if (n < 19 || n - 19 > 65000)
			return 0;
		memcpy(&seq, d + 1, 8);
		window(d + 9);
		/* a sequence number in or ahead of the window, mostly */
		if (d[10] & 2)
			seq = sa.replay.top + 1 + (seq & 0xff);
		len = seal(seq, d + 19, (uint32_t)(n - 19));
		memcpy(&before, &sa.replay, sizeof(before));
		v = esp_decap(&sa, pkt, len, out, &outlen);
		if ((v == ESP_OK && outlen > n - 19) ||
		    (refused(v) &&
		    memcmp(&before, &sa.replay, sizeof(before)) != 0) ||
		    (!refused(v) && replay_check(&sa.replay, seq) !=
		    ESP_REPLAY))
			abort();
		break;
	}
	return 0;
}
