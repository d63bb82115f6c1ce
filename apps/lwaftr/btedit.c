/*
 * btedit.c: changes to a binding table, for a running lwAFTR.
 *
 * A table is read-only once built (bt.c), so a change makes a new one
 * beside it: the old table's softwires, already in (address, PSID) order,
 * are merged with the sorted changes in one pass, and the result becomes
 * the new table's own array (lwaftr_bt_adopt: no copy, no sort).  The
 * cost is one pass over the table and, while both exist, one table's
 * memory; the old table is freed by the caller once the data path has
 * switched (ctl.c).  Every check runs before anything is built, so a
 * refused change leaves nothing behind.
 */
#include <sys/mman.h>

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwaftr.h"

static uint64_t
sw_key(const struct softwire *s)
{
	return (uint64_t)ntohl(s->ipv4) << 16 | s->psid;
}

static int
by_key(const void *a, const void *b)
{
	uint64_t x = sw_key(a), y = sw_key(b);

	return x < y ? -1 : x > y;
}

const char *
lw_sw_name(const struct softwire *s, char *buf, size_t len)
{
	const uint8_t *b = (const uint8_t *)&s->ipv4;

	snprintf(buf, len, "softwire %u.%u.%u.%u psid %u", b[0], b[1], b[2],
	    b[3], s->psid);
	return buf;
}

