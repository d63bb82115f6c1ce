/*
 * snb-esp: IPsec ESP tunnel mode for IPv6 between a clear side and the
 * core (snb-esp(1); esp.h lists the files).  This file is the app's
 * glue: arguments, ports, counters, the SA table's reload (SIGHUP or
 * snb-ctl GRAPH config LABEL reload) and the sequence numbers a
 * restarted or swapped-in process must go on from.
 *
 * Never the same nonce twice.  A process that restarts (--restart) or
 * replaces this one (snb-ctl swap) reads the SA file again, whose
 * sequence numbers are where the SAs began.  So the outbound numbers
 * are leased: before an SA sends past its lease, the lease moves
 * SEQ_LEASE further and is committed in the stage's state (app.h); a
 * successor starts every SA at its lease, never below a number sent.
 * The inbound windows' tops are committed every breath, and a
 * successor takes everything at or below a top as seen: a packet in
 * flight across the change may be lost, none is accepted twice.  So is
 * each inbound SA's count of failures in a row (RFC 4303 appendix A3):
 * a peer that jumped ahead is re-synchronised after the threshold
 * whether or not the stage changed hands on the way.
 */
#include <arpa/inet.h>
#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "esp.h"
#include "forward.h"
#include "ip6ext.h"
#include "proto.h"
#include "replay.h"
#include "stage.h"

#define SEQ_LEASE	(1ULL << 16)
#define CLEAR		0	/* fwd port indexes */
#define CORE		1
#define OUTER_HLEN	(SNB_ETH_HLEN + SNB_IPV6_HLEN)
#define HOP_LIMIT	64

static const char *safile;
static struct esp_sadb sadb;		/* the data path's */
static struct esp_sadb next_db;		/* a reload's, until adopted */
static struct esp_sa *last_out;		/* the last outbound SA used */
static struct esp_sa *last_in;		/* the last inbound SA found */
static int judged;			/* esp_decap() ran this breath */
static struct fwd fwd;

static struct {
	uint64_t *encrypted, *decrypted, *drop_not_ipv6, *drop_no_sa,
	    *drop_seq_exhausted, *drop_not_esp, *drop_too_short,
	    *drop_bad_spi, *drop_replay, *drop_too_old, *drop_icv,
	    *drop_bad_padding, *drop_bad_next_header, *drop_dummy,
	    *drop_bad_inner, *drop_wrong_remote, *resynced,
	    *drop_inner_remote;
} cnt;
static const char *const cnt_names[] = {
	"encrypted", "decrypted", "drop-not-ipv6", "drop-no-sa",
	"drop-seq-exhausted", "drop-not-esp", "drop-too-short",
	"drop-bad-spi", "drop-replay", "drop-too-old", "drop-icv",
	"drop-bad-padding", "drop-bad-next-header", "drop-dummy",
	"drop-bad-inner", "drop-wrong-remote", "resynced",
	"drop-inner-remote", NULL
};

/* ---- the data path ---- */

static inline struct esp_sa *
find_out(const uint8_t *dst)
{
	int i;

	if (last_out != NULL && memcmp(last_out->remote, dst, 16) == 0)
		return last_out;
	for (i = 0; i < sadb.nsa; i++)
		if (sadb.sa[i].dir == ESP_OUT &&
		    memcmp(sadb.sa[i].remote, dst, 16) == 0)
			return last_out = &sadb.sa[i];
	return NULL;
}

static inline struct esp_sa *
find_in(uint32_t spi, const uint8_t *dst)
{
	int i;

	/* A burst is mostly one SA's. */
	if (last_in != NULL && last_in->spi == spi &&
	    memcmp(last_in->local, dst, 16) == 0)
		return last_in;
	for (i = 0; i < sadb.nsa; i++)
		if (sadb.sa[i].spi == spi && sadb.sa[i].dir == ESP_IN &&
		    memcmp(sadb.sa[i].local, dst, 16) == 0)
			return last_in = &sadb.sa[i];
	return NULL;
}

