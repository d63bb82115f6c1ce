/*
 * crypt.c: one ESP packet, either way, with AES-128-GCM from Intel's
 * Multi-Buffer Crypto for IPsec library (ipsec-mb), the one DPDK's
 * aesni_gcm and ipsec_mb drivers use.
 *
 * Each SA's key is expanded once, with GHASH's powers of H
 * (esp_sa_cipher); a packet is then one direct call of the library's
 * GCM for this CPU (SSE, AVX2, AVX-512 with VAES: init_mb_mgr_auto
 * picks), given the nonce salt | IV and the AAD.  No context state
 * lives from one packet to the next: the nonce of sequence number s is
 * salt | s, written out per packet, so no two packets share one.
 * OpenSSL 3.0's EVP, used here before, cost some 2,500 instructions to
 * seal a 64-byte frame, most of it its provider dispatch (parameters
 * looked up by name), against some 420 for this call (callgrind; the
 * library's AVX2 code, which valgrind runs).
 *
 * The inner packet is copied into the output slot, next to its trailer,
 * and encrypted there in one call: at every size that is cheaper than
 * the library's init, update (input slot to output slot), update
 * (trailer) and finalize, by 10% at 1500 bytes and 25% at 512
 * (esp_bench).  No allocation.  Decryption writes the plaintext into the
 * output slot before the ICV is known; the caller publishes that slot
 * only for ESP_OK, so nothing unauthenticated leaves the stage.
 */
#if !__has_include(<intel-ipsec-mb.h>)
#error "snb-esp needs intel-ipsec-mb.h: install libipsec-mb-dev (Intel's ipsec-mb, packaged by Debian for amd64)"
#endif
#include <intel-ipsec-mb.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "esp.h"
#include "proto.h"
#include "replay.h"

/* The library's function table for this CPU: made once, read only. */
static IMB_MGR *imb;
const char *esp_cipher_why;
uint64_t *esp_resynced;		/* counts appendix A3's finds */

/* Big-endian at any alignment: one swap and one store (written byte
 * by byte, gcc made ~20 instructions). */
static inline void
put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

/*
 * What a successor needs to know of the key and salt, and no more: 32
 * bits of SHA-256 over them, which tell whether a new SA has the key of
 * an old one (main.c then goes on from its sequence number), but not the
 * key.  Two keys that share a print cost a sequence number started
 * higher than it had to, never a nonce twice.
 */
static void
keyprint(struct esp_sa *sa)
{
	static const char dom[] = "snb-esp: the sequence follows the key";
	uint8_t m[sizeof(dom) + ESP_KEYLEN + ESP_SALTLEN], d[32];

	memcpy(m, dom, sizeof(dom));
	memcpy(m + sizeof(dom), sa->key, ESP_KEYLEN);
	memcpy(m + sizeof(dom) + ESP_KEYLEN, sa->salt, ESP_SALTLEN);
	IMB_SHA256(imb, m, sizeof(m), d);
	memcpy(&sa->keyprint, d, sizeof(sa->keyprint));
	explicit_bzero(m, sizeof(m));
	explicit_bzero(d, sizeof(d));
}

int
esp_sa_cipher(struct esp_sa *sa)
{
	void *p;

	esp_cipher_why = "out of memory";
	if (imb == NULL) {
		if ((imb = alloc_mb_mgr(0)) == NULL)
			return -1;
		init_mb_mgr_auto(imb, NULL);
		/* On a CPU without the instructions it needs (AES-NI,
		 * PCLMULQDQ, SSE4.1), the library leaves its functions
		 * NULL: a call would jump to 0. */
		if (imb_get_errno(imb) != 0 || imb->gcm128_pre == NULL ||
		    imb->gcm128_enc == NULL || imb->gcm128_dec == NULL ||
		    imb->sha256 == NULL) {
			free_mb_mgr(imb);
			imb = NULL;
			esp_cipher_why = "intel-ipsec-mb has no AES-GCM for "
			    "this CPU (it needs AES-NI, PCLMULQDQ and "
			    "SSE4.1)";
			return -1;
		}
	}
	/* The library loads its key schedule aligned. */
	if (posix_memalign(&p, 64, sizeof(struct gcm_key_data)) != 0)
		return -1;
	sa->gcm = p;
	IMB_AES128_GCM_PRE(imb, sa->key, sa->gcm);
	keyprint(sa);
	return 0;
}

