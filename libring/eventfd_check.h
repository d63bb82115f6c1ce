/*
 * eventfd_check.h: is a descriptor a peer handed us an eventfd?
 *
 * snb-vhost and snb-memif take interrupt descriptors from a peer over
 * SCM_RIGHTS.  A peer can send anything there (a pipe, a memfd, a socket):
 * epoll may refuse it, a write to it may block the stage forever.  Only an
 * eventfd is accepted, and it is made non-blocking so that neither a read
 * nor a write on it can stall the breathe loop.
 */
#ifndef SNB_EVENTFD_CHECK_H
#define SNB_EVENTFD_CHECK_H

/* 1 when fd is an eventfd, now set O_NONBLOCK; 0 otherwise. */
int	fd_is_eventfd(int fd);

#endif
