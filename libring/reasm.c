/*
 * reasm.c: IPv4/IPv6 fragment reassembly.  See reasm.h.
 *
 * Each datagram in progress is an entry in a fixed array, found through a
 * chained hash on (src, dst, id[, proto]).  Payload bytes go straight to
 * their place in the entry's buffer, after room for the longest header,
 * so completing a datagram is one header copy.  Fragments may not
 * overlap (RFC 5722 makes that fatal for IPv6; for IPv4 it only ever
 * serves evasion), so "complete" is simply: first and last fragment seen
 * and the bytes received add up to the total.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "proto.h"
#include "reasm.h"

#define HDR4_MAX	SNB_IPV4_MAX_HLEN
#define HDR6_MAX	256	/* longest unfragmentable part we keep */
#define MAX_DGRAM	65535	/* IPv4 total length / IPv6 payload length */
#define KEY_MAX		36

struct range {
	uint32_t	 start, end;	/* payload bytes [start, end) */
};

struct entry {
	uint8_t		 key[KEY_MAX];
	int32_t		 next;		/* hash chain, or free list */
	int		 used;
	uint64_t	 born;
	uint32_t	 total;		/* payload length, 0 = last not seen */
	uint32_t	 have;		/* payload bytes received */
	unsigned	 nfrags;
	unsigned	 hlen;		/* header from the first fragment, 0 = none */
	unsigned	 nh_off;	/* IPv6: next-header byte to patch */
	uint8_t		 nh;		/* IPv6: next header after the fragment hdr */
	uint8_t		*buf;		/* REASM_HEADROOM + hdr_max + payload */
	size_t		 cap;
	struct range	*ranges;	/* max_frags of them, allocated with buf */
	uint8_t		 hdr[HDR6_MAX];
};

struct reasm {
	int		 family;
	unsigned	 max_packets, max_frags, keylen, hdr_max;
	uint64_t	 timeout;
	size_t		 max_bytes, bytes;
	struct entry	*e;
	int32_t		*bucket;
	uint32_t	 mask;
	int32_t		 free;		/* free list head */
	uint64_t	 evicted, expired;
	uint64_t	 seed, rng;
	uint8_t		*atomic;	/* IPv6 atomic fragments, no entry */
};

struct reasm *
reasm_new(int family, unsigned max_packets, unsigned max_frags,
    uint64_t timeout_ns, size_t max_bytes)
{
	struct reasm *r;
	uint32_t n = 1;
	unsigned i;

	if ((family != 4 && family != 6) || max_packets == 0 ||
	    max_frags == 0 || max_packets > (1u << 24))
		return NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->family = family;
	r->max_packets = max_packets;
	/* No datagram has more than 8192 fragments of 8 bytes. */
	r->max_frags = max_frags > 8192 ? 8192 : max_frags;
	r->keylen = family == 4 ? 11 : 36;
	r->hdr_max = family == 4 ? HDR4_MAX : HDR6_MAX;
	r->timeout = timeout_ns;
	r->max_bytes = max_bytes ? max_bytes : 64u << 20;
	while (n < 2 * max_packets)
		n <<= 1;
	r->mask = n - 1;
	r->e = calloc(max_packets, sizeof(*r->e));
	r->bucket = malloc(n * sizeof(*r->bucket));
	if (family == 6)
		r->atomic = malloc(REASM_HEADROOM + HDR6_MAX + MAX_DGRAM);
	if (r->e == NULL || r->bucket == NULL || (family == 6 &&
	    r->atomic == NULL)) {
		reasm_free(r);
		return NULL;
	}
	memset(r->bucket, 0xff, n * sizeof(*r->bucket));
	for (i = 0; i < max_packets; i++)
		r->e[i].next = i + 1 < max_packets ? (int32_t)i + 1 : -1;
	r->free = 0;
	/* A per-table seed: chains an outsider cannot aim at. */
	r->seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)r;
	r->rng = r->seed | 1;
	return r;
}

