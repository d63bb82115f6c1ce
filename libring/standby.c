/*
 * standby.c: a replacement stage's side of a swap (snb-run): wait in
 * standby until the launcher says go, then say it took over.  The rest
 * of the hand-over (the stage file, the state) is in stage.c.
 */
#include <err.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "app.h"
#include "stage.h"

/*
 * A replacement stage (swap) binds and checks while the old stage still
 * runs: refuse now if an output's stream has ended, map the predecessor's
 * stage file, say "ready" (a NUL byte after whatever init() said on the
 * launcher's pipe), then wait for SIGUSR1 (go: the old stage has left)
 * or SIGTERM (the swap was called off: leave, having touched nothing).
 * The pipe stays open, for "taken over" (stage_taken_over()), but no
 * child of ours inherits it: the launcher must see it close when we die.
 */
const struct stage_file *
stage_standby(int fd, int saved_err, const char *prev_path)
{
	const struct stage_file *prev;
	sigset_t set, old;
	int sig, i, j;

	for (i = 0; i < app_nports; i++)
		for (j = 0; j < app_ports[i].nrings; j++) {
			struct ring *r = &app_ports[i].rings[j];
			if ((app_ports[i].flags & PORT_OUT) &&
			    atomic_load(&r->shm->prod.closed))
				errx(1, "output '%s': %s is closed already (the "
				    "stream through it has ended)",
				    app_ports[i].name, r->path);
		}
	prev = stage_map(prev_path);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, &old);
	if (write(fd, "", 1) != 1)
		err(1, "standby: tell the launcher");
	dup2(saved_err, 2);
	close(saved_err);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (sigwait(&set, &sig) != 0 || sig != SIGUSR1)
		_exit(0);	/* no stop(), no detach: nothing was claimed */
	sigprocmask(SIG_SETMASK, &old, NULL);
	return prev;
}

/*
 * A replacement has claimed its rings and started: it is in the graph
 * now, and the launcher may say so to whoever asked for the swap (a
 * second NUL byte on the standby pipe).  A launcher gone meanwhile is
 * no matter (SIGPIPE is ignored).
 */
void
stage_taken_over(int fd)
{
	if (fd < 0)
		return;
	if (write(fd, "", 1) != 1)
		warn("standby: tell the launcher we took over");
	close(fd);
}