void
esp_sa_uncipher(struct esp_sa *sa)
{
	if (sa->gcm != NULL) {
		/* The expanded key is the key: wipe it too. */
		explicit_bzero(sa->gcm, sizeof(*sa->gcm));
		free(sa->gcm);
		sa->gcm = NULL;
	}
	explicit_bzero(sa->key, ESP_KEYLEN);
	explicit_bzero(sa->salt, ESP_SALTLEN);
}

uint32_t
esp_encap(struct esp_sa *sa, const uint8_t *in, uint32_t len, uint8_t *out)
{
	uint32_t pad = (uint32_t)(-(len + ESP_TRAILER)) & (ESP_ALIGN - 1);
	uint64_t seq = ++sa->seq;
	uint8_t aad[12], n[ESP_SALTLEN + ESP_IVLEN];
	uint8_t *ct = out + ESP_HLEN + ESP_IVLEN, *tail = ct + len;
	uint8_t *icv = tail + pad + ESP_TRAILER;
	struct gcm_context_data c;

	put32(out, sa->spi);
	put32(out + 4, (uint32_t)seq);
	put32(out + 8, (uint32_t)(seq >> 32));	/* IV: the whole number */
	put32(out + 12, (uint32_t)seq);
	/* AAD: SPI | seq high | seq low, as in the header and IV. */
	memcpy(aad, out, 4);
	memcpy(aad + 4, out + ESP_HLEN, 8);
	memcpy(n, sa->salt, ESP_SALTLEN);	/* the nonce: salt | IV */
	memcpy(n + ESP_SALTLEN, out + ESP_HLEN, ESP_IVLEN);
	/* RFC 4303 2.4: padding bytes 1, 2, 3, ..., at most 3 of them
	 * (ESP_ALIGN): one store of all three, the pad length and next
	 * header over it; what lands past them, the ICV overwrites. */
	memcpy(tail, (const uint8_t [4]){ 1, 2, 3, 0 }, 4);
	tail[pad] = (uint8_t)pad;
	tail[pad + 1] = SNB_IPPROTO_IPV6;
	memcpy(ct, in, len);
	IMB_AES128_GCM_ENC(imb, sa->gcm, &c, ct, ct, len + pad + ESP_TRAILER,
	    n, aad, sizeof(aad), icv, ESP_ICVLEN);
	return esp_encap_len(len);
}

_Static_assert(ESP_ICVLEN == 16, "icv_equal compares 16 bytes");

/* a == b for 16 bytes, in a time that does not depend on where they
 * differ (a forger learns nothing from it). */
