/*
 * lwaftr.h: the pieces of snb-lwaftr (RFC 7596 lightweight 4over6 AFTR)
 * and the interfaces between them.
 *
 *	conf.c	the softwire-config schema -> struct lwaftr_conf (the syntax
 *		is libring/cfg.h's)
 *	bt.c	the binding table: (IPv4, port) -> softwire, built and checked
 *		from the softwires (bt.h: its layout)
 *	btlookup.c lookups in it, single and batched (the packet path)
 *	btedit.c changes to a binding table: a new table beside the old
 *	ctl.c	snb-ctl's config requests: add, remove, set, get, reload
 *	journal.c those changes kept for a restart or swap, so that
 *		they outlive the process
 *	main.c	the app and its data path (rx.c, xlate.c, icmp.c, tx.c;
 *		see dp.h): ports v4 and v6, encap/decap, hairpinning, ICMP,
 *		fragments, ARP/NDP, VLAN, counters
 *
 * Addresses are kept in network byte order as they sit in packets
 * (uint32_t for IPv4, 16 bytes for IPv6), so the data path compares and
 * copies without swapping.
 */
#ifndef SNB_LWAFTR_H
#define SNB_LWAFTR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cfg.h"

/* One softwire: a B4's share of an IPv4 address (RFC 7597 port sets). */
struct softwire {
	uint32_t	ipv4;		/* network order */
	uint16_t	psid;
	uint8_t		psid_length;	/* 0..16 */
	uint8_t		reserved_bits;	/* reserved-ports-bit-count (a) */
	uint8_t		b4[16];		/* b4-ipv6 */
	uint8_t		br[16];		/* br-address */
};

/* What the config says of one side (external = IPv4, internal = IPv6). */
struct lwaftr_side {
	int		allow_incoming_icmp;	/* default 1 */
	int		generate_icmp_errors;	/* default 1 */
	uint32_t	mtu;			/* default 1460 ext, 1500 int */
	uint32_t	err_rate_packets;	/* default 600000 */
	uint32_t	err_rate_period;	/* seconds, default 2 */
	uint32_t	reasm_max_frags;	/* default 40 */
	uint32_t	reasm_max_packets;	/* default 20000 */
	char		*ingress_filter;	/* pcap expression or NULL */
	char		*egress_filter;
	struct cfg_pos	 ingress_at, egress_at;	/* their values, for errors */
	int		vlan_tag;		/* -1 = untagged */
	uint32_t	flow_label;		/* internal only, default 0 */
	int		hairpinning;		/* internal only, default 1 */
	/* instance { queue { external-interface | internal-interface } } */
	uint8_t		ip[16];			/* IPv4 in the first 4 bytes */
	uint8_t		mac[6];
	int		has_nh_ip, has_nh_mac;	/* next-hop { ip | mac } */
	uint8_t		nh_ip[16];
	uint8_t		nh_mac[6];
};

struct lwaftr_conf {
	struct lwaftr_side	 ext, in;
	struct softwire		*sw;		/* binding-table, in file order */
	struct cfg_pos		*sw_at;		/* where each softwire starts */
	size_t			 nsw;
};

/*
 * Parse text (from file, used in messages) into c.  Unknown fields, bad
 * values and missing required ones are errors: returns -1 with
 * "FILE:LINE:COL: message" in err.  lwaftr_conf_free() in both cases.
 */
int	lwaftr_conf_parse(struct lwaftr_conf *c, const char *text,
	    const char *file, char *err, size_t errlen);
int	lwaftr_conf_load(struct lwaftr_conf *c, const char *path, char *err,
	    size_t errlen);
void	lwaftr_conf_free(struct lwaftr_conf *c);

/*
 * The binding table.  Built once from the softwires (conflicting entries,
 * e.g. overlapping port sets of one IPv4 address, are an error), then
 * read-only: a change builds a new table beside the old one and the data
 * path switches to it between two breaths (ctl.c).
 */
struct lwaftr_bt;

/*
 * at[i], when at is not NULL, is where sw[i] is in file: a conflict is
 * then "FILE:LINE:COL: ..." at the later softwire of the two, naming the
 * earlier one's position (else softwires are named by number).
 */
struct lwaftr_bt *lwaftr_bt_build(const struct softwire *sw, size_t n,
	    const struct cfg_pos *at, const char *file, char *err,
	    size_t errlen);
