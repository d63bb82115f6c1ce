/*
 * pwstage.c: snb-l2tp and snb-gre (pwstage.h).
 *
 * Flow control is exact, as in snb-vlan: a frame is taken from its input
 * only when the port it goes to has room, every ring's burst with
 * fwd_take(), the outputs committed after the releases (forward.h).  A
 * port is one index of the struct fwd in both directions: 0 is core, the
 * others pseudowires.
 *
 * Decapsulation finds the pseudowire by a scan of a small array (at most
 * PW_MAX entries, a few cache lines): L2TP by the session id and the
 * source address, then the cookie; GRE by the source address, then the
 * key.  Every frame that does not make it is counted by why.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward.h"
#include "pwstage.h"
#include "stage.h"
#include "tunnel.h"

#define CORE	0

static int type;			/* PW_L2TP or PW_GRE */
static uint8_t proto;			/* SNB_IPPROTO_L2TP or _GRE */
static struct pw_conf conf;

/* The pseudowires of our type, by index i < npw. */
static const struct pw *pws[PW_MAX];
static struct tun_tx tx[PW_MAX];
static uint32_t session[PW_MAX];	/* L2TP: local session, for the scan */
static int pw_port[PW_MAX];		/* its port, or -1 when not bound */
static int npw;
static uint64_t *c_decap_pw[PW_MAX];

/* The ports: names[0] "core", then the bound pseudowires. */
static const char *names[PW_MAX + 2];
static int port_pw[PW_MAX + 1];		/* the pseudowire of port k > 0 */
static uint64_t *c_encap_pw[PW_MAX + 1];
static int nports;
static struct fwd fwd;

/* In the order they are made (app_counters()). */
static struct {
	uint64_t *encap, *decap, *runt, *too_big, *verdict[TUN_RX_NVERDICTS],
	    *unknown_session, *wrong_remote, *wrong_cookie, *unknown_remote,
	    *wrong_key, *no_port;
} c;

static void
bind_ports(void)
{
	const struct pw *pw;
	char n[48];
	int i, k;

	names[nports++] = "core";
	for (i = 0; i < app_nports; i++) {
		const char *name = app_ports[i].name;

		if (strcmp(name, "core") == 0)
			continue;
		/* Each name once: by its input, or by its output alone. */
		if (!(app_ports[i].flags & PORT_IN) &&
		    app_port_dir(name, PORT_IN) != NULL)
			continue;
		if ((pw = pw_find(&conf, name)) == NULL || pw->type != type)
			errx(1, "no %s pseudowire '%s' in the configuration "
			    "(ports: core and the pseudowires)",
			    type == PW_L2TP ? "l2tp" : "gre", name);
		names[nports++] = name;
	}
	app_require_port("core", 0);
	fwd_init(&fwd, names, names);
	for (k = 1; k < nports; k++) {
		for (i = 0; i < npw && strcmp(pws[i]->name, names[k]); i++)
			;
		port_pw[k] = i;
		pw_port[i] = k;
		snprintf(n, sizeof(n), "encap[%s]", names[k]);
		c_encap_pw[k] = app_counter(n);
	}
	for (i = 0; i < npw; i++) {
		snprintf(n, sizeof(n), "decap[%s]", pws[i]->name);
		c_decap_pw[i] = app_counter(n);
	}
}

void
pwstage_init(int argc, char **argv)
{
	static const char *const cnames[] = { "encap", "decap", "drop-runt",
	    "drop-too-big", NULL }, *const l2tp[] = { "drop-unknown-session",
	    "drop-wrong-remote", "drop-wrong-cookie", NULL }, *const gre[] = {
	    "drop-unknown-remote", "drop-wrong-key", NULL };
	static const char *const vnames[TUN_RX_NVERDICTS] = {
		NULL, "drop-not-ipv6", "drop-not-local", "drop-fragment",
		"drop-other-protocol", "drop-malformed", "drop-gre-protocol",
		"drop-gre-checksum",
	};
	char e[512], *text;
	size_t j, len;
	int i;

	/* One program text, two apps: the stage file names which. */
	type = strcmp(app_stage->app, "l2tp") == 0 ? PW_L2TP : PW_GRE;
	proto = type == PW_L2TP ? SNB_IPPROTO_L2TP : SNB_IPPROTO_GRE;
	/* No option of its own: --counters-out is the runtime's. */
	app_options(argc, argv, (const struct app_opt[]){ APP_OPT_END },
	    APP_OPT_PERMUTE | APP_OPT_WORDS);
	if (optind == argc) {
		warnx("missing CONFIG");
		app_usage();
	}
	if (optind + 1 != argc) {
		warnx("unexpected argument '%s'", argv[optind + 1]);
		app_usage();
	}
	/* A file that is not there is a failure (1), a wrong one a usage
	 * error (2), as in every tool that reads one (cli.h). */
	if ((text = cfg_read(argv[optind], &len, e, sizeof(e))) == NULL)
		errx(1, "%s", e);
	if (pw_conf_parse(&conf, text, len, argv[optind], e, sizeof(e)) == -1)
		errx(2, "%s", e);
	free(text);
	for (j = 0; j < conf.npw; j++) {
		if (conf.pw[j].type != type)
			continue;
		pws[npw] = &conf.pw[j];
		session[npw] = conf.pw[j].local_session;
		tun_tx_init(&tx[npw], &conf, &conf.pw[j]);
		pw_port[npw++] = -1;
	}
	if (npw == 0)
		errx(2, "%s: no %s pseudowire", argv[optind],
		    type == PW_L2TP ? "l2tp" : "gre");
	app_counters(&c.encap, cnames);
	for (i = 1; i < TUN_RX_NVERDICTS; i++)
		if (type == PW_GRE || i < TUN_RX_GRE_PROTO)
			c.verdict[i] = app_counter(vnames[i]);
	if (type == PW_L2TP)
		app_counters(&c.unknown_session, l2tp);
	else
		app_counters(&c.unknown_remote, gre);
	c.no_port = app_counter("drop-no-port");
	bind_ports();
}

