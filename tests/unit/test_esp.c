/*
 * test_esp: snb-esp's pieces (apps/esp/).
 *
 *  1. The anti-replay window with ESN against a model that knows every
 *     packet's whole sequence number: a sender far past 2^32 whose
 *     packets arrive reordered, duplicated and late; every guess of the
 *     high half for a packet in or ahead of the window is right, and the
 *     verdicts are the model's (new, replay, too old).
 *  2. The decapsulation's checks after the ICV, on packets sealed here
 *     with the library's one-shot GCM directly, nonce and AAD written
 *     out (not with crypt.c's encapsulation; the sealer itself is first
 *     checked against test case 4 of the GCM specification): padding
 *     not 1, 2, 3..., a pad length past the data, next header 4 and 59,
 *     an inner packet that is not IPv6, TFC padding after the inner
 *     packet, and a round trip through esp_encap of every length.
 *  3. Encapsulation, byte for byte as that sealer seals with the nonce
 *     written out, across the jumps in the sequence numbers that a
 *     successor or a reload makes.
 *  4. The SA file: values and defaults as written.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../apps/esp/crypt.c"
#include "../../apps/esp/sa.c"
#include "tap.h"
#include "util.h"

/* ---- 1. the window ---- */

static void
test_window(void)
{
	enum { W = 128, N = 200000 };
	static uint8_t seen[N + 1];	/* model: index = seq - base */
	struct esp_replay r;
	uint64_t base = 0xffff0000ULL - 64, top = base, s;
	int wrong_guess = 0, wrong_verdict = 0, accepted = 0, i;
	int nreplay = 0, nold = 0;

	replay_init(&r, W, base);
	seen[0] = 1;
	for (i = 0; i < 4 * N; i++) {
		/* mostly the next few, some late, some repeated */
		uint64_t ahead = rndn(8), back = rndn(3 * W);
		uint64_t sq = rndn(10) < 7 ? top + 1 + ahead :
		    (top - base > back ? top - back : top);
		int v, want;

		if (sq - base > N)
			break;
		s = replay_guess(&r, (uint32_t)sq);
		if (s != sq) {
			/* Only below the window, read as the next 2^32:
			 * esp_decap's second try, 2^32 lower, finds it. */
			if (sq + W > top || s <= top || s - (1ULL << 32) != sq)
				wrong_guess++;
			else
				nold++;
			continue;
		}
		v = replay_check(&r, s);
		want = s > top ? ESP_OK : top - s >= W ? ESP_TOO_OLD :
		    seen[s - base] ? ESP_REPLAY : ESP_OK;
		if (v != want)
			wrong_verdict++;
		nreplay += v == ESP_REPLAY;
		nold += v == ESP_TOO_OLD;
		if (v == ESP_OK) {
			replay_accept(&r, s);
			seen[s - base] = 1;
			if (s > top)
				top = s;
			accepted++;
		}
	}
	ok(wrong_guess == 0, "window: the high half guessed right for every "
	    "packet in or ahead of the window (%d wrong)", wrong_guess);
	ok(wrong_verdict == 0, "window: new, replay and too old as the model "
	    "says (%d wrong; %d accepted, %d replays, %d too old)",
	    wrong_verdict, accepted, nreplay, nold);
	ok(top > 0x100000000ULL && r.top == top, "window: crossed 2^32 "
	    "(top 0x%llx)", (unsigned long long)r.top);
	ok(nreplay > 1000 && nold > 1000, "window: both edges were met");

	/* the edges, one by one */
	replay_init(&r, 64, 0);
	ok(replay_check(&r, 0) == ESP_TOO_OLD, "0 is never valid");
	replay_accept(&r, 100);
	ok(replay_check(&r, 100) == ESP_REPLAY, "100 again is a replay");
	ok(replay_check(&r, 37) == ESP_OK, "37 = top - w + 1 is in");
	ok(replay_check(&r, 36) == ESP_TOO_OLD, "36 = top - w is out");
	replay_accept(&r, 37);
	replay_accept(&r, 101 + 64);	/* a jump of exactly w */
	ok(replay_check(&r, 102) == ESP_OK && replay_check(&r, 101) ==
	    ESP_TOO_OLD, "a jump of w clears the window");
	replay_init(&r, 128, 0);
	ok(replay_guess(&r, 0xfffffff0) == 0xfffffff0, "a first packet "
	    "high in the first 2^32 is read there, not before 0");
	replay_init(&r, 128, 0xffffffffffffff00ULL);
	ok(replay_check(&r, replay_guess(&r, 5)) == ESP_TOO_OLD, "past "
	    "2^64 the guess wraps to a number below the window");
	replay_init(&r, 128, 77);
	ok(replay_check(&r, 77) == ESP_REPLAY && replay_check(&r, 76) ==
	    ESP_OK, "sequence N in the file: N counts as received");
}