void
reasm_free(struct reasm *r)
{
	unsigned i;

	if (r == NULL)
		return;
	if (r->e)
		for (i = 0; i < r->max_packets; i++) {
			free(r->e[i].buf);
			free(r->e[i].ranges);
		}
	free(r->e);
	free(r->bucket);
	free(r->atomic);
	free(r);
}

uint64_t reasm_evicted(const struct reasm *r) { return r->evicted; }
uint64_t reasm_expired(const struct reasm *r) { return r->expired; }
size_t reasm_memuse(const struct reasm *r) { return r->bytes; }

int
reasm_is_fragment4(const uint8_t *l3, size_t len)
{
	return len >= SNB_IPV4_HLEN && ipv4_is_fragment((const void *)l3);
}

size_t
reasm_frag6_offset(const uint8_t *l3, size_t len)
{
	size_t off = SNB_IPV6_HLEN;
	uint8_t nh;

	if (len < SNB_IPV6_HLEN)
		return 0;
	nh = l3[6];
	for (;;) {
		if (nh == SNB_IPPROTO_FRAGMENT)
			return off + SNB_IPV6_FRAG_HLEN <= len ? off : 0;
		if (nh != SNB_IPPROTO_HOPOPTS && nh != SNB_IPPROTO_DSTOPTS &&
		    nh != SNB_IPPROTO_ROUTING)
			return 0;
		if (off + 8 > len || off > HDR6_MAX)
			return 0;
		nh = l3[off];
		off += ((size_t)l3[off + 1] + 1) * 8;
	}
}

static uint32_t
hash_key(const struct reasm *r, const uint8_t *k)
{
	uint64_t h = r->seed;
	unsigned i;

	for (i = 0; i < r->keylen; i++)
		h = (h ^ k[i]) * 0x100000001b3ULL;
	return (uint32_t)(h ^ (h >> 29)) & r->mask;
}

static void
unlink_entry(struct reasm *r, int32_t idx)
{
	struct entry *e = &r->e[idx];
	int32_t *pp = &r->bucket[hash_key(r, e->key)];

	while (*pp != idx)
		pp = &r->e[*pp].next;
	*pp = e->next;
	e->used = 0;
	e->next = r->free;
	r->free = idx;
}

/* Give back buffers of unused entries until `want` more bytes fit. */
static int
make_room(struct reasm *r, size_t want)
{
	unsigned i;

	if (r->bytes + want <= r->max_bytes)
		return 0;
	for (i = 0; i < r->max_packets && r->bytes + want > r->max_bytes;
	    i++) {
		struct entry *e = &r->e[i];
		if (e->used || e->buf == NULL)
			continue;
		r->bytes -= e->cap + r->max_frags * sizeof(struct range);
		free(e->buf);
		free(e->ranges);
		e->buf = NULL;
		e->ranges = NULL;
		e->cap = 0;
	}
	return r->bytes + want <= r->max_bytes ? 0 : -1;
}

/* Make e's buffer hold `end` payload bytes. */
static int
grow(struct reasm *r, struct entry *e, size_t end)
{
	size_t need = REASM_HEADROOM + r->hdr_max + end, cap;
	uint8_t *b;

	if (e->ranges == NULL) {
		size_t rb = r->max_frags * sizeof(struct range);
		if (make_room(r, rb) == -1 ||
		    (e->ranges = malloc(rb)) == NULL)
			return -1;
		r->bytes += rb;
	}
	if (need <= e->cap)
		return 0;
	cap = (need + 4095) & ~(size_t)4095;
	if (make_room(r, cap - e->cap) == -1 ||
	    (b = realloc(e->buf, cap)) == NULL)
		return -1;
	r->bytes += cap - e->cap;
	e->buf = b;
	e->cap = cap;
	return 0;
}

static uint64_t
xorshift(struct reasm *r)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return r->rng;
}

