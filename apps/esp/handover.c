/*
 * handover.c: the state a successor of snb-esp goes on from (the stage's
 * hand-over state, app.h): each SA's outbound lease or inbound window top
 * and failures in a row, committed whenever one moves.  Why leases and
 * tops: see main.c.
 */
#include <err.h>
#include <string.h>

#include "app.h"
#include "esp.h"

/*
 * The hand-over state: where each SA stands, by direction and SPI, in the
 * entries' layout of every snb-esp before, so that a swap back to one
 * reads them right.  What came later is beside them, in aux, which those
 * do not read: an inbound SA's failures in a row, an outbound SA's key
 * print (its sequence number follows its key and salt, whatever its SPI
 * or addresses).  AUX_MAGIC says aux is there; a predecessor without it
 * had up to 31 entries, the failures in a row in dir's upper 24 bits.
 *
 * Then the prints of the outbound keys a reload (or a file changed across
 * a restart) removed, nretired of them, five to a slot (entry and aux)
 * from the last slot down, in slots no SA holds: such a key's nonces are
 * spent, so it is never taken again (esp_key_retired()).  Earlier
 * versions read neither the count nor those slots.
 */
#define AUX_MAGIC	0x31787561	/* "aux1" */
#define OLD_NSTATE	31
struct sastate {
	uint32_t	spi, dir;
	uint64_t	seq;	/* out: the lease; in: the window's top */
};
struct state {
	uint32_t	n, magic;
	union {
		struct sastate	old[OLD_NSTATE];
		struct {
			struct sastate	e[ESP_MAX_SA];
			uint32_t	aux[ESP_MAX_SA];
			uint32_t	nretired;
		};
	};
};
_Static_assert(sizeof(struct state) <= APP_STATE_MAX, "state size");

#define PER_SLOT	(sizeof(struct sastate) / 4 + 1)
#define SLOTS(nret)	(((nret) + PER_SLOT - 1) / PER_SLOT)

static struct state *state;
static uint32_t retired[ESP_MAX_SA * PER_SLOT];	/* the key prints */
static uint32_t nretired;

/* Where retired key print r is kept in the state. */
static void *
retired_at(uint32_t r)
{
	uint32_t slot = ESP_MAX_SA - 1 - r / PER_SLOT, w = r % PER_SLOT;

	return w == PER_SLOT - 1 ? (void *)&state->aux[slot] :
	    (char *)&state->e[slot] + 4 * w;
}

int
esp_key_retired(uint32_t keyprint)
{
	uint32_t r;

	for (r = 0; r < nretired; r++)
		if (retired[r] == keyprint)
			return 1;
	return 0;
}

int
esp_state_room(int nsa, int nretire)
{
	return (size_t)nsa + SLOTS(nretired + (size_t)nretire) <= ESP_MAX_SA;
}

void
esp_key_retire(uint32_t keyprint)
{
	if (!esp_key_retired(keyprint) &&
	    nretired < sizeof(retired) / sizeof(retired[0]))
		retired[nretired++] = keyprint;
}

/* The data path's SAs into the state, committed. */
void
esp_state_save(const struct esp_sadb *db)
{
	uint32_t r;
	int i;

	state->n = (uint32_t)db->nsa;
	state->magic = AUX_MAGIC;
	for (i = 0; i < db->nsa; i++) {
		const struct esp_sa *sa = &db->sa[i];

		state->e[i] = (struct sastate){ sa->spi, sa->dir,
		    sa->dir == ESP_OUT ? sa->lease : sa->replay.top };
		state->aux[i] = sa->dir == ESP_OUT ? sa->keyprint : sa->fails;
	}
	state->nretired = nretired;
	for (r = 0; r < nretired; r++)
		memcpy(retired_at(r), &retired[r], 4);
	app_state_commit();
}

/*
 * The predecessor's retired keys, and those of its outbound SAs the file
 * no longer has (removed while no process ran it); then db's outbound
 * SAs under any of them are left out, wiped: their nonces were used.
 */
static void
resume_retired(struct esp_sadb *db, const char *file, uint32_t n)
{
	uint32_t r, j;
	int i, k;

	if (n <= ESP_MAX_SA && state->nretired <= (ESP_MAX_SA - n) * PER_SLOT)
		for (r = 0; r < state->nretired; r++)
			memcpy(&retired[nretired++], retired_at(r), 4);
	for (j = 0; j < n; j++) {
		if (state->e[j].dir != ESP_OUT)
			continue;
		for (i = 0; i < db->nsa; i++)
			if (db->sa[i].dir == ESP_OUT &&
			    db->sa[i].keyprint == state->aux[j])
				break;
		if (i == db->nsa)
			esp_key_retire(state->aux[j]);
	}
	for (i = k = 0; i < db->nsa; i++) {
		struct esp_sa *sa = &db->sa[i];

		if (sa->dir == ESP_OUT && esp_key_retired(sa->keyprint)) {
			warnx("%s:%d:%d: sa spi 0x%x left out: the key and "
			    "salt of an outbound SA removed earlier (GCM would "
			    "use its nonces again): give it a new key", file,
			    sa->at.line, sa->at.col, sa->spi);
			esp_sa_uncipher(sa);
		} else if (k++ != i)
			db->sa[k - 1] = *sa;	/* moved down */
		else
			continue;	/* in place */
		explicit_bzero(sa, sizeof(*sa));
	}
	db->nsa = k;
	/* More than fit: the oldest prints go (a bound, warned of). */
	while (!esp_state_room(db->nsa, 0)) {
		warnx("the hand-over state forgets a removed outbound key "
		    "(%d SAs)", db->nsa);
		memmove(retired, retired + 1, --nretired * sizeof(*retired));
	}
}

/*
 * A predecessor's state onto the SAs just read from the file: an
 * outbound SA goes on from the lease of its SPI or of its key, an inbound
 * one takes its SPI's window top (all below it seen) and failures.
 */
static void
state_resume(struct esp_sadb *db, const char *file)
{
	int aux = state->magic == AUX_MAGIC, i;
	uint32_t j, max = aux ? ESP_MAX_SA : OLD_NSTATE;
	uint32_t n = state->n < max ? state->n : max;

	if (aux)
		resume_retired(db, file, n);
	for (i = 0; i < db->nsa; i++) {
		struct esp_sa *sa = &db->sa[i];

		for (j = 0; j < n; j++) {
			const struct sastate *e = &state->old[j];
			uint32_t dir = aux ? e->dir : e->dir & 0xff;

			if (dir != sa->dir || (e->spi != sa->spi &&
			    !(aux && sa->dir == ESP_OUT &&
			    state->aux[j] == sa->keyprint)))
				continue;
			if (sa->dir == ESP_OUT) {
				sa->seq = e->seq > sa->seq ? e->seq : sa->seq;
				continue;
			}
			if (e->seq > sa->replay.top) {
				sa->replay.top = e->seq;
				memset(sa->replay.bits, 0xff, sa->replay.w / 8);
			}
			sa->fails = aux ? state->aux[j] : e->dir >> 8;
		}
	}
}

/* At start: a predecessor's state onto db (if any), then db's, committed. */
void
esp_state_start(struct esp_sadb *db, const char *file)
{
	state = app_state(sizeof(*state));
	if (app_resumed())
		state_resume(db, file);
	esp_state_save(db);
}
