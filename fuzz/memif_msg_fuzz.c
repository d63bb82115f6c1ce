/*
 * memif_msg_fuzz: libFuzzer target for snb-memif's control-message decoder
 * and the handshake bookkeeping of both roles (drivers/memif/msg.c).
 *
 * Build and run (from the repository root; `make fuzz` does this):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring -Idrivers/memif \
 *	    fuzz/memif_msg_fuzz.c -o build/fuzz_memif
 *	mkdir -p build/fuzz-memif-corpus
 *	build/fuzz_memif -max_total_time=600 build/fuzz-memif-corpus \
 *	    fuzz/corpus/memif
 *
 * Input: one byte of set-up (bit 0: play master, else slave; bits 1-7: the
 * interface id the master expects), then records of one length byte and
 * that many bytes, each one message as it would come off the socket.
 * Beyond "no crash": a decoded message encodes and decodes to itself; a
 * master that reaches CONNECT holds only rings inside announced regions,
 * numbered without gaps; a slave's ring size never exceeds what it asked
 * for or what HELLO allowed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../drivers/memif/msg.c"

static void
same(const struct memif_msg *a, const struct memif_msg *b)
{
	/* Compare field by field: the union's padding is not ours. */
	if (a->type != b->type)
		abort();
	switch (a->type) {
	case MEMIF_MSG_HELLO:
		if (strcmp(a->hello.name, b->hello.name) ||
		    a->hello.min_version != b->hello.min_version ||
		    a->hello.max_version != b->hello.max_version ||
		    a->hello.max_region != b->hello.max_region ||
		    a->hello.max_m2s_ring != b->hello.max_m2s_ring ||
		    a->hello.max_s2m_ring != b->hello.max_s2m_ring ||
		    a->hello.max_log2_ring_size != b->hello.max_log2_ring_size)
			abort();
		break;
	case MEMIF_MSG_INIT:
		if (a->init.version != b->init.version ||
		    a->init.id != b->init.id || a->init.mode != b->init.mode ||
		    strcmp(a->init.secret, b->init.secret) ||
		    strcmp(a->init.name, b->init.name))
			abort();
		break;
	case MEMIF_MSG_ADD_REGION:
		if (a->add_region.index != b->add_region.index ||
		    a->add_region.size != b->add_region.size)
			abort();
		break;
	case MEMIF_MSG_ADD_RING:
		if (memcmp(&a->add_ring, &b->add_ring, sizeof(a->add_ring)))
			abort();
		break;
	case MEMIF_MSG_CONNECT:
	case MEMIF_MSG_CONNECTED:
		if (strcmp(a->connect.name, b->connect.name))
			abort();
		break;
	case MEMIF_MSG_DISCONNECT:
		if (a->disconnect.code != b->disconnect.code ||
		    strcmp(a->disconnect.reason, b->disconnect.reason))
			abort();
		break;
	}
}

static void
check_connected(const struct memif_session *s)
{
	unsigned i, dir;

	if (s->ns2m == 0 || s->nm2s == 0 || s->ns2m > MEMIF_MAX_RINGS ||
	    s->nm2s > MEMIF_MAX_RINGS || s->nregions > MEMIF_MAX_REGIONS)
		abort();
	for (dir = 0; dir < 2; dir++)
		for (i = 0; i < (dir ? s->nm2s : s->ns2m); i++) {
			const struct memif_ring_cfg *r = dir ? &s->m2s[i] :
			    &s->s2m[i];
			if (!r->present || r->region >= s->nregions ||
			    r->log2 < 1 || r->log2 > MEMIF_MAX_LOG2_RING ||
			    r->offset + memif_ring_bytes(r->log2) >
			    s->region_size[r->region])
				abort();
		}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct memif_session s;
	struct memif_msg m, m2;
	unsigned char buf[MEMIF_MSG_SIZE];
	char why[MEMIF_REASON_LEN];
	enum memif_action a;
	int is_master;
	uint8_t log2, want;
	size_t len;

	if (size < 1)
		return 0;
	is_master = data[0] & 1;
	memif_session_init(&s, data[0] >> 1, (data[0] & 0x80) ? "sesame" :
	    NULL);
	if (!is_master) {
		s.state = MEMIF_S_WAIT_HELLO;
		s.nsteps = 4;
	}
	want = (uint8_t)(1 + (data[0] >> 1) % MEMIF_MAX_LOG2_RING);
	data++, size--;
	while (size > 0) {
		len = data[0];
		data++, size--;
		if (len > size)
			len = size;
		if (memif_msg_decode(data, len, &m, why, sizeof(why)) == 0) {
			memif_msg_encode(&m, buf);
			if (memif_msg_decode(buf, sizeof(buf), &m2, why,
			    sizeof(why)) != 0)
				abort();
			same(&m, &m2);
			if (is_master) {
				a = memif_master_step(&s, &m, why, sizeof(why));
				if (a == MEMIF_A_CONNECT)
					check_connected(&s);
				if (a == MEMIF_A_ERROR && why[0] == '\0')
					abort();
			} else {
				a = memif_slave_step(&s, &m, why, sizeof(why));
				if (a == MEMIF_A_SEND_INIT &&
				    memif_slave_hello(&m, want, &log2, why,
				    sizeof(why)) == 0 && (log2 > want ||
				    log2 > m.hello.max_log2_ring_size ||
				    log2 < 1))
					abort();
				if (a == MEMIF_A_SEND_NEXT &&
				    (s.step < 1 || s.step > s.nsteps))
					abort();
			}
			if (a == MEMIF_A_ERROR || a == MEMIF_A_PEER_GONE)
				break;	/* the connection is closed */
		} else if (why[0] == '\0')
			abort();
		data += len, size -= len;
	}
	return 0;
}
