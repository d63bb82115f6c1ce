/*
 * crypt.c: one ESP packet, either way, with OpenSSL's AES-128-GCM.
 *
 * Each SA's EVP_CIPHER_CTX holds its expanded key, made once
 * (esp_sa_cipher).  At 64 bytes most of a packet's time is not the
 * cipher but OpenSSL 3's dispatch around it: every parameter set or
 * got walks the provider's names with strcmp, some 400 to 900
 * instructions a call (callgrind), and EVP_*Init_ex for the nonce asks
 * the IV length that way too.  So a packet makes one such call, not
 * two, and no Init:
 *
 *  - out: the context generates the IVs, GCM's fixed field (the salt)
 *    and invocation field (a 64-bit counter, RFC 4106 3.1); the call
 *    that fetches a packet's ICV also readies the next IV, which is the
 *    next sequence number.  sa->iv_next says which number the context
 *    holds ready; any other (the first packet, a successor starting at
 *    its lease) has its whole nonce set first.  Either way the nonce of
 *    sequence number s is salt | s, so no two packets share one.
 *  - in: the fixed field is the salt, set once; a packet sets its IV
 *    (the invocation field, from the wire) and its ICV in one call.
 *
 * The cipher runs from the input slot into the output slot; a small
 * packet is copied next to its trailer first, so that one call covers
 * both (a call costs more than copying a few hundred bytes).  No
 * allocation.  Decryption writes the plaintext into the output slot
 * before the ICV is known; the caller publishes that slot only for
 * ESP_OK, so nothing unauthenticated leaves the stage.
 */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "esp.h"
#include "proto.h"
#include "replay.h"

/* Up to this many bytes of inner packet, one cipher call with the
 * trailer (see above). */
#define ONE_CALL_MAX	256

static inline void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

int
esp_sa_cipher(struct esp_sa *sa)
{
	int enc = sa->dir == ESP_OUT;

	sa->iv_next = 0;
	if ((sa->ctx = EVP_CIPHER_CTX_new()) == NULL)
		return -1;
	if (EVP_CipherInit_ex(sa->ctx, EVP_aes_128_gcm(), NULL, sa->key,
	    NULL, enc) != 1 || (!enc && EVP_CIPHER_CTX_ctrl(sa->ctx,
	    EVP_CTRL_GCM_SET_IV_FIXED, ESP_SALTLEN, sa->salt) != 1)) {
		EVP_CIPHER_CTX_free(sa->ctx);
		sa->ctx = NULL;
		return -1;
	}
	return 0;
}

/* Out: the context's next nonce is salt | seq (the slow way). */
static void
ready_nonce(struct esp_sa *sa, uint64_t seq)
{
	uint8_t nonce[ESP_SALTLEN + ESP_IVLEN], iv[ESP_IVLEN];

	memcpy(nonce, sa->salt, ESP_SALTLEN);
	put32(nonce + ESP_SALTLEN, (uint32_t)(seq >> 32));
	put32(nonce + ESP_SALTLEN + 4, (uint32_t)seq);
	/* Length -1: the whole nonce, both fields.  Then take it: the
	 * context uses salt | seq and holds seq + 1 ready. */
	EVP_CIPHER_CTX_ctrl(sa->ctx, EVP_CTRL_GCM_SET_IV_FIXED, -1, nonce);
	EVP_CIPHER_CTX_ctrl(sa->ctx, EVP_CTRL_GCM_IV_GEN, ESP_IVLEN, iv);
}