static inline int
icv_equal(const uint8_t *a, const uint8_t *b)
{
	uint64_t a0, a1, b0, b1;

	memcpy(&a0, a, 8);
	memcpy(&a1, a + 8, 8);
	memcpy(&b0, b, 8);
	memcpy(&b1, b + 8, 8);
	return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

/* Decrypt and authenticate as sequence number seq: 1 if the ICV holds. */
static inline __attribute__((always_inline)) int
open_as(struct esp_sa *sa, const uint8_t *in, uint32_t ctlen, uint64_t seq,
    uint8_t *out)
{
	const uint8_t *ct = in + ESP_HLEN + ESP_IVLEN;
	uint8_t aad[12], n[ESP_SALTLEN + ESP_IVLEN], icv[ESP_ICVLEN];
	struct gcm_context_data c;

	memcpy(aad, in, 4);
	put32(aad + 4, (uint32_t)(seq >> 32));
	memcpy(aad + 8, in + 4, 4);
	/* GCM's nonce is salt | the IV on the wire (RFC 4106 4). */
	memcpy(n, sa->salt, ESP_SALTLEN);
	memcpy(n + ESP_SALTLEN, in + ESP_HLEN, ESP_IVLEN);
	IMB_AES128_GCM_DEC(imb, sa->gcm, &c, out, ct, ctlen, n, aad,
	    sizeof(aad), icv, ESP_ICVLEN);
	return icv_equal(icv, ct + ctlen);
}

/*
 * A packet that failed (replayed, too old, bad ICV) as sequence number
 * seq.  RFC 4303 appendix A3: a peer whose number jumped 2^32 or more
 * ahead (a lost state, a restart from a stale counter) fails every
 * packet from then on, because the high half it uses is not the one
 * guessed (A2), until a re-key.  So after more than resync_threshold
 * failures in a row, try the packet's low half in the resync_attempts
 * subspaces above hi (the guess's high half, or the window's when the
 * guess was refused unopened, as the reference Snabb does): 1 with
 * *found the number whose ICV holds.  Only numbers above the window's
 * top are tried (never a replay), and the window moves only after the
 * ICV (the caller).  The cost, up to resync_attempts decryptions, is
 * paid only by failing packets.
 */
static int
resync(struct esp_sa *sa, const uint8_t *in, uint32_t ctlen, uint64_t hi,
    uint32_t low, uint8_t *out, uint64_t *found)
{
	uint64_t h, cand;

	if (sa->fails < UINT32_MAX)
		sa->fails++;
	if (sa->fails <= sa->resync_threshold)
		return 0;
	for (h = hi + 1; h <= hi + sa->resync_attempts && h <= UINT32_MAX;
	    h++) {
		cand = h << 32 | low;
		if (cand > sa->replay.top && open_as(sa, in, ctlen, cand,
		    out)) {
			*found = cand;
			return 1;
		}
	}
	return 0;
}

/* The packet authenticated as seq (plaintext in out): take it. */
static inline __attribute__((always_inline)) enum esp_verdict
opened(struct esp_sa *sa, uint64_t seq, uint8_t *out, uint32_t ctlen,
    uint32_t *outlen)
{
	const struct ipv6_hdr *ip;
	uint32_t padlen, inner, i;

	/* Authentic: the window moves, whatever the contents say. */
	sa->fails = 0;
	replay_accept(&sa->replay, seq);
	padlen = out[ctlen - 2];
	if (padlen + ESP_TRAILER > ctlen)
		return ESP_BAD_PADDING;
	inner = ctlen - ESP_TRAILER - padlen;
	for (i = 0; i < padlen; i++)
		if (out[inner + i] != (uint8_t)(i + 1))
			return ESP_BAD_PADDING;
	if (out[ctlen - 1] == SNB_IPPROTO_NONE)
		return ESP_DUMMY;
	if (out[ctlen - 1] != SNB_IPPROTO_IPV6)
		return ESP_BAD_NEXT_HEADER;
	/* The inner header says how long it is: TFC padding (RFC 4303
	 * 2.7) may follow it. */
	ip = (const struct ipv6_hdr *)out;
	if (inner < SNB_IPV6_HLEN || ipv6_version(ip) != SNB_IPV6_VERSION ||
	    SNB_IPV6_HLEN + (uint32_t)ntohs(ip->plen) > inner)
		return ESP_BAD_INNER;
	*outlen = SNB_IPV6_HLEN + (uint32_t)ntohs(ip->plen);
	return ESP_OK;
}

enum esp_verdict
esp_decap(struct esp_sa *sa, const uint8_t *in, uint32_t len, uint8_t *out,
    uint32_t *outlen)
{
	uint32_t ctlen, low;
	uint64_t seq, hi;
	int v;

	if (len < ESP_HLEN + ESP_IVLEN + ESP_TRAILER + ESP_ICVLEN)
		return ESP_TOO_SHORT;
	ctlen = len - ESP_HLEN - ESP_IVLEN - ESP_ICVLEN;
	memcpy(&low, in + 4, 4);
	seq = replay_guess(&sa->replay, ntohl(low));
	hi = sa->replay.top >> 32;
	if ((v = replay_check(&sa->replay, seq)) == ESP_OK) {
		if (open_as(sa, in, ctlen, seq, out))
			return opened(sa, seq, out, ctlen, outlen);
		/*
		 * A guess ahead of the window may be a packet below it,
		 * read as the next 2^32 (appendix A2 cannot tell).  If it
		 * authenticates 2^32 lower, below the window, it is a
		 * true packet, too old: say so rather than "ICV".  Only
		 * such guesses that fail cost a second decryption.
		 */
		if (seq > sa->replay.top && seq >> 32 != 0 &&
		    open_as(sa, in, ctlen, seq - (1ULL << 32), out)) {
			sa->fails = 0;	/* the peer is in step */
			return ESP_TOO_OLD;
		}
		v = ESP_BAD_ICV;
		hi = seq >> 32;
	}
	if (!resync(sa, in, ctlen, hi, (uint32_t)seq, out, &seq))
		return (enum esp_verdict)v;
	if (esp_resynced != NULL)
		(*esp_resynced)++;
	return opened(sa, seq, out, ctlen, outlen);
}
