/*
 * show.c: sample every graph's counters, and show two samples an interval
 * apart: as a page of text (a screen, or batch lines) or as JSON.  Totals
 * count from the last snb-ctl clear (stats.h: since()); rates and costs
 * are over the interval.
 */
#include <err.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "top.h"

double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void
sample_take(struct graph_view *g, int n, struct sample *sm)
{
	int i, j, k, nl = 0, ns = 0;

	for (i = 0; i < n; i++) {
		nl += g[i].nlinks;
		ns += g[i].nstages;
	}
	sm->l = calloc((size_t)nl + 1, sizeof(*sm->l));
	sm->s = calloc((size_t)ns + 1, sizeof(*sm->s));
	if (sm->l == NULL || sm->s == NULL)
		err(1, NULL);
	nl = ns = 0;
	for (i = 0; i < n; i++) {
		for (j = 0; j < g[i].nlinks; j++, nl++) {
			struct ring_shm *r = g[i].links[j].r.shm;
			sm->l[nl].packets = atomic_load(&r->prod.head);
			sm->l[nl].bytes = atomic_load(&r->prod.bytes);
			sm->l[nl].drops = atomic_load(&r->prod.drops);
			sm->l[nl].fill = ring_fill(&g[i].links[j].r);
		}
		for (j = 0; j < g[i].nstages; j++, ns++) {
			const volatile struct stage_file *f = g[i].stages[j].f;
			sm->s[ns].in = f->packets_in;
			sm->s[ns].out = f->packets_out;
			sm->s[ns].busy_ns = f->busy_ns;
			sm->s[ns].busy_breaths = f->busy_breaths;
			for (k = 0; k < STAGE_MAX_COUNTERS; k++)
				sm->s[ns].c[k] = f->counters[k].value;
		}
	}
	sm->t = now_s();
}

void
sample_free(struct sample *sm)
{
	free(sm->l);
	free(sm->s);
}

/* Per stage over the interval: what it handled, and what that cost. */
struct cost {
	double	pps_in, pps_out, busy, ns_per_pkt, pkts_per_breath;
};

static void
stage_cost(const struct stage_view *v, const struct stage_sample *a,
    const struct stage_sample *b, double dt, struct cost *c)
{
	/* A stage's packets are what it took in; a source's, what it made. */
	uint64_t pk = v->inputs ? b->in - a->in : b->out - a->out;
	uint64_t ns = b->busy_ns - a->busy_ns;
	uint64_t br = b->busy_breaths - a->busy_breaths;

	c->pps_in = (b->in - a->in) / dt;
	c->pps_out = (b->out - a->out) / dt;
	c->busy = ns / 1e9 / dt > 1 ? 1 : ns / 1e9 / dt;
	c->ns_per_pkt = pk ? (double)ns / pk : -1;
	c->pkts_per_breath = br ? (double)pk / br : -1;
}

static uint64_t
counter_now(const struct stage_view *v, const struct stage_sample *b, int k)
{
	if (v->f->counters[k].flags & STAGE_COUNTER_GAUGE)
		return b->c[k];
	return since(b->c[k], v->base.c[k]);
}

/* One line of the page: cut to the screen's width, never wrapped. */
static void __attribute__((format(printf, 2, 3)))
line(struct page *p, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	if (p->rows > 0 && p->row >= p->rows)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (p->cols > 0 && strlen(buf) > (size_t)p->cols)
		buf[p->cols] = '\0';
	/* On a screen the newline comes before a line: the last row must
	 * not scroll the page up. */
	if (p->screen)
		fprintf(p->f, "%s%s\033[K", p->row ? "\n" : "", buf);
	else
		fprintf(p->f, "%s\n", buf);
	p->row++;
}

static const char *
duration(long s, char *buf, size_t len)
{
	if (s < 0)
		s = 0;
	if (s >= 86400)
		snprintf(buf, len, "%ldd %ld:%02ld:%02ld", s / 86400,
		    s % 86400 / 3600, s % 3600 / 60, s % 60);
	else
		snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s % 3600 / 60,
		    s % 60);
	return buf;
}

/* A number in a column of width w: "-" for none, k/M/G past the width. */
static const char *
num(double v, int w, char *buf, size_t len)
{
	static const char unit[] = " kMGT";
	int u = 0;

	if (v < 0)
		return "-";
	snprintf(buf, len, "%.0f", v);
	while ((int)strlen(buf) > w && u < 4) {
		v /= 1000;
		u++;
		snprintf(buf, len, "%.*f%c", v < 10 ? 2 : v < 100 ? 1 : 0, v,
		    unit[u]);
	}
	return buf;
}

