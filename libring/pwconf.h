/*
 * pwconf.h: the pseudowire configuration of an L2 VPN endpoint, read by
 * snb-l2tp and snb-gre (the format: snb-pw(5)).
 *
 *	local-address 2001:db8:1::1;
 *	mtu 1500;			// optional: the core's IPv6 MTU
 *	hop-limit 64;			// optional
 *	pseudowire site-b {
 *		remote-address 2001:db8:2::1;
 *		l2tp { local-session 1; remote-session 2;
 *		       local-cookie 0x0011223344556677;
 *		       remote-cookie 0x8899aabbccddeeff; }
 *		// or: gre { key 42; }	(key optional)
 *	}
 *
 * A pseudowire's name is the name of its port in the graph, so it keeps
 * to the graph's alphabet of names and is never "core".  Sessions and
 * cookies are seen from this end, as iproute2's `ip l2tp` sees them:
 * local-session is the session id this end receives (session_id),
 * remote-session the one it sends (peer_session_id), local-cookie the
 * cookie it sends (cookie), remote-cookie the one it expects
 * (peer_cookie); both sessions are 0xffffffff unless given.  The checks
 * that keep decapsulation unambiguous are made here: no two L2TP
 * pseudowires share a local session and remote address, no two GRE ones
 * a remote address and key (or the absence of one).
 */
#ifndef SNB_PWCONF_H
#define SNB_PWCONF_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"

#define PW_NAME_MAX	32	/* as a port name (graph.h), NUL included */
#define PW_MAX		48	/* per stage: two counters each fit the
				   stage file's 128 beside the others */

enum pw_type { PW_NONE = 0, PW_L2TP = 1, PW_GRE = 2 };

struct pw {
	char		 name[PW_NAME_MAX];
	struct cfg_pos	 at;		/* of the name */
	uint8_t		 remote[16];
	int		 type;		/* PW_L2TP or PW_GRE */
	/* L2TPv3: host order; cookies as on the wire. */
	uint32_t	 local_session, remote_session;
	uint8_t		 local_cookie[8], remote_cookie[8];
	/* GRE: the key (host order) when has_key. */
	int		 has_key;
	uint32_t	 key;
	/* Where the fields were seen (the parser's business). */
	struct cfg_pos	 l2tp_at, gre_at;
};

struct pw_conf {
	uint8_t		 local[16];
	uint32_t	 mtu;		/* largest outer IPv6 packet */
	uint32_t	 hop_limit;
	struct pw	*pw;
	size_t		 npw, cap;
};

#define PW_DEFAULT_MTU		1500
/* RFC 8159 3: a static keyed IPv6 tunnel's session id, both ways. */
#define PW_DEFAULT_SESSION	0xffffffffu
#define PW_DEFAULT_HOP_LIMIT	64

/*
 * Parse the text (len bytes, NUL-terminated) of file into c (zeroed
 * first); 0, or -1 with "FILE:LINE:COL: message" in err (read the
 * file with cfg_read()).  pw_conf_free() frees what it kept.
 */
int	pw_conf_parse(struct pw_conf *c, const char *text, size_t len,
	    const char *file, char *err, size_t errlen);
void	pw_conf_free(struct pw_conf *c);

/* The pseudowire called name, or NULL. */
const struct pw *pw_find(const struct pw_conf *c, const char *name);

#endif
