/*
 * esp.h: snb-esp's pieces.  ESP (RFC 4303) in tunnel mode for IPv6 with
 * AES-128-GCM (RFC 4106), 64-bit extended sequence numbers, always.
 *
 *	sa.c		the SA file -> struct esp_sadb (cfg.h), each SA's
 *			key expanded once (crypt.c's esp_sa_cipher)
 *	replay.h	the receiver's window: the ESN's high half guessed
 *			from the low one (RFC 4303 appendix A2), the check
 *			before and the update after the ICV
 *	crypt.c		one packet: encapsulate, decapsulate (ipsec-mb's
 *			AES-128-GCM, no allocation per packet); an SA's
 *			expanded key
 *	audit.c		the auditable events' log (audit.h): at most a
 *			line per kind a second, none written per packet
 *	handover.c	the state a successor goes on from (leases,
 *			window tops)
 *	main.c		the app: ports, counters, reload (SIGHUP)
 *
 * The wire, toward the core (tunnel mode, next header 41):
 *
 *	Ethernet | IPv6 local->remote, nh 50 | SPI | seq low | IV (8) |
 *	    [ inner IPv6 packet | pad 1,2,3.. | pad length | 41 ]enc | ICV (16)
 *
 * IV = the 64-bit sequence number (RFC 4106 3.1: a counter is fine, it
 * never repeats under one key); nonce = salt (4) | IV (8); AAD = SPI |
 * seq high | seq low (RFC 4106 section 5, ESN).
 */
#ifndef SNB_ESP_H
#define SNB_ESP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cfg.h"

#define ESP_HLEN	8	/* SPI, sequence number (low half) */
#define ESP_IVLEN	8
#define ESP_ICVLEN	16
#define ESP_TRAILER	2	/* pad length, next header */
#define ESP_KEYLEN	16	/* AES-128 */
#define ESP_SALTLEN	4
#define ESP_ALIGN	4	/* RFC 4303 2.4: the trailer ends 4-aligned */
/* Bytes around the inner packet: outer IPv6, header, IV, trailer, ICV. */
#define ESP_OVERHEAD_MAX (40 + ESP_HLEN + ESP_IVLEN + ESP_ALIGN - 1 + \
			  ESP_TRAILER + ESP_ICVLEN)

#define ESP_WINDOW_DEFAULT 128
#define ESP_WINDOW_MAX	4096
/*
 * RFC 4303 appendix A3: after more than this many failures in a row
 * (ICV, replayed, too old), a failing packet is tried as the next few
 * 2^32 subspaces too (the reference Snabb's defaults, 1024 and 8).
 */
#define ESP_RESYNC_THRESHOLD 1024
#define ESP_RESYNC_ATTEMPTS 8
#define ESP_RESYNC_ATTEMPTS_MAX 64	/* each a decryption per packet */
#define ESP_MAX_SA	25	/* main.c keeps each one's state */
#define ESP_NAME_MAX	32

enum esp_dir { ESP_IN = 1, ESP_OUT = 2 };

/*
 * The receiver's anti-replay state: top is the highest sequence number
 * accepted (0: none yet), bit (s % w) of bits says whether s in
 * (top - w, top] was.
 */
struct esp_replay {
	uint64_t	top;
	uint32_t	w;		/* bits in the window, a multiple of 64 */
	uint64_t	bits[ESP_WINDOW_MAX / 64];
};

struct gcm_key_data;

struct esp_sa {
	char		 name[ESP_NAME_MAX];
	enum esp_dir	 dir;
	uint32_t	 spi;			/* host order */
	uint8_t		 key[ESP_KEYLEN];
	uint8_t		 salt[ESP_SALTLEN];
	uint32_t	 keyprint;		/* of key and salt, not secret:
						   esp_sa_cipher() */
	uint8_t		 local[16], remote[16];	/* tunnel endpoints */
	uint64_t	 seq;			/* out: the last one sent */
	uint64_t	 lease;			/* out: main.c's, may send up
						   to this */
	struct esp_replay replay;		/* in */
	uint32_t	 resync_threshold;	/* in: appendix A3 */
	uint32_t	 resync_attempts;
	uint32_t	 fails;			/* in: failures in a row */
	int		 has_inner;		/* in: inner-remote given */
	uint8_t		 inner_remote[16];	/* in: the inner source's */
	uint8_t		 inner_plen;		/* prefix, 0 .. 128 bits */
	struct gcm_key_data *gcm;		/* esp_sa_cipher(): the key
						   expanded, GHASH's H^i */
	struct cfg_pos	 at;			/* its "sa" in the file */
};

/*
 * RFC 4301 5.2, step 4: the inner packet's source is within the inbound
 * SA's inner-remote prefix (1), or not (0).
 */
