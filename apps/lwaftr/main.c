/*
 * snb-lwaftr: a lightweight 4over6 AFTR (RFC 7596; lwaftr.h maps its
 * files).  This one is the glue: options, configuration, ports, counters
 * and the breathe loop, which takes a burst from each input (rx.c) and
 * commits what the bursts wrote into the output rings' slots (tx.c).
 */
#include <err.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <pcap/pcap.h>

#include "dp.h"
#include "proto.h"
#include "stage.h"

/* The one instance: the lwAFTR, and what only this file's glue keeps. */
static struct stage {
	struct lw		 lw;
	struct lwaftr_conf	 conf;
	const char		*path, *counters_out;
	uint64_t		*pub[LW_NCOUNTERS];	/* stage file slots */
	uint64_t		*memuse[2];	/* gauges, v4 and v6 */
	int			 unpub;		/* busy breaths not published */
	int			 bound;		/* ports looked up */
} stage = { .lw = { .s4 = { .name = "v4" }, .s6 = { .name = "v6",
    .v6 = 1 } } };

#define REASM4_TIMEOUT	15000000000ULL	/* RFC 791's suggested 15 s */
#define PUBLISH_EVERY	8	/* busy breaths: see lw_breathe() */
#define REASM6_TIMEOUT	60000000000ULL	/* RFC 8200 4.5: 60 s */

#define LW_P_NAME(x, s)	s "-bytes", s "-packets",
#define LW_S_NAME(x, s)	s,
static const char *const ctr_name[LW_NCOUNTERS] = {
	LW_PAIRS(LW_P_NAME)
	LW_SINGLES(LW_S_NAME)
};

/* Side i (0: v4, 1: v6) of lw, for what is done to both in turn. */
static inline struct side *
side(struct lw *lw, int i)
{
	return i ? &lw->s6 : &lw->s4;
}

static const char *const memuse_name[2] = {
	"memuse-ipv4-frag-reassembly-buffer",
	"memuse-ipv6-frag-reassembly-buffer" };

/*
 * A free slot in the stage file, counted there: it holds what a
 * predecessor handed over too (its gauges, whatever we publish or not).
 * None without a file (the fuzz target).
 */
static int
room(void)
{
	return app_stage != NULL && app_stage->ncounters < STAGE_MAX_COUNTERS;
}

/*
 * Counters that moved get a slot in the stage file (it has room for
 * STAGE_MAX_COUNTERS, fewer than we have) and are copied there.  So do
 * the reference's two gauges, the reassembly buffers' bytes now (not in
 * --counters-out, which lists counters that moved).
 */
static void
publish_counters(struct stage *st)
{
	struct reasm *r;
	size_t m;
	int i;

	for (i = 0; i < 2; i++) {
		r = side(&st->lw, i)->reasm;
		m = r != NULL ? reasm_memuse(r) : 0;	/* 0: freed at exit */
		if (st->memuse[i] == NULL && m != 0 && room())
			st->memuse[i] = app_gauge(memuse_name[i]);
		if (st->memuse[i] != NULL)
			*st->memuse[i] = m;
	}

	for (i = 0; i < LW_NCOUNTERS; i++) {
		if (st->pub[i] == NULL && st->lw.ctr[i] != 0 && room())
			st->pub[i] = app_counter(ctr_name[i]);
		if (st->pub[i] != NULL)
			*st->pub[i] = st->lw.ctr[i];
	}
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(ctr_name[*(const int *)a], ctr_name[*(const int *)b]);
}

/* --counters-out: the counters that moved, "name value", sorted. */
static void
write_counters(const struct stage *st)
{
	int idx[LW_NCOUNTERS], n = 0, i;
	FILE *f;

	for (i = 0; i < LW_NCOUNTERS; i++)
		if (st->lw.ctr[i] != 0)
			idx[n++] = i;
	qsort(idx, (size_t)n, sizeof(idx[0]), by_name);
	if ((f = fopen(st->counters_out, "w")) == NULL) {
		warn("%s", st->counters_out);
		return;
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%s %llu\n", ctr_name[idx[i]],
		    (unsigned long long)st->lw.ctr[idx[i]]);
	if (fclose(f) == EOF)
		warn("%s", st->counters_out);
}