/* Index of the first softwire of sw[0..n) whose key is >= key. */
static size_t
lower_bound(const struct softwire *sw, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (sw_key(&sw[mid]) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct softwire *
lwaftr_bt_find(const struct lwaftr_bt *bt, uint32_t ipv4, uint16_t psid,
    int any)
{
	const struct softwire *sw;
	size_t n, i;

	sw = lwaftr_bt_softwires(bt, &n);
	i = lower_bound(sw, n, (uint64_t)ntohl(ipv4) << 16 | (any ? 0 : psid));
	return i < n && sw[i].ipv4 == ipv4 && (any || sw[i].psid == psid) ?
	    &sw[i] : NULL;
}

/*
 * The new table's softwires: in huge pages where the kernel has them, as
 * writing tens of megabytes of fresh small pages costs more (a fault
 * each 4 KB) than the merge itself.
 */
#define HUGE_PAGE	(2u << 20)

static struct softwire *
big_alloc(size_t n)
{
	size_t len = (n ? n : 1) * sizeof(struct softwire);
	void *p;

	if (len < HUGE_PAGE)
		return malloc(len);
	len = (len + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
	if (posix_memalign(&p, HUGE_PAGE, len) != 0)
		return NULL;
	madvise(p, len, MADV_HUGEPAGE);
	return p;
}

/* A sorted copy of n softwires (NULL when out of memory). */
static struct softwire *
sorted_copy(const struct softwire *s, size_t n)
{
	struct softwire *c;

	if ((c = malloc((n ? n : 1) * sizeof(*c))) != NULL && n > 0) {
		memcpy(c, s, n * sizeof(*c));
		qsort(c, n, sizeof(*c), by_key);
	}
	return c;
}

/* Do a and b, softwires of one address, share its port set? */
static int
same_port_set(const struct softwire *a, const struct softwire *b)
{
	return a->psid_length == b->psid_length &&
	    a->reserved_bits == b->reserved_bits;
}

/*
 * The added softwire at out[p] against its neighbours of the same address:
 * every softwire of an address shares its port set, and the old table's
 * did, so the neighbours of each added one decide.
 */
static int
check_port_set(const struct softwire *out, size_t n, size_t p, char *err,
    size_t errlen)
{
	const struct softwire *s = &out[p], *o = NULL;
	char b1[64], b2[64];

	if (p > 0 && out[p - 1].ipv4 == s->ipv4 && !same_port_set(s,
	    &out[p - 1]))
		o = &out[p - 1];
	else if (p + 1 < n && out[p + 1].ipv4 == s->ipv4 && !same_port_set(s,
	    &out[p + 1]))
		o = &out[p + 1];
	if (o == NULL)
		return 0;
	snprintf(err, errlen, "%s: its port set (psid-length %u, "
	    "reserved-ports-bit-count %u) is not that of %s (%u, %u): the "
	    "softwires of an address share one", lw_sw_name(s, b1, sizeof(b1)),
	    s->psid_length, s->reserved_bits, lw_sw_name(o, b2, sizeof(b2)),
	    o->psid_length, o->reserved_bits);
	return -1;
}

struct lwaftr_bt *
lwaftr_bt_change(const struct lwaftr_bt *old, const struct softwire *add,
    size_t nadd, const struct softwire *del, size_t ndel, char *err,
    size_t errlen)
{
	const struct softwire *osw;
	struct softwire *a = NULL, *d = NULL, *out = NULL;
	size_t on, n, i, j, x, m, p, *pos = NULL;
	uint64_t dk, ak, ck;
	char b1[64];

	osw = lwaftr_bt_softwires(old, &on);
	for (i = 0; i < nadd; i++)
		if (lwaftr_sw_check(&add[i], "softwire", err, errlen) == -1)
			return NULL;
	if ((a = sorted_copy(add, nadd)) == NULL ||
	    (d = sorted_copy(del, ndel)) == NULL ||
	    (pos = malloc((nadd ? nadd : 1) * sizeof(*pos))) == NULL)
		goto nomem;
	for (i = 1; i < nadd; i++)
		if (sw_key(&a[i]) == sw_key(&a[i - 1])) {
			snprintf(err, errlen, "%s is added twice",
			    lw_sw_name(&a[i], b1, sizeof(b1)));
			goto fail;
		}
	for (i = 0; i < ndel; i++) {
		if (i > 0 && sw_key(&d[i]) == sw_key(&d[i - 1])) {
			snprintf(err, errlen, "%s is removed twice",
			    lw_sw_name(&d[i], b1, sizeof(b1)));
			goto fail;
		}
		if (lwaftr_bt_find(old, d[i].ipv4, d[i].psid, 0) == NULL) {
			snprintf(err, errlen, "no %s in the binding table",
			    lw_sw_name(&d[i], b1, sizeof(b1)));
			goto fail;
		}
	}
	n = on - ndel + nadd;
	if ((out = big_alloc(n)) == NULL)
		goto nomem;
	/*
	 * The merge: old minus del, plus add, in key order.  The runs of
	 * old between two changes are copied whole (each change found by
	 * binary search), so a few changes cost one memcpy of the table.
	 */
	for (i = j = x = m = 0; x < ndel || j < nadd;) {
		dk = x < ndel ? sw_key(&d[x]) : UINT64_MAX;
		ak = j < nadd ? sw_key(&a[j]) : UINT64_MAX;
		ck = dk < ak ? dk : ak;
		p = i + lower_bound(osw + i, on - i, ck);
		memcpy(out + m, osw + i, (p - i) * sizeof(*out));
		m += p - i;
		i = p;
		if (dk == ck) {
			i++;		/* removed (it is there: checked) */
			x++;
		} else if (i < on && sw_key(&osw[i]) == ak) {
			snprintf(err, errlen, LW_SW_EXISTS,
			    lw_sw_name(&a[j], b1, sizeof(b1)));
			goto fail;
		}
		if (ak == ck) {
			pos[j] = m;
			out[m++] = a[j++];
		}
	}
	memcpy(out + m, osw + i, (on - i) * sizeof(*out));
	for (j = 0; j < nadd; j++)
		if (check_port_set(out, n, pos[j], err, errlen) == -1)
			goto fail;
	free(a);
	free(d);
	free(pos);
	return lwaftr_bt_adopt(out, n, err, errlen);
nomem:
	snprintf(err, errlen, "binding table: out of memory");
fail:
	free(a);
	free(d);
	free(pos);
	free(out);
	return NULL;
}

void
lwaftr_bt_diff(const struct lwaftr_bt *a, const struct lwaftr_bt *b,
    size_t *added, size_t *removed, size_t *changed)
{
	const struct softwire *as, *bs;
	size_t an, bn, i = 0, j = 0;
	uint64_t ak, bk;

	as = lwaftr_bt_softwires(a, &an);
	bs = lwaftr_bt_softwires(b, &bn);
	*added = *removed = *changed = 0;
	while (i < an || j < bn) {
		ak = i < an ? sw_key(&as[i]) : UINT64_MAX;
		bk = j < bn ? sw_key(&bs[j]) : UINT64_MAX;
		if (i < an && ak < bk) {
			(*removed)++;
			i++;
		} else if (j < bn && bk < ak) {
			(*added)++;
			j++;
		} else {
			if (memcmp(&as[i], &bs[j], sizeof(as[i])) != 0)
				(*changed)++;
			i++;
			j++;
		}
	}
}
