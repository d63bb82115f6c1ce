/*
 * journal.h: the live changes of a running snb-lwaftr (ctl.c), kept in a
 * journal beside its stage file so that a restart, or a swap to the same
 * conf, starts from them and not from conf alone (journal.c).
 */
#ifndef SNB_LWAFTR_JOURNAL_H
#define SNB_LWAFTR_JOURNAL_H

#include <stdint.h>
#include <stdio.h>

#include "lwaftr.h"

/*
 * A table as a request sees it: the softwire keyed (ipv4, psid), or with
 * any set some softwire of ipv4 (its port set); NULL when there is none.
 */
struct sw_view {
	const struct softwire *(*find)(void *ctx, uint32_t ipv4,
		    uint16_t psid, int any);
	void	*ctx;
};

#define LW_GET		0
#define LW_ADD		1
#define LW_REMOVE	2
#define LW_SET		3

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