/* ---- 2. decapsulation ---- */

static const uint8_t key[16] = "0123456789abcdef";
static const uint8_t salt[4] = { 1, 2, 3, 4 };

static struct esp_sa *
mksa(enum esp_dir dir)
{
	struct esp_sa *sa = calloc(1, sizeof(*sa));

	sa->dir = dir;
	sa->spi = 0x4242;
	memcpy(sa->key, key, 16);
	memcpy(sa->salt, salt, 4);
	replay_init(&sa->replay, 128, 0);
	if (esp_sa_cipher(sa) == -1)
		abort();
	return sa;
}

static void
freesa(struct esp_sa *sa)
{
	esp_sa_uncipher(sa);
	free(sa);
}

/* The sealer's own set-up of the library, not crypt.c's. */
static IMB_MGR *tmgr;

/* AES-128-GCM of pt under key k, nonce iv (12), AAD a: ct, then tag. */
static void
gcm_seal(const uint8_t *k, const uint8_t *iv, const uint8_t *a,
    uint32_t alen, const uint8_t *pt, uint32_t len, uint8_t *ct)
{
	static struct gcm_key_data kd __attribute__((aligned(64)));
	struct gcm_context_data c;

	if (tmgr == NULL) {
		if ((tmgr = alloc_mb_mgr(0)) == NULL)
			abort();
		init_mb_mgr_auto(tmgr, NULL);
	}
	IMB_AES128_GCM_PRE(tmgr, k, &kd);
	IMB_AES128_GCM_ENC(tmgr, &kd, &c, ct, pt, len, iv, a, alen, ct + len,
	    16);
}

/* Hex digits into bytes (well-formed input, ours). */
static void
unhex(const char *h, uint8_t *b)
{
	size_t i;

	for (i = 0; h[2 * i] != '\0'; i++) {
		unsigned v;

		sscanf(h + 2 * i, "%2x", &v);
		b[i] = (uint8_t)v;
	}
}

/* The sealer against "The Galois/Counter Mode of Operation" (McGrew,
 * Viega), test case 4: AES-128, 60 bytes, 20 of AAD. */
static void
test_gcm_kat(void)
{
	static const char *k = "feffe9928665731c6d6a8f9467308308",
	    *iv = "cafebabefacedbaddecaf888",
	    *a = "feedfacedeadbeeffeedfacedeadbeefabaddad2",
	    *p = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d"
		"8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657"
		"ba637b39",
	    *want = "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c1"
		"7e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0a"
		"ac973d58e091" "5bc94fbc3221a5db94fae95ae7121a47";
	uint8_t kb[16], ivb[12], ab[20], pb[60], wb[76], got[76];

	unhex(k, kb);
	unhex(iv, ivb);
	unhex(a, ab);
	unhex(p, pb);
	unhex(want, wb);
	gcm_seal(kb, ivb, ab, 20, pb, 60, got);
	ok(memcmp(got, wb, 76) == 0, "the test's sealer: GCM test case 4 "
	    "(ciphertext and tag)");
}

/*
 * An ESP packet of SPI 0x4242, sequence seq, whose plaintext is pt as
 * given (the trailer is the caller's): sealed here, the nonce and AAD of
 * RFC 4106 written out again.
 */
static uint32_t
seal(uint64_t seq, const uint8_t *pt, uint32_t len, uint8_t *out)
{
	uint8_t nonce[12], aad[12];
	uint32_t spi = htonl(0x4242), hi = htonl((uint32_t)(seq >> 32));
	uint32_t lo = htonl((uint32_t)seq);

	memcpy(out, &spi, 4);
	memcpy(out + 4, &lo, 4);
	memcpy(out + 8, &hi, 4);	/* the IV: any 8 bytes */
	memcpy(out + 12, &lo, 4);
	memcpy(nonce, salt, 4);
	memcpy(nonce + 4, out + 8, 8);
	memcpy(aad, &spi, 4);
	memcpy(aad + 4, &hi, 4);
	memcpy(aad + 8, &lo, 4);
	gcm_seal(key, nonce, aad, 12, pt, len, out + 16);
	return 16 + len + 16;
}