uint32_t
esp_encap(struct esp_sa *sa, const uint8_t *in, uint32_t len, uint8_t *out)
{
	uint32_t pad = (uint32_t)(-(len + ESP_TRAILER)) & (ESP_ALIGN - 1);
	uint64_t seq = ++sa->seq;
	uint8_t aad[12], next[ESP_IVLEN] = { 0 };
	uint8_t *ct = out + ESP_HLEN + ESP_IVLEN, *tail = ct + len;
	uint8_t *icv = tail + pad + ESP_TRAILER;
	OSSL_PARAM p[3];
	uint32_t i;
	int n;

	if (sa->iv_next != seq)
		ready_nonce(sa, seq);
	put32(out, sa->spi);
	put32(out + 4, (uint32_t)seq);
	put32(out + 8, (uint32_t)(seq >> 32));	/* IV: the whole number */
	put32(out + 12, (uint32_t)seq);
	put32(aad, sa->spi);
	put32(aad + 4, (uint32_t)(seq >> 32));
	put32(aad + 8, (uint32_t)seq);
	/* RFC 4303 2.4: padding bytes 1, 2, 3, ... */
	for (i = 0; i < pad; i++)
		tail[i] = (uint8_t)(i + 1);
	tail[pad] = (uint8_t)pad;
	tail[pad + 1] = SNB_IPPROTO_IPV6;
	EVP_EncryptUpdate(sa->ctx, NULL, &n, aad, sizeof(aad));
	if (len <= ONE_CALL_MAX) {
		memcpy(ct, in, len);
		EVP_EncryptUpdate(sa->ctx, ct, &n, ct,
		    (int)(len + pad + ESP_TRAILER));
	} else {
		EVP_EncryptUpdate(sa->ctx, ct, &n, in, (int)len);
		EVP_EncryptUpdate(sa->ctx, tail, &n, tail,
		    (int)(pad + ESP_TRAILER));
	}
	EVP_EncryptFinal_ex(sa->ctx, icv, &n);
	/* The ICV, and the nonce of seq + 1 made ready: one call. */
	p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
	    icv, ESP_ICVLEN);
	p[1] = OSSL_PARAM_construct_octet_string(
	    OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN, next, sizeof(next));
	p[2] = OSSL_PARAM_construct_end();
	if (EVP_CIPHER_CTX_get_params(sa->ctx, p) == 1 &&
	    get32(next) == (uint32_t)((seq + 1) >> 32) &&
	    get32(next + 4) == (uint32_t)(seq + 1))
		sa->iv_next = seq + 1;
	else
		sa->iv_next = 0;	/* set it the slow way */
	return ESP_HLEN + ESP_IVLEN + len + pad + ESP_TRAILER + ESP_ICVLEN;
}

/* Decrypt and authenticate as sequence number seq: 1 if the ICV holds. */
static int
open_as(struct esp_sa *sa, const uint8_t *in, uint32_t ctlen, uint64_t seq,
    uint8_t *out)
{
	const uint8_t *ct = in + ESP_HLEN + ESP_IVLEN;
	uint8_t aad[12];
	OSSL_PARAM p[3];
	int n;

	memcpy(aad, in, 4);
	put32(aad + 4, (uint32_t)(seq >> 32));
	memcpy(aad + 8, in + 4, 4);
	/* The nonce is salt | the IV on the wire; the ICV: one call. */
	p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
	    (void *)(uintptr_t)(ct + ctlen), ESP_ICVLEN);
	p[1] = OSSL_PARAM_construct_octet_string(
	    OSSL_CIPHER_PARAM_AEAD_TLS1_SET_IV_INV,
	    (void *)(uintptr_t)(in + ESP_HLEN), ESP_IVLEN);
	p[2] = OSSL_PARAM_construct_end();
	if (EVP_CIPHER_CTX_set_params(sa->ctx, p) != 1)
		return 0;
	EVP_DecryptUpdate(sa->ctx, NULL, &n, aad, sizeof(aad));
	EVP_DecryptUpdate(sa->ctx, out, &n, ct, (int)ctlen);
	return EVP_DecryptFinal_ex(sa->ctx, out + ctlen, &n) > 0;
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
static enum esp_verdict
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
	uint32_t ctlen;
	uint64_t seq, hi;
	int v;

	if (len < ESP_HLEN + ESP_IVLEN + ESP_TRAILER + ESP_ICVLEN)
		return ESP_TOO_SHORT;
	ctlen = len - ESP_HLEN - ESP_IVLEN - ESP_ICVLEN;
	seq = replay_guess(&sa->replay, get32(in + 4));
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
	if (sa->resynced != NULL)
		(*sa->resynced)++;
	return opened(sa, seq, out, ctlen, outlen);
}
