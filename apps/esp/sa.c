/*
 * sa.c: the SA file (snb-esp(1), "SA FILE": its form, and why the key is
 * ip xfrm's 20-byte key-and-salt number) -> struct esp_sadb, read with
 * libring's cfg.h: errors are "FILE:LINE:COL: message".
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esp.h"
#include "replay.h"

enum { ID_NAME = 1, ID_DIR, ID_SPI, ID_KEY, ID_SEQ, ID_INNER, ID_SA };

struct sactx {
	struct esp_sa	 sa;
	uint32_t	 window;
	struct cfg_pos	 dir_at, window_at, spi_at, key_at, threshold_at,
			 attempts_at, inner_at;
};

struct saparser {
	struct cfg	 cf;
	struct esp_sadb	*db;
	size_t		 cap;
};

#define SX(m)	offsetof(struct sactx, m)

static cfg_leaf_fn sa_leaf;
static cfg_block_fn top_block;

static const struct cfg_field f_sa[] = {
	CFG_F("name", CFG_LEAF, .id = ID_NAME),
	CFG_F("direction", CFG_LEAF, .id = ID_DIR,
	    CFG_AT(CFG_REQUIRED | CFG_VALPOS, SX(dir_at))),
	CFG_F("spi", CFG_LEAF, .id = ID_SPI,
	    CFG_AT(CFG_REQUIRED | CFG_VALPOS, SX(spi_at))),
	CFG_F("key", CFG_LEAF, .id = ID_KEY,
	    CFG_AT(CFG_REQUIRED | CFG_VALPOS, SX(key_at))),
	CFG_F("local-address", CFG_IPV6, .off = SX(sa.local),
	    .flags = CFG_REQUIRED),
	CFG_F("remote-address", CFG_IPV6, .off = SX(sa.remote),
	    .flags = CFG_REQUIRED),
	CFG_INT("replay-window", SX(window), ESP_WINDOW_MAX, .lo = 64,
	    CFG_AT(CFG_POS, SX(window_at))),
	CFG_INT("resync-threshold", SX(sa.resync_threshold), UINT32_MAX,
	    CFG_AT(CFG_POS, SX(threshold_at))),
	CFG_INT("resync-attempts", SX(sa.resync_attempts),
	    ESP_RESYNC_ATTEMPTS_MAX,
	    CFG_AT(CFG_POS, SX(attempts_at))),
	CFG_F("sequence", CFG_LEAF, .id = ID_SEQ),
	CFG_F("inner-remote", CFG_LEAF, .id = ID_INNER,
	    CFG_AT(CFG_POS, SX(inner_at))),
};
static const struct cfg_schema s_sa = CFG_S(f_sa, .leaf = sa_leaf);

static const struct cfg_field f_top[] = {
	CFG_F("sa", CFG_BLOCK, .id = ID_SA, .flags = CFG_LIST),
};
static const struct cfg_schema s_top = CFG_S(f_top, .block = top_block);

/* Decimal, or hexadecimal after 0x; no sign, no space. */
static int
parse_u64(const struct cfg_tok *v, uint64_t *out)
{
	char s[32], *end;

	if (v->len == 0 || v->len >= sizeof(s) ||
	    !isdigit((unsigned char)v->p[0]))
		return -1;
	memcpy(s, v->p, v->len);
	s[v->len] = '\0';
	errno = 0;
	*out = strtoull(s, &end, s[0] == '0' && tolower((unsigned char)s[1]) ==
	    'x' ? 16 : 10);
	return *end != '\0' || errno != 0 ? -1 : 0;
}

/* ADDRESS/LENGTH, an IPv6 prefix with no bit set past its length. */
static int
parse_prefix(const struct cfg_tok *v, uint8_t *a, uint8_t *plen)
{
	char s[INET6_ADDRSTRLEN + 5], *slash, *end;
	unsigned long n;
	unsigned i;

	if (v->len >= sizeof(s))
		return -1;
	memcpy(s, v->p, v->len);
	s[v->len] = '\0';
	if ((slash = strchr(s, '/')) == NULL || slash[1] < '0' ||
	    slash[1] > '9')
		return -1;
	*slash = '\0';
	n = strtoul(slash + 1, &end, 10);
	if (*end != '\0' || n > 128 || inet_pton(AF_INET6, s, a) != 1)
		return -1;
	for (i = (unsigned)n; i < 128; i++)
		if (a[i / 8] & (0x80 >> (i % 8)))
			return -1;
	*plen = (uint8_t)n;
	return 0;
}