/* An IPv6 packet of plen payload bytes into p; its length. */
static uint32_t
inner6(uint8_t *p, uint16_t plen)
{
	struct ipv6_hdr *ip = (struct ipv6_hdr *)p;
	uint32_t i;

	memset(ip, 0, sizeof(*ip));
	ip->ver_tc_flow = htonl(6u << 28);
	ip->plen = htons(plen);
	ip->next = SNB_IPPROTO_NONE;
	for (i = 0; i < plen; i++)
		p[40 + i] = (uint8_t)(i * 7);
	return 40u + plen;
}

static int
verdict(uint64_t seq, const uint8_t *pt, uint32_t len, uint32_t *outlen)
{
	static uint8_t pkt[2048], out[2048];
	struct esp_sa *sa = mksa(ESP_IN);
	uint32_t n = seal(seq, pt, len, pkt);
	int v = esp_decap(sa, pkt, n, out, outlen);

	freesa(sa);
	return v;
}

static void
test_decap(void)
{
	uint8_t pt[256];
	uint32_t n, outlen = 0, len, bad = 0;
	int v;

	n = inner6(pt, 10);		/* 50 bytes, pad 0 */
	pt[n] = 0, pt[n + 1] = 41;
	v = verdict(1, pt, n + 2, &outlen);
	ok(v == ESP_OK && outlen == 50,
	    "sealed here, opened by esp_decap (%u bytes)", outlen);
	n = inner6(pt, 9);		/* 49 bytes, pad 1 */
	pt[n] = 1, pt[n + 1] = 1, pt[n + 2] = 41;
	ok(verdict(1, pt, n + 3, &outlen) == ESP_OK, "padding 1 is right");
	pt[n] = 7;
	ok(verdict(1, pt, n + 3, &outlen) == ESP_BAD_PADDING,
	    "padding byte 7 where 1 belongs: bad padding");
	pt[n] = 1, pt[n + 1] = 200;
	ok(verdict(1, pt, n + 3, &outlen) == ESP_BAD_PADDING,
	    "pad length past the data: bad padding");
	pt[n + 1] = 1, pt[n + 2] = 4;
	ok(verdict(1, pt, n + 3, &outlen) == ESP_BAD_NEXT_HEADER,
	    "next header 4 (IPv4): bad next header");
	pt[n + 2] = 59;
	ok(verdict(1, pt, n + 3, &outlen) == ESP_DUMMY,
	    "next header 59: a dummy packet");
	pt[0] = 0x40, pt[n + 2] = 41;
	ok(verdict(1, pt, n + 3, &outlen) == ESP_BAD_INNER,
	    "next header 41 over an IPv4 header: bad inner");
	n = inner6(pt, 9);
	memset(pt + n, 0xee, 20);	/* TFC padding (RFC 4303 2.7) */
	pt[n + 20] = 1, pt[n + 21] = 2, pt[n + 22] = 2, pt[n + 23] = 41;
	v = verdict(1, pt, n + 24, &outlen);
	ok(v == ESP_OK && outlen == 49,
	    "TFC padding after the inner packet is cut off (%u)", outlen);
	pt[0] = 0x60;
	((struct ipv6_hdr *)pt)->plen = htons(100);
	ok(verdict(1, pt, n + 24, &outlen) == ESP_BAD_INNER,
	    "an inner length past the data: bad inner");

	/* every length through esp_encap and back */
	{
		struct esp_sa *o = mksa(ESP_OUT), *in = mksa(ESP_IN);
		static uint8_t src[1600], pkt[1700], out[1700];

		o->seq = 0xfffffff0;	/* across 2^32 on the way */
		replay_init(&in->replay, 128, 0xfffffff0);
		for (len = 40; len < 1500; len++) {
			uint32_t e;

			inner6(src, (uint16_t)(len - 40));
			e = esp_encap(o, src, len, pkt);
			pkt[16 + rndn(e - 16)] ^= (uint8_t)(1 << rndn(8));
			if (esp_decap(in, pkt, e, out, &outlen) != ESP_BAD_ICV)
				bad++;
			e = esp_encap(o, src, len, pkt);
			if (e != esp_encap_len(len) || (e - 32) % 4 != 0 ||
			    esp_decap(in, pkt, e, out, &outlen) != ESP_OK ||
			    outlen != len || memcmp(out, src, len) != 0)
				bad++;
			if (esp_decap(in, pkt, e, out, &outlen) != ESP_REPLAY)
				bad++;
		}
		ok(bad == 0, "esp_encap -> esp_decap at every length 40..1499; "
		    "a flipped bit fails the ICV, a second copy is a replay "
		    "(%u bad)", bad);
		ok(o->seq == 0xfffffff0ULL + 2 * 1460 && in->replay.top == o->seq,
		    "both ends crossed 2^32 together");
		freesa(o);
		freesa(in);
	}
}