/* A frame dropped, counted in c: taken (1). */
static inline int
drop(uint64_t *c)
{
	(*c)++;
	return 1;
}

/* clear -> core: 1 when the frame was taken (sent or dropped). */
static inline int
encap(const struct packet *p, uint32_t len)
{
	const struct ipv6_hdr *in = (const void *)(p->data + SNB_ETH_HLEN);
	struct ipv6_hdr *ip;
	struct esp_sa *sa;
	struct packet *q;
	uint32_t elen;

	if (len < OUTER_HLEN || ((const struct eth_hdr *)p->data)->type !=
	    htons(SNB_ETH_IPV6) || ipv6_version(in) != SNB_IPV6_VERSION)
		return drop(cnt.drop_not_ipv6);
	if ((sa = find_out(in->dst)) == NULL)
		return drop(cnt.drop_no_sa);
	/* Never wrap: the next number would repeat a nonce (RFC 4303
	 * 3.3.3: a new SA is due long before). */
	if (sa->seq == UINT64_MAX) {
		audit_note(AUDIT_SEQ_CYCLE, sa->spi, NULL, sa->local,
		    sa->remote, ipv6_flow(in));
		return drop(cnt.drop_seq_exhausted);
	}
	elen = esp_encap_len(len - SNB_ETH_HLEN);
	if (!fwd_room(&fwd, CORE))
		return 0;
	if ((q = fwd_slot(&fwd, CORE, p, OUTER_HLEN + elen)) == NULL)
		return 1;
	if (sa->seq >= sa->lease) {	/* committed before it is sent past */
		sa->lease = sa->seq > UINT64_MAX - SEQ_LEASE ? UINT64_MAX :
		    sa->seq + SEQ_LEASE;
		esp_state_save(&sadb);
	}
	q->wirelen = 0;
	/* The addresses are nd's to set; the traffic class goes along. */
	memcpy(q->data, p->data, SNB_ETH_HLEN);
	ip = (struct ipv6_hdr *)(q->data + SNB_ETH_HLEN);
	ip->ver_tc_flow = htonl(SNB_IPV6_VERSION << 28 |
	    ipv6_tclass(in) << 20);
	ip->plen = htons((uint16_t)elen);
	ip->next = SNB_IPPROTO_ESP;
	ip->hop_limit = HOP_LIMIT;
	memcpy(ip->src, sa->local, 16);
	memcpy(ip->dst, sa->remote, 16);
	esp_encap(sa, p->data + SNB_ETH_HLEN, len - SNB_ETH_HLEN,
	    q->data + OUTER_HLEN);
	return 1;
}