/* A filter of the config file path, whose value is at `at`. */
static struct snb_bpf *
compile_filter(const char *path, const char *expr, const struct cfg_pos *at,
    const char *what)
{
	char errbuf[256];
	struct bpf_program bp;
	struct snb_bpf *prog;
	pcap_t *pd;

	if ((pd = pcap_open_dead(DLT_EN10MB, 65535)) == NULL)
		errx(1, "pcap_open_dead failed");
	if (pcap_compile(pd, &bp, expr, 1, PCAP_NETMASK_UNKNOWN) == -1)
		errx(2, "%s:%d:%d: bad %s '%s': %s", path, at->line,
		    at->col, what, expr, pcap_geterr(pd));
	if ((prog = snb_bpf_load(bp.bf_insns, bp.bf_len, errbuf,
	    sizeof(errbuf))) == NULL)
		errx(2, "%s:%d:%d: unsupported %s '%s': %s", path,
		    at->line, at->col, what, expr, errbuf);
	pcap_freecode(&bp);
	pcap_close(pd);
	return prog;
}

static void
side_init(struct side *s, const struct lwaftr_side *cf, const char *path)
{
	/* conf.c checked every value (range, next hop) with its position */
	s->cf = cf;
	s->mtu = cf->mtu;
	memcpy(s->mac, cf->mac, 6);
	/* else ARP/NDP learn it, asked first at the first breath */
	if (cf->has_nh_mac) {
		memcpy(s->nh_mac, cf->nh_mac, 6);
		s->nh_known = 1;
	}
	if (cf->vlan_tag >= 0) {
		s->vlan = 1;
		s->vlan_tci = htons((uint16_t)(cf->vlan_tag & SNB_VLAN_VID_MASK));
	}
	if (cf->ingress_filter)
		s->ingress = compile_filter(path, cf->ingress_filter,
		    &cf->ingress_at, "ingress-filter");
	if (cf->egress_filter)
		s->egress = compile_filter(path, cf->egress_filter,
		    &cf->egress_at, "egress-filter");
	s->reasm = reasm_new(s->v6 ? 6 : 4, cf->reasm_max_packets,
	    cf->reasm_max_frags, s->v6 ? REASM6_TIMEOUT : REASM4_TIMEOUT, 0);
	if (s->reasm == NULL)
		errx(1, "%s reassembly: out of memory", s->name);
	if ((s->scratch = malloc(SCRATCH_SIZE)) == NULL)
		err(1, NULL);
}

static void
path_opt(const char *opt, char *arg, void *var)
{
	*(const char **)var = arg;
}

static void
lw_init(int argc, char **argv)
{
	struct stage *st = &stage;
	struct lw *lw = &st->lw;
	int deterministic = 0;
	const struct app_opt opts[] = {
		APP_FLAG("deterministic", &deterministic),
		APP_ARG("counters-out", path_opt, &st->counters_out, NULL),
		APP_OPT_END
	};
	char errbuf[1024];

	if (app_options(argc, argv, opts, APP_OPT_WORDS) != argc - 1)
		app_usage();
	st->path = argv[argc - 1];
	/*
	 * Big arrays (a table's) in their own mappings, whatever was freed
	 * before: glibc's moving threshold would otherwise put the next
	 * table's in the heap, and a freed table would stay resident.
	 */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	/* Missing or unreadable is a failure (1), bad contents a usage error. */
	if (access(st->path, R_OK) == -1)
		err(1, "%s", st->path);
	if (lwaftr_conf_load(&st->conf, st->path, errbuf,
	    sizeof(errbuf)) == -1)
		errx(2, "%s", errbuf);
	if ((lw->bt = lwaftr_bt_build(st->conf.sw, st->conf.nsw,
	    st->conf.sw_at, st->path, errbuf, sizeof(errbuf))) == NULL)
		errx(2, "%s", errbuf);
	/* the table has its own copy: a million softwires are 40 MB */
	free(st->conf.sw);
	free(st->conf.sw_at);
	st->conf.sw = NULL;
	st->conf.sw_at = NULL;
	st->conf.nsw = 0;
	lw->s4.lw = lw->s6.lw = lw;
	side_init(&lw->s4, &st->conf.ext, st->path);
	side_init(&lw->s6, &st->conf.in, st->path);
	/* The vectors number fragments from 0x4242 + 1 in --deterministic. */
	lw->frag_id4 = deterministic ? 0x4242 : (uint16_t)arc4random();
	lw->frag_id6 = deterministic ? 0x42424242 : arc4random();
}

/*
 * The changes made to the table while an lwAFTR of this stage ran before
 * us (a restart, a swap to the same conf): made again before the first
 * breath and the first request (journal.c).
 */
static void
lw_start(void)
{
	struct stage *st = &stage;
	uint64_t *g;
	size_t skipped;
	int i;

	/*
	 * A predecessor's counts were handed over into our stage file; ours
	 * are published over them, so they go on from there (snb-run(1)).
	 */
	for (i = 0; i < LW_NCOUNTERS; i++)
		if ((g = app_counter_find(ctr_name[i])) != NULL) {
			st->lw.ctr[i] = *g;
			st->pub[i] = g;
		}
	/* Its gauges too: they are ours to set (0 until we hold any). */
	for (i = 0; i < 2; i++)
		st->memuse[i] = app_counter_find(memuse_name[i]);
	st->lw.bt = lw_journal_start(st->lw.bt, st->path, &skipped);
	if ((g = app_counter_find("journal-lines-skipped")) != NULL)
		*g = skipped;	/* a predecessor's, handed over */
	else if (skipped > 0 && room())
		*app_gauge("journal-lines-skipped") = skipped;
}

