/*
 * crypt.c: one ESP packet, either way, with OpenSSL's AES-128-GCM.
 *
 * Each SA's EVP_CIPHER_CTX holds its expanded key (sa.c made it once);
 * a packet only sets the nonce (EVP_*Init_ex with no cipher and no key
 * keeps both), feeds the AAD, runs the cipher from the input slot
 * straight into the output slot, and finishes with the tag: no
 * allocation, no copy of the payload besides the cipher's own.
 *
 * Decryption writes the plaintext into the output slot before the ICV
 * is known; the caller publishes that slot only for ESP_OK, so nothing
 * unauthenticated leaves the stage.
 */
#include <openssl/evp.h>

#include "esp.h"
#include "proto.h"
#include "replay.h"

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

uint32_t
esp_encap(struct esp_sa *sa, const uint8_t *in, uint32_t len, uint8_t *out)
{
	uint32_t pad = (uint32_t)(-(len + ESP_TRAILER)) & (ESP_ALIGN - 1);
	uint64_t seq = ++sa->seq;
	uint8_t nonce[ESP_SALTLEN + ESP_IVLEN], aad[12];
	uint8_t tail[ESP_ALIGN - 1 + ESP_TRAILER];
	uint8_t *ct = out + ESP_HLEN + ESP_IVLEN;
	uint32_t i;
	int n;

	put32(out, sa->spi);
	put32(out + 4, (uint32_t)seq);
	put32(out + 8, (uint32_t)(seq >> 32));	/* IV: the whole number */
	put32(out + 12, (uint32_t)seq);
	memcpy(nonce, sa->salt, ESP_SALTLEN);
	memcpy(nonce + ESP_SALTLEN, out + ESP_HLEN, ESP_IVLEN);
	put32(aad, sa->spi);
	put32(aad + 4, (uint32_t)(seq >> 32));
	put32(aad + 8, (uint32_t)seq);
	/* RFC 4303 2.4: padding bytes 1, 2, 3, ... */
	for (i = 0; i < pad; i++)
		tail[i] = (uint8_t)(i + 1);
	tail[pad] = (uint8_t)pad;
	tail[pad + 1] = SNB_IPPROTO_IPV6;
	EVP_EncryptInit_ex(sa->ctx, NULL, NULL, NULL, nonce);
	EVP_EncryptUpdate(sa->ctx, NULL, &n, aad, sizeof(aad));
	EVP_EncryptUpdate(sa->ctx, ct, &n, in, (int)len);
	EVP_EncryptUpdate(sa->ctx, ct + len, &n, tail,
	    (int)(pad + ESP_TRAILER));
	EVP_EncryptFinal_ex(sa->ctx, ct + len + pad + ESP_TRAILER, &n);
	EVP_CIPHER_CTX_ctrl(sa->ctx, EVP_CTRL_AEAD_GET_TAG, ESP_ICVLEN,
	    ct + len + pad + ESP_TRAILER);
	return ESP_HLEN + ESP_IVLEN + len + pad + ESP_TRAILER + ESP_ICVLEN;
}

/* Decrypt and authenticate as sequence number seq: 1 if the ICV holds. */
static int
open_as(struct esp_sa *sa, const uint8_t *in, uint32_t ctlen, uint64_t seq,
    uint8_t *out)
{
	uint8_t nonce[ESP_SALTLEN + ESP_IVLEN], aad[12];
	int n;

	memcpy(nonce, sa->salt, ESP_SALTLEN);
	memcpy(nonce + ESP_SALTLEN, in + ESP_HLEN, ESP_IVLEN);
	memcpy(aad, in, 4);
	put32(aad + 4, (uint32_t)(seq >> 32));
	memcpy(aad + 8, in + 4, 4);
	EVP_DecryptInit_ex(sa->ctx, NULL, NULL, NULL, nonce);
	EVP_DecryptUpdate(sa->ctx, NULL, &n, aad, sizeof(aad));
	EVP_DecryptUpdate(sa->ctx, out, &n, in + ESP_HLEN + ESP_IVLEN,
	    (int)ctlen);
	EVP_CIPHER_CTX_ctrl(sa->ctx, EVP_CTRL_AEAD_SET_TAG, ESP_ICVLEN,
	    (void *)(uintptr_t)(in + ESP_HLEN + ESP_IVLEN + ctlen));
	return EVP_DecryptFinal_ex(sa->ctx, out + ctlen, &n) > 0;
}

enum esp_verdict
esp_decap(struct esp_sa *sa, const uint8_t *in, uint32_t len, uint8_t *out,
    uint32_t *outlen)
{
	const struct ipv6_hdr *ip;
	uint32_t ctlen, padlen, inner, i;
	uint64_t seq;
	int v;

	if (len < ESP_HLEN + ESP_IVLEN + ESP_TRAILER + ESP_ICVLEN)
		return ESP_TOO_SHORT;
	seq = replay_guess(&sa->replay, get32(in + 4));
	if ((v = replay_check(&sa->replay, seq)) != ESP_OK)
		return (enum esp_verdict)v;
	ctlen = len - ESP_HLEN - ESP_IVLEN - ESP_ICVLEN;
	if (!open_as(sa, in, ctlen, seq, out)) {
		/*
		 * A guess ahead of the window may be a packet below it,
		 * read as the next 2^32 (appendix A2 cannot tell).  If it
		 * authenticates 2^32 lower, below the window, it is a
		 * true packet, too old: say so rather than "ICV".  Only
		 * such guesses that fail cost a second decryption.
		 */
		if (seq > sa->replay.top && seq >> 32 != 0 &&
		    open_as(sa, in, ctlen, seq - (1ULL << 32), out))
			return ESP_TOO_OLD;
		return ESP_BAD_ICV;
	}
	/* Authentic: the window moves, whatever the contents say. */
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
