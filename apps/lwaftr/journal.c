/*
 * journal.c: the binding-table changes made to a running snb-lwaftr, kept
 * so that they outlive its process (snb-lwaftr(1) RESTART AND SWAP says
 * what is written when, and what a restart does with it).  No leader holds
 * the running configuration, as Snabb's does: without the journal, a
 * restart or swap would start again from conf and undo every change.  A
 * line is one write(2) (a SIGKILL loses at most the change it answers); a
 * load writes a new journal renamed over the old (a kill leaves one whole).
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "app.h"
#include "lwaftr.h"
#include "stage.h"

#define HEADER		"snb-lwaftr journal of "
#define MAX_WORDS	32

static int	jfd = -1;		/* O_APPEND; -1: no journal */
static char	jpath[PATH_MAX];

/*
 * Changes on top of a table: what replay builds.  One hash index (open
 * addressing, at most half full) keeps each line's work constant, so a
 * journal replays in time linear in its lines.  It holds two kinds of
 * entry: a key's change, and an address's count of softwires as the
 * changes so far leave it (with one of them, for its port set), counted
 * from the table the first time the address comes up.  So each line is
 * checked against every other softwire of its address, its own earlier
 * self aside, and the changes that pass go in together (rebuild()).
 */
struct entry {
	struct softwire	s;		/* an address's: one of its softwires */
	int		addr;		/* an address's entry, not a key's */
	int		present;	/* a key's: put (add, set), else removed */
	int		in_base;	/* a key's: in the table below */
	uint32_t	n;		/* an address's: its softwires now */
};

struct overlay {
	const struct lwaftr_bt	*base;
	struct entry		*e;
	size_t			 n, cap;
	uint32_t		*idx;		/* index + 1; 0: free */
	size_t			 mask;
};

/* The slot of key (ipv4, psid), or of address ipv4's entry (addr). */
static uint32_t *
ov_slot(const struct overlay *o, uint32_t ipv4, uint16_t psid, int addr)
{
	uint64_t k = (uint64_t)ipv4 << 17 | (addr ? 1u << 16 : psid);
	const struct entry *e;
	size_t h;

	for (h = (size_t)((k * 0x9e3779b97f4a7c15ULL) >> 32) & o->mask;
	    o->idx[h] != 0; h = (h + 1) & o->mask) {
		e = &o->e[o->idx[h] - 1];
		if (e->s.ipv4 == ipv4 && e->addr == addr &&
		    (addr || e->s.psid == psid))
			return &o->idx[h];
	}
	return &o->idx[h];
}

/* Room for two more entries (an address's and a key's). */
static void
ov_grow(struct overlay *o)
{
	size_t i;

	if (o->n + 2 <= o->cap)
		return;
	if (o->cap >= UINT32_MAX / 4)
		errx(1, "journal: too many changes");
	o->cap = o->cap ? o->cap * 2 : 64;
	o->mask = o->cap * 2 - 1;
	free(o->idx);
	if ((o->e = reallocarray(o->e, o->cap, sizeof(*o->e))) == NULL ||
	    (o->idx = calloc(o->mask + 1, sizeof(*o->idx))) == NULL)
		err(1, "journal");
	for (i = 0; i < o->n; i++)
		*ov_slot(o, o->e[i].s.ipv4, o->e[i].s.psid, o->e[i].addr) =
		    (uint32_t)i + 1;
}

/* No changes on top of base. */
static void
ov_reset(struct overlay *o, const struct lwaftr_bt *base)
{
	free(o->e);
	free(o->idx);
	memset(o, 0, sizeof(*o));
	o->base = base;
	ov_grow(o);
}

static struct entry *
ov_get(struct overlay *o, uint32_t ipv4, uint16_t psid)
{
	uint32_t *slot = ov_slot(o, ipv4, psid, 0);

	return *slot != 0 ? &o->e[*slot - 1] : NULL;
}

/*
 * What the changes leave of address ipv4: counted from the table below
 * the first time (its softwires are together there, sorted by address).
 */
