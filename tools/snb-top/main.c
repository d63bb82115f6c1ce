/*
 * snb-top: live rates of running graphs, per stage and per link, from the
 * counters in shared memory, as top(1) shows processes: a screen redrawn
 * every interval on a terminal (q quits), plain lines in batch mode (-b,
 * or when the output is not a terminal), JSON, the Prometheus text
 * format, or an HTTP server of it (--listen).
 */
#include <sys/ioctl.h>

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#include "cli.h"
#include "rundir.h"
#include "top.h"

/* As snb-top(1)'s SYNOPSIS. */
#define USAGE "usage: snb-top [-1bjp] [-d | -i seconds] [-n count] [graph]\n" \
    "       snb-top --listen address:port [graph]\n"

volatile sig_atomic_t	quit;

static struct termios	saved_tty;
static int		tty_raw;

static void
on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void
catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll() returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int on_screen;

static void
screen_leave(void)
{
	if (!on_screen)
		return;
	on_screen = 0;
	if (tty_raw) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
		tty_raw = 0;
	}
	/* The cursor back, and the screen as it was (top's way). */
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
}

/*
 * The terminal's own screen, for as long as we run: keys one at a time,
 * not echoed (^C still a signal), the cursor hidden.
 */
static void
screen_enter(void)
{
	struct termios t;

	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tty) == 0) {
		t = saved_tty;
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_cc[VMIN] = 1;
		t.c_cc[VTIME] = 0;
		if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) == 0)
			tty_raw = 1;
	}
	fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout);
	fflush(stdout);
	on_screen = 1;
	atexit(screen_leave);
}

static void
screen_size(struct page *p)
{
	struct winsize ws;

	p->cols = 80;
	p->rows = 24;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 &&
	    ws.ws_row > 0) {
		p->cols = ws.ws_col;
		p->rows = ws.ws_row;
	}
}

/*
 * Wait until t (now_s()), reading keys if the terminal is ours: q quits,
 * space or Enter shows the next page now.  Returns 1 to quit.
 */
static int
wait_until(double t)
{
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
	double left;
	char ch;

	while (!quit && (left = t - now_s()) > 0) {
		if (poll(&pfd, tty_raw ? 1 : 0, (int)(left * 1000) + 1) <= 0)
			continue;
		if (read(STDIN_FILENO, &ch, 1) != 1) {
			pfd.fd = -1;	/* stdin closed: keys no more */
			continue;
		}
		if (ch == 'q' || ch == 'Q')
			return 1;
		if (ch == ' ' || ch == '\n')
			return 0;
	}
	return quit;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "once", no_argument, NULL, '1' },
		{ "batch", no_argument, NULL, 'b' },
		{ "delay", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "listen", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct sample a, b;
	struct graph_view *g;
	struct page page = { .f = stdout };
	char errbuf[512], *end;
	const char *run, *only, *listen = NULL, *errstr;
	double delay = 1, next;
	long count = -1, i;
	int ch, batch = 0, json = 0, prom = 0, n, fd;
	/* The options that only set a flag. */
	int *const flag[128] = { ['b'] = &batch, ['j'] = &json,
	    ['p'] = &prom };

	cli_begin(argc, argv);
	cli_output();
	while ((ch = getopt_long(argc, argv, "1bd:i:n:jph", opts, NULL)) !=
	    -1) {
		switch (ch) {
		case '1':
			count = 1;
			break;
		case 'd':
		case 'i':
			errno = 0;
			delay = strtod(optarg, &end);
			if (end == optarg || *end || errno || !(delay >= 0.01 &&
			    delay <= 3600))
				errx(2, "bad delay '%s' (0.01 to 3600 seconds)",
				    optarg);
			break;
		case 'n':
			count = (long)strtonum(optarg, 1, LONG_MAX, &errstr);
			if (errstr != NULL)
				errx(2, "bad count '%s' (1 or more)", optarg);
			break;
		case 'l':
			listen = optarg;
			break;
		case 'h':
			printf(USAGE "Live rates of running graphs, like top(1)."
			    "  See snb-top(1).\n"
			    "  -b, --batch           plain lines, no screen "
			    "(also when not on a terminal)\n"
			    "  -d, --delay SECONDS   between pages (-i, "
			    "--interval: the same); default 1\n"
			    "  -n, --iterations N    N pages, then exit\n"
			    "  -1, --once            one page: -b -n 1\n"
			    "  -j, --json            JSON instead of text "
			    "(one object per page; -n 1 by default)\n"
			    "  -p, --prometheus      the counters in "
			    "Prometheus text format, once\n"
			    "      --listen A:P      serve them over HTTP: "
			    "GET /metrics\n"
			    "On the screen: q or ^C quits, space shows the "
			    "next page now.\n");
			return 0;
		default:
			if (ch <= 0 || ch >= 128 || flag[ch] == NULL) {
				fputs(USAGE, stderr);
				return 2;
			}
			*flag[ch] = 1;
		}
	}
	if (argc - optind > 1 || json + prom + (listen != NULL) > 1) {
		if (argc - optind > 1)
			warnx("unexpected argument '%s'", argv[optind + 1]);
		else
			warnx("--json, --prometheus and --listen exclude "
			    "each other");
		fputs(USAGE, stderr);
		return 2;
	}
	only = argv[optind];
	if ((run = snb_run_dir(errbuf, sizeof(errbuf))) == NULL)
		errx(1, "run directory: %s", errbuf);
	atexit(snb_run_dir_release);	/* if we made it: empty */
	catch_signals();
	if (listen) {
		if ((fd = http_listen(listen, errbuf, sizeof(errbuf))) < 0)
			errx(fd == -2 ? 2 : 1, "%s", errbuf);
		return http_serve(fd, run, only);
	}
	if (json && count == -1)
		count = 1;
	if (!prom && !json && !batch && count != 1 && isatty(STDOUT_FILENO)) {
		page.screen = 1;
		screen_enter();
	}
	next = now_s();
	for (i = 0; count == -1 || i < count; i++) {
		/* The screen first: a message on it would go with it. */
		if ((n = graphs_load(run, only, &g, errbuf, sizeof(errbuf))) ==
		    -1) {
			screen_leave();
			errx(1, "%s", errbuf);
		}
		if (only && n == 0) {
			screen_leave();
			if (i > 0)
				errx(1, "graph '%s' has ended", only);
			errx(1, "no graph '%s' (in %s)", only, run);
		}
		if (prom) {
			prom_write(stdout, g, n);
			graphs_free(g, n);
			cli_flush();
			return 0;
		}
		sample_take(g, n, &a);
		next += delay;
		if (wait_until(next) || quit) {
			sample_free(&a);
			graphs_free(g, n);
			break;
		}
		next = now_s();	/* after a key too: a whole delay from now */
		sample_take(g, n, &b);
		if (json)
			show_json(stdout, g, n, &a, &b);
		else {
			if (page.screen)
				screen_size(&page);
			else if (i > 0)
				putchar('\n');
			show_page(&page, g, n, &a, &b, delay);
		}
		cli_flush();	/* the reader gone (| head): we are done */
		sample_free(&a);
		sample_free(&b);
		graphs_free(g, n);
	}
	return 0;
}
