/*
 * snb-bridge: an N-port learning Ethernet bridge (snb-bridge(1)); each
 * port name is both an input and an output.
 *
 * Flow control is exact: a frame is taken from its input only when every
 * port it goes to has room, else it and the frames behind it wait in
 * their ring (order on a link is kept) while other inputs go on.  A port
 * is one index of forward.h's struct fwd in both directions, so "from"
 * and an output k are bridge ports.  Bridging is not fwd_breathe()'s one
 * route per frame (a flood goes to a set, learning follows the taking),
 * so each ring's burst is ours (fwd_take).
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "forward.h"
#include "proto.h"

#define MAX_PORTS	32	/* a port set is a uint32_t bit mask */
#define MAX_GROUPS	32
#define DEFAULT_AGE	300	/* seconds, as 802.1D's default */
#define DEFAULT_MACS	4096
#define MAX_MACS	(1u << 20)
#define SWEEP_CHUNK	1024	/* table slots an ageing sweep looks at per breath */
#define FDB_USED	(1ULL << 63)

/*
 * One learned address.  key is the MAC as a 48-bit big-endian number with
 * FDB_USED set (0 = free slot).  seen is our millisecond clock when the
 * address was last a source; differences are taken modulo 2^32, which is
 * right for ages below 24 days (--age is capped well below).
 */
struct fdb_entry {
	uint64_t	key;
	uint32_t	port;		/* index into bports[] */
	uint32_t	seen;
};

/*
 * The forwarding database: open addressing with linear probing over
 * nslots = a power of two at least twice max_macs, so the table is never
 * more than half full and every probe ends at a free slot within a few
 * steps.  Deletion shifts the following entries back (no tombstones), so
 * lookups never slow down as addresses come and go.  Allocated once at
 * start: learning, lookups and ageing never allocate.
 */
static struct fdb_entry *fdb;
static uint64_t fdb_mask, fdb_seed;
static uint32_t fdb_count, max_macs = DEFAULT_MACS;

/*
 * A bridge port: the graph's input and output of one name.  Either may be
 * missing (a port that only listens, or only receives floods): fwd.out[i].ring
 * is NULL when nothing is sent there.
 */
struct bport {
	uint32_t	 groups;	/* split-horizon groups it belongs to */
	uint32_t	 flood;		/* ports a flood from here goes to */
	uint64_t	*rx, *drop;	/* tx: fwd.out[i].sent */
};

static struct bport bports[MAX_PORTS];
static const char *names[MAX_PORTS + 1];	/* NULL-ended, for fwd_init */
static struct fwd fwd;
static int nbports;
static uint32_t age = DEFAULT_AGE, age_ms;
static int ngroups;
static uint32_t now;		/* ms; see clock_ms() */
static int now_read;		/* now is this breath's */
static uint32_t empty_breaths;	/* in a row */
static uint32_t sweep_pos, sweep_next;	/* sweeping while pos <= mask */

/* Counters: every frame ends in exactly one of forwarded, flooded, drop-*. */
static const char *const cnt_names[] = { "forwarded", "flooded",
    "flood-unknown", "flood-multicast", "flood-copies", "learned", "moved",
    "aged", "learn-table-full", "fdb-entries", "drop-runt",
    "drop-bad-source", "drop-link-local", "drop-same-port",
    "drop-split-horizon", "drop-no-output",
    "drop-oversize",	/* fwd_init's, in this place */
    NULL };
static struct {		/* cnt_names' in order */
	uint64_t *forwarded, *flooded, *flood_unknown, *flood_multi,
	    *flood_copies, *learned, *moved, *aged, *learn_full, *entries,
	    *drop_runt, *drop_bad_src, *drop_link_local, *drop_same,
	    *drop_split, *drop_no_out, *drop_oversize;
} c;

