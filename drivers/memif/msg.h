/*
 * msg.h: the memif control protocol (version 2.0), decoded and checked.
 *
 * memif peers talk over a UNIX SOCK_SEQPACKET socket in fixed 128-byte
 * messages: a 16-bit type, then a packed payload, all in host byte order.
 * The slave (client) connects; the master (server) owns the socket.
 *
 *	master			slave
 *	HELLO		->			limits: versions, rings, regions
 *			<-	INIT		version, interface id, mode, secret
 *	ACK		->
 *			<-	ADD_REGION	index, size; the memory fd attached
 *	ACK		->			(repeated per region)
 *			<-	ADD_RING	direction, index, region, offset,
 *	ACK		->			log2 size; an eventfd attached
 *			<-	CONNECT		(repeated per ring, then connect)
 *	CONNECTED	->
 *	either way:	DISCONNECT	code and a reason string
 *
 * The slave creates all shared memory.  A region holds rings and packet
 * buffers; a ring is a 128-byte header (cookie, flags, head on the first
 * cache line, tail on the second) followed by 2^log2 16-byte descriptors.
 *
 * This file only decodes bytes and keeps the handshake's bookkeeping; it
 * makes no system calls, so a fuzzer can drive it (fuzz/memif_msg_fuzz.c).
 * ctl.c does the socket and the fds, mem.c the mapping.
 */
#ifndef SNB_MEMIF_MSG_H
#define SNB_MEMIF_MSG_H

#include <stddef.h>
#include <stdint.h>

#define MEMIF_COOKIE		0x3E31F20
#define MEMIF_VERSION		0x0200		/* 2.0: major << 8 | minor */
#define MEMIF_MSG_SIZE		128
#define MEMIF_NAME_LEN		32
#define MEMIF_SECRET_LEN	24
#define MEMIF_REASON_LEN	96

enum memif_msg_type {
	MEMIF_MSG_NONE, MEMIF_MSG_ACK, MEMIF_MSG_HELLO, MEMIF_MSG_INIT,
	MEMIF_MSG_ADD_REGION, MEMIF_MSG_ADD_RING, MEMIF_MSG_CONNECT,
	MEMIF_MSG_CONNECTED, MEMIF_MSG_DISCONNECT
};

#define MEMIF_RING_FLAG_S2M	0x1	/* ADD_RING: slave-to-master ring */
#define MEMIF_MODE_ETHERNET	0
#define MEMIF_DESC_FLAG_NEXT	0x1	/* the packet goes on in the next slot */
#define MEMIF_RING_FLAG_MASK_INT 0x1	/* ring flags: receiver wants no kicks */

/* Our limits, sent in HELLO (as highest indexes) and enforced. */
#define MEMIF_MAX_REGIONS	16
#define MEMIF_MAX_RINGS		16	/* per direction */
#define MEMIF_MAX_LOG2_RING	14	/* head - tail must fit 16 bits */
#define MEMIF_MAX_REGION_SIZE	(1ULL << 40)

/* Shared ring layout (offsets from the ring's start). */
#define MEMIF_RING_HDR		128
#define MEMIF_RING_COOKIE_OFF	0	/* uint32_t */
#define MEMIF_RING_FLAGS_OFF	4	/* uint16_t, written by the receiver */
#define MEMIF_RING_HEAD_OFF	6	/* uint16_t */
#define MEMIF_RING_TAIL_OFF	64	/* uint16_t */
#define MEMIF_DESC_SIZE		16

/* A descriptor as it sits in a ring (packed: 2+2+4+4+4 bytes). */
struct memif_desc {
	uint16_t	flags;		/* MEMIF_DESC_FLAG_NEXT */
	uint16_t	region;
	uint32_t	length;		/* bytes of packet, or of buffer room */
	uint32_t	offset;		/* of the buffer in its region */
	uint32_t	metadata;	/* unused */
};
_Static_assert(sizeof(struct memif_desc) == MEMIF_DESC_SIZE, "desc size");

/* A decoded message; strings are NUL-terminated copies. */
struct memif_msg {
	uint16_t	type;
	union {
		struct {
			char	 name[MEMIF_NAME_LEN + 1];
			uint16_t min_version, max_version;
			uint16_t max_region;	/* highest index allowed */
			uint16_t max_m2s_ring, max_s2m_ring;
			uint8_t	 max_log2_ring_size;
		} hello;
		struct {
			uint16_t version;
			uint32_t id;
			uint8_t	 mode;
			char	 secret[MEMIF_SECRET_LEN + 1];
			char	 name[MEMIF_NAME_LEN + 1];
		} init;
		struct {
			uint16_t index;
			uint64_t size;
		} add_region;
		struct {
			uint16_t flags, index, region;
			uint32_t offset;
			uint8_t	 log2_ring_size;
			uint16_t private_hdr_size;
		} add_ring;
		struct {
			char	 name[MEMIF_NAME_LEN + 1];
		} connect;		/* CONNECT and CONNECTED */
		struct {
			uint32_t code;
			char	 reason[MEMIF_REASON_LEN + 1];
		} disconnect;
	};
};