/* The graph's header: who, since when, and its totals since the clear. */
static void
graph_header(struct page *p, const struct graph_view *g,
    const struct sample *b, int s0, int l0)
{
	char up[32], cl[64] = "";
	uint64_t drops = 0, restarts = 0;
	int j, k, running = 0;
	struct tm tm;
	time_t t;

	for (j = 0; j < g->nlinks; j++)
		drops += since(b->l[l0 + j].drops, g->links[j].base_drops);
	for (j = 0; j < g->nstages; j++) {
		const struct stage_view *v = &g->stages[j];
		running += v->alive && v->f->exit_state == STAGE_RUNNING;
		restarts += v->f->restarts;
		for (k = 0; k < (int)v->f->ncounters &&
		    k < STAGE_MAX_COUNTERS; k++)
			if (strncmp(v->f->counters[k].name, "drop", 4) == 0)
				drops += counter_now(v, &b->s[s0 + j], k);
	}
	if (g->cleared) {
		t = g->cleared;
		localtime_r(&t, &tm);
		strftime(cl, sizeof(cl), ", cleared %H:%M:%S", &tm);
	}
	if (!g->alive) {
		line(p, "graph %s: snb-run pid %ld gone (stale: snb-ctl %s "
		    "clean)", g->name, g->pid, g->name);
		return;
	}
	line(p, "graph %s: pid %ld, up %s, %d/%d stage%s up, %d link%s, %"
	    PRIu64 " drop%s, %" PRIu64 " restart%s%s", g->name, g->pid,
	    g->started ? duration(time(NULL) - g->started, up, sizeof(up)) :
	    "?", running, g->nstages, g->nstages == 1 ? "" : "s", g->nlinks,
	    g->nlinks == 1 ? "" : "s", drops, drops == 1 ? "" : "s", restarts,
	    restarts == 1 ? "" : "s", cl);
}

