/*
 * fuzz.h: what the libFuzzer targets share (included once per target):
 * rings private to the process, an app's ports over them, and feeding
 * an app frames from the input breath by breath.
 */
#ifndef SNB_FUZZ_H
#define SNB_FUZZ_H

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

#include "app.h"
#include "ring.h"

#define FUZZ_UNUSED	__attribute__((unused))
#define FUZZ_MAXPORTS	4

/* A ring private to this process: both ends attached, the file unlinked
 * (the mappings keep it). */
static FUZZ_UNUSED void
fuzz_ring(const char *name, uint32_t nslots, uint32_t capacity,
    struct ring *prod, struct ring *cons)
{
	char path[256], eb[256];

	snprintf(path, sizeof(path), "/dev/shm/snb-fuzz-%d-%s", getpid(),
	    name);
	unlink(path);
	if (ring_create(path, nslots, capacity, 0) == -1)
		err(1, "%s", path);
	if (ring_attach(prod, path, RING_PRODUCER, eb, sizeof(eb)) == -1 ||
	    ring_attach(cons, path, RING_CONSUMER, eb, sizeof(eb)) == -1)
		errx(1, "%s", eb);
	unlink(path);
}

/* Empty a ring; no packet in it may be longer than a slot holds. */
static FUZZ_UNUSED void
fuzz_drain(struct ring *r)
{
	uint32_t n, i;

	while ((n = ring_avail(r, 64)) > 0) {
		for (i = 0; i < n; i++)
			if (ring_peek(r, i)->len > r->capacity)
				abort();
		ring_release(r, n);
	}
}

/* The app under test's ports: names[i] is an input (fed from fz_inp[i])
 * and an output (drained from fz_outc[i]), as snb-run would attach them. */
static struct ring fz_inp[FUZZ_MAXPORTS], fz_inc[FUZZ_MAXPORTS];
static struct ring fz_outp[FUZZ_MAXPORTS], fz_outc[FUZZ_MAXPORTS];
static int fz_nports;

static FUZZ_UNUSED void
fuzz_ports(const char *const *names, int n, uint32_t capacity)
{
	char rn[64];
	int i;

	if ((app_ports = calloc(2 * n, sizeof(struct port))) == NULL)
		err(1, NULL);
	app_nports = 2 * n;
	fz_nports = n;
	for (i = 0; i < n; i++) {
		snprintf(rn, sizeof(rn), "in%d", i);
		fuzz_ring(rn, 512, capacity, &fz_inp[i], &fz_inc[i]);
		snprintf(rn, sizeof(rn), "out%d", i);
		fuzz_ring(rn, 512, capacity, &fz_outp[i], &fz_outc[i]);
		strlcpy(app_ports[2 * i].name, names[i],
		    sizeof(app_ports[0].name));
		app_ports[2 * i].flags = PORT_IN;
		app_ports[2 * i].nrings = 1;
		app_ports[2 * i].rings = &fz_inc[i];
		strlcpy(app_ports[2 * i + 1].name, names[i],
		    sizeof(app_ports[0].name));
		app_ports[2 * i + 1].flags = PORT_OUT;
		app_ports[2 * i + 1].nrings = 1;
		app_ports[2 * i + 1].rings = &fz_outp[i];
	}
}

static FUZZ_UNUSED void
fuzz_breathe(int (*breathe)(void))
{
	int k;

	breathe();
	for (k = 0; k < fz_nports; k++)
		fuzz_drain(&fz_outc[k]);
}

/* Copy len bytes into output slot i of r, with no metadata. */
static FUZZ_UNUSED void
fuzz_put(struct ring *r, uint32_t i, const void *data, uint16_t len)
{
	struct packet *p = ring_slot(r, i);

	memset(p, 0, sizeof(*p));
	p->len = len;
	memcpy(p->data, data, len);
}

/*
 * Feed the input to the ports: records [port:1][len:2, little endian]
 * [bytes], the low bits of port picking the input, bit 7 asking for a
 * breath after the frame (so does a 60th frame queued: the input rings
 * must not fill).  The outputs are drained and checked after every
 * breath, and at the end once more for each input still holding
 * packets (an output was full).
 */
static FUZZ_UNUSED void
fuzz_frames(const uint8_t *d, size_t n, int (*breathe)(void))
{
	struct ring *r;
	size_t off = 0, len;
	int queued = 0, op, k;

	while (off + 3 <= n) {
		op = d[off];
		r = &fz_inp[(op & 0x7f) % fz_nports];
		len = (size_t)d[off + 1] | (size_t)d[off + 2] << 8;
		off += 3;
		if (len > n - off)
			len = n - off;
		if (len > r->capacity)
			len = r->capacity;
		if (ring_room(r, 1) > 0) {
			fuzz_put(r, 0, d + off, (uint16_t)len);
			ring_commit(r, 1);
			queued++;
		}
		off += len;
		if (op & 0x80 || queued >= 60) {
			fuzz_breathe(breathe);
			queued = 0;
		}
	}
	fuzz_breathe(breathe);
	for (k = 0; k < fz_nports; k++)
		if (ring_avail(&fz_inc[k], 1) > 0)
			fuzz_breathe(breathe);
}

#endif