/* ---- 3. encapsulation ---- */

/*
 * Encapsulation against the library used plainly (seal(): one call,
 * the whole nonce given): byte for byte the same packets, in a run of
 * consecutive numbers broken by jumps (a successor starting at its
 * lease, a reload), at every length from 40 to 1499 bytes (every
 * padding, partial last blocks).
 */
static void
test_encap(void)
{
	static uint8_t src[1600], pt[1700], got[1700], want[1700];
	static const uint64_t jump[] = { 0x1000, 0xfffffffe, 0x100000000ULL,
	    0x7fffffffffffULL, UINT64_MAX - 3 };
	struct esp_sa *o = mksa(ESP_OUT);
	uint32_t len, e, w, pad, i, bad = 0, n = 0, slow = 0;

	for (len = 40; len < 1500; len++) {
		if (len % 292 == 0) {
			o->seq = jump[len / 292 - 1];
			slow++;
		}
		if (o->seq == UINT64_MAX)
			break;
		inner6(src, (uint16_t)(len - 40));
		e = esp_encap(o, src, len, got);
		pad = (uint32_t)(-(len + 2)) & 3;
		memcpy(pt, src, len);
		for (i = 0; i < pad; i++)
			pt[len + i] = (uint8_t)(i + 1);
		pt[len + pad] = (uint8_t)pad;
		pt[len + pad + 1] = 41;
		w = seal(o->seq, pt, len + pad + 2, want);
		if (e != w || memcmp(got, want, w) != 0)
			bad++;
		n++;
	}
	ok(bad == 0 && n == 1423 && slow == 5 && o->seq == UINT64_MAX, "esp_encap: %u packets "
	    "as sealed plainly with the nonce salt | seq, %u jumps in the "
	    "numbers, up to 2^64 - 1 (%u differ)", n, slow, bad);
	freesa(o);
}

/* ---- 4. the SA file ---- */

