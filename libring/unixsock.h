/*
 * unixsock.h: the UNIX socket a device app listens on or connects to
 * (snb-memif, snb-vhost): its address from the command line, a listener
 * that replaces the socket file a dead process left, never takes one
 * another process still listens on, and removes only its own file; and
 * the descriptors a peer passes over it.
 */
#ifndef SNB_UNIXSOCK_H
#define SNB_UNIXSOCK_H

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

struct unix_sock {
	char			 name[sizeof(((struct sockaddr_un *)0)->
				    sun_path)];	/* as given, for messages */
	struct sockaddr_un	 sa;
	socklen_t		 len;
	int			 abstract;	/* no file: see UNIX_ABSTRACT */
	int			 fd;		/* listening, or -1 */
	dev_t			 dev;		/* the file we made ... */
	ino_t			 ino;		/* ... (0: none) */
};

/*
 * "@NAME" or "abstract:NAME" (no '@' to quote in a graph) is NAME in
 * Linux's abstract namespace, where DPDK puts its sockets unless told
 * socket-abstract=no.
 */
#define UNIX_ABSTRACT	0x1

/*
 * SOCKET from the command line into u (flags: UNIX_ABSTRACT or 0): exit 2
 * when it is empty or too long, 1 when its directory does not exist.
 */
void	unix_sock_addr(struct unix_sock *u, const char *path, int flags);
/*
 * Listen on it with a socket of type (SOCK_STREAM, SOCK_SEQPACKET, with
 * SOCK_NONBLOCK if wanted).  Exit 1 when the path is taken by a file that
 * is not a socket or by a socket another process listens on; a socket
 * file nobody listens on any more is replaced.
 */
void	unix_sock_listen(struct unix_sock *u, int type, int backlog);
/* Stop listening; remove the file unless another process replaced it. */
void	unix_sock_close(struct unix_sock *u);

/*
 * The descriptors (SCM_RIGHTS) that came with a message received with mh,
 * appended to fds, *n of max in use; those beyond max are closed.  1 when
 * some were lost, closed here or cut by the kernel (MSG_CTRUNC), else 0.
 */
int	unix_take_fds(struct msghdr *mh, int *fds, int *n, int max);
/*
 * Is fd, an interrupt descriptor a peer passed (snb-vhost, snb-memif), an
 * eventfd?  A peer can send anything there (a pipe, a memfd, a socket):
 * epoll may refuse it, a write to it may block the stage forever.  1 when
 * it is one, now O_NONBLOCK so that neither a read nor a write on it can
 * stall the breathe loop; 0 otherwise.
 */
int	fd_is_eventfd(int fd);
/* fd (if >= 0) into or out of epoll set ep, for reading; an add must work,
 * a delete may fail (a closed fd is out of the set already). */
void	epoll_set(int ep, int op, int fd);
/* Close *fd if open, and mark it closed (-1). */
void	closefd(int *fd);

#endif