static struct entry *
find_or_add(struct reasm *r, const uint8_t *key, uint64_t now)
{
	uint32_t h = hash_key(r, key);
	int32_t idx;
	struct entry *e;

	for (idx = r->bucket[h]; idx != -1; idx = r->e[idx].next) {
		e = &r->e[idx];
		if (memcmp(e->key, key, r->keylen) != 0)
			continue;
		if (now - e->born <= r->timeout)
			return e;
		r->expired++;
		unlink_entry(r, idx);
		break;
	}
	if (r->free == -1) {
		/* Full: evict at random (see reasm.h). */
		idx = (int32_t)(xorshift(r) % r->max_packets);
		if (now - r->e[idx].born > r->timeout)
			r->expired++;
		else
			r->evicted++;
		unlink_entry(r, idx);
	}
	idx = r->free;
	e = &r->e[idx];
	r->free = e->next;
	memcpy(e->key, key, r->keylen);
	e->used = 1;
	e->born = now;
	e->total = e->have = 0;
	e->nfrags = e->hlen = 0;
	e->next = r->bucket[h];
	r->bucket[h] = idx;
	return e;
}

static enum reasm_result
drop(struct reasm *r, struct entry *e)
{
	unlink_entry(r, (int32_t)(e - r->e));
	return REASM_INVALID;
}

/* Where payload byte 0 sits in an entry's buffer. */
#define PAYLOAD(r, e)	((e)->buf + REASM_HEADROOM + (r)->hdr_max)

/* The byte before fo that names the fragment header (IPv6). */
static size_t
frag_nh_off(const uint8_t *l3, size_t fo)
{
	size_t off = SNB_IPV6_HLEN, prev = 6;

	while (off < fo) {
		prev = off;
		off += ((size_t)l3[off + 1] + 1) * 8;
	}
	return prev;
}

/* The datagram whole: the first fragment's header, its lengths fixed. */
static void
finish(struct reasm *r, struct entry *e, uint8_t **out, size_t *outlen)
{
	uint8_t *h = PAYLOAD(r, e) - e->hlen;
	uint16_t v;

	memcpy(h, e->hdr, e->hlen);
	if (r->family == 4) {
		v = htons((uint16_t)(e->hlen + e->total));
		memcpy(h + 2, &v, 2);
		v = 0;
		memcpy(h + 6, &v, 2);		/* offset 0, MF clear */
		v = ipv4_header_cksum(h);
		memcpy(h + 10, &v, 2);
	} else {
		h[e->nh_off] = e->nh;
		v = htons((uint16_t)(e->hlen - SNB_IPV6_HLEN + e->total));
		memcpy(h + 4, &v, 2);
	}
	*out = h;
	*outlen = e->hlen + e->total;
}

/* IPv6 offset 0 and M clear (RFC 6946): a datagram of its own. */
static enum reasm_result
atomic6(struct reasm *r, const uint8_t *l3, size_t fo, size_t plen,
    uint8_t **out, size_t *outlen)
{
	size_t n = fo + plen;
	uint8_t *b = r->atomic + REASM_HEADROOM;
	uint16_t v;

	memcpy(b, l3, fo);
	memcpy(b + fo, l3 + fo + SNB_IPV6_FRAG_HLEN, plen);
	/* The byte naming the fragment header now names what it carried. */
	b[frag_nh_off(l3, fo)] = l3[fo];
	v = htons((uint16_t)(n - SNB_IPV6_HLEN));
	memcpy(b + 4, &v, 2);
	*out = b;
	*outlen = n;
	return REASM_DONE;
}

