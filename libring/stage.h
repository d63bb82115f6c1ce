/*
 * stage.h: the runtime's side of the stage file (stage.c); apps use the
 * app_counter / app_state calls of app.h instead.
 */
#ifndef SNB_STAGE_H
#define SNB_STAGE_H

#include "app.h"

/* This process's stage file (mapped from path, or private if NULL). */
extern struct stage_file *app_stage;

/*
 * Map (creating it) the stage file at path.  keep: a restart, so keep a
 * predecessor's counters and state when the file holds the same app
 * (its gauges at 0: levels of the process that left, as in a swap);
 * otherwise start afresh.
 */
void	stage_open(const char *path, const char *app, const char *label,
	    int keep);
/*
 * A stage file read-only (a swap's predecessor's, snb-top's view), NULL
 * if path is, or is not there, or is too short to be one.
 */
const struct stage_file *stage_map(const char *path);
/*
 * Takeover: if prev is the same app, copy its counters, built-in totals
 * and committed state into ours (app_resumed() becomes 1).
 */
void	stage_take_over(const struct stage_file *prev);
/*
 * A swap's replacement (standby.c): say "ready" on the launcher's pipe fd
 * (stderr back to saved_err) and wait for go; then the predecessor's stage
 * file at prev_path.  Exits if the swap is called off.
 */
const struct stage_file *stage_standby(int fd, int saved_err,
	    const char *prev_path);
/* Started: tell the launcher on fd that we took over (fd < 0: nobody). */
void	stage_taken_over(int fd);
/*
 * app_desc.counters_out: app_options() takes --counters-out FILE (or
 * =FILE) with the app's own options, and stage_counters_out() writes the
 * counters to FILE when the stage stops (nothing if it was not given).
 */
extern int		 stage_counters_opt;	/* app_desc.counters_out */
extern const char	*stage_counters_path;
void	stage_counters_out(void);
/*
 * The median of f's busy_hist: ns a unit of work cost in a typical busy
 * breath (the middle of its bucket); 0 if none.
 */
double	stage_busy_median(const struct stage_file *f);

#endif
