/*
 * handover.c: the state a successor of snb-esp goes on from (the stage's
 * hand-over state, app.h): each SA's outbound lease or inbound window top
 * and failures in a row, committed whenever one moves.  Why leases and
 * tops: see main.c.
 */
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
		};
	};
};
_Static_assert(sizeof(struct state) <= APP_STATE_MAX, "state size");

static struct state *state;

/* The data path's SAs into the state, committed. */
void
esp_state_save(const struct esp_sadb *db)
{
	int i;

	state->n = (uint32_t)db->nsa;
	state->magic = AUX_MAGIC;
	for (i = 0; i < db->nsa; i++) {
		const struct esp_sa *sa = &db->sa[i];

		state->e[i] = (struct sastate){ sa->spi, sa->dir,
		    sa->dir == ESP_OUT ? sa->lease : sa->replay.top };
		state->aux[i] = sa->dir == ESP_OUT ? sa->keyprint : sa->fails;
	}
	app_state_commit();
}

/*
 * A predecessor's state onto the SAs just read from the file: an
 * outbound SA goes on from the lease of its SPI or of its key, an inbound
 * one takes its SPI's window top (all below it seen) and failures.
 */
static void
state_resume(struct esp_sadb *db)
{
	int aux = state->magic == AUX_MAGIC, i;
	uint32_t j, max = aux ? ESP_MAX_SA : OLD_NSTATE;
	uint32_t n = state->n < max ? state->n : max;
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
esp_state_start(struct esp_sadb *db)
{
	state = app_state(sizeof(*state));
	if (app_resumed())
		state_resume(db);
	esp_state_save(db);
}
