/*
 * appctl.c: a stage's own control socket, for apps with a control() hook
 * (snb-ctl GRAPH config LABEL WORDS...).
 *
 * The socket is LABEL.ctl beside the stage file (rundir.h), mode 0600,
 * made when the stage takes its rings over (a replacement in standby has
 * none yet) and removed when it leaves.  The protocol is snb-run's: the
 * words of one request, each ending in NUL, then EOF; one reply; close.
 *
 * Requests are served by a thread beside the data path (server.h: a
 * slow client blocks no other), so that a slow one (building a big
 * binding table) never stalls a breath.  The data path learns of a request's result only through
 * app_ctl_sync(): the thread posts a function, the breathe loop runs it
 * between two breaths (one relaxed load a breath when there is none: no
 * lock, no system call), and the thread waits for it.  SIGHUP is blocked
 * in every thread and read here as the request "reload".
 */
#define _GNU_SOURCE
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "appctl.h"
#include "server.h"
#include "unixsock.h"

#define REQ_MAX		16384
#define REQ_WORDS	64
#define CLIENTS		8
#define CALL_POLL_NS	100000	/* the thread looks for the call's end */
#define CALL_KICK_NS	5000000	/* and wakes a sleeping data path again */

static int (*handler)(int, char **, FILE *);
static pthread_t thread, data_path;
static int running, sig_fd = -1, stop_fd[2] = { -1, -1 };
static struct unix_sock sock = { .fd = -1 };	/* removed only if ours */

/* The one posted call: fn is set last (release), cleared when done. */
void (*_Atomic appctl_call_fn)(void *);
static void *call_arg;
static atomic_int call_done, stopping;

static sigset_t hup_set;	/* SIGHUP, blocked, read by signalfd */

static void	input(struct srv_client *, int);

static struct server srv = {
	.max = CLIENTS,
	.req_max = REQ_MAX,
	.client_ms = 5000,	/* to send the request, to read the reply */
	.drain_ms = 1000,
	.input = input,
};

void
appctl_block_hup(void)
{
	sigemptyset(&hup_set);
	sigaddset(&hup_set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &hup_set, NULL);
}

void
appctl_run_call(void)
{
	void (*fn)(void *) = atomic_load_explicit(&appctl_call_fn,
	    memory_order_acquire);

	if (fn == NULL || atomic_load(&stopping))
		return;
	fn(call_arg);
	atomic_store_explicit(&appctl_call_fn, NULL, memory_order_relaxed);
	atomic_store_explicit(&call_done, 1, memory_order_release);
}

int
app_ctl_sync(void (*fn)(void *), void *arg)
{
	struct timespec ts = { 0, CALL_POLL_NS };
	long waited = 0;

	if (!running)		/* no thread: we are the data path */
		return fn(arg), 0;
	call_arg = arg;
	atomic_store(&call_done, 0);
	atomic_store_explicit(&appctl_call_fn, fn, memory_order_release);
	/*
	 * A data path asleep on its rings runs the call when it wakes: the
	 * signal wakes it now (again now and then: one sent just before it
	 * went to sleep is lost, and its sleep is capped anyway).
	 */
	for (;;) {
		if (waited % CALL_KICK_NS == 0)
			pthread_kill(data_path, APPCTL_WAKE_SIGNAL);
		if (atomic_load_explicit(&call_done, memory_order_acquire))
			return 0;
		if (atomic_load(&stopping)) {
			/* the loop runs no call once stopping is set */
			atomic_store(&appctl_call_fn, NULL);
			return -1;
		}
		nanosleep(&ts, NULL);
		waited += CALL_POLL_NS;
	}
}

/* Run a request; the reply in a malloc'd string ("error: " cut if ok). */
static char *
serve(int argc, char **argv)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	if ((f = open_memstream(&body, &len)) == NULL)
		return NULL;
	fputs("error: ", f);
	rc = argc == 0 ? (fprintf(f, "empty request\n"), -1) :
	    handler(argc, argv, f);
	if (fclose(f) == EOF)
		return NULL;
	if (rc == 0)
		memmove(body, body + 7, len - 6);	/* and the NUL */
	return body;
}