/* core -> clear: 1 when the frame was taken (passed or dropped). */
static inline int
decap(const struct packet *p, uint32_t len)
{
	const struct ipv6_hdr *ip = (const void *)(p->data + SNB_ETH_HLEN);
	struct fwd_out *o = &fwd.out[CLEAR];
	const uint8_t *esp;
	enum esp_verdict v;
	struct esp_sa *sa;
	struct packet *q;
	uint32_t plen, inner, off, spi;
	uint8_t next;

	if (len < OUTER_HLEN || ((const struct eth_hdr *)p->data)->type !=
	    htons(SNB_ETH_IPV6) || ipv6_version(ip) != SNB_IPV6_VERSION)
		return drop(cnt.drop_not_esp);
	plen = ntohs(ip->plen);
	if (OUTER_HLEN + plen > len)
		return drop(cnt.drop_too_short);
	/* ESP may follow extension headers (RFC 4303 3.1.2): a peer's
	 * destination options, say.  Fragments are not reassembled.  The
	 * walk is for those: ESP right after the header needs none. */
	if (ip->next == SNB_IPPROTO_ESP)
		off = SNB_IPV6_HLEN;
	else if (ip6ext_walk((const uint8_t *)ip, SNB_IPV6_HLEN + plen,
	    &next, &off) != IP6EXT_OK || next != SNB_IPPROTO_ESP)
		return drop(cnt.drop_not_esp);
	esp = (const uint8_t *)ip + off;
	plen = SNB_IPV6_HLEN + plen - off;	/* ESP's own length */
	if (plen < ESP_HLEN)
		return drop(cnt.drop_too_short);
	spi = (uint32_t)esp[0] << 24 | (uint32_t)esp[1] << 16 |
	    (uint32_t)esp[2] << 8 | esp[3];
	/* The SA is between two addresses: from any other, the packet is
	 * not the peer's (RFC 4301 4.1 lets the lookup take the source
	 * too), and costs no decryption. */
	if ((sa = find_in(spi, ip->dst)) == NULL ||
	    memcmp(ip->src, sa->remote, 16) != 0) {
		audit_note(AUDIT_NO_SA, spi, esp, ip->src, ip->dst,
		    ipv6_flow(ip));
		return drop(sa == NULL ? cnt.drop_bad_spi :
		    cnt.drop_wrong_remote);
	}
	/* The plaintext is never longer than the ESP packet. */
	if (SNB_ETH_HLEN + plen > o->ring->capacity)
		return drop(fwd.drop_oversize);
	if (!fwd_room(&fwd, CLEAR))
		return 0;
	q = ring_slot(o->ring, o->used);
	v = esp_decap(sa, esp, plen, q->data + SNB_ETH_HLEN, &inner);
	judged = 1;
	if (v != ESP_OK) {
		/* RFC 4303 3.4.3 and 3.4.4: auditable events. */
		if (v == ESP_REPLAY || v == ESP_TOO_OLD || v == ESP_BAD_ICV)
			audit_note(v == ESP_REPLAY ? AUDIT_REPLAY :
			    v == ESP_TOO_OLD ? AUDIT_TOO_OLD : AUDIT_ICV, spi,
			    esp, ip->src, ip->dst, ipv6_flow(ip));
		/* drop_replay .. drop_bad_inner: in esp_verdict's order */
		return drop(v == ESP_TOO_SHORT ? cnt.drop_too_short :
		    (&cnt.drop_replay)[v - ESP_REPLAY]);
	}
	/* RFC 4301 5.2 step 4: authentic, but the SA does not carry
	 * packets from there (a peer's policy wider than ours). */
	if (sa->has_inner && !esp_inner_ok(sa, q->data + SNB_ETH_HLEN + 8)) {
		audit_note(AUDIT_INNER_REMOTE, spi, esp, q->data +
		    SNB_ETH_HLEN + 8, q->data + SNB_ETH_HLEN + 24,
		    ipv6_flow((const void *)(q->data + SNB_ETH_HLEN)));
		return drop(cnt.drop_inner_remote);
	}
	o->used++;
	q->len = (uint16_t)(SNB_ETH_HLEN + inner);
	q->flags = q->wirelen = 0;
	q->ts_ns = p->ts_ns;
	memcpy(q->data, p->data, SNB_ETH_HLEN);
	return 1;
}

static uint32_t
take(void *ctx, int from, struct ring *r, uint32_t n)
{
	uint32_t i;

	/* The direction's test is the same for the whole burst: predicted,
	 * next to the cipher. */
	for (i = 0; i < n; i++) {
		const struct packet *p = ring_peek(r, i);

		if (!(from == CLEAR ? encap(p, packet_len(r, p)) :
		    decap(p, packet_len(r, p))))
			break;
	}
	return i;
}

static int
esp_breathe(void)
{
	int n = fwd_take(&fwd, take, NULL);

	/* Each packet esp_decap() judged may have moved a window or a count
	 * of failures in a row: a successor must not take those packets
	 * again, nor start the count over. */
	if (judged) {
		esp_state_save(&sadb);
		judged = 0;
	}
	if (audit_pending)
		audit_breath();
	return n;
}