void
show_page(struct page *p, struct graph_view *g, int n,
    const struct sample *a, const struct sample *b, double interval)
{
	char clock[16], n1[16], n2[16], n3[16], n4[16], cnt[2048];
	int i, j, k, l = 0, s = 0;
	double dt = b->t - a->t;
	size_t off;
	struct cost c;
	struct tm tm;
	time_t t = time(NULL);

	localtime_r(&t, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	p->row = 0;
	if (p->screen)
		fputs("\033[H", p->f);
	line(p, "snb-top - %s, %d graph%s, every %g s, Mbit/s: frames "
	    "without preamble, FCS", clock, n, n == 1 ? "" : "s", interval);
	for (i = 0; i < n; i++) {
		line(p, "%s", "");
		graph_header(p, &g[i], b, s, l);
		line(p, "  %-12s %-8s %7s %9s %9s %4s %7s %6s  %s", "STAGE",
		    "APP", "PID", "IN pps", "OUT pps", "BUSY", "ns/pkt",
		    "pkt/br", "COUNTERS");
		for (j = 0; j < g[i].nstages; j++, s++) {
			const struct stage_view *v = &g[i].stages[j];
			stage_cost(v, &a->s[s], &b->s[s], dt, &c);
			off = 0;
			cnt[0] = '\0';
			for (k = 0; k < (int)v->f->ncounters &&
			    k < STAGE_MAX_COUNTERS && off < sizeof(cnt); k++)
				off += (size_t)snprintf(cnt + off,
				    sizeof(cnt) - off, "%s%.48s=%" PRIu64,
				    k ? " " : "", v->f->counters[k].name,
				    counter_now(v, &b->s[s], k));
			line(p, "  %-12s %-8s %7d %9s %9s %3.0f%% %7s %6s  %s",
			    v->f->label, v->f->app, v->f->pid,
			    num(c.pps_in, 9, n1, sizeof(n1)),
			    num(c.pps_out, 9, n2, sizeof(n2)), 100 * c.busy,
			    c.ns_per_pkt < 0 ? "-" : (snprintf(n3,
			    sizeof(n3), "%.1f", c.ns_per_pkt), n3),
			    c.pkts_per_breath < 0 ? "-" : (snprintf(n4,
			    sizeof(n4), "%.1f", c.pkts_per_breath), n4), cnt);
		}
		line(p, "  %-36s %10s %9s %9s %9s", "LINK", "pps", "Mbit/s",
		    "drops/s", "fill");
		for (j = 0; j < g[i].nlinks; j++, l++) {
			const struct link_view *lv = &g[i].links[j];
			line(p, "  %-36s %10s %9.1f %9s %4" PRIu64 "/%-4" PRIu64,
			    lv->name, num((b->l[l].packets - a->l[l].packets) /
			    dt, 10, n1, sizeof(n1)),
			    (b->l[l].bytes - a->l[l].bytes) * 8 / dt / 1e6,
			    num((b->l[l].drops - a->l[l].drops) / dt, 9, n2,
			    sizeof(n2)), b->l[l].fill,
			    (uint64_t)lv->r.mask + 1);
		}
	}
	if (p->screen)
		fputs("\033[J", p->f);
	fflush(p->f);
}

static void
json_num(FILE *f, const char *key, double v)
{
	if (v < 0)
		fprintf(f, ",\"%s\":null", key);
	else
		fprintf(f, ",\"%s\":%.1f", key, v);
}

void
show_json(FILE *f, struct graph_view *g, int n, const struct sample *a,
    const struct sample *b)
{
	double dt = b->t - a->t;
	int i, j, k, l = 0, s = 0;
	struct cost c;

	fprintf(f, "{\"interval\":%.3f,\"graphs\":[", dt);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		json_str(f, g[i].name);
		fprintf(f, ",\"pid\":%ld,\"alive\":%s,\"started\":%ld,"
		    "\"cleared\":%ld,\"stages\":[", g[i].pid,
		    g[i].alive ? "true" : "false", g[i].started,
		    g[i].cleared);
		for (j = 0; j < g[i].nstages; j++, s++) {
			const struct stage_view *v = &g[i].stages[j];
			const struct stage_sample *x = &b->s[s];
			stage_cost(v, &a->s[s], x, dt, &c);
			fprintf(f, "%s{\"label\":", j ? "," : "");
			json_str(f, v->f->label);
			fprintf(f, ",\"app\":");
			json_str(f, v->f->app);
			fprintf(f, ",\"pid\":%d,\"packets_in\":%" PRIu64
			    ",\"packets_out\":%" PRIu64 ",\"in_pps\":%.1f,"
			    "\"out_pps\":%.1f,\"restarts\":%" PRIu64
			    ",\"busy_ns\":%" PRIu64 ",\"busy_breaths\":%" PRIu64
			    ",\"busy\":%.4f", v->f->pid,
			    since(x->in, v->base.in), since(x->out, v->base.out),
			    c.pps_in, c.pps_out, (uint64_t)v->f->restarts,
			    since(x->busy_ns, v->base.busy_ns),
			    since(x->busy_breaths, v->base.busy_breaths),
			    c.busy);
			json_num(f, "ns_per_packet", c.ns_per_pkt);
			json_num(f, "packets_per_breath", c.pkts_per_breath);
			fprintf(f, ",\"counters\":{");
			for (k = 0; k < (int)v->f->ncounters &&
			    k < STAGE_MAX_COUNTERS; k++) {
				fprintf(f, "%s", k ? "," : "");
				json_str(f, v->f->counters[k].name);
				fprintf(f, ":%" PRIu64, counter_now(v, x, k));
			}
			fprintf(f, "}}");
		}
		fprintf(f, "],\"links\":[");
		for (j = 0; j < g[i].nlinks; j++, l++) {
			const struct link_view *lv = &g[i].links[j];
			const struct link_sample *x = &b->l[l], *y = &a->l[l];
			fprintf(f, "%s{\"name\":", j ? "," : "");
			json_str(f, lv->name);
			fprintf(f, ",\"packets\":%" PRIu64 ",\"bytes\":%" PRIu64
			    ",\"drops\":%" PRIu64 ",\"fill\":%" PRIu64
			    ",\"size\":%" PRIu64 ",\"pps\":%.1f,\"bps\":%.1f,"
			    "\"drops_per_s\":%.1f}",
			    since(x->packets, lv->base_packets),
			    since(x->bytes, lv->base_bytes),
			    since(x->drops, lv->base_drops), x->fill,
			    (uint64_t)lv->r.mask + 1,
			    (x->packets - y->packets) / dt,
			    (x->bytes - y->bytes) * 8 / dt,
			    (x->drops - y->drops) / dt);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
}