static int
sa_leaf(struct cfg *cf, void *obj, const struct cfg_field *f,
    const struct cfg_tok *n, const struct cfg_tok *v)
{
	struct sactx *x = obj;
	uint8_t kb[ESP_KEYLEN + ESP_SALTLEN];
	char b[CFG_SHOW];
	uint64_t u;

	switch (f->id) {
	case ID_NAME:
		if (v->len == 0 || v->len >= ESP_NAME_MAX)
			return cfg_err(cf, &v->at, "bad name %s: 1 to %d "
			    "bytes", cfg_show(v, b), ESP_NAME_MAX - 1);
		memcpy(x->sa.name, v->p, v->len);
		x->sa.name[v->len] = '\0';
		return 0;
	case ID_DIR:
		x->sa.dir = cfg_eq(v, "in") ? ESP_IN : cfg_eq(v, "out") ?
		    ESP_OUT : 0;
		if (x->sa.dir == 0)
			return cfg_err(cf, &v->at, "bad direction %s (in, "
			    "out)", cfg_show(v, b));
		return 0;
	case ID_SPI:
		/* RFC 4303 2.1: 1..255 are reserved, 0 is never sent. */
		if (parse_u64(v, &u) == -1 || u < 256 || u > UINT32_MAX)
			return cfg_err(cf, &v->at, "bad spi %s: 256 .. "
			    "4294967295, decimal or 0x hexadecimal",
			    cfg_show(v, b));
		x->sa.spi = (uint32_t)u;
		return 0;
	case ID_KEY:
		if (cfg_hex(v, kb, sizeof(kb)) == -1)
			/* Not shown: a mistyped key is still most of
			 * the key, and errors go to logs and replies. */
			return cfg_err(cf, &v->at, "bad key: 0x and 40 hex "
			    "digits (16 bytes of AES-128 key, 4 of salt)");
		memcpy(x->sa.key, kb, ESP_KEYLEN);
		memcpy(x->sa.salt, kb + ESP_KEYLEN, ESP_SALTLEN);
		explicit_bzero(kb, sizeof(kb));
		return 0;
	case ID_SEQ:
		if (parse_u64(v, &u) == -1)
			return cfg_err(cf, &v->at, "bad sequence %s: 0 .. "
			    "2^64-1, decimal or 0x hexadecimal",
			    cfg_show(v, b));
		x->sa.seq = u;
		return 0;
	case ID_INNER:
		if (parse_prefix(v, x->sa.inner_remote, &x->sa.inner_plen) ==
		    -1)
			return cfg_err(cf, &v->at, "bad inner-remote %s: an "
			    "IPv6 prefix, ADDRESS/LENGTH (0..128), no bit "
			    "set past LENGTH", cfg_show(v, b));
		x->sa.has_inner = 1;
		return 0;
	}
	return cfg_err(cf, &n->at, "internal error: leaf %d", f->id);
}

static int
check_sa(struct saparser *ps, const struct cfg_tok *n, struct sactx *xp)
{
	static const char *const in_name[] = { "replay-window",
	    "resync-threshold", "resync-attempts", "inner-remote" };
	const struct cfg_pos *in_at[] = { &xp->window_at, &xp->threshold_at,
	    &xp->attempts_at, &xp->inner_at };
	struct cfg *cf = &ps->cf;
	struct esp_sadb *db = ps->db;
	char a[INET6_ADDRSTRLEN], b[64];
	int i;

	if (xp->sa.name[0])
		snprintf(b, sizeof(b), "'%s' (spi 0x%x)", xp->sa.name,
		    xp->sa.spi);
	else
		snprintf(b, sizeof(b), "spi 0x%x", xp->sa.spi);
	for (i = 0; i < 4; i++)
		if (xp->sa.dir != ESP_IN && in_at[i]->line)
			return cfg_err(cf, in_at[i], "sa %s: %s is for inbound "
			    "SAs", b, in_name[i]);
	if (xp->window % 64 != 0)
		return cfg_err(cf, &xp->window_at, "sa %s: replay-window %u is "
		    "not a multiple of 64", b, xp->window);
	if (xp->sa.dir == ESP_IN) {
		replay_init(&xp->sa.replay, xp->window, xp->sa.seq);
		xp->sa.seq = 0;
	}
	for (i = 0; i < db->nsa; i++) {
		const struct esp_sa *o = &db->sa[i];

		if (o->dir == xp->sa.dir && o->spi == xp->sa.spi)
			return cfg_err(cf, &xp->spi_at, "sa %s: its spi and "
			    "direction are those of the SA at %d:%d", b,
			    o->at.line, o->at.col);
		if (o->dir == ESP_OUT && xp->sa.dir == ESP_OUT &&
		    memcmp(o->remote, xp->sa.remote, 16) == 0)
			return cfg_err(cf, &n->at, "sa %s: a second outbound "
			    "SA to %s (the first at %d:%d)", b,
			    inet_ntop(AF_INET6, xp->sa.remote, a, sizeof(a)),
			    o->at.line, o->at.col);
		/*
		 * GCM's nonce is the salt and the sequence number, which
		 * starts at 1 in every SA: two SAs of one key and salt,
		 * whichever their directions, would encrypt under the same
		 * nonces (ours, or ours and the peer's), which gives away
		 * the plaintexts and the authentication key.
		 */
		if (memcmp(o->key, xp->sa.key, ESP_KEYLEN) == 0 &&
		    memcmp(o->salt, xp->sa.salt, ESP_SALTLEN) == 0)
			return cfg_err(cf, &xp->key_at, "sa %s: the key and "
			    "salt of the SA at %d:%d (GCM would use its "
			    "nonces twice: one key per SA and direction)", b,
			    o->at.line, o->at.col);
	}
	if (db->nsa == ESP_MAX_SA)
		return cfg_err(cf, &n->at, "sa %s: more than %d SAs", b,
		    ESP_MAX_SA);
	/* Room for all at once: a realloc would leave keys in freed memory. */
	if (cfg_grow(&db->sa, &ps->cap, ESP_MAX_SA, sizeof(*db->sa)) == -1)
		return cfg_err(cf, &n->at, "out of memory");
	db->sa[db->nsa++] = xp->sa;
	return 0;
}