static inline int
esp_inner_ok(const struct esp_sa *sa, const uint8_t *src)
{
	unsigned full = sa->inner_plen / 8, rest = sa->inner_plen % 8;

	if (memcmp(src, sa->inner_remote, full) != 0)
		return 0;
	return rest == 0 || ((src[full] ^ sa->inner_remote[full]) &
	    (uint8_t)(0xff00 >> rest)) == 0;
}

struct esp_sadb {
	struct esp_sa	*sa;
	int		 nsa;
};

/*
 * The SA file text of len bytes named file into the struct esp_sadb at obj
 * (zeroed first): 0, or -1 with "FILE:LINE:COL: message" in err.  A
 * cfg_parse_fn: cfg_load(path, esp_sadb_parse, db, ...) reads path.
 */
int	esp_sadb_parse(void *obj, const char *text, size_t len,
	    const char *file, char *err, size_t errlen);
void	esp_sadb_free(struct esp_sadb *db);
/*
 * handover.c: db's leases, window tops and failures in a row into the
 * stage's state, committed; at start, a predecessor's onto db first.
 */
void	esp_state_save(const struct esp_sadb *db);
void	esp_state_start(struct esp_sadb *db, const char *file);
/*
 * An outbound key (by its print) once removed is never taken again: its
 * nonces are spent.  esp_key_retire() on the data path (before
 * esp_state_save()); esp_state_room(): whether nsa SAs and nretire more
 * retired keys fit the state (1) or not (0).  esp_state_start() leaves
 * out, with a warning, the file's outbound SAs under a retired key.
 */
int	esp_key_retired(uint32_t keyprint);
void	esp_key_retire(uint32_t keyprint);
int	esp_state_room(int nsa, int nretire);
/* The expanded keys of every SA: 0, or -1 with a reason in err. */
int	esp_sadb_keys(struct esp_sadb *db, char *err, size_t errlen);
/*
 * An SA of old under sa's key and salt, or NULL: with same, the same SA
 * (direction, SPI, addresses too: its sequence number or window carries
 * over a reload), else an outbound one.
 */
struct esp_sa *esp_sadb_find(const struct esp_sadb *old,
	    const struct esp_sa *sa, int same);

/*
 * Expand sa's key into sa->gcm (the first call also sets up the library
 * for this CPU), and set sa->keyprint: 0, or -1 with the reason in
 * esp_cipher_why (out of memory, or a CPU the library has no AES-GCM
 * for).  sa.c calls it for every SA of a table; esp_sa_uncipher() frees
 * sa->gcm and wipes it, the key and the salt.
 */
int	esp_sa_cipher(struct esp_sa *sa);
extern const char *esp_cipher_why;
void	esp_sa_uncipher(struct esp_sa *sa);

/* What decapsulation says of a packet. */
enum esp_verdict {
	ESP_OK = 0,
	ESP_TOO_SHORT,		/* shorter than the ESP overhead */
	ESP_REPLAY,		/* in the window, seen already */
	ESP_TOO_OLD,		/* below the window */
	ESP_BAD_ICV,		/* authentication failed */
	ESP_BAD_PADDING,	/* pad length past the data, or not 1,2,3.. */
	ESP_BAD_NEXT_HEADER,	/* not 41 (IPv6): no other tunnel here */
	ESP_DUMMY,		/* next header 59: RFC 4303 2.6 dummy */
	ESP_BAD_INNER,		/* next header 41, but no IPv6 packet */
};

/*
 * Encrypt the inner packet in (len bytes) of SA sa into out as
 * ESP header | IV | ciphertext | ICV; returns the bytes written
 * (esp_encap_len(len)).  The caller checked sa->seq < UINT64_MAX and
 * room for the result; in and out must not overlap.
 */
uint32_t esp_encap(struct esp_sa *sa, const uint8_t *in, uint32_t len,
	    uint8_t *out);
static inline uint32_t
esp_encap_len(uint32_t len)
{
	uint32_t pad = (uint32_t)(-(len + ESP_TRAILER)) & (ESP_ALIGN - 1);

	return ESP_HLEN + ESP_IVLEN + len + pad + ESP_TRAILER + ESP_ICVLEN;
}

/*
 * Decrypt the ESP packet in (len bytes, from the ESP header on) of
 * inbound SA sa: the inner IPv6 packet into out (at most len bytes), its
 * length in *outlen.  The window moves only for a packet that passed the
 * ICV; after failures in a row, RFC 4303 appendix A3's resync (crypt.c),
 * its finds counted in *esp_resynced (if not NULL).  On any verdict but
 * ESP_OK, what is in out is garbage.
 */
extern uint64_t *esp_resynced;
enum esp_verdict esp_decap(struct esp_sa *sa, const uint8_t *in,
	    uint32_t len, uint8_t *out, uint32_t *outlen);

#endif
