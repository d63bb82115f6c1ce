/*
 * test_cli: cli_output()'s exit when the reader of standard output has
 * gone (EPIPE): status 0 only for a tool that would have succeeded, the
 * failing tool's own status otherwise, and the exit handlers registered
 * before and after cli_output() all run (snb-top's restores the terminal).
 * Each case is a child whose stdout is a pipe with its read end closed.
 */
#include <sys/wait.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tap.h"

static int marks[2];	/* the exit handlers write a byte each here */

static void mark_before(void) { (void)write(marks[1], "b", 1); }
static void mark_after(void) { (void)write(marks[1], "a", 1); }

enum { EXIT_OK, EXIT_FAIL, FLUSH_MIDWAY, FAIL_UNBUFFERED };

/* Run case c; its status, and the handlers' marks in m. */
static int
run(int c, char *m, size_t mlen)
{
	int out[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe(out) == -1 || pipe(marks) == -1)
		return -1;
	close(out[0]);		/* the reader has gone */
	fflush(stdout);
	if ((pid = fork()) == 0) {
		dup2(out[1], STDOUT_FILENO);
		close(marks[0]);
		atexit(mark_before);
		cli_output();
		atexit(mark_after);
		printf("more than the pipe would take\n");
		switch (c) {
		case EXIT_OK:
			exit(0);
		case EXIT_FAIL:
			exit(3);
		case FLUSH_MIDWAY:
			cli_flush();	/* ends the tool: nothing to write to */
			exit(4);
		case FAIL_UNBUFFERED:
			fflush(stdout);
			exit(5);
		}
	}
	close(out[1]);
	close(marks[1]);
	waitpid(pid, &status, 0);
	n = read(marks[0], m, mlen - 1);
	m[n > 0 ? n : 0] = '\0';
	close(marks[0]);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int
main(void)
{
	char m[16];
	int s;

	s = run(EXIT_OK, m, sizeof(m));
	ok(s == 0, "reader gone, tool succeeded: status 0 (got %d)", s);
	ok(strcmp(m, "ab") == 0, "both exit handlers ran (got '%s')", m);
	s = run(EXIT_FAIL, m, sizeof(m));
	ok(s == 3, "reader gone, tool failed with 3: keeps 3 (got %d)", s);
	ok(strcmp(m, "ab") == 0, "both exit handlers ran (got '%s')", m);
	s = run(FLUSH_MIDWAY, m, sizeof(m));
	ok(s == 0, "cli_flush() with the reader gone: status 0 (got %d)", s);
	ok(strcmp(m, "ab") == 0, "both exit handlers ran (got '%s')", m);
	s = run(FAIL_UNBUFFERED, m, sizeof(m));
	ok(s == 5, "reader gone, nothing buffered, failed: 5 (got %d)", s);
	ok(strcmp(m, "ab") == 0, "both exit handlers ran (got '%s')", m);
	return tap_done();
}
