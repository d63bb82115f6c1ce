/*
 * stage.c: the stage file of the running process (counters, how it left,
 * hand-over state) and the hand-over from one process of a stage to the
 * next.  See app.h ("Hand-over") for the contract.
 */
#include <err.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bsd/string.h>

#include "app.h"
#include "stage.h"

struct stage_file *app_stage;
int stage_counters_opt;
const char *stage_counters_path;
static unsigned char state_buf[APP_STATE_MAX];	/* the app's working copy */
static size_t state_len;
static int handed_over;

static struct stage_file *
map_file(const char *path, int rw)
{
	struct stage_file *f;
	struct stat st;
	int fd;

	if ((fd = open(path, (rw ? O_RDWR | O_CREAT : O_RDONLY) | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || (rw && (size_t)st.st_size != sizeof(*f) &&
	    ftruncate(fd, sizeof(*f)) == -1) ||
	    (rw && snb_reserve(fd, sizeof(*f)) == -1) ||
	    (!rw && (size_t)st.st_size < sizeof(*f))) {
		close(fd);
		return NULL;
	}
	f = mmap(NULL, sizeof(*f), PROT_READ | (rw ? PROT_WRITE : 0),
	    MAP_SHARED, fd, 0);
	close(fd);
	return f == MAP_FAILED ? NULL : f;
}

/* Does f hold an earlier process of app that we may continue? */
static int
same_app(const struct stage_file *f, const char *app)
{
	return f->magic == STAGE_MAGIC && f->ncounters <= STAGE_MAX_COUNTERS &&
	    f->state_size <= APP_STATE_MAX &&
	    strncmp(f->app, app, sizeof(f->app)) == 0;
}

static void
load_state(const struct stage_file *f)
{
	uint64_t gen = atomic_load_explicit(&f->state_gen,
	    memory_order_acquire);

	memcpy(state_buf, f->state[gen & 1], APP_STATE_MAX);
}

void
stage_open(const char *path, const char *app, const char *label, int keep)
{
	struct stage_file *f;
	uint32_t i;

	if (path == NULL) {
		if ((f = calloc(1, sizeof(*f))) == NULL)
			err(1, NULL);
	} else if ((f = map_file(path, 1)) == NULL)
		err(1, "%s", path);
	if (keep && same_app(f, app)) {
		/* A restart: counters and state go on where they were; a
		 * gauge was a level of the process that left, as in
		 * stage_take_over() (a swap). */
		for (i = 0; i < f->ncounters; i++)
			if (f->counters[i].flags & STAGE_COUNTER_GAUGE)
				f->counters[i].value = 0;
		load_state(f);
		handed_over = 1;
	} else
		memset(f, 0, sizeof(*f));
	f->pid = (int32_t)getpid();
	f->exit_state = STAGE_RUNNING;
	strlcpy(f->app, app, sizeof(f->app));
	strlcpy(f->label, label, sizeof(f->label));
	f->magic = STAGE_MAGIC;
	app_stage = f;
}

const struct stage_file *
stage_map(const char *path)
{
	/* Mapped in standby: it stays readable after the launcher renames. */
	return path ? map_file(path, 0) : NULL;
}

void
stage_take_over(const struct stage_file *prev)
{
	struct stage_file *f = app_stage;
	uint32_t i;

	if (prev == NULL || !same_app(prev, f->app))
		return;
	/*
	 * The predecessor has exited: its file no longer changes.  Counts
	 * go on from its values; a gauge was a level of that process (a
	 * bridge's table, lwaftr's reassembly buffers), not of this one,
	 * which sets its own: it starts at 0.
	 */
	for (i = 0; i < prev->ncounters; i++)
		if (prev->counters[i].flags & STAGE_COUNTER_GAUGE)
			*app_gauge(prev->counters[i].name) = 0;
		else
			*app_counter(prev->counters[i].name) =
			    prev->counters[i].value;
	f->breaths = prev->breaths;
	f->idle_sleeps = prev->idle_sleeps;
	f->busy_ns = prev->busy_ns;
	f->busy_breaths = prev->busy_breaths;
	f->busy_units = prev->busy_units;
	memcpy(f->busy_hist, prev->busy_hist, sizeof(f->busy_hist));
	f->restarts = prev->restarts;
	load_state(prev);
	/* Ours from now on, so that a restart of ours finds it too. */
	memcpy(f->state[0], state_buf, APP_STATE_MAX);
	f->state_size = prev->state_size;
	atomic_store_explicit(&f->state_gen, 0, memory_order_release);
	handed_over = 1;
}

int
app_resumed(void)
{
	return handed_over;
}

void *
app_state(size_t size)
{
	if (size > APP_STATE_MAX)
		errx(1, "app state of %zu bytes (at most %d)", size,
		    APP_STATE_MAX);
	state_len = size;
	app_stage->state_size = (uint32_t)size;
	return state_buf;
}

void
app_state_commit(void)
{
	struct stage_file *f = app_stage;
	uint64_t gen = atomic_load_explicit(&f->state_gen,
	    memory_order_relaxed);

	/* Write the copy not in use, then flip: a kill leaves one whole. */
	memcpy(f->state[(gen + 1) & 1], state_buf, state_len);
	atomic_store_explicit(&f->state_gen, gen + 1, memory_order_release);
}

int64_t
app_release_to(struct ring *r, uint64_t tail)
{
	uint64_t n = tail - r->tail;

	if (tail < r->tail || n > ring_avail(r, UINT32_MAX)) {
		warnx("%s: taken up to %" PRIu64 " before, but the ring holds "
		    "%" PRIu64 "..%" PRIu64 ": not skipping", r->path, tail,
		    r->tail, r->head);
		return -1;
	}
	if (n)
		ring_release(r, (uint32_t)n);
	return (int64_t)n;
}

/*
 * The counter called name, made with flags if new.  Readers (snb-top,
 * snb-ctl clear) look without a lock while the stage runs, and an app may
 * make a counter mid-stream: it is written whole, then counted in
 * ncounters (release), so a reader never sees one without its name or
 * its gauge flag.
 */
static struct stage_counter *
counter(const char *name, uint64_t flags)
{
	struct stage_counter *c;
	uint32_t i, n = app_stage->ncounters;

	for (i = 0; i < n; i++)
		if (strncmp(app_stage->counters[i].name, name,
		    sizeof(c->name)) == 0) {
			app_stage->counters[i].flags |= flags;
			return &app_stage->counters[i];
		}
	if (n == STAGE_MAX_COUNTERS)
		errx(1, "too many counters (adding '%s')", name);
	c = &app_stage->counters[n];
	strlcpy(c->name, name, sizeof(c->name));
	c->flags = flags;
	__atomic_store_n(&app_stage->ncounters, n + 1, __ATOMIC_RELEASE);
	return c;
}

uint64_t *
app_counter(const char *name)
{
	return &counter(name, 0)->value;
}

uint64_t *
app_counter_find(const char *name)
{
	uint32_t i;

	for (i = 0; i < app_stage->ncounters; i++)
		if (strncmp(app_stage->counters[i].name, name,
		    sizeof(app_stage->counters[i].name)) == 0)
			return &app_stage->counters[i].value;
	return NULL;
}

uint64_t *
app_gauge(const char *name)
{
	return &counter(name, STAGE_COUNTER_GAUGE)->value;
}

void
app_counters(uint64_t **c, const char *const *names)
{
	while (*names != NULL)
		*c++ = app_counter(*names++);
}

/* Every counter, one "name value" line each in the order they were made. */
void
stage_counters_out(void)
{
	FILE *f;
	uint32_t i;

	if (stage_counters_path == NULL)
		return;
	if ((f = fopen(stage_counters_path, "we")) == NULL) {
		warn("%s", stage_counters_path);
		return;
	}
	for (i = 0; i < app_stage->ncounters; i++)
		fprintf(f, "%.*s %llu\n",
		    (int)sizeof(app_stage->counters[i].name),
		    app_stage->counters[i].name,
		    (unsigned long long)app_stage->counters[i].value);
	if (fclose(f) == EOF)
		warn("%s", stage_counters_path);
}

double
stage_busy_median(const struct stage_file *f)
{
	uint64_t sum = 0, half;
	unsigned b;

	for (b = 0; b < STAGE_HIST; b++)
		sum += f->busy_hist[b];
	half = (sum + 1) / 2;
	for (b = 0, sum = 0; b < STAGE_HIST && half > 0; b++) {
		if ((sum += f->busy_hist[b]) < half)
			continue;
		/* the bucket's middle, in ns */
		return (hist_bucket_low(b, STAGE_HIST_SUB_BITS) +
		    hist_bucket_low(b + 1, STAGE_HIST_SUB_BITS)) / 32.0;
	}
	return 0;
}