enum reasm_result
reasm_add(struct reasm *r, const uint8_t *l3, size_t len, uint64_t now,
    uint8_t **out, size_t *outlen)
{
	uint8_t key[KEY_MAX];
	const uint8_t *payload;
	size_t hlen, plen, off, fo = 0;
	unsigned i;
	uint16_t v;
	int more;
	struct entry *e;

	if (r->family == 4) {
		if (len < SNB_IPV4_HLEN || l3[0] >> 4 != 4)
			return REASM_INVALID;
		hlen = (l3[0] & 0x0f) * 4u;
		memcpy(&v, l3 + 2, 2);
		if (hlen < SNB_IPV4_HLEN || ntohs(v) < hlen || ntohs(v) > len)
			return REASM_INVALID;
		plen = ntohs(v) - hlen;
		payload = l3 + hlen;
		memcpy(&v, l3 + 6, 2);
		off = (ntohs(v) & SNB_IP_OFFMASK) * 8u;
		more = (ntohs(v) & SNB_IP_MF) != 0;
		memcpy(key, l3 + 12, 8);	/* src, dst */
		memcpy(key + 8, l3 + 4, 2);	/* id */
		key[10] = l3[9];		/* protocol */
	} else {
		if (len < SNB_IPV6_HLEN || (fo = reasm_frag6_offset(l3,
		    len)) == 0 || fo > HDR6_MAX)
			return REASM_INVALID;
		memcpy(&v, l3 + 4, 2);
		if (SNB_IPV6_HLEN + (size_t)ntohs(v) > len ||
		    SNB_IPV6_HLEN + (size_t)ntohs(v) < fo + SNB_IPV6_FRAG_HLEN)
			return REASM_INVALID;
		hlen = fo;
		plen = SNB_IPV6_HLEN + ntohs(v) - fo - SNB_IPV6_FRAG_HLEN;
		payload = l3 + fo + SNB_IPV6_FRAG_HLEN;
		memcpy(&v, l3 + fo + 2, 2);
		off = ntohs(v) & SNB_IP6F_OFFMASK;
		more = (ntohs(v) & SNB_IP6F_MORE) != 0;
		if (off == 0 && !more)
			return atomic6(r, l3, fo, plen, out, outlen);
		memcpy(key, l3 + 8, 32);	/* src, dst */
		memcpy(key + 32, l3 + fo + 4, 4);	/* id */
	}
	/* Every fragment but the last carries a multiple of 8 bytes. */
	if ((more && (plen == 0 || plen % 8)) ||
	    off + plen + (hlen - (r->family == 4 ? 0 : SNB_IPV6_HLEN)) >
	    MAX_DGRAM)
		return REASM_INVALID;

	e = find_or_add(r, key, now);
	if (e->nfrags + 1 > r->max_frags)
		return drop(r, e);
	if (!more) {
		if (e->total && e->total != off + plen)
			return drop(r, e);
		e->total = (uint32_t)(off + plen);
	}
	for (i = 0; i < e->nfrags; i++) {
		if (off < e->ranges[i].end && e->ranges[i].start < off + plen)
			return drop(r, e);
		if (e->total && e->ranges[i].end > e->total)
			return drop(r, e);
	}
	if (more && e->total && off + plen > e->total)
		return drop(r, e);
	if (grow(r, e, off + plen) == -1)
		return drop(r, e);
	e->ranges[e->nfrags].start = (uint32_t)off;
	e->ranges[e->nfrags].end = (uint32_t)(off + plen);
	e->nfrags++;
	e->have += (uint32_t)plen;
	memcpy(PAYLOAD(r, e) + off, payload, plen);
	if (off == 0) {
		memcpy(e->hdr, l3, hlen);
		e->hlen = (unsigned)hlen;
		if (r->family == 6) {
			e->nh_off = (unsigned)frag_nh_off(l3, fo);
			e->nh = l3[fo];
		}
	}
	if (e->hlen == 0 || e->total == 0 || e->have != e->total)
		return REASM_HELD;
	finish(r, e, out, outlen);
	/* The buffer stays with the free entry until it is reused. */
	unlink_entry(r, (int32_t)(e - r->e));
	return REASM_DONE;
}
