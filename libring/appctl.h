/*
 * appctl.h: the runtime's side of a stage's control socket (appctl.c);
 * apps give app_desc a control() hook and call app_ctl_sync() instead.
 */
#ifndef SNB_APPCTL_H
#define SNB_APPCTL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>

/* Wakes a data path asleep on its rings: the call is waiting. */
#define APPCTL_WAKE_SIGNAL	SIGURG

/* The call app_ctl_sync() posted, NULL when none. */
extern void (*_Atomic appctl_call_fn)(void *);

/* Block SIGHUP in this thread (before any thread starts). */
void	appctl_block_hup(void);
/*
 * Start the control thread: the socket beside the stats file (none when
 * stats is NULL), and SIGHUP as "reload".
 */
void	appctl_start(int (*fn)(int, char **, FILE *), const char *stats,
	    const char *label);
/* Before stop(): no more calls; wait for the thread, remove the socket. */
void	appctl_stop(void);
void	appctl_run_call(void);

/* Between two breaths: run the posted call, if any. */
static inline void
appctl_poll(void)
{
	if (__builtin_expect(atomic_load_explicit(&appctl_call_fn,
	    memory_order_relaxed) != NULL, 0))
		appctl_run_call();
}

#endif