static struct entry *
ov_address(struct overlay *o, uint32_t ipv4)
{
	const struct softwire *b, *end;
	struct entry *a;
	uint32_t *slot;
	size_t n;

	ov_grow(o);
	slot = ov_slot(o, ipv4, 0, 1);
	if (*slot != 0)
		return &o->e[*slot - 1];
	a = &o->e[o->n++];
	memset(a, 0, sizeof(*a));
	a->addr = 1;
	a->s.ipv4 = ipv4;
	if ((b = lwaftr_bt_find(o->base, ipv4, 0, 1)) != NULL) {
		a->s = *b;
		end = lwaftr_bt_softwires(o->base, &n) + n;
		for (; b < end && b->ipv4 == ipv4; b++)
			a->n++;
	}
	*slot = (uint32_t)o->n;
	return a;
}

/* The softwire keyed (ipv4, psid), or of address ipv4, changes included. */
static const struct softwire *
ov_find(void *ctx, uint32_t ipv4, uint16_t psid, int any)
{
	struct overlay *o = ctx;
	struct entry *e;

	if (any)	/* for its port set: one softwire is all of them */
		return (e = ov_address(o, ipv4))->n > 0 ? &e->s : NULL;
	if ((e = ov_get(o, ipv4, psid)) != NULL)
		return e->present ? &e->s : NULL;
	return lwaftr_bt_find(o->base, ipv4, psid, 0);
}

static void
ov_put(struct overlay *o, const struct softwire *s, int present)
{
	struct entry *a = ov_address(o, s->ipv4), *c;
	int was = ov_find(o, s->ipv4, s->psid, 0) != NULL;

	if ((c = ov_get(o, s->ipv4, s->psid)) == NULL) {
		c = &o->e[o->n++];	/* room: ov_address() grew it */
		memset(c, 0, sizeof(*c));
		c->in_base = was;
		*ov_slot(o, s->ipv4, s->psid, 0) = (uint32_t)o->n;
	}
	c->s = *s;
	c->present = present;
	a->n += (uint32_t)present - (uint32_t)was;
	if (present)
		a->s = *s;	/* fits(): the address's port set now */
}

/*
 * Does s, put, keep its address's one port set?  Its own earlier self
 * does not count: the other softwires of the address do.
 */
static int
fits(struct overlay *o, const struct softwire *s, char *err, size_t len)
{
	const struct entry *a;
	uint32_t others;

	if (lwaftr_sw_check(s, "softwire", err, len) == -1)
		return -1;
	a = ov_address(o, s->ipv4);
	others = a->n - (ov_find(o, s->ipv4, s->psid, 0) != NULL);
	if (others == 0 || (a->s.psid_length == s->psid_length &&
	    a->s.reserved_bits == s->reserved_bits))
		return 0;
	snprintf(err, len, "its port set (psid-length %u, reserved-ports-"
	    "bit-count %u) is not that of the address's %u other "
	    "softwire%s (%u, %u)", s->psid_length, s->reserved_bits, others,
	    others == 1 ? "" : "s", a->s.psid_length, a->s.reserved_bits);
	return -1;
}

struct replay {
	struct lwaftr_bt *bt;		/* the table below the changes */
	struct overlay	 ov;
	int		 one_by_one;	/* a rebuild per line (the fallback) */
	FILE		*kept;		/* the lines that applied */
	size_t		 applied, skipped;
	int		 loaded;	/* a load line applied */
};

/* The changes the overlay holds, made in one rebuild of r->bt. */
static int
rebuild(struct replay *r, char *why, size_t len)
{
	struct softwire *add, *del;
	struct lwaftr_bt *nbt;
	struct entry *e;
	size_t na = 0, nd = 0;

	if ((add = calloc(2 * (r->ov.n + 1), sizeof(*add))) == NULL)
		err(1, "journal");
	del = add + r->ov.n + 1;
	for (e = r->ov.e; e < r->ov.e + r->ov.n; e++) {
		if (!e->addr && e->in_base)
			del[nd++] = e->s;
		if (!e->addr && e->present)
			add[na++] = e->s;
	}
	nbt = na + nd > 0 ? lwaftr_bt_change(r->bt, add, na, del, nd, why,
	    len) : r->bt;
	free(add);
	if (nbt == NULL)
		return -1;
	if (nbt != r->bt)
		lwaftr_bt_free(r->bt);
	r->bt = nbt;
	return 0;
}

