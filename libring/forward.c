/*
 * forward.c: binding a forwarder to its ports (the loop is in forward.h).
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"

/* Port names: numbers by value first ("2" before "10"), then the rest. */
static int
by_name(const void *a, const void *b)
{
	const char *x = (*(struct port *const *)a)->name;
	const char *y = (*(struct port *const *)b)->name;
	char *ex, *ey;
	unsigned long nx = strtoul(x, &ex, 10), ny = strtoul(y, &ey, 10);
	int dx = *x != '\0' && *ex == '\0', dy = *y != '\0' && *ey == '\0';

	if (dx && dy)
		return nx < ny ? -1 : nx > ny;
	if (dx != dy)
		return dx ? -1 : 1;
	return strcmp(x, y);
}

/* The ports named in names, in that order; "*": all bound, by name. */
static int
ports_of(const char *const *names, int dir, struct port **p)
{
	int i, n = 0;

	/* An app whose ports are all unbound passes an empty list. */
	if (names == NULL || names[0] == NULL)
		return 0;
	if (strcmp(names[0], "*") == 0) {
		for (i = 0; i < app_nports; i++)
			if (app_ports[i].flags & dir)
				p[n++] = &app_ports[i];
		/* Consuming with nowhere to send would discard everything. */
		if (n == 0)
			app_require_port("*", dir);
		qsort(p, (size_t)n, sizeof(*p), by_name);
		return n;
	}
	for (; names[n] != NULL; n++)
		p[n] = app_port_dir(names[n], dir);
	return n;
}

static void *
alloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (p == NULL)
		err(1, NULL);
	return p;
}

void
fwd_init(struct fwd *f, const char *const *ins, const char *const *outs)
{
	struct port **p;
	int i, j, n, max = app_nports;

	memset(f, 0, sizeof(*f));
	for (i = 0; outs != NULL && outs[i] != NULL; i++)
		max++;
	for (i = 0; ins != NULL && ins[i] != NULL; i++)
		max++;
	p = alloc((size_t)max, sizeof(*p));

	n = ports_of(ins, PORT_IN, p);
	for (i = 0; i < n; i++)
		f->nin += p[i] ? p[i]->nrings : 0;
	f->in = alloc((size_t)f->nin, sizeof(*f->in));
	f->in_port = alloc((size_t)f->nin, sizeof(*f->in_port));
	f->nin = 0;
	for (i = 0; i < n; i++)
		for (j = 0; p[i] != NULL && j < p[i]->nrings; j++) {
			f->in_port[f->nin] = i;
			f->in[f->nin++] = &p[i]->rings[j];
		}

	f->nout = ports_of(outs, PORT_OUT, p);
	f->out = alloc((size_t)f->nout, sizeof(*f->out));
	for (i = 0; i < f->nout; i++) {
		f->out[i].port = p[i];
		if (p[i] != NULL && p[i]->nrings > 0)
			f->out[i].ring = &p[i]->rings[0];
	}
	free(p);
	if (f->nout > 0)
		f->drop_oversize = app_counter("drop-oversize");
}