static void
test_sa(void)
{
	const char *t =
	    "// two\n"
	    "sa { name x; direction in; spi 0x100;\n"
	    "  key 0x000102030405060708090a0b0c0d0e0fa0a1a2a3;\n"
	    "  local-address 2001:db8::1; remote-address 2001:db8::2;\n"
	    "  sequence 1000; }\n"
	    "sa { direction out; spi 4294967295; replay-window 64;\n"
	    "  key 0x000102030405060708090a0b0c0d0e0fa0a1a2a4;\n"
	    "  local-address 2001:db8::1; remote-address 2001:db8::2; }\n";
	struct esp_sadb db;
	char err[256] = "";
	int rc;

	rc = esp_sadb_parse(&db, t, strlen(t), "t.conf", err, sizeof(err));
	ok(rc == -1 && strcmp(err, "t.conf:6:37: sa spi 0xffffffff: "
	    "replay-window is for inbound SAs") == 0, "%s", err);
	{
		char *u = strdup(t), *w = strstr(u, "replay-window 64;");

		memset(w, ' ', strlen("replay-window 64;"));
		rc = esp_sadb_parse(&db, u, strlen(u), "t.conf", err,
		    sizeof(err));
		free(u);
	}
	ok(rc == 0 && db.nsa == 2, "two SAs (%s)", err);
	if (rc != 0)
		return;
	ok(db.sa[0].dir == ESP_IN && db.sa[0].spi == 0x100 &&
	    strcmp(db.sa[0].name, "x") == 0 && db.sa[0].replay.w == 128 &&
	    db.sa[0].replay.top == 1000 && db.sa[0].seq == 0,
	    "inbound: spi, name, default window 128, sequence as its top");
	ok(db.sa[0].resync_threshold == ESP_RESYNC_THRESHOLD &&
	    db.sa[0].resync_attempts == ESP_RESYNC_ATTEMPTS &&
	    ESP_RESYNC_THRESHOLD == 1024 && ESP_RESYNC_ATTEMPTS == 8,
	    "inbound: re-synchronisation after 1024 failures, 8 attempts "
	    "(the reference's defaults)");
	ok(db.sa[0].key[15] == 0x0f && db.sa[0].salt[0] == 0xa0 &&
	    db.sa[0].salt[3] == 0xa3, "key: 16 bytes of key, 4 of salt");
	ok(db.sa[1].dir == ESP_OUT && db.sa[1].spi == 0xffffffffu &&
	    db.sa[1].seq == 0, "outbound: spi 2^32-1, sequence 0");
	ok(esp_sadb_keys(&db, err, sizeof(err)) == 0, "keyed");
	ok(esp_sadb_find(&db, &db.sa[1], 1) == &db.sa[1], "an SA is the same "
	    "as itself");
	{
		struct esp_sa x = db.sa[1];

		x.salt[0] ^= 1;
		ok(esp_sadb_find(&db, &x, 1) == NULL, "another salt is another "
		    "SA");
		/* the key print: a function of key and salt alone (here
		   they differ in the salt's last byte), not of the key */
		x = db.sa[1];
		x.spi = 0x999;
		x.gcm = NULL;
		ok(esp_sa_cipher(&x) == 0 && x.keyprint == db.sa[1].keyprint &&
		    db.sa[0].keyprint != db.sa[1].keyprint &&
		    memcmp(&x.keyprint, x.key, 4) != 0 &&
		    memcmp(&x.keyprint, x.salt, 4) != 0, "key print: same key "
		    "and salt, same print (SPI aside); another salt, another");
		esp_sa_uncipher(&x);
		x = db.sa[0];
		x.dir = ESP_OUT;
		ok(esp_sadb_find(&db, &x, 1) == NULL, "another direction is "
		    "another SA");
	}
	esp_sadb_free(&db);
	{
		const char *r = "sa { direction in; spi 300;\n"
		    "  key 0x000102030405060708090a0b0c0d0e0fa0a1a2a3;\n"
		    "  local-address 2001:db8::1; remote-address 2001:db8::2;\n"
		    "  resync-threshold 4294967295; resync-attempts 0; }\n";

		rc = esp_sadb_parse(&db, r, strlen(r), "t.conf", err,
		    sizeof(err));
		ok(rc == 0 && db.sa[0].resync_threshold == UINT32_MAX &&
		    db.sa[0].resync_attempts == 0, "resync-threshold "
		    "2^32-1, resync-attempts 0 (off) (%s)", rc ? err : "");
		if (rc == 0)
			esp_sadb_free(&db);
	}
	{
		/* SPI and sequence: decimal, or hex after 0x; nothing else */
		static const struct {
			const char *spi, *seq;
			uint64_t v;	/* the sequence's value, or 1: refused */
		} t[] = {
			{ "0X1001", "18446744073709551615", UINT64_MAX },
			{ "00300", "0xFFFFffffFFFFffff", UINT64_MAX },
			{ "300", "0x10000000000000000", 1 },
			{ "+300", "0", 1 }, { "0x", "0", 1 },
			{ "0x0x300", "0", 1 }, { "300", "0x-1", 1 },
			{ "300", "-1", 1 }, { "300", "1e3", 1 },
		};
		char r[256];
		size_t i;

		for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			snprintf(r, sizeof(r), "sa { direction out; spi %s; "
			    "sequence %s; key 0x%040d; local-address ::1; "
			    "remote-address ::2; }", t[i].spi, t[i].seq, 0);
			rc = esp_sadb_parse(&db, r, strlen(r), "t.conf", err,
			    sizeof(err));
			ok(t[i].v == 1 ? rc == -1 : rc == 0 &&
			    db.sa[0].seq == t[i].v && db.sa[0].spi ==
			    (strcmp(t[i].spi, "00300") ? 0x1001u : 300u),
			    "spi %s sequence %s: %s", t[i].spi, t[i].seq,
			    t[i].v == 1 ? "refused" : "taken");
			if (rc == 0)
				esp_sadb_free(&db);
		}
	}
	{
		/* main.c hands over the state of 25 SAs at most */
		char *m = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&m, &len);
		int i;

		for (i = 0; i < ESP_MAX_SA; i++)
			fprintf(f, "sa { direction in; spi %d; key 0x%032x%08x; "
			    "local-address 2001:db8::1; remote-address "
			    "2001:db8::2; }\n", 256 + i, i, i);
		fflush(f);
		rc = esp_sadb_parse(&db, m, len, "t.conf", err, sizeof(err));
		ok(ESP_MAX_SA == 25 && rc == 0 && db.nsa == 25, "25 SAs (%s)",
		    rc ? err : "");
		if (rc == 0)
			esp_sadb_free(&db);
		fprintf(f, "sa { direction in; spi 999; key 0x%040x; "
		    "local-address 2001:db8::1; remote-address 2001:db8::2; }\n",
		    99);
		fclose(f);
		rc = esp_sadb_parse(&db, m, len, "t.conf", err, sizeof(err));
		free(m);
		ok(rc == -1 && strcmp(err, "t.conf:26:1: sa spi 0x3e7: more "
		    "than 25 SAs") == 0, "26: %s", err);
	}
}

