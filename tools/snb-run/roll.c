/*
 * roll.c: a rolling swap or restart of the copies of a stage ("Nx" in the
 * graph language: stages LABEL.1 .. LABEL.N), one copy at a time.  Each
 * copy is swapped or restarted by op.c as one stage would be, and the
 * next one only once op.c answers ok for the previous copy: its new
 * process holds every ring of its stage by then (it claims them before
 * it says it has taken over).  So at most one copy is ever out, and the
 * others carry the traffic meanwhile (lb keeps a full copy's packets
 * waiting, in order, rather than dropping them).
 *
 * The first copy that fails stops the roll: the copies before it run the
 * new process, it and those after it the old one.  The one reply, sent
 * when the roll ends, says so first ("ok:" or "error:") and then gives
 * each copy's own answer.
 */
#define _GNU_SOURCE
#include <err.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "run.h"

static struct {
	int		 restart;
	int		 client;	/* ctl_reply id */
	int		 n, k;		/* copy k is being done */
	char		*spec;
	char		 base[GRAPH_NAME_MAX];
	char		*log;		/* each copy's answer */
	size_t		 loglen;
	FILE		*f;		/* NULL: no roll */
} roll;

/* Copy k (from 0) of BASE, the stage labelled BASE.k+1, or -1. */
int
roll_copy(const char *base, int k)
{
	char label[GRAPH_NAME_MAX + 16];
	int i;

	snprintf(label, sizeof(label), "%s.%d", base, k + 1);
	for (i = 0; i < g.nstages; i++)
		if (g.stages[i].copy == k + 1 &&
		    strcmp(g.stages[i].label, label) == 0)
			return i;
	return -1;
}

int
roll_busy(void)
{
	return roll.f != NULL;
}

static void __attribute__((format(printf, 1, 2)))
roll_end(const char *fmt, ...)
{
	va_list ap;
	char *head;

	va_start(ap, fmt);
	if (vasprintf(&head, fmt, ap) == -1)
		err(1, NULL);
	va_end(ap);
	if (fclose(roll.f) == EOF)
		err(1, NULL);
	ctl_reply(roll.client, "%s%s", head, roll.log);
	free(head);
	free(roll.log);
	free(roll.spec);
	memset(&roll, 0, sizeof(roll));
}

/* Start on copy k. */
static void
roll_next(void)
{
	int i = roll_copy(roll.base, roll.k);

	if (roll.restart)
		op_restart(i, ROLL_CLIENT);
	else
		op_swap(i, roll.spec, ROLL_CLIENT);
}

void
roll_start(int restart, const char *base, const char *spec, int client)
{
	while (roll_copy(base, roll.n) != -1)
		roll.n++;
	roll.restart = restart;
	roll.client = client;
	strlcpy(roll.base, base, sizeof(roll.base));
	if (spec && (roll.spec = strdup(spec)) == NULL)
		err(1, NULL);
	if ((roll.f = open_memstream(&roll.log, &roll.loglen)) == NULL)
		err(1, NULL);
	roll_next();
}

/* The answer op.c gave for copy k: the next copy, or the roll's end. */
void
roll_answer(const char *reply)
{
	const char *what = roll.restart ? "restart" : "swap";

	fprintf(roll.f, "  %s", reply);
	if (strncmp(reply, "ok:", 3) != 0)
		roll_end("error: rolling %s of %s stopped at %s (%d of %d): "
		    "%d %s done, %d unchanged\n", what, roll.base,
		    g.stages[roll_copy(roll.base, roll.k)].label, roll.k + 1,
		    roll.n, roll.k, roll.k == 1 ? "copy" : "copies",
		    roll.n - roll.k);
	else if (++roll.k < roll.n)
		roll_next();
	else
		roll_end("ok: %s the %d %s of %s%s\n", roll.restart ?
		    "restarted" : "swapped", roll.n, roll.n == 1 ? "copy" :
		    "copies", roll.base, roll.n > 1 ? " one by one" : "");
}
