/*
 * ctl.c: snb-ctl GRAPH config LABEL REQUEST..., the binding table changed
 * while the lwAFTR forwards (the requests: REQUESTS below, snb-lwaftr(1)
 * CHANGING THE BINDING TABLE).
 *
 * They run in the runtime's control thread (libring/appctl.c): the new
 * table is built beside the old one while the data path keeps forwarding
 * with the old, then the data path switches to it between two breaths
 * (app_ctl_sync: a pointer store, no lock), and only then is the old one
 * freed.  A refused request builds nothing and changes nothing.  Only
 * this thread makes tables, so the table it reads (lw->bt) is the one the
 * data path uses, and no other change can slip in between.  A change that
 * took effect is written to the journal (journal.c).
 */
#include <arpa/inet.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dp.h"

#define REQUESTS "add softwire FIELD VALUE... | remove softwire ipv4 A " \
	"psid P | set softwire ipv4 A psid P FIELD VALUE... | get softwire " \
	"ipv4 A psid P | load FILE | reload"

static struct lwaftr_bt *next_bt;

/* A refusal: its message on f, and -1. */
static int __attribute__((format(printf, 2, 3)))
refuse(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return -1;
}

/* When a change began: wall clock, and this thread's CPU time. */
struct began {
	struct timespec	wall, cpu;
};

