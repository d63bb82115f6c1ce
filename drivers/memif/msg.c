/*
 * msg.c: memif control messages, decoded field by field from their packed
 * wire layout (never by casting the buffer), and the master's handshake
 * bookkeeping.  See msg.h for the protocol.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "msg.h"

/* Payload offsets: the type takes bytes 0-1, payloads start at 2. */
#define P	2
/* The reason in why (whylen bytes), and -1. */
#define WHY(...)	memif_why(why, whylen, __VA_ARGS__)

int
memif_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * A field between the wire (packed) and struct memif_msg, in the
 * direction enc says: bytes are copied, never cast (the wire has no
 * alignment), and one walk over the layout serves both directions.
 */
static void
field(unsigned char *wire, void *f, size_t n, int enc)
{
	if (enc)
		memcpy(wire, f, n);
	else
		memcpy(f, wire, n);
}

/* A fixed-size string field: up to its first NUL, always terminated. */
static void
string(unsigned char *wire, char *s, size_t n, int enc)
{
	if (enc)
		memcpy(wire, s, strnlen(s, n));
	else {
		n = strnlen((char *)wire, n);
		memcpy(s, wire, n);
		s[n] = '\0';
	}
}

#define F(off, f)	field(b + (off), &(f), sizeof(f), enc)
#define S(off, s)	string(b + (off), (s), sizeof(s) - 1, enc)

/*
 * The payload of m at b: read (enc 0) or written (enc 1).  Returns the
 * message's packed size, the type included: the least a peer may send.
 */
static size_t
walk(struct memif_msg *m, unsigned char *b, int enc)
{
	switch (m->type) {
	case MEMIF_MSG_HELLO:
		S(P, m->hello.name);
		F(P + 32, m->hello.min_version);
		F(P + 34, m->hello.max_version);
		F(P + 36, m->hello.max_region);
		F(P + 38, m->hello.max_m2s_ring);
		F(P + 40, m->hello.max_s2m_ring);
		F(P + 42, m->hello.max_log2_ring_size);
		return P + 43;
	case MEMIF_MSG_INIT:
		F(P, m->init.version);
		F(P + 2, m->init.id);
		F(P + 6, m->init.mode);
		S(P + 7, m->init.secret);
		S(P + 31, m->init.name);
		return P + 63;
	case MEMIF_MSG_ADD_REGION:
		F(P, m->add_region.index);
		F(P + 2, m->add_region.size);
		return P + 10;
	case MEMIF_MSG_ADD_RING:
		F(P, m->add_ring.flags);
		F(P + 2, m->add_ring.index);
		F(P + 4, m->add_ring.region);
		F(P + 6, m->add_ring.offset);
		F(P + 10, m->add_ring.log2_ring_size);
		F(P + 11, m->add_ring.private_hdr_size);
		return P + 13;
	case MEMIF_MSG_CONNECT:
	case MEMIF_MSG_CONNECTED:
		S(P, m->connect.name);
		return P + 32;
	case MEMIF_MSG_DISCONNECT:
		F(P, m->disconnect.code);
		S(P + 4, m->disconnect.reason);
		return P + 100;
	}
	return P;		/* ACK */
}

int
memif_msg_decode(const void *buf, size_t len, struct memif_msg *m,
    char *why, size_t whylen)
{
	unsigned char b[MEMIF_MSG_SIZE] = { 0 };

	memset(m, 0, sizeof(*m));
	if (len < P || len > MEMIF_MSG_SIZE)
		return WHY("message of %zu bytes (expected %d)", len,
		    MEMIF_MSG_SIZE);
	memcpy(b, buf, len);	/* zero-padded: walk() reads its whole size */
	memcpy(&m->type, b, 2);
	if (m->type == MEMIF_MSG_NONE || m->type > MEMIF_MSG_DISCONNECT)
		return WHY("unknown message type %u", m->type);
	if (len < walk(m, b, 0))
		return WHY("message type %u: %zu bytes, too short", m->type,
		    len);
	if (m->type == MEMIF_MSG_HELLO &&
	    m->hello.min_version > m->hello.max_version)
		return WHY("HELLO: versions %#x..%#x",
		    m->hello.min_version, m->hello.max_version);
	return 0;
}