/* A split-horizon group: its ports are named, bound already (init()). */
static void
group_opt(const char *opt, char *arg, void *var)
{
	char *s, *w, *copy;
	int i, n = 0;

	if (ngroups == MAX_GROUPS)
		errx(2, "too many --group options (at most %d)", MAX_GROUPS);
	if ((copy = strdup(arg)) == NULL)
		err(1, NULL);
	for (s = copy; (w = strsep(&s, ",")) != NULL; n++) {
		for (i = 0; i < nbports; i++)
			if (strcmp(names[i], w) == 0)
				break;
		if (i == nbports)
			errx(2, "--group %s: port '%s' is not connected", arg,
			    w);
		bports[i].groups |= 1u << ngroups;
	}
	if (n < 2)
		errx(2, "--group %s: a group needs two ports or more", arg);
	free(copy);
	ngroups++;
}

/*
 * The ports the graph bound (already: a replacement refuses in standby),
 * each name once: by its input, or by its output alone.
 */
static void
bridge_init(int argc, char **argv)
{
	static const struct app_opt opts[] = {
		APP_NUM("age", &age, 0, 1000000),
		APP_NUM("max-macs", &max_macs, 1, MAX_MACS),
		APP_ARG("group", group_opt, NULL, NULL),
		APP_OPT_END
	};
	char cname[48];
	uint64_t slots;
	int i, j;

	app_counters((uint64_t **)&c, cnt_names);
	app_gauge("fdb-entries");	/* made a counter above, in its place */
	for (i = 0; i < app_nports; i++) {
		struct port *p = &app_ports[i];
		if (!(p->flags & PORT_IN) && app_port_dir(p->name, PORT_IN))
			continue;
		if (nbports == MAX_PORTS)
			errx(1, "too many ports (at most %d)", MAX_PORTS);
		names[nbports++] = p->name;
	}
	app_options(argc, argv, opts, 0);
	app_require_port("*", 0);
	fwd_init(&fwd, names, names);
	/* 0 = never forget; the cap keeps ms differences far from 2^32. */
	age_ms = age * 1000;
	for (slots = 16; slots < 2ULL * max_macs; slots <<= 1)
		;
	if ((fdb = calloc(slots, sizeof(*fdb))) == NULL)
		err(1, NULL);
	fdb_mask = slots - 1;
	if (getrandom(&fdb_seed, sizeof(fdb_seed), 0) != sizeof(fdb_seed))
		err(1, "getrandom");
	for (i = 0; i < nbports; i++) {
		for (j = 0; j < nbports; j++)
			if (j != i && fwd.out[j].ring != NULL &&
			    (bports[i].groups & bports[j].groups) == 0)
				bports[i].flood |= 1u << j;
		/* "rx[NAME]" and so on (app_counter copies the name). */
		snprintf(cname, sizeof(cname), "rx[%s]", names[i]);
		bports[i].rx = app_counter(cname);
		snprintf(cname, sizeof(cname), "tx[%s]", names[i]);
		fwd.out[i].sent = app_counter(cname);
		snprintf(cname, sizeof(cname), "drop[%s]", names[i]);
		bports[i].drop = app_counter(cname);
	}
}

/*
 * The clock, read at most once a breath and only when needed: a stage
 * spinning on empty inputs would otherwise spend a tenth of its time in
 * clock_gettime().
 */
static inline void
clock_ms(void)
{
	if (!now_read) {
		now = (uint32_t)(app_now_ns() / 1000000);
		now_read = 1;
	}
}

/* ---- forwarding database ---- */

static inline uint64_t
mac_key(const uint8_t *m)
{
	return FDB_USED | (uint64_t)m[0] << 40 | (uint64_t)m[1] << 32 |
	    (uint64_t)m[2] << 24 | (uint64_t)m[3] << 16 |
	    (uint64_t)m[4] << 8 | m[5];
}

/*
 * A seeded mix (splitmix64's finalizer over key ^ seed, seed random per
 * run): stations choose their own source addresses, and a fixed hash
 * would let one aim thousands of them at one probe chain.  Not a
 * cryptographic hash, but the seed is not visible on the wire.
 */
static inline uint64_t
fdb_home(uint64_t key)
{
	uint64_t x = key ^ fdb_seed;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return (x ^ (x >> 31)) & fdb_mask;
}