/* ---- reload ---- */

/* On the data path, between two breaths. */
static void
adopt(void *arg)
{
	struct esp_sadb old = sadb;
	const struct esp_sa *o;
	int i;

	/* The outbound SAs that go: their nonces are spent, never again
	 * (esp_key_retired()). */
	for (i = 0; i < old.nsa; i++)
		if (old.sa[i].dir == ESP_OUT &&
		    esp_sadb_find(&next_db, &old.sa[i], 1) == NULL)
			esp_key_retire(old.sa[i].keyprint);
	for (i = 0; i < next_db.nsa; i++) {
		struct esp_sa *sa = &next_db.sa[i];

		if ((o = esp_sadb_find(&old, sa, 1)) == NULL)
			continue;
		if (sa->dir == ESP_OUT) {
			if (o->seq > sa->seq)
				sa->seq = o->seq;
			sa->lease = o->lease;
		} else {
			if (o->replay.w == sa->replay.w &&
			    o->replay.top >= sa->replay.top)
				sa->replay = o->replay;
			else if (o->replay.top > sa->replay.top)
				replay_init(&sa->replay, sa->replay.w,
				    o->replay.top);
			sa->fails = o->fails;
		}
	}
	sadb = next_db;
	next_db = old;
	last_out = last_in = NULL;
	esp_state_save(&sadb);
}

static int
reload(FILE *out)
{
	char err[512];
	int i, kept = 0, in = 0, gone, rc = -1;

	if (cfg_load(safile, esp_sadb_parse, &next_db, err, sizeof(err)) != 0 ||
	    esp_sadb_keys(&next_db, err, sizeof(err)) != 0) {
		fprintf(out, "%s", err);
		goto done;
	}
	for (i = 0; i < next_db.nsa; i++) {
		const struct esp_sa *sa = &next_db.sa[i];
		struct esp_sa *o = esp_sadb_find(&sadb, sa, 1);
		const char *why = NULL;

		/* A new SA starts at the file's number: under the key and
		 * salt of a running or a removed outbound SA, it would use
		 * that SA's nonces again. */
		if (o == NULL && sa->dir == ESP_OUT)
			why = esp_sadb_find(&sadb, sa, 0) != NULL ? "a running "
			    "outbound SA: a new SPI or address needs a new key" :
			    esp_key_retired(sa->keyprint) ? "an outbound SA "
			    "removed earlier: a removed key is gone for good" :
			    NULL;
		if (why != NULL) {
			fprintf(out, "%s:%d:%d: sa spi 0x%x: the key and salt "
			    "of %s (GCM would use its nonces twice)\n", safile,
			    sa->at.line, sa->at.col, sa->spi, why);
			goto done;
		}
		kept += o != NULL;
		in += sa->dir == ESP_IN;
	}
	/* The outbound SAs that go: their keys are remembered. */
	for (i = gone = 0; i < sadb.nsa; i++)
		gone += sadb.sa[i].dir == ESP_OUT &&
		    esp_sadb_find(&next_db, &sadb.sa[i], 1) == NULL;
	if (!esp_state_room(next_db.nsa, gone))
		fprintf(out, "%s: %d SAs and the keys of every outbound SA "
		    "removed (%d more now) do not fit the hand-over state "
		    "(%d SAs, or 5 removed keys, at most): start the graph "
		    "afresh\n", safile, next_db.nsa, gone, ESP_MAX_SA);
	else if (app_ctl_sync(adopt, NULL) == -1)
		fprintf(out, "stage stopping");
	else {
		fprintf(out, "%s: %d SAs (%d inbound), %d kept\n", safile,
		    sadb.nsa, in, kept);
		rc = 0;
	}
done:
	/* Refused, or the old table after adopt(): the data path no
	 * longer sees it. */
	esp_sadb_free(&next_db);
	return rc;
}