/* The pseudowire of a checked frame from the core, or -1 (counted). */
static inline int
lookup(const struct tun_rx *rx)
{
	int i, remote = 0, known = 0;

	if (type == PW_L2TP) {
		/* The session and the source together name a pseudowire
		 * (pwconf.h): many may share 0xffffffff. */
		for (i = 0; i < npw; i++) {
			if (session[i] != rx->session)
				continue;
			known = 1;
			if (memcmp(rx->src, pws[i]->remote, 16) != 0)
				continue;
			if (memcmp(rx->cookie, pws[i]->remote_cookie, 8) != 0) {
				(*c.wrong_cookie)++;
				return -1;
			}
			return i;
		}
		(*(known ? c.wrong_remote : c.unknown_session))++;
		return -1;
	}
	for (i = 0; i < npw; i++) {
		if (memcmp(rx->src, pws[i]->remote, 16) != 0)
			continue;
		remote = 1;
		if (pws[i]->has_key == rx->has_key &&
		    (!rx->has_key || pws[i]->key == rx->key))
			return i;
	}
	(*(remote ? c.wrong_key : c.unknown_remote))++;
	return -1;
}

static uint32_t
from_core(struct ring *r, uint32_t n)
{
	struct tun_rx rx;
	struct packet *q;
	uint32_t i, len;
	int v, pw, k;

	for (i = 0; i < n; i++) {
		struct packet *p = ring_peek(r, i);

		len = packet_len(r, p);
		/* Drops need no room: counted once, as the frame is gone. */
		if ((v = tun_rx(p->data, len, conf.local, proto, &rx)) !=
		    TUN_RX_OK) {
			(*c.verdict[v])++;
			continue;
		}
		if ((pw = lookup(&rx)) < 0)
			continue;
		if ((k = pw_port[pw]) < 0 || fwd.out[k].ring == NULL) {
			(*c.no_port)++;
			continue;
		}
		if (!fwd_room(&fwd, k))
			break;
		if ((q = fwd_slot(&fwd, k, p, rx.len)) == NULL)
			continue;
		q->wirelen = p->wirelen > rx.off ? p->wirelen - rx.off : 0;
		memcpy(q->data, p->data + rx.off, rx.len);
		(*c.decap)++;
		(*c_decap_pw[pw])++;
	}
	return i;
}

static uint32_t
to_core(int k, struct ring *r, uint32_t n)
{
	const struct tun_tx *t = &tx[port_pw[k]];
	struct packet *q;
	uint32_t i, len;

	for (i = 0; i < n; i++) {
		struct packet *p = ring_peek(r, i);

		len = packet_len(r, p);
		if (len < SNB_ETH_HLEN) {
			(*c.runt)++;
			continue;
		}
		if (tun_ipv6_len(t, len) > conf.mtu) {
			(*c.too_big)++;
			continue;
		}
		if (fwd.out[CORE].ring == NULL) {
			(*c.no_port)++;
			continue;
		}
		if (!fwd_room(&fwd, CORE))
			break;
		if ((q = fwd_slot(&fwd, CORE, p, t->hlen + len)) == NULL)
			continue;
		q->wirelen = p->wirelen ? p->wirelen + t->hlen : 0;
		tun_encap(q->data, t, p->data, len);
		(*c.encap)++;
		(*c_encap_pw[k])++;
	}
	return i;
}

static uint32_t
take(void *ctx, int from, struct ring *r, uint32_t n)
{
	return from == CORE ? from_core(r, n) : to_core(from, r, n);
}

int
pwstage_breathe(void)
{
	return fwd_take(&fwd, take, NULL);
}