void
memif_msg_encode(const struct memif_msg *m, unsigned char b[MEMIF_MSG_SIZE])
{
	memset(b, 0, MEMIF_MSG_SIZE);
	memcpy(b, &m->type, 2);
	(void)walk((struct memif_msg *)m, b, 1);	/* enc: m is only read */
}

void
memif_msg_disconnect(struct memif_msg *m, const char *reason)
{
	*m = (struct memif_msg){ .type = MEMIF_MSG_DISCONNECT };
	snprintf(m->disconnect.reason, sizeof(m->disconnect.reason), "%s",
	    reason);
}

void
memif_master_hello(struct memif_msg *m, const char *name)
{
	*m = (struct memif_msg){ .type = MEMIF_MSG_HELLO };
	snprintf(m->hello.name, sizeof(m->hello.name), "%s", name);
	m->hello.min_version = MEMIF_VERSION;
	m->hello.max_version = MEMIF_VERSION;
	m->hello.max_region = MEMIF_MAX_REGIONS - 1;
	m->hello.max_m2s_ring = MEMIF_MAX_RINGS - 1;
	m->hello.max_s2m_ring = MEMIF_MAX_RINGS - 1;
	m->hello.max_log2_ring_size = MEMIF_MAX_LOG2_RING;
}

#define FAIL(...) do {						\
	snprintf(why, whylen, __VA_ARGS__);			\
	return MEMIF_A_ERROR;					\
} while (0)

/*
 * CONNECT: every ring named by ADD_RING (numbered 0..n-1 by then, see
 * below) must lie inside a region announced before, with its header
 * aligned for the 16-bit head and tail; at least one ring in each
 * direction.  Then the session is connected.
 */
static enum memif_action
check_rings(struct memif_session *s, char *why, size_t whylen)
{
	const struct memif_ring_cfg *r;
	const char *dir;
	uint64_t size;
	unsigned i, k;

	if (s->ns2m == 0 || s->nm2s == 0)
		FAIL("CONNECT before a ring in each direction (%u s2m, %u m2s)",
		    s->ns2m, s->nm2s);
	for (i = 0; i < s->ns2m + s->nm2s; i++) {
		k = i < s->ns2m ? i : i - s->ns2m;
		r = i < s->ns2m ? &s->s2m[k] : &s->m2s[k];
		dir = i < s->ns2m ? "s2m" : "m2s";
		size = memif_ring_bytes(r->log2);
		if (r->region >= s->nregions)
			FAIL("%s ring %u: no region %u", dir, k, r->region);
		if (r->offset % 16 ||
		    r->offset + size > s->region_size[r->region])
			FAIL("%s ring %u: offset %u + %llu bytes outside "
			    "region %u (%llu bytes)", dir, k, r->offset,
			    (unsigned long long)size, r->region,
			    (unsigned long long)s->region_size[r->region]);
	}
	s->state = MEMIF_S_CONNECTED;
	return MEMIF_A_CONNECT;
}