static double
ms_on(clockid_t clk, const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 +
	    (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static void
begin(struct began *b)
{
	clock_gettime(CLOCK_MONOTONIC, &b->wall);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b->cpu);
}

/* On the data path, between two breaths. */
static void
adopt(void *arg)
{
	struct lw *lw = arg;

	lw->bt = next_bt;
}

/*
 * The data path takes nbt; the old table is freed once it cannot see it.
 * what: the change, for the reply; built: when building began.
 */
static int
commit(struct lw *lw, struct lwaftr_bt *nbt, const char *what,
    const struct began *built, FILE *out)
{
	struct lwaftr_bt *old = lw->bt;
	struct timespec t0;
	double build_ms = ms_on(CLOCK_MONOTONIC, &built->wall);
	double cpu_ms = ms_on(CLOCK_THREAD_CPUTIME_ID, &built->cpu);
	size_t n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	next_bt = nbt;
	if (app_ctl_sync(adopt, lw) == -1) {
		lwaftr_bt_free(nbt);
		fprintf(out, "the stage is stopping: nothing changed\n");
		return -1;
	}
	lwaftr_bt_free(old);
	lwaftr_bt_softwires(nbt, &n);
	fprintf(out, "ok: %s (%zu softwires; built in %.1f ms (%.1f ms of "
	    "CPU), in use %.3f ms later)\n", what, n, build_ms, cpu_ms,
	    ms_on(CLOCK_MONOTONIC, &t0));
	return 0;
}

/* The fields given (a bit each: 1 << their place in field[]). */
enum { F_IPV4 = 0x01, F_PSID = 0x02, F_B4 = 0x04, F_BR = 0x08 };

/* A field's value: an address of family af, else a number up to max. */
static const struct field {
	const char	*name;
	int		 af;
	unsigned long	 max;
	size_t		 off;
} field[] = {
	{ "ipv4", AF_INET, 0, offsetof(struct softwire, ipv4) },
	{ "psid", 0, 65535, offsetof(struct softwire, psid) },
	{ "b4-ipv6", AF_INET6, 0, offsetof(struct softwire, b4) },
	{ "br-address", AF_INET6, 0, offsetof(struct softwire, br) },
	{ "psid-length", 0, 16, offsetof(struct softwire, psid_length) },
	{ "reserved-ports-bit-count", 0, 16,
	    offsetof(struct softwire, reserved_bits) },
};
#define NFIELD	(sizeof(field) / sizeof(field[0]))

/* FIELD VALUE pairs of argv into s; *given: which. */
static int
fields(int argc, char **argv, struct softwire *s, int *given, FILE *f)
{
	const struct field *fd;
	unsigned long v = 0;
	char *val, *end;
	uint8_t *p;
	size_t j;
	int i;

	*given = 0;
	for (i = 0; i < argc; i += 2) {
		if (i + 1 == argc)
			return refuse(f, "'%s' without a value\n", argv[i]);
		for (j = 0; j < NFIELD && strcmp(argv[i], field[j].name); j++)
			;
		if (j == NFIELD)
			return refuse(f, "unknown field '%s' (ipv4, psid, "
			    "b4-ipv6, br-address, psid-length, reserved-ports-"
			    "bit-count)\n", argv[i]);
		fd = &field[j];
		p = (uint8_t *)s + fd->off;
		val = argv[i + 1];
		if (fd->af != 0 && inet_pton(fd->af, val, p) != 1)
			return refuse(f, "bad %s '%s'\n", fd->name, val);
		if (fd->af == 0 && (*val < '0' || *val > '9' ||
		    (v = strtoul(val, &end, 10), *end != '\0') || v > fd->max))
			return refuse(f, "bad %s '%s' (0 to %lu)\n", fd->name,
			    val, fd->max);
		if (fd->af == 0 && fd->max > UINT8_MAX)
			*(uint16_t *)(void *)p = (uint16_t)v;	/* psid */
		else if (fd->af == 0)
			*p = (uint8_t)v;
		if (*given & 1 << j)
			return refuse(f, "'%s' given twice\n", argv[i]);
		*given |= 1 << j;
	}
	return 0;
}

static void
print_sw(const struct softwire *s, FILE *f)
{
	char a[INET_ADDRSTRLEN], b4[INET6_ADDRSTRLEN], br[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET, &s->ipv4, a, sizeof(a));
	inet_ntop(AF_INET6, s->b4, b4, sizeof(b4));
	inet_ntop(AF_INET6, s->br, br, sizeof(br));
	fprintf(f, "softwire {\n  ipv4 %s;\n  psid %u;\n  b4-ipv6 %s;\n"
	    "  br-address %s;\n  port-set {\n    psid-length %u;\n", a,
	    s->psid, b4, br, s->psid_length);
	if (s->reserved_bits)
		fprintf(f, "    reserved-ports-bit-count %u;\n",
		    s->reserved_bits);
	fprintf(f, "  }\n}\n");
}

/*
 * add, remove, set, get (argv[0], argv[1] "softwire") against the table
 * v shows: *op and the softwire s it puts or removes.  Shared with the
 * journal's replay (journal.c), whose view is a table with changes on top.
 */
int
lw_sw_words(const struct sw_view *v, int argc, char **argv, int *op,
    struct softwire *sp, FILE *f)
{
	struct softwire s;
	const struct softwire *cur, *o;
	const char *verb = argv[0];
	char name[64];
	int given, add = strcmp(verb, "add") == 0;
	int set = strcmp(verb, "set") == 0, key = F_IPV4 | F_PSID;

	memset(&s, 0, sizeof(s));
	if (argc < 2 || strcmp(argv[1], "softwire") != 0)
		return refuse(f, "%s what? (%s softwire ...)\n", verb, verb);
	if (fields(argc - 2, argv + 2, &s, &given, f) == -1)
		return -1;
	if ((given & key) != key)
		return refuse(f, "%s softwire: missing %s\n", verb,
		    given & F_IPV4 ? "psid" : "ipv4");
	if (!add && !set && given != key)
		return refuse(f, "%s softwire: only ipv4 and psid name one\n",
		    verb);
	cur = v->find(v->ctx, s.ipv4, s.psid, 0);
	lw_sw_name(&s, name, sizeof(name));
	if (!add && cur == NULL)
		return refuse(f, "no %s in the binding table\n", name);
	if (strcmp(verb, "get") == 0) {
		print_sw(cur, f);
		*op = LW_GET;
		return 0;
	}
	if (add && cur != NULL)
		return refuse(f, LW_SW_EXISTS "\n", name);
	if (add && (given & (F_B4 | F_BR)) != (F_B4 | F_BR))
		return refuse(f, "add softwire: missing %s\n", given & F_B4 ?
		    "br-address" : "b4-ipv6");
	if (set || (add && (o = v->find(v->ctx, s.ipv4, 0, 1)) != NULL)) {
		/*
		 * The words again, over what they leave as it is: the
		 * softwire set, the port set of the address added to.
		 */
		if (set)
			s = *cur;
		else {
			memset(&s, 0, sizeof(s));
			s.psid_length = o->psid_length;
			s.reserved_bits = o->reserved_bits;
		}
		(void)fields(argc - 2, argv + 2, &s, &given, f);
	}
	*op = add ? LW_ADD : set ? LW_SET : LW_REMOVE;
	*sp = s;
	return 0;
}

static const struct softwire *
live_find(void *ctx, uint32_t ipv4, uint16_t psid, int any)
{
	return lwaftr_bt_find(ctx, ipv4, psid, any);
}

/* add, remove, set, get: argv[0] is the verb, argv[1] "softwire". */
static int
softwire_request(struct lw *lw, int argc, char **argv, FILE *f)
{
	struct sw_view v = { live_find, lw->bt };
	struct softwire s;
	struct lwaftr_bt *nbt;
	struct began t0;
	char err[512], what[128], name[64], why[PATH_MAX + 128];
	int op, put;

	if (lw_sw_words(&v, argc, argv, &op, &s, f) == -1)
		return -1;
	if (op == LW_GET)
		return 0;
	put = op != LW_REMOVE;
	begin(&t0);
	nbt = lwaftr_bt_change(lw->bt, put ? &s : NULL, put, op != LW_ADD ?
	    &s : NULL, op != LW_ADD, err, sizeof(err));
	if (nbt == NULL)
		return refuse(f, "%s\n", err);
	snprintf(what, sizeof(what), "%s %s", op == LW_ADD ? "added" :
	    op == LW_SET ? "set" : "removed", lw_sw_name(&s, name, sizeof(name)));
	if (commit(lw, nbt, what, &t0, f) == -1)
		return -1;
	/*
	 * After it took effect: a restart or swap then does it again.  It
	 * stays if the journal cannot hold it (a change refused now would be
	 * in use already, and other copies of the stage may have it): the
	 * reply says so, as an error would stop snb-ctl's roll over copies.
	 */
	if (lw_journal_append(argc, argv, why, sizeof(why)) == -1)
		fprintf(f, "warning: not journalled: %s: this change will not "
		    "outlive this process\n", why);
	return 0;
}

struct lwaftr_bt *
lw_load_table(const char *file, char *err, size_t len)
{
	struct lwaftr_conf c;
	struct lwaftr_bt *bt;

	if (lwaftr_conf_load(&c, file, err, len) == -1)
		return NULL;
	bt = lwaftr_bt_build(c.sw, c.nsw, c.sw_at, file, err, len);
	lwaftr_conf_free(&c);
	return bt;
}

/* load FILE, reload: FILE's table, if it differs; reports the difference. */
static int
load_table(struct lw *lw, const char *path, const char *conf, FILE *f)
{
	struct lwaftr_bt *nbt;
	struct began t0;
	size_t a, r, ch;
	char err[1024], what[PATH_MAX + 160];

	begin(&t0);
	if ((nbt = lw_load_table(path, err, sizeof(err))) == NULL)
		return refuse(f, "reload failed, keeping the current binding "
		    "table: %s\n", err);
	lwaftr_bt_diff(lw->bt, nbt, &a, &r, &ch);
	if (a + r + ch == 0) {
		lwaftr_bt_free(nbt);
		fprintf(f, "ok: %s: binding table reloaded: no change\n",
		    path);
	} else {
		snprintf(what, sizeof(what), "%s: binding table reloaded: "
		    "%zu added, %zu removed, %zu changed; other settings take "
		    "effect on restart", path, a, r, ch);
		if (commit(lw, nbt, what, &t0, f) == -1)
			return -1;
	}
	/* the table is the file's now: the changes before are in it */
	if (lw_journal_reset(path == conf ? NULL : path) == -1)
		fprintf(f, "warning: the journal could not be rewritten: live "
		    "changes are not journalled and will not outlive this "
		    "process\n");
	return 0;
}

int
lw_control(struct lw *lw, const char *conf, int argc, char **argv, FILE *f)
{
	const char *v = argv[0];
	int load = strcmp(v, "load") == 0;

	if (strcmp(v, "add") == 0 || strcmp(v, "remove") == 0 ||
	    strcmp(v, "set") == 0 || strcmp(v, "get") == 0)
		return softwire_request(lw, argc, argv, f);
	if (load || strcmp(v, "reload") == 0) {
		if (argc == 1 + load)
			return load_table(lw, load ? argv[1] : conf, conf, f);
		/* Known, with the wrong number of words: not "unknown". */
		return refuse(f, load ? "load takes one word, the FILE, not "
		    "%d\n" : "reload takes no words, not %d\n", argc - 1);
	}
	return refuse(f, "unknown request '%s' (%s)\n", v, REQUESTS);
}