/*
 * Decode len bytes into m.  Returns 0, or -1 with a reason in why (the
 * message is too short or long, of an unknown type, or a field is outside
 * what the protocol allows whatever the state).  Strings that fill their
 * field are accepted and cut; bytes after the payload are ignored.
 */
int	memif_msg_decode(const void *buf, size_t len, struct memif_msg *m,
	    char *why, size_t whylen);
/* Encode m into exactly MEMIF_MSG_SIZE bytes (unused bytes zero). */
void	memif_msg_encode(const struct memif_msg *m,
	    unsigned char buf[MEMIF_MSG_SIZE]);
/* Format a reason into why (whylen bytes); returns -1. */
int	memif_why(char *why, size_t whylen, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* Convenience: a DISCONNECT with code 0 and reason (cut to fit). */
void	memif_msg_disconnect(struct memif_msg *m, const char *reason);

/* A ring as the slave described it (master side) or as we made it. */
struct memif_ring_cfg {
	uint16_t	region;
	uint32_t	offset;		/* of the ring header in its region */
	uint8_t		log2;
};

/*
 * The master's view of a handshake: what INIT, ADD_REGION and ADD_RING
 * said, checked message by message and again as a whole on CONNECT.
 * Region sizes here are the ones announced; mem.c checks the fds
 * against them before mapping.
 */
struct memif_session {
	int		state;		/* MEMIF_S_* */
	uint32_t	id;		/* ours: INIT must name it */
	char		secret[MEMIF_SECRET_LEN + 1];	/* "" = none */
	char		peer_name[MEMIF_NAME_LEN + 1];
	unsigned	nregions;
	uint64_t	region_size[MEMIF_MAX_REGIONS];
	unsigned	ns2m, nm2s;
	unsigned	step, nsteps;	/* slave: set-up messages after INIT */
	uint8_t		log2;		/* slave: ring size wanted, then the
					   one HELLO allows */
	struct memif_ring_cfg s2m[MEMIF_MAX_RINGS], m2s[MEMIF_MAX_RINGS];
};

enum { MEMIF_S_HELLO_SENT, MEMIF_S_INIT_DONE, MEMIF_S_CONNECTED,
    /* the slave's side: waiting for HELLO, then for ACKs (step counts
     * them), then for CONNECTED */
    MEMIF_S_WAIT_HELLO, MEMIF_S_WAIT_ACK, MEMIF_S_WAIT_CONNECTED };

/* What the caller must do after memif_master_step(). */
enum memif_action {
	MEMIF_A_NONE,		/* nothing (an ACK from the slave) */
	MEMIF_A_ACK,		/* send ACK */
	MEMIF_A_ACK_REGION,	/* check and keep the region fd, send ACK */
	MEMIF_A_ACK_RING,	/* keep the ring's eventfd, send ACK */
	MEMIF_A_CONNECT,	/* map, check rings, send CONNECTED */
	MEMIF_A_SEND_INIT,	/* slave: HELLO accepted, set up, send INIT */
	MEMIF_A_SEND_NEXT,	/* slave: send set-up message number step */
	MEMIF_A_UP,		/* slave: CONNECTED: start moving packets */
	MEMIF_A_ERROR		/* send DISCONNECT with why, close */
};

/* Our HELLO as a master. */
void	memif_master_hello(struct memif_msg *m, const char *name);
/*
 * One message from the slave: what to do, and why on MEMIF_A_ERROR.
 * DISCONNECT, valid in any state, is the caller's to handle.
 */
enum memif_action memif_master_step(struct memif_session *s,
	    const struct memif_msg *m, char *why, size_t whylen);
/*
 * One message from the master (s->state starts at MEMIF_S_WAIT_HELLO,
 * s->nsteps says how many messages follow INIT: regions, rings, CONNECT;
 * HELLO may lower s->log2).
 */
enum memif_action memif_slave_step(struct memif_session *s,
	    const struct memif_msg *m, char *why, size_t whylen);

/* Bytes a ring of 2^log2 slots takes in its region. */
static inline uint64_t
memif_ring_bytes(unsigned log2)
{
	return MEMIF_RING_HDR + ((uint64_t)MEMIF_DESC_SIZE << log2);
}

#endif