static int
lw_ctl(int argc, char **argv, FILE *out)
{
	return lw_control(&stage.lw, stage.path, argc, argv, out);
}

/* Late, at the first breath: the fuzz target sets the ports up after init. */
static void
bind_ports(struct stage *st)
{
	struct side *s;
	int i;

	for (i = 0; i < 2; i++) {
		s = side(&st->lw, i);
		s->in = app_port_dir(s->name, PORT_IN);
		s->out = app_port_dir(s->name, PORT_OUT);
		s->ro = s->out && s->out->nrings ? &s->out->rings[0] : NULL;
		tx_fast(s);
	}
	st->bound = 1;
}

static void
side_start(struct side *s)
{
	s->nout = 0;
	s->nbytes = 0;
	s->room = s->ro ? ring_room(s->ro, (uint32_t)s->ro->mask + 1) : 0;
}

/* Commit the frames of this breath (side_start() begins the next). */
static int
side_commit(struct side *s)
{
	if (s->ro != NULL && s->nout > 0)
		ring_commit_bytes(s->ro, s->nout, s->nbytes);
	return (int)s->nout;
}

/* Solicitations for unresolved next hops that are due. */
static int
timers(struct lw *lw)
{
	uint64_t wake = 0;
	struct side *s;
	int i, sent = 0;

	for (i = 0; i < 2; i++) {
		s = side(lw, i);
		if (s->nh_known)
			continue;
		if (lw_now(lw) >= s->sol_due && room_for(s, 1)) {
			tx_solicit(s);
			sent++;
		}
		if (wake == 0 || s->sol_due < wake)
			wake = s->sol_due;
	}
	if (wake)
		app_wake_at(wake);
	return sent;
}

static int
lw_breathe(void)
{
	struct lw *lw = &stage.lw;
	struct side *s;
	int n, i, j;

	lw->now = 0;
	if (!stage.bound)
		bind_ports(&stage);
	for (i = 0; i < 2; i++) {
		side_start(side(lw, i));
		tx_flush_held(side(lw, i));
	}
	n = timers(lw);
	for (i = 0; i < 2; i++)
		for (s = side(lw, i), j = 0; s->in && j < s->in->nrings; j++)
			n += rx_burst(s, &s->in->rings[j]);
	n += side_commit(&lw->s4) + side_commit(&lw->s6);
	/*
	 * Publishing looks at every counter, as much work as a few packets:
	 * at full speed once every PUBLISH_EVERY breaths, and always at a
	 * breath that found nothing to do, before the stage sleeps.
	 */
	if (n > 0 ? ++stage.unpub == PUBLISH_EVERY : stage.unpub > 0) {
		publish_counters(&stage);
		stage.unpub = 0;
	}
	return n;
}

static void
lw_stop(int eof)
{
	struct lw *lw = &stage.lw;
	struct side *s;
	int i;

	if (!stage.bound)
		bind_ports(&stage);
	lw->now = 0;
	for (i = 0; i < 2; i++) {
		s = side(lw, i);
		/*
		 * End of stream before the first solicitation was due: send
		 * it now, so that a short run (a test) still asks for its
		 * next hops.
		 */
		if (eof) {
			side_start(s);
			if (!s->nh_known && s->sol_due == 0 && room_for(s, 1))
				tx_solicit(s);
			side_commit(s);
		}
		tx_fini(s);
		reasm_free(s->reasm);
		s->reasm = NULL;
		snb_bpf_free(s->ingress);
		snb_bpf_free(s->egress);
	}
	publish_counters(&stage);
	if (stage.counters_out)
		write_counters(&stage);
	lwaftr_bt_free(lw->bt);
	lwaftr_conf_free(&stage.conf);
}

static const struct port_desc ports[] = {
	{ "v4", PORT_IN },
	{ "v4", PORT_OUT },
	{ "v6", PORT_IN },
	{ "v6", PORT_OUT },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "lwaftr",
	.usage = "[--deterministic] [--counters-out FILE] CONF",
	.summary = "Lightweight 4over6 AFTR (RFC 7596): port v4 faces the "
	    "IPv4 internet, port v6 the B4s.",
	.ports = ports,
	.init = lw_init,
	.start = lw_start,
	.breathe = lw_breathe,
	.stop = lw_stop,
	.control = lw_ctl,
};

APP_MAIN(desc)