/* At EOF: the words, each ending in NUL; a full buffer gets no reply. */
static void
input(struct srv_client *c, int end)
{
	char *w[REQ_WORDS], *p, *reply;
	int n = 0;

	if (!end || c->inlen == REQ_MAX - 1)
		return;
	for (p = c->in; p < c->in + c->inlen && n < REQ_WORDS - 1;
	    p += strlen(p) + 1)
		w[n++] = p;
	w[n] = NULL;
	if ((reply = serve(n, w)) != NULL)
		srv_reply(&srv, c, reply);
}

/* SIGHUP: "reload", answered on standard error. */
static void
hup(void)
{
	struct signalfd_siginfo si;
	char *argv[] = { "reload", NULL }, *reply;

	if (read(sig_fd, &si, sizeof(si)) != sizeof(si))
		return;
	if ((reply = serve(1, argv)) != NULL) {
		reply[strcspn(reply, "\n")] = '\0';
		warnx("SIGHUP: %s", reply);
		free(reply);
	}
}

static void *
serve_loop(void *unused)
{
	struct pollfd p[2 + 1 + CLIENTS];
	uint64_t now, next;
	int n;

	for (;;) {
		now = now_ms();
		next = srv_timers(&srv, now);
		p[0] = (struct pollfd){ stop_fd[0], POLLIN, 0 };
		p[1] = (struct pollfd){ sig_fd, POLLIN, 0 };
		n = srv_pollfds(&srv, p + 2, 1 + CLIENTS);
		if (poll(p, (nfds_t)(2 + n), next ? (int)(next - now) : -1) ==
		    -1)
			continue;
		if (p[0].revents) {
			srv_end(&srv);
			return NULL;
		}
		if (p[1].revents)
			hup();
		srv_events(&srv, p + 2, n);
	}
}

/* The socket beside the stage file; none (a warning) if it cannot be. */
static void
listen_at(const char *stats, const char *label)
{
	const char *dir = app_graph_dir() ? app_graph_dir() : ".";
	char *path = sock.sa.sun_path;
	struct stat st;
	mode_t old;
	int fd, ok;

	if (stats == NULL)
		return;
	if (snprintf(path, sizeof(sock.sa.sun_path), "%s/%s.ctl", dir,
	    label) >= (int)sizeof(sock.sa.sun_path)) {
		warnx("%s/%s.ctl: path too long for a socket: no config "
		    "requests", dir, label);
		return;
	}
	sock.sa.sun_family = AF_UNIX;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, 0)) == -1)
		err(1, "socket");
	unlink(path);	/* a crashed predecessor's */
	old = umask(0177);
	ok = bind(fd, (struct sockaddr *)&sock.sa, sizeof(sock.sa)) == 0 &&
	    listen(fd, 8) == 0 && stat(path, &st) == 0;
	umask(old);
	if (!ok) {
		warn("%s: no config requests", path);
		close(fd);
		return;
	}
	sock.fd = fd;
	sock.dev = st.st_dev;
	sock.ino = st.st_ino;
}

void
appctl_start(int (*fn)(int, char **, FILE *), const char *stats,
    const char *label)
{
	handler = fn;
	data_path = pthread_self();
	if ((sig_fd = signalfd(-1, &hup_set, SFD_CLOEXEC)) == -1 ||
	    pipe2(stop_fd, O_CLOEXEC) == -1)
		err(1, "control thread");
	listen_at(stats, label);
	srv_init(&srv, sock.fd);	/* -1: poll() passes it over */
	if ((errno = pthread_create(&thread, NULL, serve_loop, NULL)) != 0)
		err(1, "control thread");
	running = 1;
}

void
appctl_stop(void)
{
	if (!running)
		return;
	atomic_store(&stopping, 1);
	if (write(stop_fd[1], "", 1) != 1)
		warn("control thread");
	pthread_join(thread, NULL);
	running = 0;
	unix_sock_close(&sock);	/* a successor may have made its own */
	close(sig_fd);
	close(stop_fd[0]);
	close(stop_fd[1]);
	sig_fd = -1;
}