static int
show(FILE *out)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	int i;

	/* An empty reply would read as none (snb-ctl). */
	if (sadb.nsa == 0)
		fprintf(out, "no SA\n");
	/* Read beside the data path: the numbers may be a breath old. */
	for (i = 0; i < sadb.nsa; i++) {
		const struct esp_sa *sa = &sadb.sa[i];

		fprintf(out, "%s spi 0x%08x %s -> %s ",
		    sa->dir == ESP_IN ? "in " : "out", sa->spi,
		    inet_ntop(AF_INET6, sa->local, a, sizeof(a)),
		    inet_ntop(AF_INET6, sa->remote, b, sizeof(b)));
		if (sa->dir == ESP_IN)
			fprintf(out, "top %llu fails %u", (unsigned long long)
			    sa->replay.top, sa->fails);
		else
			fprintf(out, "seq %llu", (unsigned long long)sa->seq);
		fprintf(out, "%s%s\n", sa->name[0] ? " " : "", sa->name);
	}
	return 0;
}

static int
esp_control(int argc, char **argv, FILE *out)
{
	if (argc == 1 && strcmp(argv[0], "reload") == 0)
		return reload(out);
	if (argc == 1 && strcmp(argv[0], "show") == 0)
		return show(out);
	fprintf(out, "unknown request (reload, show)");
	return -1;
}

/* ---- start and stop ---- */

static void
esp_init(int argc, char **argv)
{
	static const char *const names[] = { "clear", "core", NULL };
	char err[512];
	int i;

	/* No option of its own: --counters-out is the runtime's. */
	if (app_options(argc, argv, (const struct app_opt[]){ APP_OPT_END },
	    APP_OPT_PERMUTE | APP_OPT_WORDS) != argc - 1)
		app_usage();
	safile = argv[argc - 1];
	/* Missing or unreadable is a failure (1), bad contents a usage error. */
	if (access(safile, R_OK) == -1)
		errx(1, "%s: %s", safile, strerror(errno));
	if (cfg_load(safile, esp_sadb_parse, &sadb, err, sizeof(err)) == -1)
		errx(2, "%s", err);
	audit_init(app_stage->label);
	if (esp_sadb_keys(&sadb, err, sizeof(err)) == -1)
		errx(1, "%s", err);
	app_counters((uint64_t **)&cnt, cnt_names);
	esp_resynced = cnt.resynced;
	fwd_init(&fwd, names, names);
	/* All that encap() puts goes to core, all that decap() does to clear. */
	fwd.out[CORE].sent = cnt.encrypted;
	fwd.out[CLEAR].sent = cnt.decrypted;
	/* Run by hand, it would wait for packets forever. */
	if (fwd.nin == 0)
		errx(2, "no input port is connected (clear, core)");
	/* What comes in on one side leaves on the other: nothing may
	 * vanish into an open port. */
	for (i = CLEAR; i <= CORE; i++)
		if (app_port_dir(names[i], PORT_IN) && fwd.out[!i].ring == NULL)
			errx(2, "input '%s' is connected but output '%s' is "
			    "not", names[i], names[!i]);
}

static void
esp_start(void)
{
	esp_state_start(&sadb, safile);
}

static void
esp_stop(int eof)
{
	esp_state_save(&sadb);
	audit_flush();
	esp_sadb_free(&sadb);
}

static const struct app_desc desc = {
	.name = "esp",
	.usage = "[--counters-out FILE] SAFILE",
	.summary = "IPsec ESP tunnel mode for IPv6 (AES-128-GCM, extended "
	    "sequence numbers): port clear <-> port core.",
	.ports = (const struct port_desc[]){ { "clear", PORT_IN },
	    { "clear", PORT_OUT }, { "core", PORT_IN }, { "core", PORT_OUT },
	    { NULL, 0 } },
	.init = esp_init,
	.start = esp_start,
	.breathe = esp_breathe,
	.stop = esp_stop,
	.control = esp_control,
	.counters_out = 1,
};

APP_MAIN(desc)