static inline int
expired(const struct fdb_entry *e)
{
	return age_ms != 0 && now - e->seen >= age_ms;
}

/* Free slot i and shift back the entries whose probe ran through it. */
static void
fdb_delete(uint64_t i)
{
	uint64_t j = i, home;

	for (;;) {
		j = (j + 1) & fdb_mask;
		if (fdb[j].key == 0)
			break;
		home = fdb_home(fdb[j].key);
		/* Movable unless its home lies cyclically in (i, j]. */
		if (((j - home) & fdb_mask) >= ((j - i) & fdb_mask)) {
			fdb[i] = fdb[j];
			i = j;
		}
	}
	fdb[i].key = 0;
	*c.entries = --fdb_count;
}

/* The slot holding key, or the free slot where it would go. */
static inline uint64_t
fdb_slot(uint64_t key)
{
	uint64_t i = fdb_home(key);

	while (fdb[i].key != 0 && fdb[i].key != key)
		i = (i + 1) & fdb_mask;
	return i;
}

/* The port behind a MAC, or -1: unknown (or just aged out). */
static inline int
fdb_lookup(const uint8_t *mac)
{
	uint64_t i = fdb_slot(mac_key(mac));

	if (fdb[i].key == 0)
		return -1;
	if (expired(&fdb[i])) {
		(*c.aged)++;
		fdb_delete(i);
		return -1;
	}
	return (int)fdb[i].port;
}

/* A frame from port came with source mac: remember it. */
static inline void
fdb_learn(const uint8_t *mac, uint32_t port)
{
	uint64_t key = mac_key(mac), i = fdb_slot(key);
	struct fdb_entry *e = &fdb[i];

	if (e->key != key) {
		if (fdb_count >= max_macs) {
			(*c.learn_full)++;
			return;
		}
		e->key = key;
		*c.entries = ++fdb_count;
		(*c.learned)++;
	} else if (expired(e)) {
		/* Gone and back: count both, as if swept first. */
		(*c.aged)++;
		(*c.learned)++;
	} else if (e->port != port)
		(*c.moved)++;
	e->port = port;
	e->seen = now;
}

/*
 * Ageing: every so often walk the table, a chunk per breath, and delete
 * what expired, so the table's space and fdb-entries follow the clock
 * even for addresses nobody asks about.
 */
static void
fdb_sweep(void)
{
	uint32_t n;

	if (age_ms == 0)
		return;
	if (sweep_pos > fdb_mask) {
		if ((int32_t)(now - sweep_next) < 0)
			return;
		sweep_pos = 0;
	}
	for (n = 0; n < SWEEP_CHUNK && sweep_pos <= fdb_mask; n++) {
		/* A deletion shifts a later entry into this slot: look again. */
		if (fdb[sweep_pos].key != 0 && expired(&fdb[sweep_pos])) {
			(*c.aged)++;
			fdb_delete(sweep_pos);
		} else
			sweep_pos++;
	}
	/* A few sweeps per age, at most one a second. */
	if (sweep_pos > fdb_mask)
		sweep_next = now + (age_ms / 4 < 1000 ? age_ms / 4 : 1000);
}

/* ---- the data path ---- */

/*
 * Decide where a frame from port src goes: a set of ports, 0 for a drop
 * (counted here).  *flood is 1 for unknown unicast, 2 for group
 * addresses; *learn says whether the source address may be learned.
 * Nothing here changes state a second call would see differently (a
 * lookup may delete an expired entry, once): a frame that must wait for
 * room is decided again on a later breath.
 */