enum memif_action
memif_master_step(struct memif_session *s, const struct memif_msg *m,
    char *why, size_t whylen)
{
	struct memif_ring_cfg *r;
	unsigned *n;

	if (m->type == MEMIF_MSG_ACK)
		return MEMIF_A_NONE;
	switch (s->state) {
	case MEMIF_S_HELLO_SENT:
		if (m->type != MEMIF_MSG_INIT)
			FAIL("expected INIT, got type %u", m->type);
		if (m->init.version != MEMIF_VERSION)
			FAIL("Incompatible memif version %#x",
			    m->init.version);
		if (m->init.id != s->id)
			FAIL("ID %u not found (ours: %u)", m->init.id, s->id);
		if (m->init.mode != MEMIF_MODE_ETHERNET)
			FAIL("Only ethernet mode supported (mode %u)",
			    m->init.mode);
		if (s->secret[0] != '\0' &&
		    strcmp(s->secret, m->init.secret) != 0)
			FAIL(m->init.secret[0] ? "Incorrect secret" :
			    "Secret required");
		snprintf(s->peer_name, sizeof(s->peer_name), "%s",
		    m->init.name);
		s->state = MEMIF_S_INIT_DONE;
		return MEMIF_A_ACK;
	case MEMIF_S_INIT_DONE:
		break;
	default:
		FAIL("unexpected message type %u after CONNECT", m->type);
	}
	switch (m->type) {
	case MEMIF_MSG_ADD_REGION:
		if (m->add_region.index != s->nregions ||
		    s->nregions == MEMIF_MAX_REGIONS)
			FAIL("Invalid region index %u (expected %u, at most "
			    "%u)", m->add_region.index, s->nregions,
			    MEMIF_MAX_REGIONS - 1);
		if (m->add_region.size == 0 ||
		    m->add_region.size > MEMIF_MAX_REGION_SIZE)
			FAIL("region %u: size %llu", m->add_region.index,
			    (unsigned long long)m->add_region.size);
		s->region_size[s->nregions++] = m->add_region.size;
		return MEMIF_A_ACK_REGION;
	case MEMIF_MSG_ADD_RING:
		if (m->add_ring.flags & ~MEMIF_RING_FLAG_S2M)
			FAIL("ring flags %#x", m->add_ring.flags);
		if (m->add_ring.flags & MEMIF_RING_FLAG_S2M)
			r = s->s2m, n = &s->ns2m;
		else
			r = s->m2s, n = &s->nm2s;
		if (m->add_ring.index != *n || *n == MEMIF_MAX_RINGS)
			FAIL("Invalid ring index %u (expected %u, at most %u)",
			    m->add_ring.index, *n, MEMIF_MAX_RINGS - 1);
		if (m->add_ring.log2_ring_size < 1 ||
		    m->add_ring.log2_ring_size > MEMIF_MAX_LOG2_RING)
			FAIL("ring %u: log2 size %u (1..%u)", m->add_ring.index,
			    m->add_ring.log2_ring_size, MEMIF_MAX_LOG2_RING);
		if (m->add_ring.private_hdr_size != 0)
			FAIL("ring %u: private headers are not supported",
			    m->add_ring.index);
		/* The region may come later only in theory: check all on
		 * CONNECT, when every region is known. */
		r[(*n)++] = (struct memif_ring_cfg){ m->add_ring.region,
		    m->add_ring.offset, m->add_ring.log2_ring_size };
		return MEMIF_A_ACK_RING;
	case MEMIF_MSG_CONNECT:
		return check_rings(s, why, whylen);
	default:
		FAIL("unexpected message type %u during set-up", m->type);
	}
}

enum memif_action
memif_slave_step(struct memif_session *s, const struct memif_msg *m,
    char *why, size_t whylen)
{
	switch (s->state) {
	case MEMIF_S_WAIT_HELLO:
		if (m->type != MEMIF_MSG_HELLO)
			FAIL("expected HELLO, got type %u", m->type);
		if (m->hello.min_version > MEMIF_VERSION ||
		    m->hello.max_version < MEMIF_VERSION)
			FAIL("Incompatible memif version (peer %#x..%#x, ours "
			    "%#x)", m->hello.min_version, m->hello.max_version,
			    MEMIF_VERSION);
		if (m->hello.max_log2_ring_size < 1)
			FAIL("HELLO: ring size limit %u",
			    m->hello.max_log2_ring_size);
		if (s->log2 > m->hello.max_log2_ring_size)
			s->log2 = m->hello.max_log2_ring_size;
		snprintf(s->peer_name, sizeof(s->peer_name), "%s",
		    m->hello.name);
		s->state = MEMIF_S_WAIT_ACK;
		s->step = 0;
		return MEMIF_A_SEND_INIT;
	case MEMIF_S_WAIT_ACK:
		if (m->type != MEMIF_MSG_ACK)
			FAIL("expected ACK, got type %u", m->type);
		if (++s->step == s->nsteps)
			s->state = MEMIF_S_WAIT_CONNECTED;
		return MEMIF_A_SEND_NEXT;
	case MEMIF_S_WAIT_CONNECTED:
		if (m->type != MEMIF_MSG_CONNECTED)
			FAIL("expected CONNECTED, got type %u", m->type);
		s->state = MEMIF_S_CONNECTED;
		return MEMIF_A_UP;
	default:
		FAIL("unexpected message type %u", m->type);
	}
}