/* An sa block. */
static int
top_block(struct cfg *cf, void *obj, const struct cfg_field *f,
    const struct cfg_tok *n)
{
	struct sactx x = { .sa = { .at = n->at,
	    .resync_threshold = ESP_RESYNC_THRESHOLD,
	    .resync_attempts = ESP_RESYNC_ATTEMPTS },
	    .window = ESP_WINDOW_DEFAULT };
	int rc;

	if ((rc = cfg_block(cf, "sa", &s_sa, n, &x)) == 0)
		rc = check_sa(obj, n, &x);
	/* The key does not stay behind on the stack. */
	explicit_bzero(&x, sizeof(x));
	return rc;
}

int
esp_sadb_parse(void *obj, const char *text, size_t len, const char *file,
    char *err, size_t errlen)
{
	struct esp_sadb *db = obj;
	struct saparser ps = { .db = db };
	struct cfg_pos eof;
	int rc = -1;

	memset(db, 0, sizeof(*db));
	cfg_init(&ps.cf, text, len, file, err, errlen);
	if (cfg_block(&ps.cf, NULL, &s_top, NULL, &ps) == 0) {
		eof = cfg_here(&ps.cf);
		if (db->nsa == 0)
			cfg_err(&ps.cf, &eof, "no sa block");
		else
			rc = 0;
	}
	cfg_fini(&ps.cf);
	if (rc == -1)
		esp_sadb_free(db);
	return rc;
}

int
esp_sadb_keys(struct esp_sadb *db, char *err, size_t errlen)
{
	int i;

	/* Key now; per packet only the nonce (crypt.c). */
	for (i = 0; i < db->nsa; i++)
		if (esp_sa_cipher(&db->sa[i]) == -1) {
			snprintf(err, errlen, "AES-128-GCM key set-up: %s",
			    esp_cipher_why);
			return -1;
		}
	return 0;
}

struct esp_sa *
esp_sadb_find(const struct esp_sadb *old, const struct esp_sa *sa, int same)
{
	int i;

	for (i = 0; i < old->nsa; i++) {
		struct esp_sa *o = &old->sa[i];

		if (memcmp(o->key, sa->key, ESP_KEYLEN) == 0 &&
		    memcmp(o->salt, sa->salt, ESP_SALTLEN) == 0 && (same ?
		    o->dir == sa->dir && o->spi == sa->spi &&
		    memcmp(o->local, sa->local, 16) == 0 &&
		    memcmp(o->remote, sa->remote, 16) == 0 : o->dir == ESP_OUT))
			return o;
	}
	return NULL;
}

void
esp_sadb_free(struct esp_sadb *db)
{
	int i;

	/* Keys do not outlive their SA in freed memory. */
	for (i = 0; i < db->nsa; i++)
		esp_sa_uncipher(&db->sa[i]);
	free(db->sa);
	memset(db, 0, sizeof(*db));
}