static inline uint32_t
decide(const uint8_t *f, uint32_t len, int src, int *flood, int *learn)
{
	struct bport *b = &bports[src];
	int dst;

	*flood = *learn = 0;
	if (len < SNB_ETH_HLEN) {
		(*c.drop_runt)++;
		return 0;
	}
	/* A group or all-zero source is nobody's address. */
	if ((f[6] & 1) || (f[6] | f[7] | f[8] | f[9] | f[10] | f[11]) == 0) {
		(*c.drop_bad_src)++;
		return 0;
	}
	*learn = 1;
	if (f[0] & 1) {
		/* IEEE 802.1D reserved group addresses 01-80-C2-00-00-00..0F:
		 * never forwarded. */
		if (f[0] == 0x01 && f[1] == 0x80 && f[2] == 0xc2 && f[3] == 0 &&
		    f[4] == 0 && (f[5] & 0xf0) == 0) {
			(*c.drop_link_local)++;
			return 0;
		}
		*flood = 2;
		return b->flood;
	}
	/* To itself: on this port, as learning the source says. */
	if (memcmp(f, f + 6, SNB_ETH_ALEN) == 0) {
		(*c.drop_same)++;
		return 0;
	}
	if ((dst = fdb_lookup(f)) < 0) {
		*flood = 1;
		return b->flood;
	}
	if (dst == src) {
		/* The destination is on the segment it came from. */
		(*c.drop_same)++;
		return 0;
	}
	if (b->groups & bports[dst].groups) {
		(*c.drop_split)++;
		return 0;
	}
	if (fwd.out[dst].ring == NULL) {
		(*c.drop_no_out)++;
		return 0;
	}
	return 1u << dst;
}

/* Frames from one input ring of port src, as far as room allows. */
static uint32_t
from_ring(void *ctx, int src, struct ring *r, uint32_t n)
{
	struct bport *b = &bports[src];
	uint32_t i, len, set, s, used;
	int flood, learn, k, copies;

	if (n > 0)
		clock_ms();
	for (i = 0; i < n; i++) {
		struct packet *p = ring_peek(r, i);

		len = packet_len(r, p);
		/* A frame whose ports are not all free stays in the ring and
		 * ends the burst (drops need no room, so never wait). */
		set = decide(p->data, len, src, &flood, &learn);
		for (s = set; s != 0 && fwd_room(&fwd, __builtin_ctz(s));
		    s &= s - 1)
			;
		if (s != 0)
			break;
		(*b->rx)++;
		if (learn)
			fdb_learn(p->data + SNB_ETH_ALEN, (uint32_t)src);
		if (set == 0) {
			if (flood)
				(*c.drop_no_out)++;
			(*b->drop)++;
			continue;
		}
		/* fwd_put counts an oversized copy in drop-oversize. */
		for (copies = 0; set != 0; set &= set - 1) {
			used = fwd.out[k = __builtin_ctz(set)].used;
			fwd_put(&fwd, k, p, len);
			copies += (int)(fwd.out[k].used - used);
		}
		if (flood) {
			(*c.flooded)++;
			(*(flood == 1 ? c.flood_unknown : c.flood_multi))++;
			*c.flood_copies += (uint64_t)copies;
		} else if (copies)
			(*c.forwarded)++;
		if (copies == 0)
			(*b->drop)++;
	}
	return i;
}

static int
bridge_breathe(void)
{
	int total;

	now_read = 0;
	total = fwd_take(&fwd, from_ring, NULL);
	/*
	 * Idle, the sweep looks at the clock every 16th breath while the
	 * runtime spins, and every breath once it sleeps (after some 80
	 * empty breaths; then a breath comes at least every 100 ms).
	 */
	empty_breaths = total ? 0 : empty_breaths + 1;
	if (now_read || (empty_breaths & 15) == 0 || empty_breaths > 64) {
		clock_ms();
		fdb_sweep();
	}
	return total;
}

static const struct app_desc desc = {
	.name = "bridge",
	.usage = "[--age SECONDS] [--max-macs N] [--group PORT,PORT[,...]] "
	    "[--counters-out FILE]",
	.counters_out = 1,
	.summary = "Learning Ethernet bridge: every port name is an input and "
	    "an output.",
	.ports = (const struct port_desc[]){ { "*", PORT_IN },
	    { "*", PORT_OUT }, { NULL, 0 } },
	.init = bridge_init,
	.breathe = bridge_breathe,
};

APP_MAIN(desc)