/* One journal line (no newline), line number no. */
static void
replay_line(struct replay *r, char *line, size_t no)
{
	char *argv[MAX_WORDS], *w, *save, why[512], words[1024];
	struct sw_view v = { ov_find, &r->ov };
	struct lwaftr_bt *nbt;
	struct softwire s;
	FILE *f;
	int argc = 0, op, rc;

	snprintf(words, sizeof(words), "%s", line);
	if (strncmp(line, "load ", 5) == 0) {	/* a path may hold spaces */
		if (no != 2) {
			snprintf(why, sizeof(why), "a load after line 2");
			goto skip;
		}
		if ((nbt = lw_load_table(line + 5, why, sizeof(why))) == NULL)
			goto skip;
		lwaftr_bt_free(r->bt);
		r->ov.base = r->bt = nbt;	/* no change before it */
		r->loaded = 1;
		fprintf(r->kept, "%s\n", words);
		return;
	}
	for (w = strtok_r(line, " ", &save); w != NULL && argc < MAX_WORDS;
	    w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	if (argc == 0)
		return;
	if (strcmp(argv[0], "add") != 0 && strcmp(argv[0], "remove") != 0 &&
	    strcmp(argv[0], "set") != 0) {
		snprintf(why, sizeof(why), "not a change");
		goto skip;
	}
	if ((f = fmemopen(why, sizeof(why), "w")) == NULL)
		err(1, "journal");
	rc = lw_sw_words(&v, argc, argv, &op, &s, f);
	fclose(f);
	if (rc == -1) {
		why[strcspn(why, "\n")] = '\0';
		goto skip;
	}
	if (op != LW_REMOVE && fits(&r->ov, &s, why, sizeof(why)) == -1)
		goto skip;
	ov_put(&r->ov, &s, op != LW_REMOVE);
	if (r->one_by_one) {
		rc = rebuild(r, why, sizeof(why));
		ov_reset(&r->ov, r->bt);	/* made, or refused */
		if (rc == -1)
			goto skip;
	}
	fprintf(r->kept, "%s\n", words);
	r->applied++;
	return;
skip:
	warnx("%s:%zu: %s: %s: skipped", jpath, no, words, why);
	r->skipped++;
}

/*
 * The lines of the journal f after its header, onto r->bt; *body: the
 * lines that applied.
 */
static void
replay(struct replay *r, FILE *f, char **body, size_t *blen)
{
	char *line = NULL;
	size_t cap = 0, no = 1;
	ssize_t len;

	if ((r->kept = open_memstream(body, blen)) == NULL)
		err(1, "journal");
	rewind(f);
	if (getline(&line, &cap, f) == -1)
		err(1, "%s", jpath);
	while ((len = getline(&line, &cap, f)) != -1) {
		no++;
		/* torn by a kill or a full disk mid-write: not what was said */
		if (len > 0 && line[len - 1] != '\n') {
			warnx("%s:%zu: a line cut short: skipped", jpath, no);
			r->skipped++;
			break;
		}
		line[len - 1] = '\0';
		replay_line(r, line, no);
	}
	fclose(r->kept);
	free(line);
}

/*
 * A new journal (header, then body), renamed over the old; jfd is it.
 * -1 if it could not be written: the old one is emptied then, as a later
 * start replaying it would undo what this one did.
 */
static int
rewrite(const char *conf, const char *body, size_t len)
{
	char tmp[PATH_MAX + 8], head[PATH_MAX + 32];
	int fd, n;

	if (jfd != -1)
		close(jfd);
	jfd = -1;
	snprintf(tmp, sizeof(tmp), "%s.new", jpath);
	n = snprintf(head, sizeof(head), HEADER "%s\n", conf);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND |
	    O_CLOEXEC, 0644)) == -1 ||
	    write(fd, head, (size_t)n) != n ||
	    (len > 0 && write(fd, body, len) != (ssize_t)len) ||
	    rename(tmp, jpath) == -1) {
		warn("%s: live changes will not outlive this process", tmp);
		if (fd != -1)
			close(fd);
		unlink(tmp);
		if ((fd = open(jpath, O_WRONLY | O_TRUNC | O_CLOEXEC)) != -1)
			close(fd);
		return -1;
	}
	jfd = fd;
	return 0;
}