/*
 * The same from n softwires already in (address, PSID) order, malloc'd:
 * the table takes the array (no copy, no sort), also when it fails.
 */
struct lwaftr_bt *lwaftr_bt_adopt(struct softwire *sorted, size_t n,
	    char *err, size_t errlen);
/* The checks of one softwire alone (port set, PSID range); who names it. */
int	lwaftr_sw_check(const struct softwire *s, const char *who, char *err,
	    size_t errlen);
/* The table's softwires, in (address, PSID) order. */
const struct softwire *lwaftr_bt_softwires(const struct lwaftr_bt *bt,
	    size_t *n);
void	lwaftr_bt_free(struct lwaftr_bt *bt);
/* The softwire owning (ipv4, port) (both network order), or NULL. */
const struct softwire *lwaftr_bt_lookup(const struct lwaftr_bt *bt,
	    uint32_t ipv4, uint16_t port);
/*
 * n lookups at once; the table's memory accesses overlap (prefetch all,
 * then resolve all), which is what makes a large table cheap.
 */
void	lwaftr_bt_lookup_burst(const struct lwaftr_bt *bt, const uint32_t *ipv4,
	    const uint16_t *port, int n, const struct softwire **out);
/* Is ipv4 (network order) in the table at all (any port)? */
int	lwaftr_bt_has_ipv4(const struct lwaftr_bt *bt, uint32_t ipv4);

/* btedit.c */
/* "softwire A.B.C.D psid P", in buf: how requests and refusals name one. */
const char *lw_sw_name(const struct softwire *s, char *buf, size_t len);
/* The refusal of an add whose key is taken: the name, lw_sw_name()'s. */
#define LW_SW_EXISTS	"%s exists already (set changes it)"
/*
 * The softwire keyed (ipv4, psid), or with any some softwire of ipv4
 * (its port set); NULL when there is none.
 */
const struct softwire *lwaftr_bt_find(const struct lwaftr_bt *bt,
	    uint32_t ipv4, uint16_t psid, int any);
/*
 * A new table: old without the softwires keyed like del[] (each must be
 * there; only ipv4 and psid are read) and with add[] (none may be there
 * once del[] is gone, all must fit their address's port set).  A set is a
 * del and an add of one key.  old is not changed; NULL with a message
 * naming the softwire on a refused change.  Costs one table's memory.
 */
struct lwaftr_bt *lwaftr_bt_change(const struct lwaftr_bt *old,
	    const struct softwire *add, size_t nadd,
	    const struct softwire *del, size_t ndel, char *err, size_t errlen);
/* What b changes of a: softwires added, removed, changed (same key). */
void	lwaftr_bt_diff(const struct lwaftr_bt *a, const struct lwaftr_bt *b,
	    size_t *added, size_t *removed, size_t *changed);

/* A table as a request sees it: its lwaftr_bt_find(). */
struct sw_view {
	const struct softwire *(*find)(void *ctx, uint32_t ipv4,
		    uint16_t psid, int any);
	void	*ctx;
};

enum { LW_GET, LW_ADD, LW_REMOVE, LW_SET };

/* ctl.c */
/*
 * The words of add, remove, set or get against v: *op, and the softwire
 * put (add, set: whole) or removed (its key).  -1 with the reason on f.
 */
int	lw_sw_words(const struct sw_view *v, int argc, char **argv, int *op,
	    struct softwire *s, FILE *f);
/* The binding table of a softwire-config file, or NULL with why in err. */
struct lwaftr_bt *lw_load_table(const char *file, char *err, size_t len);

/* journal.c */
/*
 * At start(), before the first breath and the first request: bt (conf's
 * table) with the journal's changes when this process continues one of
 * the same conf (a restart, a swap), else bt; the journal is then this
 * process's.  Reports on standard error; *skipped: lines that no longer
 * apply.
 */
struct lwaftr_bt *lw_journal_start(struct lwaftr_bt *bt, const char *conf,
	    size_t *skipped);
/*
 * After a change took effect: its words, one line.  -1 with the reason in
 * why when it is not journalled (nothing of it is then).
 */
int	lw_journal_append(int argc, char **argv, char *why, size_t whylen);
/*
 * After a load: the table is file's (NULL: conf's); earlier lines go.
 * -1: the journal could not be rewritten (it is emptied).
 */
int	lw_journal_reset(const char *file);

#endif
