/*
 * bt.c: building the binding table, (IPv4, port) -> softwire, from the
 * configuration's softwires: sort them, check them (one message per
 * conflict, naming both entries), and lay them out as bt.h draws.  A
 * table is built once and then read-only (lookups: btlookup.c); a change
 * builds a new table beside the old one (btedit.c).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bt.h"

/* Sort key: address (host order) then PSID; idx is the file position. */
struct bt_key {
	uint64_t	key;
	uint64_t	idx;
};

/*
 * LSD radix sort on the 48-bit keys, 8 bits a pass, skipping the passes
 * whose byte is the same in every key (most of an address pool's high
 * bytes).  Stable, so equal keys keep file order: the first of duplicate
 * softwires is the one named first in messages.
 */
static int
bt_sort(struct bt_key *k, size_t n)
{
	struct bt_key *tmp, *a = k, *b, *t;
	size_t cnt[256], i, sum, c;
	int shift;

	if (n < 2)
		return 0;
	if ((tmp = malloc(n * sizeof(*tmp))) == NULL)
		return -1;
	b = tmp;
	for (shift = 0; shift < 48; shift += 8) {
		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[(a[i].key >> shift) & 0xff]++;
		if (cnt[(a[0].key >> shift) & 0xff] == n)
			continue;
		for (i = 0, sum = 0; i < 256; i++) {
			c = cnt[i];
			cnt[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			b[cnt[(a[i].key >> shift) & 0xff]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	if (a != k)
		memcpy(k, a, n * sizeof(*k));
	free(tmp);
	return 0;
}

/*
 * How a message names softwire i: from a file, "FILE:LINE:COL: softwire"
 * (or, as the other of two, "the one at LINE:COL"); else by its 1-based
 * number.
 */
struct bt_names {
	const struct cfg_pos	*at;
	const char		*file;
};

static const char *
bt_name(const struct bt_names *nm, size_t i, int other, char *buf,
    size_t len)
{
	if (nm->at == NULL)
		snprintf(buf, len, "softwire %zu", i + 1);
	else if (other)
		snprintf(buf, len, "the one at %d:%d", nm->at[i].line,
		    nm->at[i].col);
	else
		snprintf(buf, len, "%s:%d:%d: softwire", nm->file,
		    nm->at[i].line, nm->at[i].col);
	return buf;
}

/*
 * The checks of one softwire alone: a port set that fits 16 bits, a PSID
 * that fits its length.  who names it in the message.
 */
int
lwaftr_sw_check(const struct softwire *s, const char *who, char *err,
    size_t errlen)
{
	char a[INET_ADDRSTRLEN];

	if (s->psid_length + s->reserved_bits <= 16 && (s->psid_length == 16 ||
	    s->psid >> s->psid_length == 0))
		return 0;	/* a million of them load: format only for errors */
	inet_ntop(AF_INET, &s->ipv4, a, sizeof(a));
	if (s->psid_length + s->reserved_bits > 16) {
		snprintf(err, errlen, "%s (%s psid %u): psid-length %u + "
		    "reserved-ports-bit-count %u is more than 16", who, a,
		    s->psid, s->psid_length, s->reserved_bits);
		return -1;
	}
	snprintf(err, errlen, "%s (%s psid %u): psid out of range for "
	    "psid-length %u", who, a, s->psid, s->psid_length);
	return -1;
}

/*
 * The table of sorted (n softwires in (address, PSID) order, malloc'd:
 * the table owns it from here on, also on failure).  k gives each
 * softwire's position in sw, for messages (nm names it); NULL: their own
 * positions.
 */
static struct lwaftr_bt *
bt_index(struct softwire *sorted, size_t n, const struct bt_key *k,
    const struct softwire *sw, const struct bt_names *nm, char *err,
    size_t errlen)
{
	struct lwaftr_bt *bt;
	struct bt_bucket *b;
	const struct softwire *s, *f;
	size_t i, j, g, naddr, slots;
	int w;
	uint32_t h;
	char b1[16], who[300], other[48];

#define IDX(i)	((size_t)(k ? k[i].idx : (i)))
	if (err && errlen)
		err[0] = '\0';
	if ((bt = calloc(1, sizeof(*bt))) == NULL) {
		free(sorted);
		goto nomem;
	}
	bt->nsw = n;
	bt->sw = sorted;
	if (n > UINT32_MAX) {
		snprintf(err, errlen, "binding table: too many softwires");
		goto fail;
	}
	if ((bt->psid = calloc(n + BT_PSID_PAD, sizeof(*bt->psid))) == NULL)
		goto nomem;
	for (i = 0; i < n; i++)
		bt->psid[i] = bt->sw[i].psid;

	/* conflicts: one port-set shape per address, one softwire per PSID */
	naddr = 0;
	for (i = 0; i < n; i = j) {
		f = &bt->sw[i];
		for (j = i + 1; j < n && bt->sw[j].ipv4 == f->ipv4; j++) {
			s = &bt->sw[j];
			if (s->psid == bt->sw[j - 1].psid) {
				/* the sort is stable: k[j] is the later one */
				snprintf(err, errlen, "%s (%s psid %u) "
				    "duplicates %s", bt_name(nm, IDX(j), 0,
				    who, sizeof(who)), inet_ntop(AF_INET,
				    &s->ipv4, b1, sizeof(b1)), s->psid,
				    bt_name(nm, IDX(j - 1), 1, other,
				    sizeof(other)));
				goto fail;
			}
			if (s->psid_length != f->psid_length ||
			    s->reserved_bits != f->reserved_bits) {
				/* named at the later of the two in sw */
				size_t x = IDX(i) < IDX(j) ? IDX(i) : IDX(j);
				size_t y = IDX(i) < IDX(j) ? IDX(j) : IDX(i);

				snprintf(err, errlen, "%s (%s psid %u) shares "
				    "its ipv4 with %s but not its port set "
				    "(psid-length %u there, %u here; "
				    "reserved-ports-bit-count %u there, %u "
				    "here)", bt_name(nm, y, 0, who,
				    sizeof(who)), inet_ntop(AF_INET, &s->ipv4,
				    b1, sizeof(b1)), sw[y].psid, bt_name(nm, x,
				    1, other, sizeof(other)), sw[x].psid_length,
				    sw[y].psid_length, sw[x].reserved_bits,
				    sw[y].reserved_bits);
				goto fail;
			}
		}
		naddr++;
	}

	for (slots = 16; slots < naddr * 2; slots *= 2)
		;
	bt->mask = (uint32_t)(slots / BT_WAYS) - 1;
	bt->naddr = naddr;
	/* 64-byte aligned: a bucket is exactly one cache line */
	bt->bkt = aligned_alloc(64, slots / BT_WAYS * sizeof(*bt->bkt));
	if (bt->bkt == NULL)
		goto nomem;
	memset(bt->bkt, 0, slots / BT_WAYS * sizeof(*bt->bkt));
	for (i = 0; i < n; i = j) {
		f = &bt->sw[i];
		for (j = i + 1; j < n && bt->sw[j].ipv4 == f->ipv4; j++)
			;
		g = j - i;
		/* first free record of the first bucket with one */
		for (h = bt_hash(f->ipv4) & bt->mask;
		    bt->bkt[h].used == BT_WAYS; h = (h + 1) & bt->mask)
			;
		b = &bt->bkt[h];
		w = b->used++;
		b->ipv4[w] = f->ipv4;
		b->base[w] = (uint32_t)i;
		b->last[w] = (uint16_t)(g - 1);	/* a PSID each: g <= 65536 */
		b->mask[w] = (uint16_t)((1u << f->psid_length) - 1);
		b->shift[w] = (uint8_t)(16 - f->reserved_bits -
		    f->psid_length);
		b->dense[w] = g == (size_t)b->mask[w] + 1;
		b->resv[w] = f->reserved_bits;
	}
#undef IDX
	return bt;
nomem:
	snprintf(err, errlen, "binding table: out of memory");
fail:
	lwaftr_bt_free(bt);
	return NULL;
}

struct lwaftr_bt *
lwaftr_bt_build(const struct softwire *sw, size_t n,
    const struct cfg_pos *at, const char *file, char *err, size_t errlen)
{
	struct bt_names nm = { at, file ? file : "-" };
	struct lwaftr_bt *bt = NULL;
	struct bt_key *k = NULL;
	struct softwire *sorted;
	size_t i;
	char who[300];

	for (i = 0; i < n; i++)
		if (lwaftr_sw_check(&sw[i], bt_name(&nm, i, 0, who,
		    sizeof(who)), err, errlen) == -1)
			return NULL;
	if (n > 0 && (k = malloc(n * sizeof(*k))) == NULL)
		goto nomem;
	for (i = 0; i < n; i++) {
		k[i].key = (uint64_t)ntohl(sw[i].ipv4) << 16 | sw[i].psid;
		k[i].idx = i;
	}
	if (bt_sort(k, n) == -1)
		goto nomem;

	/*
	 * The sorted copy first: one pass of scattered reads, after which
	 * the checks and the records walk memory in order.
	 */
	if ((sorted = malloc((n ? n : 1) * sizeof(*sorted))) == NULL)
		goto nomem;
	for (i = 0; i < n; i++)
		sorted[i] = sw[k[i].idx];
	bt = bt_index(sorted, n, k, sw, &nm, err, errlen);
	free(k);
	return bt;
nomem:
	snprintf(err, errlen, "binding table: out of memory");
	free(k);
	return NULL;
}

struct lwaftr_bt *
lwaftr_bt_adopt(struct softwire *sorted, size_t n, char *err, size_t errlen)
{
	static const struct bt_names nm = { NULL, NULL };

	return bt_index(sorted, n, NULL, sorted, &nm, err, errlen);
}

const struct softwire *
lwaftr_bt_softwires(const struct lwaftr_bt *bt, size_t *n)
{
	*n = bt->nsw;
	return bt->sw;
}

void
lwaftr_bt_free(struct lwaftr_bt *bt)
{
	if (bt == NULL)
		return;
	free(bt->bkt);
	free(bt->sw);
	free(bt->psid);
	free(bt);
}