static char	jconf[PATH_MAX];	/* conf's real path */

struct lwaftr_bt *
lw_journal_start(struct lwaftr_bt *bt, const char *conf, size_t *skipped)
{
	struct replay r;
	char *body = NULL, *line = NULL, *prev, why[1024];
	size_t cap = 0, blen = 0, n = 0;
	const char *dir = app_graph_dir();
	FILE *f = NULL;
	int c;

	*skipped = 0;
	if (dir == NULL)
		return bt;		/* alone: nothing outlives the process */
	if (realpath(conf, jconf) == NULL)
		snprintf(jconf, sizeof(jconf), "%s", conf);
	snprintf(jpath, sizeof(jpath), "%s/%.*s.journal", dir,
	    (int)sizeof(app_stage->label), app_stage->label);
	if (app_resumed() && (f = fopen(jpath, "r")) != NULL &&
	    getline(&line, &cap, f) > (ssize_t)strlen(HEADER) &&
	    strncmp(line, HEADER, strlen(HEADER)) == 0) {
		line[strcspn(line, "\n")] = '\0';
		prev = line + strlen(HEADER);
		if (strcmp(prev, jconf) != 0) {
			while ((c = getc(f)) != EOF)
				n += c == '\n';
			if (n > 0)
				warnx("%zu live changes of %s not carried "
				    "over: new conf", n, prev);
		} else {
			memset(&r, 0, sizeof(r));
			r.bt = bt;
			ov_reset(&r.ov, bt);
			replay(&r, f, &body, &blen);
			if (rebuild(&r, why, sizeof(why)) == -1) {
				/* Not together, though the line check sees
				 * every clash (memory, say): one at a time,
				 * from the top. */
				warnx("%s: %s: the changes applied one at a "
				    "time", jpath, why);
				free(body);
				r.applied = r.skipped = r.loaded = 0;
				r.one_by_one = 1;
				ov_reset(&r.ov, r.bt);
				replay(&r, f, &body, &blen);
			}
			free(r.ov.e);
			free(r.ov.idx);
			bt = r.bt;
			*skipped = r.skipped;
			if (r.applied + r.loaded > 0)
				warnx("%zu live changes of %s carried over%s",
				    r.applied, jconf, r.loaded ?
				    ", on the table of a load" : "");
		}
	}
	if (f != NULL)
		fclose(f);
	free(line);
	rewrite(jconf, body ? body : "", body ? blen : 0);
	free(body);
	return bt;
}

/* Written before the reply says ok, or the reply says why not. */
int
lw_journal_append(int argc, char **argv, char *why, size_t whylen)
{
	struct stat sb;
	char line[1024];
	size_t len = 0;
	ssize_t w = -1;
	int i, e;

	if (jfd == -1) {
		snprintf(why, whylen, "%s: out of use since a rewrite failed "
		    "(until a load or reload rewrites it)", jpath);
		return jpath[0] ? -1 : 0;
	}
	/* the words hold no space: each was checked as an address or number */
	for (i = 0; i < argc && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s",
		    argv[i], i + 1 < argc ? " " : "\n");
	if (len >= sizeof(line)) {
		snprintf(why, whylen, "%s: the line is too long", jpath);
		return -1;
	}
	if (fstat(jfd, &sb) == 0 && (w = write(jfd, line, len)) ==
	    (ssize_t)len)
		return 0;
	e = errno;
	snprintf(why, whylen, "%s: %s", jpath, w >= 0 && w < (ssize_t)len ?
	    "written short" : strerror(e));
	/* a part of a line would be replayed as another change */
	if (w > 0)
		(void)ftruncate(jfd, sb.st_size);
	warnx("%s: a change not journalled: it will not outlive this "
	    "process", why);
	return -1;
}

int
lw_journal_reset(const char *file)
{
	char real[PATH_MAX], body[PATH_MAX + 8] = "";

	if (jfd == -1 && jpath[0] == '\0')
		return 0;
	if (file != NULL) {
		if (realpath(file, real) == NULL)
			snprintf(real, sizeof(real), "%s", file);
		if (strcmp(real, jconf) != 0)
			snprintf(body, sizeof(body), "load %s\n", real);
	}
	return rewrite(jconf, body, strlen(body));
}