/* ---- 3. re-synchronisation (RFC 4303 appendix A3) ---- */

/* One packet of o (its next number) into pkt; its length. */
static uint32_t
next_pkt(struct esp_sa *o, uint8_t *pkt)
{
	uint8_t src[100];

	inner6(src, 20);
	return esp_encap(o, src, 60, pkt);
}

static void
test_resync(void)
{
	static uint8_t pkt[256], old[256], forged[256], out[256];
	struct esp_sa *o = mksa(ESP_OUT), *in = mksa(ESP_IN);
	uint32_t n, nold = 0, outlen, i, bad;
	uint64_t resynced = 0, top;

	in->resync_threshold = 16;
	in->resync_attempts = 8;
	esp_resynced = &resynced;
	for (i = 1; i <= 10; i++) {
		n = next_pkt(o, pkt);
		if (i == 5)
			memcpy(old, pkt, nold = n);
		(void)esp_decap(in, pkt, n, out, &outlen);
	}
	ok(in->replay.top == 10, "in step up to 10");

	/* The peer jumps 3 * 2^32 ahead: its low halves go on (11, 12..),
	 * read as 2^32 * 0 + low, the ICV fails. */
	o->seq = (3ULL << 32) + 10;
	bad = 0;
	for (i = 1; i <= 16; i++) {
		n = next_pkt(o, pkt);
		if (esp_decap(in, pkt, n, out, &outlen) != ESP_BAD_ICV)
			bad++;
		/* a forged copy of it, one bit of the ICV flipped */
		memcpy(forged, pkt, n);
		forged[n - 1] ^= 1;
	}
	ok(bad == 0 && in->replay.top == 10 && resynced == 0 &&
	    in->fails == 16, "16 packets after the jump: bad ICV, the window "
	    "stays (%u bad, top %llu, %u fails)", bad,
	    (unsigned long long)in->replay.top, in->fails);
	ok(esp_decap(in, forged, n, out, &outlen) == ESP_BAD_ICV &&
	    in->replay.top == 10 && resynced == 0,
	    "past the threshold, a forged packet is tried and refused; the "
	    "window stays");
	ok(esp_decap(in, old, nold, out, &outlen) == ESP_REPLAY &&
	    in->replay.top == 10 && resynced == 0,
	    "past the threshold, a replayed packet of before is refused");
	n = next_pkt(o, pkt);
	ok(esp_decap(in, pkt, n, out, &outlen) == ESP_OK && outlen == 60 &&
	    resynced == 1 && in->replay.top == o->seq && in->fails == 0,
	    "the next true packet re-synchronises: taken as 3 * 2^32 + %u, "
	    "counted", (unsigned)o->seq);
	ok(esp_decap(in, pkt, n, out, &outlen) == ESP_REPLAY &&
	    resynced == 1, "the same packet again: a replay");
	ok(esp_decap(in, old, nold, out, &outlen) == ESP_BAD_ICV &&
	    in->replay.top == o->seq, "a packet from before the jump: refused");
	bad = 0;
	for (i = 0; i < 50; i++) {
		n = next_pkt(o, pkt);
		if (esp_decap(in, pkt, n, out, &outlen) != ESP_OK)
			bad++;
	}
	ok(bad == 0 && resynced == 1 && in->replay.top == o->seq,
	    "then in step again, without re-synchronising (%u bad)", bad);

	/* A jump of exactly 2^32: the low halves are in the window and
	 * seen, so the guesses are replays, never decrypted.  They count
	 * as failures too (as in the reference Snabb). */
	o->seq += 1ULL << 32;
	o->seq -= 40;			/* low halves already taken */
	top = in->replay.top;
	bad = 0;
	for (i = 1; i <= 16; i++) {
		n = next_pkt(o, pkt);
		if (esp_decap(in, pkt, n, out, &outlen) != ESP_REPLAY)
			bad++;
	}
	n = next_pkt(o, pkt);
	ok(bad == 0 && esp_decap(in, pkt, n, out, &outlen) == ESP_OK &&
	    resynced == 2 && in->replay.top == o->seq && o->seq > top,
	    "a jump of 2^32 into seen low halves: 16 replays, then taken "
	    "(%u bad)", bad);

	/* A success in between starts the count again. */
	o->seq += 5ULL << 32;
	for (i = 0; i < 10; i++) {
		n = next_pkt(o, pkt);
		(void)esp_decap(in, pkt, n, out, &outlen);
	}
	ok(in->fails == 10, "10 failures in a row (%u)", in->fails);
	top = in->replay.top;
	o->seq = top;			/* the next one in step */
	n = next_pkt(o, pkt);
	ok(esp_decap(in, pkt, n, out, &outlen) == ESP_OK && in->fails == 0,
	    "one in step: the count starts again");

	/* Further than the attempts reach: lost until a re-key. */
	o->seq += 9ULL << 32;
	bad = 0;
	top = in->replay.top;
	for (i = 0; i < 40; i++) {
		n = next_pkt(o, pkt);
		if (esp_decap(in, pkt, n, out, &outlen) != ESP_BAD_ICV)
			bad++;
	}
	ok(bad == 0 && in->replay.top == top && resynced == 2,
	    "9 * 2^32 ahead, 8 attempts: never taken (%u bad)", bad);
	/* Exactly as far as they reach: 8 * 2^32 above. */
	o->seq = top + (8ULL << 32);
	n = next_pkt(o, pkt);
	ok(esp_decap(in, pkt, n, out, &outlen) == ESP_OK && resynced == 3 &&
	    in->replay.top == o->seq, "8 * 2^32 ahead: taken");

	/* A window across two subspaces (top low 5): a low half above it
	 * is read in the window, 2^32 lower (A2); the peer that jumped
	 * nearly 2^32 fails there, and is found in the window's own. */
	replay_init(&in->replay, 128, (5ULL << 32) + 5);
	in->fails = 16;
	o->seq = (5ULL << 32) + 0xffffff8f;
	n = next_pkt(o, pkt);
	ok(esp_decap(in, pkt, n, out, &outlen) == ESP_OK && resynced == 4 &&
	    in->replay.top == (5ULL << 32) + 0xffffff90,
	    "a window across 2^32: found in the top's own subspace");

	/* No attempts: never. */
	in->resync_attempts = 0;
	o->seq += 1ULL << 32;
	bad = 0;
	for (i = 0; i < 40; i++) {
		n = next_pkt(o, pkt);
		if (esp_decap(in, pkt, n, out, &outlen) != ESP_BAD_ICV)
			bad++;
	}
	ok(bad == 0 && resynced == 4, "resync-attempts 0: no re-"
	    "synchronisation");

	/* The top of the number space: nothing above to try. */
	in->resync_attempts = 8;
	replay_init(&in->replay, 128, 0xffffffff00000010ULL);
	in->fails = 1000;
	o->seq = 0x20;
	n = next_pkt(o, pkt);
	ok(esp_decap(in, pkt, n, out, &outlen) == ESP_BAD_ICV &&
	    in->replay.top == 0xffffffff00000010ULL && resynced == 4,
	    "at the last 2^32 subspace, nothing past 2^64 is tried");
	esp_resynced = NULL;	/* resynced goes out of scope */
	freesa(o);
	freesa(in);
}

int
main(void)
{
	test_window();
	test_gcm_kat();
	test_decap();
	test_encap();
	test_resync();
	test_sa();
	return tap_done();
}
